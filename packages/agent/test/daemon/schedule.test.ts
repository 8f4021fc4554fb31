/**
 * The pure policy-check scheduler: ttl with ±10% jitter, backoff doubling to the cap after failures, Retry-After
 * honoured, reset after a success.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY_SCHEDULE, backoffMs, nextPolicyCheck, withJitter } from '../../src/daemon/schedule.js';

const opts = DEFAULT_POLICY_SCHEDULE;
const mid = () => 0.5;

describe('policy check scheduling', () => {
  it('waits ttl_seconds after a success, with jitter within ±10%', () => {
    expect(nextPolicyCheck(0, { ok: true, ttlSeconds: 300 }, opts, mid)).toEqual({
      failures: 0,
      delayMs: 300_000,
      basis: 'ttl',
    });
    expect(nextPolicyCheck(0, { ok: true, ttlSeconds: 300 }, opts, () => 0).delayMs).toBe(270_000);
    expect(nextPolicyCheck(0, { ok: true, ttlSeconds: 300 }, opts, () => 0.999999).delayMs).toBeLessThanOrEqual(
      330_000,
    );
    // Many draws: all inside the band, and they do spread over it.
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const delays = Array.from(
      { length: 2000 },
      () => nextPolicyCheck(0, { ok: true, ttlSeconds: 100 }, opts, random).delayMs,
    );
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(90_000);
    expect(Math.max(...delays)).toBeLessThanOrEqual(110_000);
    expect(Math.max(...delays) - Math.min(...delays)).toBeGreaterThan(15_000);
  });

  it('backs off after failures, doubling up to the cap (about an hour), sooner than a long ttl', () => {
    const delays: number[] = [];
    let failures = 0;
    for (let i = 0; i < 12; i++) {
      const next = nextPolicyCheck(failures, { ok: false }, opts, mid);
      expect(next.basis).toBe('backoff');
      failures = next.failures;
      delays.push(next.delayMs);
    }
    expect(failures).toBe(12);
    expect(delays.slice(0, 8)).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000]);
    expect(delays.slice(8).every((d) => d === 3_600_000)).toBe(true);
    // Jitter never pushes past the cap.
    expect(nextPolicyCheck(20, { ok: false }, opts, () => 0.999).delayMs).toBeLessThanOrEqual(3_600_000);
    expect(nextPolicyCheck(20, { ok: false }, opts, () => 0).delayMs).toBe(3_240_000);
    expect(backoffMs(1, opts)).toBe(30_000);
    expect(backoffMs(1000, opts)).toBe(3_600_000);
  });

  it('honours Retry-After when it is longer than the backoff, and bounds an absurd one', () => {
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: 120_000 }, opts, mid)).toEqual({
      failures: 1,
      delayMs: 120_000,
      basis: 'retry-after',
    });
    // Shorter than the backoff: the backoff wins (Retry-After is a floor, not an invitation).
    expect(nextPolicyCheck(3, { ok: false, retryAfterMs: 5_000 }, opts, mid)).toMatchObject({
      delayMs: 240_000,
      basis: 'backoff',
    });
    expect(nextPolicyCheck(0, { ok: false, retryAfterMs: 30 * 24 * 3_600_000 }, opts, mid).delayMs).toBe(
      opts.maxRetryAfterMs,
    );
  });

  it('resets after a success', () => {
    let failures = 0;
    for (let i = 0; i < 5; i++) failures = nextPolicyCheck(failures, { ok: false }, opts, mid).failures;
    expect(failures).toBe(5);
    const ok = nextPolicyCheck(failures, { ok: true, ttlSeconds: 60 }, opts, mid);
    expect(ok).toEqual({ failures: 0, delayMs: 60_000, basis: 'ttl' });
    expect(nextPolicyCheck(ok.failures, { ok: false }, opts, mid).delayMs).toBe(30_000);
  });

  it("never schedules sooner than the minimum interval nor beyond a timer's range", () => {
    expect(nextPolicyCheck(0, { ok: true, ttlSeconds: 0 }, opts, mid).delayMs).toBe(1_000);
    expect(nextPolicyCheck(0, { ok: true, ttlSeconds: 2_592_000 }, opts, mid).delayMs).toBe(2 ** 31 - 1);
    expect(withJitter(1000, 0.1, () => 0.75)).toBe(1050);
  });
});
