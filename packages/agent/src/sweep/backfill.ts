/**
 * Backfill: every local session the active profiles can read that was never uploaded is captured, oldest first, with
 * progress and a bounded rate — history from before blue-agent, and sessions a harness would soon delete itself.
 * "Never uploaded" is known two ways: locally (a capture whose read began after the session last changed:
 * drain/captured.ts), and on the server (the Control API lists this native session, captured after it last changed).
 * A session written by a harness version older than its capture profile is uploaded as not resumable.
 */
import semver from 'semver';
import { appendCaptureLog } from '../capture/log.js';
import type { Context } from '../context.js';
import { SessionsApi } from '../control-api/sessions.js';
import { drain, type DrainReport } from '../drain/index.js';
import { toBlueError } from '@blue-agent/contract/errors.js';
import { captureTargets, type CaptureTarget } from '../reconcile/index.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { Spool } from '../spool/index.js';
import { writeStateFile } from '@blue-agent/contract/util/startup/fs-light.js';
import { readCursors, updateCursors } from './cursors.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import { lastCaptures, listTarget } from './index.js';
import { MTIME_MARGIN_MS } from './plan.js';

export interface BackfillCandidate {
  harness: string;
  profile: string;
  session_id: string;
  file: string;
  size: number;
  mtime_ms: number;
  /** The harness version that wrote it, when its files say. */
  version: string | null;
  resumable: boolean;
}

export interface BackfillReport {
  dry_run: boolean;
  harnesses: { harness: string; profile: string; sessions: number; truncated: boolean }[];
  /** Active harnesses whose sessions cannot be listed. */
  unlisted: string[];
  /** Sessions to capture (dry run), or captured (handed to the spool), oldest first. */
  candidates: BackfillCandidate[];
  skipped: { captured: number; on_server: number; before_since: number; queued: number };
  /** Sessions still to capture after this run (a run with `max` takes a slice). */
  remaining: number;
  /** What the drains of the captured sessions did. */
  built: number;
  uploaded: number;
  unchanged: number;
  failed: { session_id: string; code: string; reason: string }[];
  /** Why the server was not asked, or why uploads waited. */
  notes: string[];
}

export interface BackfillOptions {
  harnesses?: readonly string[];
  /** Only sessions changed at or after this time. */
  sinceUnixMs?: number;
  dryRun: boolean;
  /** Sessions handed to the spool, then drained, at a time. */
  batch?: number;
  /** At most this many sessions captured per minute. */
  perMinute?: number;
  /** Ask the Control API which sessions it already holds (default: yes, when one is configured). */
  checkServer?: boolean;
  /** At most this many sessions in one run (the agent's runs take a slice each). */
  max?: number;
  /** Told after each batch. */
  onProgress?(done: number, total: number, last: BackfillCandidate): void;
  /** Waits between batches to keep the rate; tests record instead. */
  wait?(ms: number): Promise<void>;
  /** Drains each batch in this process (the CLI); false: leaves the spool to the agent's drains. */
  drainBatches?: boolean;
  targets?: CaptureTarget[];
}

export const DEFAULT_BATCH = 10;
export const DEFAULT_PER_MINUTE = 120;

/** The sessions backfill would capture, oldest first. */
export async function findBackfill(
  ctx: Context,
  policy: GovernancePolicy,
  options: BackfillOptions,
): Promise<Omit<BackfillReport, 'built' | 'uploaded' | 'unchanged' | 'failed'>> {
  const only =
    options.harnesses === undefined || options.harnesses.length === 0 ? undefined : new Set(options.harnesses);
  const targets = options.targets ?? (await captureTargets(ctx, policy, only));
  const report: Omit<BackfillReport, 'built' | 'uploaded' | 'unchanged' | 'failed'> = {
    dry_run: options.dryRun,
    harnesses: [],
    unlisted: [],
    candidates: [],
    skipped: { captured: 0, on_server: 0, before_since: 0, queued: 0 },
    remaining: 0,
    notes: [],
  };
  const server = options.checkServer === false ? undefined : await serverSessions(ctx, targets, report.notes);
  for (const target of targets) {
    const listed = await listTarget(ctx, target);
    if (listed === undefined) {
      report.unlisted.push(target.harness);
      continue;
    }
    report.harnesses.push({
      harness: target.harness,
      profile: target.interval.profile,
      sessions: listed.observed.length,
      truncated: listed.truncated,
    });
    const recent = listed.observed.filter((s) => options.sinceUnixMs === undefined || s.mtimeMs >= options.sinceUnixMs);
    report.skipped.before_since += listed.observed.length - recent.length;
    const captured = await lastCaptures(ctx, target.harness, recent);
    const cursors = (await readCursors(ctx, target.harness))?.sessions ?? {};
    for (const s of recent) {
      const read = captured.get(s.id)?.read_started_at_unix_ms;
      if (read !== undefined && s.mtimeMs + MTIME_MARGIN_MS < read) {
        report.skipped.captured++;
        continue;
      }
      const uploaded = server?.get(`${target.harness}\0${s.id}`);
      if (uploaded !== undefined && s.mtimeMs + MTIME_MARGIN_MS < uploaded) {
        report.skipped.on_server++;
        continue;
      }
      const queued = cursors[s.id]?.queued;
      if (queued !== undefined && queued.size === s.size && queued.mtime_ms === s.mtimeMs) {
        // Handed to the spool already (by the sweep or an earlier backfill): its build decides.
        report.skipped.queued++;
        continue;
      }
      const version = (await listed.sessions.get(s.id)!.version()) ?? null;
      const introduced = target.interval.introduced;
      const older =
        version !== null &&
        introduced !== undefined &&
        semver.valid(version) !== null &&
        semver.lt(version, introduced);
      report.candidates.push({
        harness: target.harness,
        profile: target.interval.profile,
        session_id: s.id,
        file: s.path,
        size: s.size,
        mtime_ms: s.mtimeMs,
        version,
        resumable: !older,
      });
    }
  }
  report.candidates.sort((a, b) => a.mtime_ms - b.mtime_ms || (a.session_id < b.session_id ? -1 : 1));
  if (options.max !== undefined && report.candidates.length > options.max) {
    report.remaining = report.candidates.length - options.max;
    report.candidates = report.candidates.slice(0, options.max);
  }
  return report;
}

/** The Control API's sessions of these harnesses: when each was captured, by harness and native id. */
async function serverSessions(
  ctx: Context,
  targets: CaptureTarget[],
  notes: string[],
): Promise<Map<string, number> | undefined> {
  let api: SessionsApi;
  try {
    api = await SessionsApi.fromContext(ctx);
  } catch (error) {
    notes.push(`the Control API was not asked which sessions it holds: ${toBlueError(error).message}`);
    return undefined;
  }
  const found = new Map<string, number>();
  try {
    for (const target of targets) {
      const { items, truncated } = await api.list({ harness: target.harness }, { max: 5000 });
      if (truncated)
        notes.push(
          `the Control API holds more ${target.harness} sessions than were listed; sessions beyond them are ` +
            `captured again only if their content changed`,
        );
      for (const item of items) {
        const at = Date.parse(item.source_captured_at ?? '');
        if (Number.isNaN(at)) continue;
        const key = `${item.harness}\0${item.native_session_id}`;
        found.set(key, Math.max(found.get(key) ?? 0, at));
      }
    }
  } catch (error) {
    notes.push(
      `the Control API could not be asked which sessions it holds (${toBlueError(error).message}); what this ` +
        `machine captured before is still skipped`,
    );
    return undefined;
  } finally {
    await api.close().catch(() => undefined);
  }
  return found;
}

/** Finds the sessions to backfill and, unless dry, captures them in batches at a bounded rate. */
export async function backfill(
  ctx: Context,
  policy: GovernancePolicy,
  options: BackfillOptions,
): Promise<BackfillReport> {
  const found = await findBackfill(ctx, policy, options);
  const report: BackfillReport = { ...found, built: 0, uploaded: 0, unchanged: 0, failed: [] };
  if (options.dryRun) return report;
  const batch = Math.max(1, options.batch ?? DEFAULT_BATCH);
  const perMinute = Math.max(1, options.perMinute ?? DEFAULT_PER_MINUTE);
  const wait = options.wait ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const spool = await Spool.open(ctx.paths, { now: () => ctx.clock.now() });
  let done = 0;
  for (let start = 0; start < report.candidates.length; start += batch) {
    const begun = Date.now();
    const slice = report.candidates.slice(start, start + batch);
    for (const c of slice) {
      const record = await spool.enqueueIntake({
        harness: c.harness,
        profile: c.profile,
        payload: { session_id: c.session_id, transcript_path: c.file },
        createdAtUnixMs: ctx.clock.now(),
        reason: 'backfill',
        ...(c.resumable ? {} : { resumable: false as const }),
      });
      await appendCaptureLog(ctx.paths.captureLogFile, {
        event: 'spooled',
        harness: c.harness,
        profile: c.profile,
        session_id: c.session_id,
        record: record.id,
        capture_reason: 'backfill',
      });
      await updateCursors(ctx, c.harness, async (file) => {
        file.sessions[c.session_id] = {
          path: c.file,
          size: c.size,
          mtime_ms: c.mtime_ms,
          queued: { size: c.size, mtime_ms: c.mtime_ms, at_unix_ms: ctx.clock.now() },
        };
        file.backfill_captures++;
      });
    }
    if (options.drainBatches !== false) tally(report, await drain(ctx, { once: true, settleMs: 0 }));
    done += slice.length;
    options.onProgress?.(done, report.candidates.length, slice[slice.length - 1]!);
    // The rate: a batch of n takes at least n/perMinute minutes.
    const due = (slice.length / perMinute) * 60_000 - (Date.now() - begun);
    if (done < report.candidates.length && due > 0) await wait(due);
  }
  if (report.remaining === 0) {
    await writeStateFile(
      ctx.paths.backfillStateFile,
      `${JSON.stringify({ format: BACKFILL_FORMAT, finished_at_unix_ms: ctx.clock.now(), captured: done })}\n`,
    ).catch(() => undefined);
  }
  return report;
}

const BACKFILL_FORMAT = 'blue-agent-backfill-v1';

/** When a backfill last went through every session (undefined: never on this machine). */
export async function backfillFinishedAt(ctx: Context): Promise<number | undefined> {
  try {
    const bytes = await readChecked(ctx.paths.backfillStateFile, {
      code: 'SPOOL_UNSAFE',
      maxBytes: 4096,
      optional: true,
    });
    const doc =
      bytes === undefined
        ? undefined
        : (JSON.parse(bytes.toString('utf8')) as { format?: unknown; finished_at_unix_ms?: unknown });
    return doc?.format === BACKFILL_FORMAT && typeof doc.finished_at_unix_ms === 'number'
      ? doc.finished_at_unix_ms
      : undefined;
  } catch {
    return undefined;
  }
}

function tally(report: BackfillReport, drained: DrainReport): void {
  report.built += drained.built.length;
  report.uploaded += drained.uploaded.length;
  report.unchanged += drained.unchanged.length;
  for (const f of drained.failed) report.failed.push({ session_id: f.session_id, code: f.code, reason: f.reason });
  for (const note of drained.notes) if (!report.notes.includes(note)) report.notes.push(note);
}
