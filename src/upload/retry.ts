/**
 * When to try an upload step again and how long to wait first. A step fails in one of four ways:
 *
 *   transient  the network or the server had a bad moment (connection errors, timeouts, 5xx, 408, 429): try again later
 *   expired    the signed upload URL is no longer accepted: ask the Control API for a fresh one
 *   record     the server refused this bundle for good (4xx other than auth and routing): the record should fail with
 *              the server's reason
 *   service    the agent cannot talk to the Control API as configured (bad token, wrong URL): keep the record, stop
 *
 * Backoff is exponential with full jitter (a random delay between 0 and the capped exponential), so agents that failed
 * together do not come back together.
 */
import { BlueError, type BlueErrorOptions, type ErrorCode } from '../errors.js';

export type FailureKind = 'transient' | 'expired' | 'record' | 'service';

/** A failed upload step: a BlueError that also says what to do about it. Messages never carry tokens or signed URLs. */
export class UploadError extends BlueError {
  readonly kind: FailureKind;
  /** The HTTP status, when the failure was an answer. */
  readonly status: number | undefined;
  /** What the server asked for (Retry-After), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** The server's own `{error:{code}}`, when it sent one. */
  readonly serverCode: string | undefined;

  constructor(
    kind: FailureKind,
    code: ErrorCode,
    message: string,
    options: BlueErrorOptions & { status?: number; retryAfterMs?: number; serverCode?: string } = {},
  ) {
    super(code, message, options);
    this.name = 'UploadError';
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.serverCode = options.serverCode;
  }
}

export function isUploadError(error: unknown): error is UploadError {
  return error instanceof UploadError;
}

export interface RetryPolicy {
  /** Tries of one step, the first included. */
  maxAttempts: number;
  /** The first backoff ceiling; it doubles with every failure. */
  baseDelayMs: number;
  /** No single wait is longer than this... */
  maxDelayMs: number;
  /** ...and a Retry-After longer than this is not slept through in-process: the record is retried by a later drain. */
  maxInlineRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  maxInlineRetryAfterMs: 60_000,
};

/** The outside world a retry loop touches, replaceable so tests neither wait nor depend on chance. */
export interface RetryEnv {
  sleep(ms: number): Promise<void>;
  /** A number in [0, 1). */
  random(): number;
  now(): number;
}

export const realRetryEnv: RetryEnv = {
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: Math.random,
  now: Date.now,
};

/** Full-jitter backoff before retry number `retry` (0 for the first retry). */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.min(retry, 30));
  return Math.floor(random() * ceiling);
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

/** Node and undici network failures (refused, reset, timeouts, DNS): all transient. */
export function describeNetworkError(error: unknown): string {
  const err = error as { name?: string; code?: unknown; message?: string; cause?: { code?: unknown } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return 'timed out';
  const code = typeof err.code === 'string' ? err.code : typeof err.cause?.code === 'string' ? err.cause.code : undefined;
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'connect timeout';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return 'timed out';
    case 'UND_ERR_SOCKET':
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset';
    case 'ECONNREFUSED':
      return 'connection refused';
    case undefined:
      // A library message is not ours to trust with secrets: only its class name is kept.
      return `network error (${err.name ?? 'unknown'})`;
    default:
      return `network error (${code})`;
  }
}

export interface RetryOptions {
  policy?: RetryPolicy;
  env?: RetryEnv;
  /** Told about every failed try that will be retried, with the wait before the next one. */
  onRetry?(error: UploadError, attempt: number, delayMs: number): void;
}

/**
 * Runs `step` until it succeeds, fails in a way a retry cannot fix, or runs out of tries. Only transient UploadErrors
 * are retried; the last one is rethrown. A Retry-After the server asked for is used as the wait, exactly;
 * one longer than `maxInlineRetryAfterMs` ends the loop at once so the caller can reschedule instead of sleeping.
 */
export async function withRetry<T>(step: (attempt: number) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const policy = options.policy ?? DEFAULT_RETRY_POLICY;
  const env = options.env ?? realRetryEnv;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step(attempt);
    } catch (error) {
      if (!isUploadError(error) || error.kind !== 'transient' || attempt >= policy.maxAttempts) throw error;
      if (error.retryAfterMs !== undefined && error.retryAfterMs > policy.maxInlineRetryAfterMs) throw error;
      const delay = error.retryAfterMs ?? backoffDelay(attempt - 1, policy, env.random);
      options.onRetry?.(error, attempt, delay);
      await env.sleep(delay);
    }
  }
}

/** The wait a later drain should leave before the next try after `error` ended a retry loop. */
export function rescheduleDelay(error: { retryAfterMs?: number | undefined }, policy: RetryPolicy, random: () => number): number {
  return Math.max(error.retryAfterMs ?? 0, backoffDelay(policy.maxAttempts, policy, random));
}
