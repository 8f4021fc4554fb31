import { describe, expect, it } from 'vitest';
import { CorrectionBackoff, DEFAULT_CORRECTION_BACKOFF } from '../../src/daemon/backoff.js';

// The drift-correction rate limit on its own: doubling, cap, reset, and which file of several decides.

const options = { baseMs: 1_000, capMs: 5_000, resetMs: 60_000 };

describe('CorrectionBackoff', () => {
  it('defaults to 1 s doubling up to 5 min, forgotten after 15 min', () => {
    expect(DEFAULT_CORRECTION_BACKOFF).toEqual({ baseMs: 1_000, capMs: 300_000, resetMs: 900_000 });
    const b = new CorrectionBackoff();
    b.corrected(['/f'], 0);
    expect(b.delayFor(['/f'], 0)).toEqual({ delayMs: 1_000, file: '/f', corrections: 1 });
    expect(b.delayFor(['/f'], 899_999).delayMs).toBe(0);
  });

  it('knows a file by its resolved path', () => {
    const b = new CorrectionBackoff(options);
    b.corrected(['/home/u/./x/../settings.json'], 0);
    expect(b.delayFor(['/home/u/settings.json'], 0)).toEqual({
      delayMs: 1_000,
      file: '/home/u/settings.json',
      corrections: 1,
    });
  });

  it('counts a correction right at the reset time as a new first one', () => {
    const b = new CorrectionBackoff(options);
    b.corrected(['/f'], 0);
    b.corrected(['/f'], 59_999);
    expect(b.delayFor(['/f'], 59_999)).toEqual({ delayMs: 2_000, file: '/f', corrections: 2 });
    const c = new CorrectionBackoff(options);
    c.corrected(['/f'], 0);
    c.corrected(['/f'], 60_000);
    expect(c.delayFor(['/f'], 60_000)).toEqual({ delayMs: 1_000, file: '/f', corrections: 1 });
  });

  it('waits for nothing once the reset time has passed since the last correction', () => {
    const b = new CorrectionBackoff({ baseMs: 100_000, capMs: 100_000, resetMs: 60_000 });
    b.corrected(['/f'], 0);
    expect(b.delayFor(['/f'], 59_999).delayMs).toBe(40_001);
    expect(b.delayFor(['/f'], 60_000)).toEqual({ delayMs: 0 });
  });

  it('returns the longest wait of several files, naming that file', () => {
    const b = new CorrectionBackoff(options);
    b.corrected(['/a'], 0);
    b.corrected(['/b'], 0);
    b.corrected(['/b'], 0);
    expect(b.delayFor(['/a', '/b', '/c'], 500)).toEqual({ delayMs: 1_500, file: '/b', corrections: 2 });
    expect(b.delayFor(['/b', '/a'], 500)).toEqual({ delayMs: 1_500, file: '/b', corrections: 2 });
    expect(b.delayFor(['/c'], 500)).toEqual({ delayMs: 0 });
    expect(b.delayFor([], 500)).toEqual({ delayMs: 0 });
  });

  it('a wait already over is no wait', () => {
    const b = new CorrectionBackoff(options);
    b.corrected(['/f'], 0);
    expect(b.delayFor(['/f'], 1_000)).toEqual({ delayMs: 0 });
    expect(b.delayFor(['/f'], 999)).toEqual({ delayMs: 1, file: '/f', corrections: 1 });
  });

  it('keeps no more than about a thousand entries: quiet ones are dropped, recent ones kept', () => {
    const b = new CorrectionBackoff(options);
    b.corrected(
      Array.from({ length: 1_000 }, (_, i) => `/old/${i}`),
      0,
    );
    b.corrected(['/recent'], 30_000);
    b.corrected(['/new'], 60_000);
    // /recent (30 s ago) is kept with its count, so a further correction doubles; /old/0 starts again.
    b.corrected(['/recent', '/old/0'], 60_000);
    expect(b.delayFor(['/recent'], 60_000).corrections).toBe(2);
    expect(b.delayFor(['/old/0'], 60_000).corrections).toBe(1);
  });

  it('forgets the quiet files once it remembers more than a thousand, and only those', () => {
    const b = new CorrectionBackoff(options);
    b.corrected(
      Array.from({ length: 1_000 }, (_, i) => `/old/${i}`),
      0,
    );
    expect(b.size).toBe(1_000);
    b.corrected(['/recent'], 1);
    // 1,001 files, but none quiet for the full reset time yet: all kept.
    expect(b.size).toBe(1_001);
    // At exactly the reset time the first thousand count as quiet and go; /recent (59,999 ms ago) and /new stay.
    b.corrected(['/new'], 60_000);
    expect(b.size).toBe(2);
    expect(b.delayFor(['/recent'], 60_000)).toEqual({ delayMs: 0 });
    expect(b.delayFor(['/new'], 60_000)).toEqual({ delayMs: 1_000, file: '/new', corrections: 1 });
  });

  it('forgets nothing while it remembers a thousand files or fewer', () => {
    const b = new CorrectionBackoff(options);
    b.corrected(
      Array.from({ length: 999 }, (_, i) => `/old/${i}`),
      0,
    );
    b.corrected(['/last'], 120_000);
    expect(b.size).toBe(1_000);
  });
});
