/**
 * The hook's input: the harness's lifecycle payload on stdin, read with a size cap and a deadline, then validated.
 * Nothing here echoes payload content into a message: reasons name the field and the rule, never the value.
 */
import type { Readable } from 'node:stream';
import type { HookPayload } from '../harnesses/types.js';
import { sessionIdProblem } from '@blue-agent/contract/util/session-id.js';

/** Largest payload read; real ones are a few hundred bytes. */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

/**
 * How long after the hook process started a payload may keep arriving. Harnesses write the payload as soon as they
 * spawn the hook, so a healthy one delivers it within milliseconds and the hook goes on at once; the deadline only
 * bounds a writer that never finishes or never closes stdin. On a loaded machine both the harness and the hook start
 * slowly, so the bound is generous: 1.5 s after start-up, plus the intake write and the drain's spawn, stays inside
 * the tightest hook budget a profile declares (`timeout_seconds: 3`).
 */
export const PAYLOAD_DEADLINE_MS = 1500;
/** However late the hook got to run, a writer gets at least this long to deliver. */
export const MIN_READ_WINDOW_MS = 500;

const MAX_PATH_LENGTH = 4096;
const MAX_LABEL_LENGTH = 128;
const LABEL_PATTERN = /^[A-Za-z0-9._:/ -]*$/;

export class PayloadRefused extends Error {
  override readonly name = 'PayloadRefused';
}

export interface ReadOptions {
  maxBytes?: number;
  /** Milliseconds from now until reading stops. */
  deadlineMs?: number;
  /** Stops reading at once (the capture was refused for another reason). */
  signal?: AbortSignal;
}

/**
 * Reads one JSON object from `stream`: returns as soon as the object is complete (a missing final newline, or a
 * writer that keeps stdin open, does not matter), refuses at once what cannot become an object, what grows past
 * `maxBytes`, and whatever is not complete when the deadline passes. Stops reading and releases the stream either way,
 * so the process can exit without draining the rest.
 */
export function readPayloadText(stream: Readable, options: ReadOptions = {}): Promise<string> {
  const maxBytes = options.maxBytes ?? MAX_PAYLOAD_BYTES;
  const deadlineMs = options.deadlineMs ?? PAYLOAD_DEADLINE_MS;
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const scanner = new ObjectScanner();
    let received = 0;
    let settled = false;
    const finish = (error: Error | undefined, text?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      options.signal?.removeEventListener('abort', onAbort);
      // The rest is never read: a 10 MiB writer or an open pipe must not keep the hook alive.
      stream.pause();
      stream.on('error', () => undefined);
      stream.destroy();
      if (error !== undefined) reject(error);
      else resolve(text!);
    };
    const onData = (chunk: Buffer | string) => {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
      const end = scanner.feed(buffer);
      if (scanner.rejected !== undefined) return finish(new PayloadRefused(scanner.rejected));
      if (end >= 0) {
        if (received + end > maxBytes) return finish(tooLarge(maxBytes));
        chunks.push(buffer.subarray(0, end));
        return finish(undefined, Buffer.concat(chunks).toString('utf8'));
      }
      received += buffer.length;
      if (received > maxBytes) return finish(tooLarge(maxBytes));
      chunks.push(buffer);
    };
    const onEnd = () => {
      if (!scanner.started) return finish(new PayloadRefused('the payload on stdin is empty'));
      finish(new PayloadRefused('the payload on stdin ended before its JSON object was complete'));
    };
    const onError = (error: Error) =>
      finish(new PayloadRefused(`stdin could not be read (${(error as NodeJS.ErrnoException).code ?? error.message})`));
    // The deadline judges what had arrived by then, not what this process got round to reading: on a loaded machine
    // the timer can come due while the payload waits in the pipe, and timers run before pending reads. One more turn
    // of the event loop (its poll phase reads what is ready) comes before the verdict.
    const timer = setTimeout(
      () => {
        setImmediate(() =>
          finish(
            new PayloadRefused(
              scanner.started
                ? `the payload on stdin was not complete after ${Math.round(deadlineMs)} ms (${received} bytes ` +
                    `received)`
                : `no payload arrived on stdin within ${Math.round(deadlineMs)} ms`,
            ),
          ),
        );
      },
      Math.max(0, deadlineMs),
    );
    const onAbort = () => finish(new PayloadRefused('reading the payload was cancelled'));
    if (options.signal?.aborted === true) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.resume();
  });
}

function tooLarge(maxBytes: number): PayloadRefused {
  return new PayloadRefused(`the payload on stdin is larger than ${maxBytes} bytes`);
}

/**
 * Finds where the first top-level JSON object ends without parsing it: tracks nesting outside strings. Enough to know
 * when to stop reading; JSON.parse judges the text afterwards. UTF-8 continuation bytes never look like ASCII
 * delimiters, so scanning bytes is exact.
 */
class ObjectScanner {
  started = false;
  rejected: string | undefined;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private offset = 0;

  /** The end offset (exclusive) within `chunk` of the completed object, or -1 when it is not complete yet. */
  feed(chunk: Buffer): number {
    for (let i = 0; i < chunk.length; i++, this.offset++) {
      const c = chunk[i]!;
      if (!this.started) {
        // White space and a UTF-8 byte order mark may precede the object.
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
        if (this.offset < 3 && (c === 0xef || c === 0xbb || c === 0xbf)) continue;
        if (c !== 0x7b) {
          this.rejected = 'the payload on stdin is not a JSON object';
          return -1;
        }
        this.started = true;
        this.depth = 1;
        continue;
      }
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true;
        else if (c === 0x22) this.inString = false;
        continue;
      }
      if (c === 0x22) this.inString = true;
      else if (c === 0x7b || c === 0x5b) this.depth++;
      else if (c === 0x7d || c === 0x5d) {
        this.depth--;
        if (this.depth === 0) return i + 1;
      }
    }
    return -1;
  }
}

/**
 * The payload in bytes that were read off stdin by someone else (the sh hook): the first JSON object, judged as
 * `readPayloadText` and `parsePayload` judge a payload read here. Throws PayloadRefused.
 */
export function payloadFromBytes(bytes: Buffer, maxBytes: number = MAX_PAYLOAD_BYTES): HookPayload {
  if (bytes.length === 0) throw new PayloadRefused('the payload on stdin is empty');
  const scanner = new ObjectScanner();
  const end = scanner.feed(bytes);
  if (scanner.rejected !== undefined) throw new PayloadRefused(scanner.rejected);
  if (end < 0) {
    if (bytes.length > maxBytes) throw tooLarge(maxBytes);
    if (!scanner.started) throw new PayloadRefused('the payload on stdin is empty');
    throw new PayloadRefused(
      `the payload on stdin was not complete when the hook stopped reading (${bytes.length} bytes received)`,
    );
  }
  if (end > maxBytes) throw tooLarge(maxBytes);
  return parsePayload(bytes.subarray(0, end).toString('utf8'));
}

/** Parses and validates the payload text; throws PayloadRefused naming the first rule broken. */
export function parsePayload(text: string): HookPayload {
  let data: unknown;
  try {
    data = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    throw new PayloadRefused('the payload on stdin is not valid JSON');
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    throw new PayloadRefused('the payload on stdin is not a JSON object');
  const raw = data as Record<string, unknown>;
  const sessionId = raw.session_id;
  if (typeof sessionId !== 'string') throw new PayloadRefused('the payload has no session_id string');
  const problem = sessionIdProblem(sessionId);
  if (problem !== undefined) throw new PayloadRefused(`session_id ${problem}`);
  const payload: HookPayload = { session_id: sessionId };
  const cwd = absolutePath(raw, 'cwd');
  if (cwd !== undefined) payload.cwd = cwd;
  const transcript = absolutePath(raw, 'transcript_path');
  if (transcript !== undefined) payload.transcript_path = transcript;
  const event = label(raw, 'hook_event_name');
  if (event !== undefined) payload.hook_event_name = event;
  const reason = label(raw, 'reason');
  if (reason !== undefined) payload.reason = reason;
  return payload;
}

/**
 * An optional absolute path: null and the empty string count as absent (harnesses send `transcript_path: null` or
 * `""` when they name no transcript).
 */
function absolutePath(raw: Record<string, unknown>, field: string): string | undefined {
  const value = raw[field];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new PayloadRefused(`${field} must be a string`);
  if (value.includes('\0')) throw new PayloadRefused(`${field} contains a NUL character`);
  if (value.length > MAX_PATH_LENGTH)
    throw new PayloadRefused(`${field} must be at most ${MAX_PATH_LENGTH} characters long`);
  if (!value.startsWith('/')) throw new PayloadRefused(`${field} must be an absolute path`);
  return value;
}

/** Short descriptive fields (event name, reason) are kept when they look like labels and dropped otherwise. */
function label(raw: Record<string, unknown>, field: string): string | undefined {
  const value = raw[field];
  if (typeof value !== 'string' || value.length > MAX_LABEL_LENGTH || !LABEL_PATTERN.test(value)) return undefined;
  return value;
}
