/**
 * The HTTP pieces every Control API and signed-URL request shares: base URL and origin handling, bounded body reads,
 * headers, Retry-After and the server's error body. No network here: these act on answers already had.
 */
import type { Dispatcher } from 'undici';
import { isRecord } from '@blue-agent/contract/util/record.js';

/** `<base>/<route>`, keeping any path prefix of the base URL and dropping its query and fragment. */
export function routeUrl(base: string, route: string): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${route.replace(/^\/+/, '')}`;
  url.search = '';
  url.hash = '';
  return url;
}

/** A Location header resolved against the URL that sent it, or undefined when it is not a URL. */
export function resolveLocation(value: string, base: URL): URL | undefined {
  try {
    return new URL(value, base);
  } catch {
    return undefined;
  }
}

export function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The deepest nesting accepted in a JSON answer. Answers nest a few levels; what reads them (validators,
 * JSON.stringify when a policy is kept) recurses, so deeper text is refused before it is parsed.
 */
export const MAX_ANSWER_DEPTH = 64;

/** Thrown by `readCapped` when an answer is larger than allowed (what arrived is thrown away). */
export class ResponseTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`the answer is larger than ${maxBytes} bytes`);
    this.name = 'ResponseTooLarge';
  }
}

/** The whole body as UTF-8, refusing (ResponseTooLarge) one that says or turns out to be larger than `maxBytes`. */
export async function readCapped(response: Dispatcher.ResponseData, maxBytes: number): Promise<string> {
  const declared = Number(header(response.headers, 'content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.body.destroy();
    throw new ResponseTooLarge(maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      response.body.destroy();
      throw new ResponseTooLarge(maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** How long `readSome` waits for a message in all: a timeout between chunks alone lets a trickle go on for hours. */
export const MESSAGE_READ_MS = 5_000;

/**
 * Reads at most `maxBytes` of an answer's body, for at most `timeoutMs` in all, for a message, and throws the rest
 * away.
 */
export async function readSome(
  response: { body: AsyncIterable<unknown> & { destroy(): unknown } },
  maxBytes: number,
  timeoutMs = MESSAGE_READ_MS,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const timer = setTimeout(() => response.body.destroy(), timeoutMs);
  try {
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (size < maxBytes) chunks.push(chunk.subarray(0, maxBytes - size));
      size += chunk.length;
      if (size >= maxBytes) break;
    }
  } catch {
    // Only for a message: what arrived is enough.
  } finally {
    clearTimeout(timer);
  }
  response.body.destroy();
  return Buffer.concat(chunks).toString('utf8');
}

/** The most of a body read to discard it; past it the connection is dropped instead. */
const DISCARD_BYTES = 128 * 1024;

/**
 * Discards an answer's body (its connection goes back to the pool): at most DISCARD_BYTES of it, for at most
 * `timeoutMs` in all, after which the connection is dropped instead.
 */
export async function discard(response: Dispatcher.ResponseData, timeoutMs = MESSAGE_READ_MS): Promise<void> {
  await response.body.dump({ limit: DISCARD_BYTES, signal: AbortSignal.timeout(timeoutMs) }).catch(() => undefined);
}

export function isJsonType(contentType: string | undefined): boolean {
  return contentType !== undefined && /\bjson\b/i.test(contentType);
}

/** Retry-After as delta-seconds or an HTTP-date, in milliseconds from `nowMs`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,10}$/.test(text)) return Number(text) * 1000;
  // Only an HTTP-date (it always names a weekday and GMT); Date.parse alone would accept almost anything.
  if (!/^[A-Za-z]{3},? .*GMT$/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** How an HTTP status from the Control API or the storage service is to be treated (2xx is success, not asked here). */
export function statusKind(status: number): 'transient' | 'permanent' {
  return status >= 500 || status === 408 || status === 429 ? 'transient' : 'permanent';
}

/**
 * The server's error body, bounded and stripped of control characters. Three shapes are read: this project's server
 * `{"error": "<message>", "code": "<code>"}`, Blue's `{"error": "<message>"}` (no code), and the older
 * `{"error": {"code", "message"}}`.
 */
export function serverError(text: string): { code: string | undefined; message: string } | undefined {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(data)) return undefined;
  const error = data.error;
  if (typeof error === 'string') {
    const code = typeof data.code === 'string' && data.code.trim() !== '' ? clean(data.code, 64) : undefined;
    const message = clean(error, 300);
    if (code === undefined && message === '') return undefined;
    return { code, message: message === '' ? '(no message)' : message };
  }
  if (!isRecord(error)) return undefined;
  const code = typeof error.code === 'string' ? clean(error.code, 64) : undefined;
  const message = typeof error.message === 'string' ? clean(error.message, 300) : '';
  if (code === undefined && message === '') return undefined;
  return { code, message: message === '' ? '(no message)' : message };
}

function clean(text: string, max: number): string {
  return text
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim()
    .slice(0, max);
}
