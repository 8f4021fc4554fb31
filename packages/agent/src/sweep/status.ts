/**
 * What `status` and `doctor` say about sessions captured without their end hook: per harness, the sessions the sweep
 * follows and what became of them, the captures the sweep and backfill made, and the sessions the harness's own
 * cleanup will delete within a week that were never uploaded. Reads only.
 */
import type { Context } from '../context.js';
import { lastCapture } from '../drain/captured.js';
import { ADAPTERS } from '../harnesses/index.js';
import type { HarnessName, Interval } from '@blue-agent/contract/schema/index.js';
import { backfillFinishedAt } from './backfill.js';
import { MAX_SESSIONS, readCursors } from './cursors.js';
import { MTIME_MARGIN_MS } from './plan.js';

/** A session the harness deletes within this many days counts as at risk. */
export const AT_RISK_DAYS = 7;

export interface HarnessSessions {
  harness: string;
  /** Sessions on disk the profile can read. */
  on_disk: number;
  /** Of those, captured since they last changed (by this machine). */
  captured: number;
  /** When the agent started following this harness's sessions; null: it has not yet. */
  watching_since_unix_ms: number | null;
  /** Captures the sweep made because a session went idle without its end hook, over all time. */
  idle_captures: number;
  /** Captures backfill made, over all time. */
  backfill_captures: number;
  /** Never uploaded and due for the harness's own deletion within AT_RISK_DAYS. */
  at_risk: { count: number; days: number; setting: string; file: string } | null;
}

export interface SessionsStatus {
  harnesses: HarnessSessions[];
  /** When a backfill last went through every session; null: never on this machine. */
  backfill_finished_at_unix_ms: number | null;
}

export async function sessionsStatus(
  ctx: Context,
  targets: readonly { harness: HarnessName; interval: Interval }[],
): Promise<SessionsStatus> {
  const now = ctx.clock.now();
  const harnesses: HarnessSessions[] = [];
  for (const { harness, interval } of targets) {
    const adapter = ADAPTERS[harness];
    if (adapter.listSessions === undefined) continue;
    const listing = await adapter.listSessions(ctx, interval, MAX_SESSIONS);
    const cursors = await readCursors(ctx, harness);
    const cleanup = (await adapter.sessionCleanup?.(ctx)) ?? undefined;
    const deadline = cleanup === undefined ? undefined : now - (cleanup.days - AT_RISK_DAYS) * 86_400_000;
    let captured = 0;
    let atRisk = 0;
    for (const s of listing.sessions) {
      const cursor = cursors?.sessions[s.payload.session_id];
      let isCaptured = cursor?.captured_sha256 !== undefined && cursor.size === s.size && cursor.mtime_ms === s.mtimeMs;
      const risky = deadline !== undefined && s.mtimeMs < deadline;
      if (!isCaptured) {
        const read = (await lastCapture(ctx, harness, s.payload.session_id))?.read_started_at_unix_ms;
        isCaptured = read !== undefined && s.mtimeMs + MTIME_MARGIN_MS < read;
      }
      if (isCaptured) captured++;
      else if (risky) atRisk++;
    }
    harnesses.push({
      harness,
      on_disk: listing.sessions.length,
      captured,
      watching_since_unix_ms: cursors?.watching_since_unix_ms ?? null,
      idle_captures: cursors?.idle_captures ?? 0,
      backfill_captures: cursors?.backfill_captures ?? 0,
      at_risk:
        cleanup === undefined
          ? null
          : { count: atRisk, days: cleanup.days, setting: cleanup.setting, file: cleanup.file },
    });
  }
  return { harnesses, backfill_finished_at_unix_ms: (await backfillFinishedAt(ctx)) ?? null };
}
