/**
 * Pure: from the sessions a harness has on disk, the sweep's cursors and what was last captured of each session, which
 * sessions went idle without their latest content being captured (capture them now), and the cursors to keep.
 *
 * A session is
 *   - captured: its last capture began reading after the session's file last changed (with a margin for coarse file
 *     times), so that capture holds everything;
 *   - history: unchanged since before the agent started watching this harness and never captured: backfill's, not the
 *     sweep's (a first start must not upload years of sessions unasked);
 *   - queued: a capture of exactly this state (size and modification time) was already handed to the spool; its build
 *     either captures it or finds it unchanged, and a failure is not retried for the same state;
 *   - idle: changed since, never captured, and left alone for the idle time: captured now;
 *   - active: changed since, never captured, still being written to (or not for long enough): looked at again once
 *     the idle time has passed.
 */

/** A file time may be this much older than the write that set it (coarse kernel clocks). */
export const MTIME_MARGIN_MS = 500;

export interface Cursor {
  path: string;
  size: number;
  mtime_ms: number;
  /** The content digest of the capture that holds this state, once known. */
  captured_sha256?: string;
  /** The state a capture was handed to the spool for, and when. */
  queued?: { size: number; mtime_ms: number; at_unix_ms: number };
}

export interface Observed {
  id: string;
  path: string;
  size: number;
  mtimeMs: number;
}

export interface LastCapture {
  content_sha256: string;
  read_started_at_unix_ms?: number;
}

export type SessionState = 'captured' | 'history' | 'queued' | 'idle' | 'active';

export interface SweepPlanInput {
  now: number;
  idleMs: number;
  /** When the agent started watching this harness: older untouched sessions are history. */
  since: number;
  sessions: readonly Observed[];
  cursors: Readonly<Record<string, Cursor>>;
  /** Last captures of the sessions `needsLookup` named. */
  captured: ReadonlyMap<string, LastCapture>;
  /** The listing was cut short: cursors of sessions not listed are kept, not dropped. */
  truncated: boolean;
}

export interface SweepPlan {
  cursors: Record<string, Cursor>;
  /** Idle and uncaptured: capture these. */
  capture: Observed[];
  counts: Record<SessionState, number>;
  /** The earliest time an active session becomes idle, if any is active. */
  nextDueAt?: number;
}

function sameState(a: { size: number; mtime_ms: number } | undefined, s: Observed): boolean {
  return a !== undefined && a.size === s.size && a.mtime_ms === s.mtimeMs;
}

/** The sessions whose last capture must be read before planning: new, changed, or with a capture on its way. */
export function needsLookup(sessions: readonly Observed[], cursors: Readonly<Record<string, Cursor>>): Observed[] {
  return sessions.filter((s) => {
    const c = cursors[s.id];
    return c === undefined || !sameState(c, s) || c.queued !== undefined || c.path !== s.path;
  });
}

export function planSweep(input: SweepPlanInput): SweepPlan {
  const cursors: Record<string, Cursor> = input.truncated ? { ...input.cursors } : {};
  const capture: Observed[] = [];
  const counts: Record<SessionState, number> = { captured: 0, history: 0, queued: 0, idle: 0, active: 0 };
  let nextDueAt: number | undefined;
  for (const s of input.sessions) {
    const before = input.cursors[s.id];
    const unchanged = before !== undefined && sameState(before, s) && before.path === s.path;
    const base: Cursor = { path: s.path, size: s.size, mtime_ms: s.mtimeMs };
    const last = input.captured.get(s.id);
    let state: SessionState;
    if (last?.read_started_at_unix_ms !== undefined && s.mtimeMs + MTIME_MARGIN_MS < last.read_started_at_unix_ms) {
      state = 'captured';
      cursors[s.id] = { ...base, captured_sha256: last.content_sha256 };
    } else if (unchanged && before.captured_sha256 !== undefined && before.queued === undefined) {
      state = 'captured';
      cursors[s.id] = before;
    } else if (s.mtimeMs < input.since) {
      state = 'history';
      cursors[s.id] = base;
    } else if (before?.queued !== undefined && sameState(before.queued, s)) {
      state = 'queued';
      cursors[s.id] = { ...base, queued: before.queued };
    } else if (input.now - s.mtimeMs >= input.idleMs) {
      state = 'idle';
      capture.push(s);
      cursors[s.id] = { ...base, queued: { size: s.size, mtime_ms: s.mtimeMs, at_unix_ms: input.now } };
    } else {
      state = 'active';
      cursors[s.id] = base;
      const due = s.mtimeMs + input.idleMs;
      nextDueAt = nextDueAt === undefined ? due : Math.min(nextDueAt, due);
    }
    counts[state]++;
  }
  return { cursors, capture, counts, ...(nextDueAt === undefined ? {} : { nextDueAt }) };
}
