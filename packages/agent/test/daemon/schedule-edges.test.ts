import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY_SCHEDULE, backoffMs, nextPolicyCheck, withJitter } from '../../src/daemon/schedule.js';

// The policy-check scheduler at its edges: no failure yet, the exponent's bound, ties with Retry-After.

const opts = DEFAULT_POLICY_SCHEDULE;
const mid = () => 0.5;

describe('policy check scheduling: edges', () => {
  it('has these defaults', () => {
    expect(DEFAULT_POLICY_SCHEDULE).toEqual({
      jitter: 0.1,
      backoffBaseMs: 30_000,
      backoffCapMs: 3_600_000,
      minIntervalMs: 1_000,
      maxRetryAfterMs: 21_600_000,
    });
  });

  it('backs off by the base for zero or one failure, and bounds the exponent at 40', () => {
    expect(backoffMs(0, opts)).toBe(30_000);
    expect(backoffMs(-5, opts)).toBe(30_000);
    expect(backoffMs(2, opts)).toBe(60_000);
    const uncapped = { ...opts, backoffCapMs: Number.POSITIVE_INFINITY };
    expect(backoffMs(41, uncapped)).toBe(30_000 * 2 ** 40);
    expect(backoffMs(1_000, uncapped)).toBe(30_000 * 2 ** 40);
  });

  it('jitter spreads both ways and rounds to whole milliseconds', () => {
    expect(withJitter(1000, 0.1, () => 0)).toBe(900);
    expect(withJitter(1000, 0.1, () => 0.25)).toBe(950);
    expect(withJitter(1001, 0.1, mid)).toBe(1001);
    expect(withJitter(3, 0.1, () => 0.99)).toBe(3);
    expect(withJitter(1000, 0, () => 0)).toBe(1000);
  });

  it('a Retry-After equal to the backoff leaves the backoff as the reason', () => {
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: 30_000 }, opts, mid)).toEqual({
      failures: 1,
      delayMs: 30_000,
      basis: 'backoff',
    });
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: 30_001 }, opts, mid)).toEqual({
      failures: 1,
      delayMs: 30_001,
      basis: 'retry-after',
    });
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: undefined }, opts, mid)).toEqual({
      failures: 1,
      delayMs: 30_000,
      basis: 'backoff',
    });
  });

  it('clamps a Retry-After to the maximum, then to the minimum interval and the timer range', () => {
    const wide = { ...opts, maxRetryAfterMs: 2 ** 40 };
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: 2 ** 35 }, wide, mid).delayMs).toBe(2 ** 31 - 1);
    const tiny = { ...opts, backoffBaseMs: 10, backoffCapMs: 10, minIntervalMs: 500 };
    expect(nextPolicyCheck(0, { ok: false }, tiny, mid)).toEqual({ failures: 1, delayMs: 500, basis: 'backoff' });
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: 100 }, tiny, mid)).toEqual({
      failures: 1,
      delayMs: 500,
      basis: 'retry-after',
    });
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: opts.maxRetryAfterMs + 1 }, opts, mid)).toMatchObject({
      delayMs: opts.maxRetryAfterMs,
      basis: 'retry-after',
    });
  });

  it('counts failures on from the previous count', () => {
    expect(nextPolicyCheck(7, { ok: false }, opts, mid)).toEqual({ failures: 8, delayMs: 3_600_000, basis: 'backoff' });
    expect(nextPolicyCheck(2, { ok: false }, opts, mid)).toEqual({ failures: 3, delayMs: 120_000, basis: 'backoff' });
  });
});
