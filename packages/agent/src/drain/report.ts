/**
 * What a drain reports (`blue-agent drain --json`, the agent's last-drain summary): what was built, uploaded,
 * failed, retried, discarded and left waiting, and why uploads were skipped or the drain stopped.
 */
import type { HeldRecord, RecoveryReport, SpoolRecord, SpoolView } from '../spool/index.js';

export interface UploadedEntry {
  id: string;
  harness: string;
  /** The harness's own session id. */
  session_id: string;
  /** The artifact's id on the Control API (what presign answered). */
  upload_id: string;
  /** The captured session's id on the Control API (what `sessions` and `resume` take), when the server says it. */
  captured_session_id?: string;
  /** The Control API held these bytes already (an earlier, interrupted drain had uploaded them). */
  already: boolean;
  size: number;
  sha256: string;
}

export interface BuiltEntry {
  id: string;
  harness: string;
  profile: string;
  session_id: string;
  size: number;
  sha256: string;
}

/** A capture whose session held exactly what its last capture held: removed, nothing uploaded. */
export interface UnchangedEntry {
  id: string;
  harness: string;
  session_id: string;
  /** The spool record of the capture that holds this content. */
  same_as: string;
}

export interface FailedEntry {
  id: string;
  harness: string;
  profile: string;
  session_id: string;
  code: string;
  reason: string;
  attempts: number;
  /** Which stage failed; absent means build. */
  stage?: 'build' | 'upload';
  /** Upload retries: when the record is due again. */
  next_attempt_at_unix_ms?: number;
}

/** A capture removed unbuilt: a later capture of the same harness run will hold the session's last state. */
export interface SupersededEntry {
  id: string;
  harness: string;
  session_id: string;
  /** The later capture. */
  by: string;
}

/** A capture waiting for its harness process to exit. */
export interface DeferredEntry {
  id: string;
  harness: string;
  session_id: string;
  pid: number;
}

/** An idle or backfill capture dropped unbuilt: the session was being written to after all (the sweep tries again). */
export interface ChangingEntry {
  id: string;
  harness: string;
  session_id: string;
  reason: string;
}

/** A record left waiting (in intake or ready) that this drain did not try: it is not due yet after an earlier failure.
 * */
export interface WaitingEntry {
  id: string;
  /** `intake`: waiting to be built; `ready`: built, waiting to be uploaded. */
  state: 'intake' | 'ready';
  harness: string;
  profile: string;
  session_id: string;
  /** The earlier failure that keeps it waiting. */
  code: string;
  reason: string;
  failed_at_unix_ms: number;
  /** Build attempts, or upload attempts for a ready record. */
  attempts: number;
  /** When a drain takes it again (null: the next one). */
  next_attempt_at_unix_ms: number | null;
}

export interface DrainReport {
  recovered: RecoveryReport & { temps_removed: number };
  built: BuiltEntry[];
  /** Captures removed without a bundle: the session had not changed since its last capture. */
  unchanged: UnchangedEntry[];
  /**
   * Captures removed without a bundle because a later one of the same session, waiting for the same harness process
   * to exit, will capture its last state (a capture event that fires after every turn).
   */
  superseded: SupersededEntry[];
  /** Failed for good in this run. */
  failed: FailedEntry[];
  /** Failed in this run, kept in intake for a later drain. */
  retried: FailedEntry[];
  /** Records still waiting in intake when the drain ended. */
  left: number;
  /** Uploaded to the Control API (and removed from the spool) in this run. */
  uploaded: UploadedEntry[];
  /** Ready records removed without upload (`--discard` while the policy disables capture). */
  discarded: string[];
  /** Ready records (built bundles) still waiting for upload when the drain ended. */
  left_ready: number;
  /**
   * Records left waiting in intake or ready that this drain did not try (not due yet), with the earlier failure that
   * keeps them waiting (records retried in this run are in `retried` instead). Any of them makes the drain not ok.
   */
  waiting: WaitingEntry[];
  /**
   * Captures left in intake because the harness that fired them still runs (their profile waits for it to exit):
   * built by a later drain once it has. Not a failure.
   */
  deferred: DeferredEntry[];
  /** Idle and backfill captures dropped because their session changed while it was read: not idle after all. */
  changing: ChangingEntry[];
  /**
   * Records another drain held when this one ended (being built or uploaded by it, a live process): this drain could
   * not try them, and what becomes of them is that drain's to report. Any of them makes the drain not ok.
   */
  held: HeldRecord[];
  /**
   * Why uploads were skipped or cut short, when they were: no Control API configured and capture disabled (not
   * errors); the policy could not be checked, the Control API could not be reached, or it refused the token (with
   * the error code and what to do).
   */
  notes: string[];
  /** Why the drain stopped early (a full disk), if it did. */
  stopped?: { code: string; reason: string };
}

/** The record's earlier failure, when it has one (a record that never failed is just waiting its turn). */
export async function waitingEntry(
  spool: SpoolView,
  state: 'intake' | 'ready',
  id: string,
): Promise<WaitingEntry | undefined> {
  const record = await spool.peek(state, id);
  // Moved on meanwhile, or unreadable (the next claim fails it with the reason).
  if (record === undefined) return undefined;
  const error = record.last_error;
  if (error === undefined || typeof error !== 'object' || error === null) return undefined;
  return {
    id,
    state,
    harness: String(record.harness ?? '?'),
    profile: String(record.profile ?? '?'),
    session_id: String(record.payload?.session_id ?? '?'),
    code: String(error.code),
    reason: String(error.message),
    failed_at_unix_ms: Number(error.at_unix_ms),
    attempts: Number((state === 'ready' ? record.upload_attempts : record.attempts) ?? 0),
    next_attempt_at_unix_ms: typeof record.next_attempt_at_unix_ms === 'number' ? record.next_attempt_at_unix_ms : null,
  };
}

/** The report entry of a record that failed, for good or for now. */
export function failedEntry(record: SpoolRecord, code: string, reason: string): FailedEntry {
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
