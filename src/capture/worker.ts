/**
 * The worker behind `blue-agent drain`: recovers what dead workers left, then turns intake records into bundles one
 * at a time. Several drains may run at once (every capture starts one): claims make sure each record is built by
 * exactly one of them.
 *
 * Outcome of a build, by what went wrong:
 *   - nothing: the bundle is committed and the record is ready;
 *   - the session must not or cannot be captured (ARTIFACT_INVALID and kin): failed at once, with the reason;
 *   - the disk is full: the partial bundle is removed, the record goes back to intake untouched, and the drain stops;
 *   - anything else: back to intake with attempts + 1 and a growing delay before the next try (RETRY_DELAYS_MS),
 *     failed after MAX_ATTEMPTS.
 */
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BundleResult } from '../bundle/index.js';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '../errors.js';
import { loadProfiles, type ProfileSet } from '../profiles/index.js';
import { DocumentCache } from '../schema/document-cache.js';
import { isDiskFull, MAX_ATTEMPTS, Spool, type Claim, type RecordError, type RecoveryReport, type SpoolIO, type SpoolRecord } from '../spool/index.js';
import { assembleBundle, captureInterval } from './assemble.js';
import { appendCaptureLog } from './log.js';

/** Records younger than this wait before they are built: the harness may still be writing the session's last lines as it exits. */
export const SETTLE_MS = 1_000;

/** Errors that say the session itself cannot be captured: retrying gives the same answer. */
const PERMANENT = new Set(['ARTIFACT_INVALID', 'BUNDLE_INVALID', 'CAPTURE_REFUSED', 'PROFILE_UNKNOWN', 'UNSAFE_PATH']);

export type BuildFunction = (ctx: Context, record: SpoolRecord, outFile: string, profiles: ProfileSet) => Promise<BundleResult>;

export interface DrainOptions {
  settleMs?: number;
  maxAttempts?: number;
  /** Replaces the session -> bundle step (tests make it fail or stall). */
  build?: BuildFunction;
  io?: SpoolIO;
}

export interface BuiltEntry {
  id: string;
  harness: string;
  profile: string;
  session_id: string;
  size: number;
  sha256: string;
}

export interface FailedEntry {
  id: string;
  harness: string;
  profile: string;
  session_id: string;
  code: string;
  reason: string;
  attempts: number;
}

export interface DrainReport {
  recovered: RecoveryReport & { temps_removed: number };
  built: BuiltEntry[];
  /** Failed for good in this run. */
  failed: FailedEntry[];
  /** Failed in this run, kept in intake for a later drain. */
  retried: FailedEntry[];
  /** Records still waiting in intake when the drain ended. */
  left: number;
  /** Why the drain stopped early (a full disk), if it did. */
  stopped?: { code: string; reason: string };
}

/** The default build: the record's recorded profile, its harness adapter, the bundle writer. */
export const buildFromRecord: BuildFunction = (ctx, record, outFile, profiles) => {
  const { harness, interval } = captureInterval(profiles, record.harness, record.profile);
  return assembleBundle(ctx, { harness, interval, payload: record.payload, capturedAtUnixMs: record.created_at_unix_ms }, outFile, profiles);
};

export async function drain(ctx: Context, options: DrainOptions = {}): Promise<DrainReport> {
  const spool = await Spool.open(ctx.paths.stateDir, { now: () => ctx.clock.now(), ...(options.io === undefined ? {} : { io: options.io }) });
  const recovered = await spool.releaseDeadClaims();
  const tempsRemoved = await spool.removeOrphanTemps();
  for (const id of recovered.released) await appendCaptureLog(ctx.paths.stateDir, { event: 'recovered', record: id, reason: 'its worker died; released for another build' });
  const report: DrainReport = { recovered: { ...recovered, temps_removed: tempsRemoved }, built: [], failed: [], retried: [], left: 0 };

  await buildWaiting(ctx, spool, report, options);
  // Uploads slot in here: a later stage claims `ready` records the same way (spool.claimNext('ready')) and commits
  // them onwards, so a drain builds first, then uploads what is ready.

  report.left = (await spool.idsIn('intake')).length;
  return report;
}

async function buildWaiting(ctx: Context, spool: Spool, report: DrainReport, options: DrainOptions): Promise<void> {
  const build = options.build ?? buildFromRecord;
  const settleMs = options.settleMs ?? SETTLE_MS;
  const maxAttempts = options.maxAttempts ?? MAX_ATTEMPTS;
  // Each record is tried at most once per drain: a transient failure waits for the next drain.
  const tried = new Set<string>();
  let profiles: ProfileSet | undefined;
  let documents: DocumentCache | undefined;
  try {
    for (;;) {
      const claim = await spool.claimNext('intake', { skip: tried });
      if (claim === undefined) break;
      tried.add(claim.id);
      const { record } = claim;
      if (claim.damaged !== undefined) {
        await spool.fail(claim, { code: 'SPOOL_RECORD_DAMAGED', message: claim.damaged, at_unix_ms: ctx.clock.now() });
        report.failed.push(entry(record, 'SPOOL_RECORD_DAMAGED', claim.damaged));
        continue;
      }
      const age = ctx.clock.now() - record.created_at_unix_ms;
      if (age >= 0 && age < settleMs) await sleep(settleMs - age);
      const outFile = spool.tempFile(record.id, 'bundle');
      try {
        if (profiles === undefined) {
          documents = await DocumentCache.open(path.join(ctx.paths.stateDir, 'cache', 'documents.json'), true);
          profiles = await loadProfiles(ctx.paths.profilesDir, documents);
        }
        const result = await build(ctx, record, outFile, profiles);
        await spool.commitReady(claim, outFile, { size: result.size, sha256: result.sha256 });
        report.built.push({
          id: record.id,
          harness: record.harness,
          profile: record.profile,
          session_id: record.payload.session_id,
          size: result.size,
          sha256: result.sha256,
        });
        await appendCaptureLog(ctx.paths.stateDir, {
          event: 'built',
          harness: record.harness,
          profile: record.profile,
          session_id: record.payload.session_id,
          record: record.id,
          size: result.size,
        });
      } catch (error) {
        if (!(await spool.holds(claim))) {
          // Another worker judged this one dead and took the record over: it is theirs now, leave it alone.
          await spool.discardTemp(outFile);
          continue;
        }
        const stop = await settleFailure(ctx, spool, claim, error, report, maxAttempts);
        if (stop) break;
      }
    }
  } finally {
    await documents?.save().catch(() => undefined);
  }
}

/** Records a failed build; true when the drain should stop (the disk is full). */
async function settleFailure(ctx: Context, spool: Spool, claim: Claim, error: unknown, report: DrainReport, maxAttempts: number): Promise<boolean> {
  const { record } = claim;
  const blue = toBlueError(error);
  const at = ctx.clock.now();
  if (blue.code === 'SPOOL_UNSAFE') {
    throw blue;
  }
  if (isDiskFull(error) || isDiskFull(blue.cause)) {
    const reason = 'no space left on the disk while building the bundle; kept for a later drain';
    await spool.release(claim, { error: { code: 'SPOOL_FULL', message: reason, at_unix_ms: at }, countAttempt: false });
    report.retried.push(entry(record, 'SPOOL_FULL', reason));
    report.stopped = { code: 'SPOOL_FULL', reason: blue.message };
    await appendCaptureLog(ctx.paths.stateDir, { event: 'retry', record: record.id, session_id: record.payload.session_id, code: 'SPOOL_FULL', reason });
    return true;
  }
  const failure: RecordError = { code: blue.code, message: describe(blue), at_unix_ms: at };
  const permanent = PERMANENT.has(blue.code);
  if (permanent || record.attempts + 1 >= maxAttempts) {
    const failed = await spool.fail(
      claim,
      { ...failure, message: permanent ? failure.message : `${failure.message} (after ${record.attempts + 1} attempts)` },
      { countAttempt: true },
    );
    report.failed.push(entry(failed, blue.code, failed.last_error!.message));
    await appendCaptureLog(ctx.paths.stateDir, {
      event: 'build_failed',
      harness: record.harness,
      profile: record.profile,
      session_id: record.payload.session_id,
      record: record.id,
      code: blue.code,
      reason: failed.last_error!.message,
    });
  } else {
    const released = await spool.release(claim, { error: failure });
    report.retried.push(entry(released, blue.code, failure.message));
    await appendCaptureLog(ctx.paths.stateDir, { event: 'retry', record: record.id, session_id: record.payload.session_id, code: blue.code, reason: failure.message });
  }
  return false;
}

function describe(error: BlueError): string {
  return error.hint === undefined ? error.message : `${error.message} (${error.hint})`;
}

function entry(record: SpoolRecord, code: string, reason: string): FailedEntry {
  return {
    id: record.id,
    harness: record.harness,
    profile: record.profile,
    session_id: record.payload.session_id,
    code,
    reason,
    attempts: record.attempts,
  };
}
