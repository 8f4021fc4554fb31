import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, MAX_RETRY_AFTER_MS, rescheduleDelay } from '../../src/upload/retry.js';

describe('rescheduleDelay', () => {
  it('waits what the server asked for, but never longer than the cap, and never less than the backoff', () => {
    const random = () => 0.5;
    const backoff = rescheduleDelay({}, DEFAULT_RETRY_POLICY, random);
    expect(backoff).toBeGreaterThan(0);
    expect(rescheduleDelay({ retryAfterMs: 120_000 }, DEFAULT_RETRY_POLICY, random)).toBe(120_000);
    expect(rescheduleDelay({ retryAfterMs: 1 }, DEFAULT_RETRY_POLICY, random)).toBe(backoff);
    // Retry-After: 9999999999 (its largest form) would park the record for centuries.
    expect(rescheduleDelay({ retryAfterMs: 9_999_999_999_000 }, DEFAULT_RETRY_POLICY, random)).toBe(MAX_RETRY_AFTER_MS);
  });
});
