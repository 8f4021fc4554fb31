/**
 * The capture hook: what runs inside the harness's session-end budget (1 s by default for the tightest). It reads and checks
 * the payload, writes a small intake record into the spool, starts the detached drain process and returns. Its cost does not
 * depend on the session: the transcript is never opened here, only named.
 *
 * Start-up stays lean: this module and what it imports load Node built-ins (not node:crypto), the spool and the log
 * only. Profiles come from the document cache file (the validated data reconcile stored, keyed by the profile files'
 * exact text); YAML and the schema validators are loaded only when it does not match.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '../errors.js';
import { HARNESSES } from '../harnesses/names.js';
import type { HookPayload } from '../harnesses/types.js';
import type { HarnessProfiles, Interval } from '../schema/index.js';
import { Spool, type SpoolIO, type SpoolRecord, type WaitForExit } from '../spool/index.js';
import { harnessProcess } from './harness-process.js';
import { appendCaptureLog, safeName } from './log.js';
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

export type HookOutcome =
  | { ok: true; record: SpoolRecord }
  | { ok: false; code: string; message: string };

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
    const waitForExit = interval.capture?.wait_for_exit === true ? (options.harnessProcess ?? harnessProcess)() : undefined;
    const spool = await opening;
    const record = await spool.enqueueIntake({ harness: args.harness, profile: args.profile, payload, createdAtUnixMs: startedAt, ...(waitForExit === undefined ? {} : { waitForExit }) });
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
      ...(spawnError === undefined ? {} : { code: 'WORKER_SPAWN', reason: `the worker could not be started: ${spawnError}` }),
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
  const child = spawn(process.execPath, [ctx.self.entry, 'drain', '--quiet', ...(options.linger === true ? ['--linger'] : [])], {
    detached: true,
    stdio: 'ignore',
    env,
    cwd: ctx.paths.stateDir,
    windowsHide: true,
  });
  child.on('error', () => undefined);
  child.unref();
  return child.pid;
}

function refused(message: string): BlueError {
  return new BlueError('CAPTURE_REFUSED', message);
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, 1000);
}

/** The profile must exist, belong to the harness and support capture. */
async function checkProfile(ctx: Context, harness: string, profile: string): Promise<Interval> {
  const docs = await profileDocuments(ctx);
  for (const doc of docs) {
    const interval = doc.intervals.find((i) => i.profile === profile);
    if (interval === undefined) continue;
    if (doc.harness !== harness) throw refused(`profile ${profile} belongs to ${doc.harness}, not to ${harness}`);
    if (!interval.operations.includes('session_capture')) throw refused(`profile ${profile} does not support session capture`);
    return interval;
  }
  throw refused(`unknown compatibility profile "${safeName(profile)}"; run \`blue-agent reconcile\` to reinstall the hook`);
}

/**
 * The profile documents, validated. Fast path: the document cache's file already holds the validated data of these
 * exact profile texts (reconcile put it there when it installed the hook). The file is read here directly; anything
 * unexpected in it just means the slow path: load and validate through the regular loader (YAML and the schema
 * validators), and remember.
 */
async function profileDocuments(ctx: Context): Promise<HarnessProfiles[]> {
  const dir = ctx.paths.profilesDir;
  const cacheFile = ctx.paths.documentCacheFile;
  try {
    const [names, cacheText] = await Promise.all([readdir(dir), readFile(cacheFile, 'utf8')]);
    const cache = JSON.parse(cacheText) as { version?: unknown; entries?: Record<string, { text?: unknown; data?: unknown }> };
    if (cache.version !== 1) throw new Error('miss');
    const entries = cache.entries;
    const docs: HarnessProfiles[] = [];
    for (const name of names.filter((n) => n.endsWith('.yaml') || n.endsWith('.yml')).sort()) {
      const file = path.join(dir, name);
      const entry = entries?.[`profile:${file}`];
      if (entry === undefined || typeof entry.text !== 'string' || entry.text !== (await readFile(file, 'utf8'))) throw new Error('miss');
      const doc = entry.data as HarnessProfiles;
      if (typeof doc?.harness !== 'string' || !Array.isArray(doc.intervals)) throw new Error('miss');
      docs.push(doc);
    }
    if (docs.length > 0) return docs;
  } catch {
    // A cache miss, or an unreadable folder that the full loader reports properly.
  }
  const [{ DocumentCache }, { loadProfiles }] = await Promise.all([import('../schema/document-cache.js'), import('../profiles/index.js')]);
  const documents = await DocumentCache.open(cacheFile, true);
  const set = await loadProfiles(dir, documents);
  await documents.save().catch(() => undefined);
  return [...set.values()].map((loaded) => loaded.doc);
}
