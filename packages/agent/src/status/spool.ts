/**
 * The spool seen from outside, without changing it: counts per state and the oldest record still waiting. A spool
 * that does not exist yet is empty (it is not created here), and one that fails the spool's own safety check is still
 * counted, from its file names, so that status can show what is stuck in it.
 */
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { SpoolView, type ListedRecord, type RecordState } from '../spool/index.js';
import { errorInfo, type ErrorInfo } from './policy.js';

export interface WaitingRecord {
  id: string;
  state: RecordState;
  harness: string | null;
  session_id: string | null;
  created_at_unix_ms: number | null;
  attempts: number;
  last_error: string | null;
  next_attempt_at_unix_ms: number | null;
}

export interface SpoolStatus {
  root: string;
  exists: boolean;
  counts: Record<RecordState, number>;
  /** Captures the sh hook handed over that no drain has admitted yet (counted in `waiting`). */
  handed_over: number;
  /** Records not yet uploaded and not failed. */
  waiting: number;
  oldest_waiting: WaitingRecord | null;
  /** The spool's safety check refused it (SPOOL_UNSAFE): captures are refused until it is fixed. */
  unsafe?: ErrorInfo;
  error?: ErrorInfo;
}

export async function readSpoolStatus(ctx: Context): Promise<SpoolStatus> {
  const view = new SpoolView(ctx.paths);
  const root = view.root;
  const empty = (): SpoolStatus => ({
    root,
    exists: false,
    counts: { intake: 0, building: 0, ready: 0, uploading: 0, failed: 0 },
    handed_over: 0,
    waiting: 0,
    oldest_waiting: null,
  });
  if (!(await view.exists())) return empty();
  const status = { ...empty(), exists: true, handed_over: await view.handedOver().catch(() => 0) };
  let records: ListedRecord[] | undefined;
  try {
    // Reading records checks the spool's safety, which a spool that lacks folders fails: that one is counted by name.
    if (await view.complete()) records = await view.listRecords();
  } catch (error) {
    if (error instanceof BlueError && error.code === 'SPOOL_UNSAFE') status.unsafe = errorInfo(error);
    else status.error = errorInfo(error);
  }
  if (records === undefined) {
    try {
      records = await view.listByName();
    } catch (error) {
      status.error ??= errorInfo(error);
      return status;
    }
  }
  return summarise(status, records);
}

function summarise(status: SpoolStatus, records: readonly ListedRecord[]): SpoolStatus {
  for (const r of records) status.counts[r.state]++;
  const waiting = records.filter((r) => r.state !== 'failed');
  status.waiting = waiting.length + status.handed_over;
  // Record ids sort by creation time.
  const oldest = [...waiting].sort((a, b) => createdAt(a) - createdAt(b) || (a.id < b.id ? -1 : 1))[0];
  if (oldest !== undefined) {
    status.oldest_waiting = {
      id: oldest.id,
      state: oldest.state,
      harness: oldest.harness === '?' ? null : oldest.harness,
      session_id: oldest.session_id === '?' ? null : oldest.session_id,
      created_at_unix_ms: oldest.created_at_unix_ms ?? idTime(oldest.id) ?? null,
      attempts: oldest.attempts + oldest.upload_attempts,
      last_error: oldest.last_error,
      next_attempt_at_unix_ms: oldest.next_attempt_at_unix_ms,
    };
  }
  return status;
}

function createdAt(r: ListedRecord): number {
  return r.created_at_unix_ms ?? idTime(r.id) ?? Number.MAX_SAFE_INTEGER;
}

/** A record id starts with its creation time in base-36 milliseconds. */
function idTime(id: string): number | undefined {
  const ms = Number.parseInt(id.slice(0, 9), 36);
  return Number.isFinite(ms) ? ms : undefined;
}
