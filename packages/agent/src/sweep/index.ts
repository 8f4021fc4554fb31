/**
 * The idle sweep (`blue-agent run`): every active harness's sessions on disk are compared with their cursors, and a
 * session that went idle without its latest content being captured — its end hook never ran: a killed harness, a
 * closed terminal, a laptop that died — is handed to the spool exactly as its hook would have handed it (same
 * profile, same bundle, same drain), marked `capture_reason: idle`. The build takes a consistent snapshot or none
 * (SESSION_CHANGING), and content already captured is never uploaded twice (drain/captured.ts). Reads listings and
 * `stat`s; writes the cursors and the intake records.
 */
import { appendCaptureLog } from '../capture/log.js';
import type { Context } from '../context.js';
import { lastCapture } from '../drain/captured.js';
import { ADAPTERS } from '../harnesses/index.js';
import type { NativeSession } from '../harnesses/types.js';
import { captureTargets, type CaptureTarget } from '../reconcile/index.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { Spool } from '../spool/index.js';
import { MAX_SESSIONS, updateCursors } from './cursors.js';
import { needsLookup, planSweep, type LastCapture, type Observed, type SessionState } from './plan.js';

/** The policy's session_upload.idle_capture_minutes when absent. */
export const DEFAULT_IDLE_MINUTES = 30;

export interface HarnessSweep {
  harness: string;
  profile: string;
  sessions: number;
  counts: Record<SessionState, number>;
  /** Captures handed to the spool by this sweep. */
  enqueued: { record: string; session_id: string }[];
  truncated: boolean;
  next_due_at_unix_ms?: number;
}

export interface SweepReport {
  idle_ms: number;
  harnesses: HarnessSweep[];
  /** Folders to watch for sessions changing (and the depth of the sessions' files below each). */
  watch: { dir: string; depth: number }[];
  /** Active harnesses whose sessions cannot be listed (captured by their hook alone). */
  unlisted: string[];
  /** The earliest time a session becomes idle, if any is being written to. */
  next_due_at_unix_ms?: number;
}

export interface SweepOptions {
  /** Overrides the policy's idle time (tests). */
  idleMs?: number;
  /** The harnesses to sweep; default: captureTargets of the policy. */
  targets?: CaptureTarget[];
}

export function idleMsOf(policy: GovernancePolicy): number {
  return (policy.session_upload?.idle_capture_minutes ?? DEFAULT_IDLE_MINUTES) * 60_000;
}

/** One harness's sessions as the planner sees them, with the listing's lazy facts kept beside. */
export async function listTarget(
  ctx: Context,
  target: CaptureTarget,
): Promise<
  | {
      sessions: Map<string, NativeSession>;
      observed: Observed[];
      truncated: boolean;
      watch: { dir: string; depth: number }[];
    }
  | undefined
> {
  const adapter = ADAPTERS[target.harness];
  if (adapter.listSessions === undefined) return undefined;
  const listing = await adapter.listSessions(ctx, target.interval, MAX_SESSIONS);
  const sessions = new Map<string, NativeSession>();
  const observed: Observed[] = [];
  for (const s of listing.sessions) {
    // One id, one session: the first listed wins (a copy in a second folder is not captured twice).
    if (sessions.has(s.payload.session_id)) continue;
    sessions.set(s.payload.session_id, s);
    observed.push({ id: s.payload.session_id, path: s.file, size: s.size, mtimeMs: s.mtimeMs });
  }
  return { sessions, observed, truncated: listing.truncated, watch: listing.watch };
}

export async function lastCaptures(
  ctx: Context,
  harness: string,
  sessions: readonly Observed[],
): Promise<Map<string, LastCapture>> {
  const found = new Map<string, LastCapture>();
  for (const s of sessions) {
    const last = await lastCapture(ctx, harness, s.id);
    if (last !== undefined) found.set(s.id, last);
  }
  return found;
}

export async function sweepIdle(
  ctx: Context,
  policy: GovernancePolicy,
  options: SweepOptions = {},
): Promise<SweepReport> {
  const idleMs = options.idleMs ?? idleMsOf(policy);
  const report: SweepReport = { idle_ms: idleMs, harnesses: [], watch: [], unlisted: [] };
  if (policy.session_upload === undefined) return report;
  const targets = options.targets ?? (await captureTargets(ctx, policy));
  let spool: Spool | undefined;
  for (const target of targets) {
    const listed = await listTarget(ctx, target);
    if (listed === undefined) {
      report.unlisted.push(target.harness);
      continue;
    }
    report.watch.push(...listed.watch);
    const entry = await updateCursors(ctx, target.harness, async (file) => {
      const captured = await lastCaptures(ctx, target.harness, needsLookup(listed.observed, file.sessions));
      const plan = planSweep({
        now: ctx.clock.now(),
        idleMs,
        since: file.watching_since_unix_ms,
        sessions: listed.observed,
        cursors: file.sessions,
        captured,
        truncated: listed.truncated,
      });
      const enqueued: HarnessSweep['enqueued'] = [];
      for (const s of plan.capture) {
        spool ??= await Spool.open(ctx.paths, { now: () => ctx.clock.now() });
        const native = listed.sessions.get(s.id)!;
        const record = await spool.enqueueIntake({
          harness: target.harness,
          profile: target.interval.profile,
          payload: native.payload,
          createdAtUnixMs: ctx.clock.now(),
          reason: 'idle',
        });
        enqueued.push({ record: record.id, session_id: s.id });
        await appendCaptureLog(ctx.paths.captureLogFile, {
          event: 'spooled',
          harness: target.harness,
          profile: target.interval.profile,
          session_id: s.id,
          record: record.id,
          capture_reason: 'idle',
        });
      }
      file.sessions = plan.cursors;
      file.idle_captures += enqueued.length;
      return {
        harness: target.harness,
        profile: target.interval.profile,
        sessions: listed.observed.length,
        counts: plan.counts,
        enqueued,
        truncated: listed.truncated,
        ...(plan.nextDueAt === undefined ? {} : { next_due_at_unix_ms: plan.nextDueAt }),
      } satisfies HarnessSweep;
    });
    report.harnesses.push(entry);
    if (entry.next_due_at_unix_ms !== undefined)
      report.next_due_at_unix_ms = Math.min(report.next_due_at_unix_ms ?? Infinity, entry.next_due_at_unix_ms);
  }
  return report;
}
