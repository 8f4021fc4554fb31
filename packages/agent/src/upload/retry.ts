/**
 * When to try an upload step again and how long to wait first. A step fails in one of four ways (the kinds of
 * UploadError, src/control-api/errors.ts): only `transient` failures are tried again here.
 *
 * Backoff is exponential with full jitter (a random delay between 0 and the capped exponential), so agents that failed
 * together do not come back together.
 */
import { isUploadError, type UploadError } from '../control-api/errors.js';

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

/** A Retry-After longer than this is shortened to it: a misconfigured server must not park a record for days. */
export const MAX_RETRY_AFTER_MS = 6 * 60 * 60_000;

/** The wait a later drain should leave before the next try after `error` ended a retry loop. */
export function rescheduleDelay(
  error: { retryAfterMs?: number | undefined },
  policy: RetryPolicy,
  random: () => number,
): number {
  return Math.max(
    Math.min(error.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS),
    backoffDelay(policy.maxAttempts, policy, random),
  );
}
