/**
 * Pure: when the run loop asks the Control API for the policy next. After a success, once per the policy's
 * `ttl_seconds`; after a failure, sooner, with exponential backoff up to a cap, never before the server's Retry-After.
 * Every delay carries about ±10% jitter so a fleet of agents does not ask in lockstep.
 */

export interface PolicyScheduleOptions {
  /** Fraction of the delay, each way: 0.1 spreads a delay d over [0.9 d, 1.1 d). */
  jitter: number;
  /** The wait after the first failure; it doubles with every further failure... */
  backoffBaseMs: number;
  /** ...up to this. */
  backoffCapMs: number;
  /** No check is ever sooner than this after the previous one. */
  minIntervalMs: number;
  /** A Retry-After longer than this is shortened to it (a misconfigured server must not silence an agent for days). */
  maxRetryAfterMs: number;
}

export const DEFAULT_POLICY_SCHEDULE: PolicyScheduleOptions = {
  jitter: 0.1,
  backoffBaseMs: 30_000,
  backoffCapMs: 60 * 60_000,
  minIntervalMs: 1_000,
  maxRetryAfterMs: 6 * 60 * 60_000,
};

/** setTimeout's limit: a longer delay fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export type CheckOutcome =
  /** The Control API answered (200 or 304), or the policy is a local file. */
  | { ok: true; ttlSeconds: number }
  /** It could not be asked or refused to answer; `retryAfterMs` when it said when to come back. */
  | { ok: false; retryAfterMs?: number | undefined };

export interface NextCheck {
  /** Consecutive failures, 0 after a success. */
  failures: number;
  delayMs: number;
  /** What decided the delay. */
  basis: 'ttl' | 'backoff' | 'retry-after';
}

/** `delay` spread uniformly over [1 - jitter, 1 + jitter) of itself; `random` returns a number in [0, 1). */
export function withJitter(delayMs: number, jitter: number, random: () => number): number {
  return Math.round(delayMs * (1 + jitter * (2 * random() - 1)));
}

/** The backoff before the next try after `failures` consecutive failures (1 for the first), before jitter. */
export function backoffMs(failures: number, options: PolicyScheduleOptions): number {
  return Math.min(options.backoffCapMs, options.backoffBaseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
}

export function nextPolicyCheck(
  previousFailures: number,
  outcome: CheckOutcome,
  options: PolicyScheduleOptions,
  random: () => number,
): NextCheck {
  const clamp = (ms: number) => Math.min(MAX_TIMER_MS, Math.max(options.minIntervalMs, ms));
  if (outcome.ok) {
    return { failures: 0, delayMs: clamp(withJitter(outcome.ttlSeconds * 1000, options.jitter, random)), basis: 'ttl' };
  }
  const failures = previousFailures + 1;
  // Jitter never pushes the wait past the cap.
  const backoff = Math.min(options.backoffCapMs, withJitter(backoffMs(failures, options), options.jitter, random));
  const retryAfter =
    outcome.retryAfterMs === undefined ? undefined : Math.min(outcome.retryAfterMs, options.maxRetryAfterMs);
  if (retryAfter !== undefined && retryAfter > backoff)
    return { failures, delayMs: clamp(retryAfter), basis: 'retry-after' };
  return { failures, delayMs: clamp(backoff), basis: 'backoff' };
}
