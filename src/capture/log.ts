/**
 * The capture log (`Paths.captureLogFile`): one JSON line per capture event (accepted, refused, failed, built), private to the user
 * and bounded in size. Hooks run without a terminal anyone reads, so this is where a refused capture can be found.
 * Entries hold ids, names and our own reasons only; payload text never goes in, and every string is passed through
 * the logger's secret masking and cut short. Logging never throws: it must not turn a capture into a failure.
 */
import { constants } from 'node:fs';
import { mkdir, open, rename, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { redact } from '../util/redact.js';

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
    const line = `${JSON.stringify({ time: new Date(options.now ?? Date.now()).toISOString(), pid: process.pid, ...clean(entry) })}\n`;
    const maxBytes = options.maxBytes ?? MAX_LOG_BYTES;
    let handle = await openLog(file);
    try {
      let info = await handle.stat();
      if (info.size > 0 && info.size + Buffer.byteLength(line) > maxBytes) {
        // One generation is kept; two processes rotating at once lose at most a few lines.
        await rename(file, `${file}.1`).catch(() => undefined);
        await handle.close();
        handle = await openLog(file);
        info = await handle.stat();
      }
      if ((info.mode & 0o777) !== 0o600) await handle.chmod(0o600);
      await handle.write(line);
    } finally {
      await handle.close();
    }
  } catch {
    // Best effort: a full disk or an unwritable state dir is reported by the capture itself.
  }
}

async function openLog(file: string): Promise<FileHandle> {
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0);
  try {
    return await open(file, flags, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    return open(file, flags, 0o600);
  }
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
    out[key] = typeof value === 'string' ? redact(value.length > MAX_FIELD ? `${value.slice(0, MAX_FIELD)}…` : value) : value;
  }
  return out;
}
