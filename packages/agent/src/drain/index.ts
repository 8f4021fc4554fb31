/**
 * The drain behind `blue-agent drain` (run by the detached drain process each capture starts, by the agent's
 * schedule, or by a person): recovers what dead drains left, then the build stage (build.ts) turns intake records
 * into bundles and the upload stage (upload.ts) sends ready bundles to the Control API, in passes until nothing new
 * arrived (at most MAX_DRAIN_PASSES); a lingering drain then follows the captures that wait for their harness to exit
 * (linger.ts). What it did is its report (report.ts).
 */
import { admitHookCaptures } from '../capture/inbox.js';
import { appendCaptureLog } from '../capture/log.js';
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { resolvePolicy, type ResolvedPolicy } from '../policy/index.js';
import { Spool, type SpoolIO } from '../spool/index.js';
import { buildWaiting, type BuildOptions } from './build.js';
import { linger, type LingerOptions } from './linger.js';
import { waitingEntry, type DrainReport } from './report.js';
import { uploadReady, type UploadOptions } from './upload.js';

export { buildFromRecord, SETTLE_MS, type BuildFunction } from './build.js';
export { LINGER_MS } from './linger.js';
export type { BuiltEntry, DrainReport, FailedEntry, UploadedEntry, WaitingEntry } from './report.js';

export interface DrainOptions extends BuildOptions, UploadOptions, LingerOptions {
  io?: SpoolIO;
  /** Build only; leave ready records alone. */
  skipUploads?: boolean;
  /** One pass only: captures that arrive while the drain runs wait for the next drain. */
  once?: boolean;
}

/** Passes a drain makes at most while captures keep arriving (a bound, so a drain always ends). */
export const MAX_DRAIN_PASSES = 5;

interface Seen {
  intake: Set<string>;
  ready: Set<string>;
}

export async function drain(ctx: Context, options: DrainOptions = {}): Promise<DrainReport> {
  const spool = await Spool.open(ctx.paths, {
    now: () => ctx.clock.now(),
    ...(options.io === undefined ? {} : { io: options.io }),
  });
  // What the sh hook handed over becomes intake first (or is refused), so this drain builds it.
  await admitHookCaptures(ctx, spool);
  const recovered = await spool.releaseDeadClaims();
  const tempsRemoved = await spool.removeOrphanTemps();
  for (const id of recovered.released)
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'recovered',
      record: id,
      reason: 'its worker died; released for another build',
    });
  const report: DrainReport = {
    recovered: { ...recovered, temps_removed: tempsRemoved },
    built: [],
    unchanged: [],
    failed: [],
    retried: [],
    left: 0,
    uploaded: [],
    discarded: [],
    left_ready: 0,
    waiting: [],
    deferred: [],
    changing: [],
    superseded: [],
    held: [],
    notes: [],
  };

  // The policy is asked at most once per drain, by whichever stage needs it first (the build for its redaction).
  if (options.policy === undefined) {
    let asked: Promise<ResolvedPolicy> | undefined;
    options = {
      ...options,
      policy: () =>
        (asked ??= loadAgentConfig(ctx).then(({ config }) => resolvePolicy(ctx, { dryRun: false, config }))),
    };
  }
  // Each record is tried at most once per drain (a transient failure waits for the next drain); records that are
  // not due yet join these sets too, so a backlog of delayed records is read once per drain, not once per claim.
  const seen: Seen = { intake: new Set(), ready: new Set() };
  await passes(ctx, spool, report, options, seen);
  // Captures that wait for their harness to exit: followed until it has (with --linger), then built.
  const waiters = await linger(
    ctx,
    spool,
    options,
    async (done) => {
      for (const id of done) seen.intake.delete(id);
      await passes(ctx, spool, report, { ...options, once: true }, seen);
    },
    () => report.stopped !== undefined,
  );
  report.deferred = waiters.map(({ id, record }) => ({
    id,
    harness: String(record.harness ?? '?'),
    session_id: String(record.payload?.session_id ?? '?'),
    pid: record.wait_for_exit!.pid,
  }));

  const leftIntake = await spool.idsIn('intake');
  const leftReady = await spool.idsIn('ready');
  report.left = leftIntake.length;
  report.left_ready = leftReady.length;
  const retried = new Set(report.retried.map((r) => r.id));
  for (const [state, ids] of [
    ['intake', leftIntake],
    ['ready', leftReady],
  ] as const) {
    for (const id of ids) {
      if (retried.has(id)) continue;
      const waiting = await waitingEntry(spool, state, id);
      if (waiting !== undefined) report.waiting.push(waiting);
    }
  }
  report.held = await spool.heldByOthers();
  return report;
}

/** Build passes (and upload passes) until nothing new arrived, or once. */
async function passes(
  ctx: Context,
  spool: Spool,
  report: DrainReport,
  options: DrainOptions,
  seen: Seen,
): Promise<void> {
  for (let pass = 1; ; pass++) {
    // A pass takes the records that are there when it starts: one that arrives meanwhile waits for the next pass.
    await buildWaiting(ctx, spool, report, options, seen.intake, new Set(await spool.idsIn('intake')));
    if (options.skipUploads !== true && report.stopped === undefined) {
      await uploadReady(ctx, spool, report, options, seen.ready, new Set(await spool.idsIn('ready')));
    }
    if (options.once === true || report.stopped !== undefined || pass >= MAX_DRAIN_PASSES) break;
    // Another pass only for records that arrived meanwhile.
    const fresh = async (state: 'intake' | 'ready', known: Set<string>) =>
      (await spool.idsIn(state)).some((id) => !known.has(id));
    if (!(await fresh('intake', seen.intake)) && (options.skipUploads === true || !(await fresh('ready', seen.ready))))
      break;
  }
}
