/**
 * The capture hook: what runs inside the harness's session-end budget (1 s by default for the tightest). It reads and
 * checks the payload, writes a small intake record into the spool, starts the detached drain process and returns. Its
 * cost does not depend on the session: the transcript is never opened here, only named.
 *
 * Start-up stays lean: this module and what it imports load Node built-ins (not node:crypto), the spool and the log
 * only. Profiles come from the document cache file (the validated data reconcile stored, keyed by the profile files'
 * exact text); YAML and the schema validators are loaded only when it does not match.
 */
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import { HARNESSES } from '../harnesses/names.js';
import type { HookPayload } from '../harnesses/types.js';
import { Spool, type SpoolIO, type SpoolRecord, type WaitForExit } from '../spool/index.js';
import { harnessProcess } from './harness-process.js';
import { appendCaptureLog, safeName } from './log.js';
import { checkProfile, refused } from './profiles.js';
import { MIN_READ_WINDOW_MS, parsePayload, PAYLOAD_DEADLINE_MS, PayloadRefused, readPayloadText } from './payload.js';

export interface CaptureArgs {
  harness: string;
  profile: string;
}

export interface HookOptions {
  stdin: Readable;
  /** Milliseconds to wait for the payload; default: until PAYLOAD_DEADLINE_MS after the process started. */
  deadlineMs?: number;
  /**
   * Starts the drain that builds the bundle; default: a detached `blue-agent drain --quiet` (with `--linger` when the
   * capture waits for the harness to exit).
   */
  startDrain?: (ctx: Context, options: { linger: boolean }) => number | undefined;
  /** Finds the harness process a capture waits for; default: the nearest ancestor that is not a shell. */
  harnessProcess?: () => WaitForExit | undefined;
  /** Replaces file writes in the spool (tests make them fail like a full disk). */
  io?: SpoolIO;
  /** The uid the spool must belong to; default: this process's (tests play a spool another user owns). */
  ownerUid?: number;
}

export type HookOutcome = { ok: true; record: SpoolRecord } | { ok: false; code: string; message: string };

export async function runCaptureHook(ctx: Context, args: CaptureArgs, options: HookOptions): Promise<HookOutcome> {
  const startedAt = ctx.clock.now();
  const abort = new AbortController();
  const deadlineMs = options.deadlineMs ?? Math.max(MIN_READ_WINDOW_MS, PAYLOAD_DEADLINE_MS - performance.now());
  // Reading starts at once, beside the profile check, so a payload is never kept waiting in the pipe.
  const text = readPayloadText(options.stdin, { deadlineMs, signal: abort.signal });
  text.catch(() => undefined);
  let payload: HookPayload | undefined;
  try {
    if (!(HARNESSES as readonly string[]).includes(args.harness)) {
      throw refused(`unknown harness "${safeName(args.harness)}"; expected one of ${HARNESSES.join(', ')}`);
    }
    // Independent steps overlap: the payload arrives while the profiles are checked and the spool is opened.
    const opening = Spool.open(ctx.paths, { io: options.io, ownerUid: options.ownerUid });
    opening.catch(() => undefined);
    const interval = await checkProfile(ctx, args.harness, args.profile);
    payload = parsePayload(await text);
    // An event fired after every turn: the capture is built once the harness has exited, of the session's last state.
    const waitForExit =
      interval.capture?.wait_for_exit === true ? (options.harnessProcess ?? harnessProcess)() : undefined;
    const spool = await opening;
    const record = await spool.enqueueIntake({
      harness: args.harness,
      profile: args.profile,
      payload,
      createdAtUnixMs: startedAt,
      ...(waitForExit === undefined ? {} : { waitForExit }),
    });
    let spawnError: string | undefined;
    let drainPid: number | undefined;
    try {
      drainPid = (options.startDrain ?? startDetachedDrain)(ctx, { linger: waitForExit !== undefined });
    } catch (error) {
      // The record is safe in the spool; the next drain (scheduled, or the next capture's) builds it.
      spawnError = (error as Error).message;
    }
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'spooled',
      harness: args.harness,
      profile: args.profile,
      session_id: payload.session_id,
      record: record.id,
      ...(waitForExit === undefined ? {} : { waits_for_pid: waitForExit.pid }),
      ...(drainPid === undefined ? {} : { worker_pid: drainPid }),
      ...(spawnError === undefined
        ? {}
        : { code: 'WORKER_SPAWN', reason: `the worker could not be started: ${spawnError}` }),
    });
    return { ok: true, record };
  } catch (error) {
    abort.abort();
    const blue = error instanceof PayloadRefused ? new BlueError('CAPTURE_REFUSED', error.message) : toBlueError(error);
    const message = oneLine(blue.hint === undefined ? blue.message : `${blue.message}. ${blue.hint}`);
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: blue.code === 'CAPTURE_REFUSED' ? 'refused' : 'failed',
      harness: safeName(args.harness),
      profile: safeName(args.profile),
      ...(payload === undefined ? {} : { session_id: payload.session_id }),
      code: blue.code,
      reason: message,
    });
    return { ok: false, code: blue.code, message };
  }
}

/**
 * Starts `node <entry> drain --quiet` in its own process group, with no tie to the harness: no stdio, no wait.
 * Returns its pid (logged, so a person or a test can tell when the capture's drain is done).
 */
export function startDetachedDrain(ctx: Context, options: { linger?: boolean } = {}): number | undefined {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(ctx.env)) if (value !== undefined) env[key] = value;
  // Never the harness's stdout/stderr: a harness may wait for them to close before it goes on.
  const child = spawn(
    process.execPath,
    [ctx.self.entry, 'drain', '--quiet', ...(options.linger === true ? ['--linger'] : [])],
    {
      detached: true,
      stdio: 'ignore',
      env,
      cwd: ctx.paths.stateDir,
      windowsHide: true,
    },
  );
  child.on('error', () => undefined);
  child.unref();
  return child.pid;
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, 1000);
}
