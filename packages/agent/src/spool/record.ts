/**
 * The record format: what one spool record file holds (`blue-agent-spool-record-v1`), its ids, how a record file is
 * read back, and the limits on retrying one.
 */
import type { HookPayload } from '../harnesses/types.js';
import { staleOwnerReason, systemLockWorld } from '../lock/liveness.js';
import { randomHex } from '@blue-agent/contract/util/startup/fs-light.js';

export const RECORD_FORMAT = 'blue-agent-spool-record-v1';

/** States a record can be listed in. */
export type RecordState = 'intake' | 'building' | 'ready' | 'uploading' | 'failed';

/** A capture waits for its harness to exit at most this long (a session left open for days is captured meanwhile). */
export const WAIT_FOR_EXIT_MAX_MS = 12 * 60 * 60_000;
/** Transient build failures before a record is failed for good. */
export const MAX_ATTEMPTS = 5;
/** Wait before the next build after the 1st, 2nd, 3rd, 4th... transient failure. */
export const RETRY_DELAYS_MS: readonly number[] = [30_000, 120_000, 600_000, 1_800_000];
/** Builds cut short by a crash (the worker was killed) before a record is failed for good: a record that kills the
 * worker every time must not loop. */
export const MAX_INTERRUPTIONS = 10;

export interface RecordError {
  code: string;
  message: string;
  at_unix_ms: number;
}

export interface SpoolRecord {
  format: typeof RECORD_FORMAT;
  id: string;
  harness: string;
  profile: string;
  /** The validated hook payload: ids and paths only, never free text. */
  payload: HookPayload;
  created_at_unix_ms: number;
  /** Build attempts that ended in a transient error. */
  attempts: number;
  /** Builds cut short because the worker died. */
  interruptions: number;
  last_error?: RecordError;
  /** After a transient failure: not built again before this time. */
  next_attempt_at_unix_ms?: number;
  /** Not built before this harness process has exited (its capture event fires after every turn). */
  wait_for_exit?: WaitForExit;
  /** What captured it when not the hook: the agent's idle sweep, or backfill. */
  capture_reason?: CaptureReason;
  /** false: the session's files predate its capture profile; it is uploaded as not resumable. */
  resumable?: false;
  /** Set on commit: the bundle in bundles/<id>.bundle. */
  bundle?: {
    size: number;
    sha256: string;
    built_at_unix_ms: number;
    /** `bundleIdentity` of the file as committed. */
    identity?: string;
    /** The bundle's manifest as written (when small): its upload need not inflate the bundle to find it. */
    manifest?: unknown;
  };
  /** Upload tries of the bundle that ended in an error to retry (kept apart from the build attempts). */
  upload_attempts?: number;
  /** Set on an upload claim once the Control API holds the bundle: what is left is removing the local copy. */
  uploaded?: { upload_id: string; at_unix_ms: number };
  failed_at_unix_ms?: number;
}

export interface IntakeInput {
  harness: string;
  profile: string;
  payload: HookPayload;
  createdAtUnixMs: number;
  /** Build it only once this process (the harness that fired the hook) has exited. */
  waitForExit?: WaitForExit;
  reason?: CaptureReason;
  resumable?: false;
  /** The record's id when it is known in advance (an admitted inbox file's); a new one otherwise. */
  id?: string;
}

/** Captures not made by a session's end hook: the agent found the session idle, or backfill found it never uploaded. */
export type CaptureReason = 'idle' | 'backfill';

/** A harness process a capture waits for (the profile's capture.wait_for_exit): its pid and start. */
export interface WaitForExit {
  pid: number;
  proc_start?: string;
  started_at_unix_ms?: number;
}

/**
 * Whether the harness a record waits for (wait_for_exit) may still run: its pid runs and started when recorded. A
 * record that names none, or one that cannot be read, does not wait.
 */
export function harnessRuns(record: Partial<SpoolRecord>): boolean {
  const wait = record.wait_for_exit;
  if (wait === undefined || wait === null || typeof wait !== 'object' || typeof wait.pid !== 'number') return false;
  const owner = {
    pid: wait.pid,
    procStart: wait.proc_start,
    processStartedAt: wait.started_at_unix_ms,
    recordedAt: record.created_at_unix_ms,
  };
  return staleOwnerReason(owner, systemLockWorld(), { foreign: 'stale', maxAgeMs: WAIT_FOR_EXIT_MAX_MS }) === undefined;
}

/** A new record id: sortable by creation time (base-36 milliseconds), then 40 random bits. */
export function newRecordId(nowMs: number): string {
  return `${Math.max(0, Math.trunc(nowMs)).toString(36).padStart(9, '0').slice(-9)}-${randomHex(10)}`;
}

/** The record in `text`, or why it is not one. */
export function parseRecord(text: string, id: string): SpoolRecord | string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return 'the record file is not valid JSON';
  }
  const r = data as Partial<SpoolRecord> | null;
  if (r === null || typeof r !== 'object' || r.format !== RECORD_FORMAT)
    return `the record file is not a ${RECORD_FORMAT}`;
  if (r.id !== id) return `the record file names id ${String(r.id)}, not ${id}`;
  if (typeof r.harness !== 'string' || typeof r.profile !== 'string') return 'the record has no harness or profile';
  if (r.payload === null || typeof r.payload !== 'object' || typeof r.payload.session_id !== 'string')
    return 'the record has no session id';
  if (typeof r.created_at_unix_ms !== 'number') return 'the record has no creation time';
  const record = {
    ...r,
    attempts: typeof r.attempts === 'number' ? r.attempts : 0,
    interruptions: typeof r.interruptions === 'number' ? r.interruptions : 0,
  } as SpoolRecord;
  if (record.capture_reason !== undefined && record.capture_reason !== 'idle' && record.capture_reason !== 'backfill')
    delete record.capture_reason;
  if (record.resumable !== undefined && record.resumable !== false) delete record.resumable;
  return record;
}

export function damagedRecord(id: string): SpoolRecord {
  return {
    format: RECORD_FORMAT,
    id,
    harness: '?',
    profile: '?',
    payload: { session_id: '?' },
    created_at_unix_ms: 0,
    attempts: 0,
    interruptions: 0,
  };
}
