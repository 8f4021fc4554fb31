/**
 * What the long-running agent and the drains leave behind for `status` and `doctor` to read: small JSON files in the
 * state directory, written atomically. A missing or unreadable file reads as "unknown", never as an error: status
 * must work on a machine where nothing has run yet.
 */
import { readFile } from 'node:fs/promises';
import type { Context } from '../context.js';
import { writeStateFile } from '@blue-agent/contract/util/fs.js';

/** `<state>/last-drain.json`: the outcome of the most recent drain, whoever ran it (hook worker, service, person). */
export interface LastDrain {
  finished_at_unix_ms: number;
  /** Nothing failed, nothing left to retry, nothing held by another drain, not stopped early. */
  ok: boolean;
  built: number;
  uploaded: number;
  failed: number;
  retried: number;
  /** Records still waiting to be built / uploaded when it ended. */
  left: number;
  left_ready: number;
  /** Of those, records left waiting after an earlier failure (not tried: not due yet). Absent in earlier versions'
   * files. */
  waiting?: number;
  /**
   * Records another drain held when it ended (at most 20 named): it could not try them, and their outcome is that
   * drain's. Absent when none (and in files of earlier versions).
   */
  held?: { id: string; state: 'building' | 'uploading'; pid: number }[];
  /** Why it stopped early (a full disk, uploads refused), when it did. */
  stopped?: { code: string; reason: string };
  notes: string[];
}

/** `<state>/agent-run.json`: the running agent's view, rewritten after each policy check, reconcile and drain. */
export interface AgentRunState {
  pid: number;
  started_at_unix_ms: number;
  /** Last time the file was written: a dead agent's file stops changing. */
  updated_at_unix_ms: number;
  policy?: {
    revision: number | string;
    source: 'file' | 'fetched' | 'cached';
    /** When the Control API last returned or confirmed it. */
    fetched_at_unix_ms?: number;
    /** Consecutive failed fetches, and when the next one is due. */
    failures: number;
    next_check_at_unix_ms: number;
    last_error?: { code: string; message: string };
    /** When the latest check ran (added later; optional). */
    checked_at_unix_ms?: number;
  };
  last_reconcile?: {
    at_unix_ms: number;
    ok: boolean;
    corrected: string[];
    error?: { code: string; message: string };
    /** What started it: a new policy revision, a changed config file (drift), the periodic sweep, start-up. */
    trigger?: string;
  };
  next_drain_at_unix_ms?: number;
  /** Fields below were added later; readers must treat each as optional. */
  /** The id this installation reports to the Control API as (`POST /client-status`). */
  instance_id?: string;
  /** The drain schedule in force (cron expression). */
  drain_schedule?: string;
  /** The most recent drain the agent ran. */
  last_drain?: {
    at_unix_ms: number;
    ok: boolean;
    trigger: string;
    uploaded: number;
    built: number;
    failed: number;
    interrupted: boolean;
  };
  /** Whether the latest `POST /client-status` went through. */
  last_status_report?: { at_unix_ms: number; ok: boolean; error?: string };
  /** Where the agent logs: `stdout` or the log file's path. */
  log?: string;
  /** Set when the agent stopped cleanly (SIGTERM/SIGINT). */
  stopped_at_unix_ms?: number;
  /** The most recent idle sweep: sessions captured because they went idle without their end hook, and backfill's part.
   * */
  last_sweep?: {
    at_unix_ms: number;
    ok: boolean;
    idle_ms: number;
    enqueued: number;
    /** Sessions still being written to, not captured yet. */
    active: number;
    backfill_enqueued?: number;
    backfill_remaining?: number;
    error?: { code: string; message: string };
  };
}

export function lastDrainPath(ctx: Context): string {
  return ctx.paths.lastDrainFile;
}

export function runStatePath(ctx: Context): string {
  return ctx.paths.runStateFile;
}

export async function writeLastDrain(ctx: Context, drain: LastDrain): Promise<void> {
  await writeStateFile(lastDrainPath(ctx), `${JSON.stringify(drain, null, 2)}\n`);
}

export async function readLastDrain(ctx: Context): Promise<LastDrain | undefined> {
  return readJsonObject<LastDrain>(
    lastDrainPath(ctx),
    (v) => typeof v.finished_at_unix_ms === 'number' && typeof v.ok === 'boolean',
  );
}

export async function writeRunState(ctx: Context, state: AgentRunState): Promise<void> {
  await writeStateFile(runStatePath(ctx), `${JSON.stringify(state, null, 2)}\n`);
}

export async function readRunState(ctx: Context): Promise<AgentRunState | undefined> {
  return readJsonObject<AgentRunState>(
    runStatePath(ctx),
    (v) => typeof v.pid === 'number' && typeof v.updated_at_unix_ms === 'number',
  );
}

async function readJsonObject<T>(
  file: string,
  valid: (value: Record<string, unknown>) => boolean,
): Promise<T | undefined> {
  try {
    const value = JSON.parse(await readFile(file, 'utf8')) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !valid(value as Record<string, unknown>))
      return undefined;
    return value as T;
  } catch {
    return undefined;
  }
}
