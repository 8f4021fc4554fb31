/**
 * The capture log (`Paths.captureLogFile`): one JSON line per capture event (accepted, refused, failed, built), private
 * to the user and bounded in size. Hooks run without a terminal anyone reads, so this is where a refused capture can be
 * found.
 * Entries hold ids, names and our own reasons only; payload text never goes in, and every string is passed through
 * the logger's secret masking and cut short. Logging never throws: it must not turn a capture into a failure.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { redact } from '@blue-agent/contract/util/redact.js';

/** The log is rotated to `<file>.1` (one generation) when it would grow past this. */
export const MAX_LOG_BYTES = 1024 * 1024;
const MAX_FIELD = 512;
const SAFE_NAME = /^[A-Za-z0-9._-]{1,128}$/;

export type CaptureEvent =
  | 'spooled'
  | 'refused'
  | 'failed'
  | 'built'
  | 'build_failed'
  | 'retry'
  | 'recovered'
  | 'uploaded'
  | 'upload_retry'
  | 'upload_failed'
  | 'discarded'
  | 'unchanged'
  | 'superseded'
  | 'changing';

export interface CaptureLogEntry {
  event: CaptureEvent;
  harness?: string;
  profile?: string;
  session_id?: string;
  record?: string;
  code?: string;
  reason?: string;
  [field: string]: string | number | boolean | undefined;
}

export interface LogOptions {
  maxBytes?: number;
  now?: number;
}

export async function appendCaptureLog(file: string, entry: CaptureLogEntry, options: LogOptions = {}): Promise<void> {
  try {
    const time = new Date(options.now ?? Date.now()).toISOString();
    const line = Buffer.from(`${JSON.stringify({ time, pid: process.pid, ...clean(entry) })}\n`, 'utf8');
    const maxBytes = options.maxBytes ?? MAX_LOG_BYTES;
    let fd = openLog(file);
    let info = fstatSync(fd);
    if (info.size > 0 && info.size + line.length > maxBytes) {
      // One generation is kept; two processes rotating at once lose at most a few lines.
      try {
        renameSync(file, `${file}.1`);
      } catch {
        // Another process rotated it first.
      }
      fd = openLog(file);
      info = fstatSync(fd);
    }
    if ((info.mode & 0o777) !== 0o600) fchmodSync(fd, 0o600);
    // One write to a file opened for appending: lines of processes writing at once never interleave.
    writeSync(fd, line);
  } catch {
    // Best effort: a full disk or an unwritable state dir is reported by the capture itself.
  }
}

/**
 * The log stays open in a process that writes it (a drain writes a line per record): it is reopened only when the
 * path no longer names the open file (rotated or removed by another process, or another log). Synchronous calls: a
 * line is one small write, cheaper done at once than as a round trip through the thread pool.
 */
let held: { file: string; fd: number; dev: number; ino: number } | undefined;

function openLog(file: string): number {
  if (held !== undefined) {
    const at = lstatSync(file, { throwIfNoEntry: false });
    if (held.file === file && at !== undefined && at.dev === held.dev && at.ino === held.ino) return held.fd;
    closeSync(held.fd);
    held = undefined;
  }
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0);
  let fd: number;
  try {
    fd = openSync(file, flags, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fd = openSync(file, flags, 0o600);
  }
  const info = fstatSync(fd);
  held = { file, fd, dev: info.dev, ino: info.ino };
  return fd;
}

/** A name from the command line or a record (harness, profile): kept when it looks like one, else replaced. */
export function safeName(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  return SAFE_NAME.test(value) ? value : '(invalid)';
}

function clean(entry: CaptureLogEntry): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(entry)) {
    if (value === undefined) continue;
    out[key] =
      typeof value === 'string' ? redact(value.length > MAX_FIELD ? `${value.slice(0, MAX_FIELD)}…` : value) : value;
  }
  return out;
}
