/**
 * What of a request may appear in a message: the one rule for every Control API call, signed-URL transfer and policy
 * fetch. A message never holds the bearer token, a URL's userinfo or its query (where signatures live), nor a network
 * library's own message (it is not ours to trust with secrets).
 */
import { redact } from '@blue-agent/contract/util/redact.js';

/** Text fit for a message: the token masked, every URL reduced to `safeUrl`, and whatever `redact` knows masked. */
export function scrubText(text: string, token?: string): string {
  const masked = token === undefined || token === '' ? text : text.split(token).join('[redacted]');
  return redact(masked.replace(/\bhttps?:\/\/[^\s"'<>]+/gi, (url) => safeUrl(url)));
}

/** A URL fit for a message: scheme, host and path; userinfo is dropped, a query is replaced by `?[redacted]`. */
export function safeUrl(value: string): string {
  try {
    const url = new URL(value);
    return `${url.origin}${url.pathname}${url.search === '' ? '' : '?[redacted]'}`;
  } catch {
    return '[unparseable URL]';
  }
}

export interface NetworkFailure {
  /** What happened, in words: `connection refused`, `timed out`, `network error (ENOTFOUND)`. */
  words: string;
  /** The error's code when the words do not already say it all (`ECONNREFUSED`, `ENOTFOUND`). */
  code: string | undefined;
  /** The request ran out of time waiting for the answer (not a connect timeout). */
  timedOut: boolean;
}

/** Node and undici network failures (refused, reset, timeouts, DNS), by their class and code only. */
export function networkFailure(error: unknown): NetworkFailure {
  const err = error as { name?: string; code?: unknown; cause?: { code?: unknown } } | null | undefined;
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError')
    return { words: 'timed out', code: undefined, timedOut: true };
  const code =
    typeof err?.code === 'string' ? err.code : typeof err?.cause?.code === 'string' ? err.cause.code : undefined;
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'CONNECT_TIMEOUT':
      return { words: 'connect timeout', code: undefined, timedOut: false };
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return { words: 'timed out', code: undefined, timedOut: true };
    case 'UND_ERR_SOCKET':
      return { words: 'connection reset', code: undefined, timedOut: false };
    case 'ECONNRESET':
    case 'EPIPE':
      return { words: 'connection reset', code, timedOut: false };
    case 'ECONNREFUSED':
      return { words: 'connection refused', code, timedOut: false };
    case undefined:
      return { words: `network error (${err?.name ?? 'unknown'})`, code: undefined, timedOut: false };
    default:
      return { words: `network error (${code})`, code, timedOut: false };
  }
}

/** `networkFailure` in words; a timeout says how long was waited when `timeoutMs` is given. */
export function describeNetworkError(error: unknown, timeoutMs?: number): string {
  const failure = networkFailure(error);
  if (failure.timedOut && timeoutMs !== undefined) return `timed out after ${Math.round(timeoutMs / 100) / 10} s`;
  return failure.words;
}
