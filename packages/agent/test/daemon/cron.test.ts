/**
 * The drain schedule's cron expressions: what parses and what is refused (with the field named), the next time each
 * names in local time, and the timer. Dates are built in local time, away from any zone's daylight-saving change, so
 * the results hold in every time zone; the daylight-saving cases set their own zone (and put the machine's back).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nextCronTime, parseCron, scheduleCron, validCron, type CronSpec } from '../../src/daemon/cron.js';

function spec(expr: string): CronSpec {
  const parsed = parseCron(expr);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
}

/** The next `count` times after `from`, as local `YYYY-MM-DD hh:mm:ss`. */
function next(expr: string, from: Date, count = 3): string[] {
  const out: string[] = [];
  let at = from;
  for (let i = 0; i < count; i++) {
    const t = nextCronTime(spec(expr), at);
    if (t === undefined) break;
    const p = (n: number) => String(n).padStart(2, '0');
    out.push(
      `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${p(t.getHours())}:${p(t.getMinutes())}:` +
        `${p(t.getSeconds())}`,
    );
    at = t;
  }
  return out;
}

// Thursday 15 January 2026, 10:07:30 local time.
const JAN = new Date(2026, 0, 15, 10, 7, 30);

describe('cron expressions', () => {
  it.each([
    ['*/5 * * * *', ['2026-01-15 10:10:00', '2026-01-15 10:15:00', '2026-01-15 10:20:00']],
    ['0 9 * * 1-5', ['2026-01-16 09:00:00', '2026-01-19 09:00:00', '2026-01-20 09:00:00']],
    ['30 */6 * * *', ['2026-01-15 12:30:00', '2026-01-15 18:30:00', '2026-01-16 00:30:00']],
    ['0 0 1 jan,Jul *', ['2026-07-01 00:00:00', '2027-01-01 00:00:00', '2027-07-01 00:00:00']],
    ['*/20 * * * * *', ['2026-01-15 10:07:40', '2026-01-15 10:08:00', '2026-01-15 10:08:20']],
    ['0 12 * * mon#2', ['2026-02-09 12:00:00', '2026-03-09 12:00:00', '2026-04-13 12:00:00']],
    ['0 0 13 * 5', ['2026-01-16 00:00:00', '2026-01-23 00:00:00', '2026-01-30 00:00:00']], // day 13 or any Friday
    ['0 0 ? * 7', ['2026-01-18 00:00:00', '2026-01-25 00:00:00', '2026-02-01 00:00:00']], // 7 is Sunday
    ['5-15/5 8 * * *', ['2026-01-16 08:05:00', '2026-01-16 08:10:00', '2026-01-16 08:15:00']],
    ['0 0 29 2 *', ['2028-02-29 00:00:00', '2032-02-29 00:00:00']],
    ['0 9 * january monday-friday', ['2026-01-16 09:00:00', '2026-01-19 09:00:00', '2026-01-20 09:00:00']],
    // `*/10` starts with *: both must hold
    ['0 0 */10 * fri', ['2026-05-01 00:00:00', '2026-07-31 00:00:00', '2026-08-21 00:00:00']],
  ])('%s', (expr, expected) => {
    expect(next(expr, JAN, expected.length)).toEqual(expected);
  });

  it.each([
    ['* * * *', /5 fields/],
    ['* * * * * * *', /5 fields/],
    ['60 * * * *', /minutes field "60" holds a value outside 0-59/],
    ['* 24 * * *', /hours field/],
    ['* * 0 * *', /day of month field/],
    ['* * * 13 *', /month field/],
    ['*/0 * * * *', /step/],
    ['5-1 * * * *', /runs backwards/],
    ['a b c d e', /not a cron field|outside/],
    ['* * * * mon#6', /d#n/],
    ['0 0 30 2 *', /never comes due/],
    ['@hourly x y z w', /not a cron field/],
  ])('refuses %s', (expr, why) => {
    expect(parseCron(expr)).toMatch(why);
    expect(validCron(expr)).toBe(false);
  });
});

describe('daylight saving (Europe/Berlin)', () => {
  function inZone<T>(zone: string, run: () => T): T {
    const saved = process.env.TZ;
    process.env.TZ = zone;
    try {
      return run();
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  }

  it('in the hour repeated when clocks go back, every next time is later than the last', () => {
    inZone('Europe/Berlin', () => {
      // 2026-10-25: 03:00 CEST becomes 02:00 CET; 00:30 UTC is 02:30 CEST, the first 02:30.
      let at = new Date(Date.UTC(2026, 9, 25, 0, 30, 0));
      const seen: number[] = [];
      for (let i = 0; i < 30; i++) {
        const t = nextCronTime(spec('*/5 * * * *'), at)!;
        expect(t.getTime()).toBeGreaterThan(at.getTime());
        expect(t.getTime() - at.getTime()).toBeLessThanOrEqual(5 * 60_000);
        seen.push(t.getTime());
        at = t;
      }
      // Both 02:xx hours are kept, five minutes apart throughout: 30 times over 150 minutes.
      expect(seen.at(-1)! - seen[0]!).toBe(29 * 5 * 60_000);
    });
  });

  it('the timer does not spin in that hour: one tick per time', () => {
    inZone('Europe/Berlin', () => {
      vi.useFakeTimers({ now: new Date(Date.UTC(2026, 9, 25, 1, 30, 0)) });
      const ticks: number[] = [];
      const timer = scheduleCron('*/5 * * * *', () => ticks.push(Date.now()));
      vi.advanceTimersByTime(20 * 60_000);
      timer.stop();
      vi.useRealTimers();
      expect(ticks).toEqual([35, 40, 45, 50].map((m) => Date.UTC(2026, 9, 25, 1, m, 0)));
    });
  });

  it('a time inside the hour skipped when clocks go forward does not occur that day', () => {
    inZone('Europe/Berlin', () => {
      // 2026-03-29: 02:00 CET becomes 03:00 CEST.
      expect(next('30 2 * * *', new Date(2026, 2, 28, 12, 0, 0), 2)).toEqual([
        '2026-03-30 02:30:00',
        '2026-03-31 02:30:00',
      ]);
    });
  });
});

describe('the timer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('fires at each time the expression names, and not after it is stopped', () => {
    vi.useFakeTimers({ now: new Date(2026, 5, 15, 10, 0, 0) });
    const ticks: number[] = [];
    const timer = scheduleCron('*/10 * * * *', () => ticks.push(Date.now()));
    expect(timer.nextAt()).toBe(new Date(2026, 5, 15, 10, 10, 0).getTime());
    vi.advanceTimersByTime(35 * 60_000);
    expect(ticks).toEqual([10, 20, 30].map((m) => new Date(2026, 5, 15, 10, m, 0).getTime()));
    timer.stop();
    expect(timer.nextAt()).toBeUndefined();
    vi.advanceTimersByTime(60 * 60_000);
    expect(ticks).toHaveLength(3);
  });

  it('a time days away is waited for in bounded steps, and still fires on time', () => {
    vi.useFakeTimers({ now: new Date(2026, 5, 15, 10, 0, 0) });
    const ticks: number[] = [];
    const timer = scheduleCron('0 3 * * *', () => ticks.push(Date.now()));
    vi.advanceTimersByTime(17 * 3600_000 - 1);
    expect(ticks).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(ticks).toEqual([new Date(2026, 5, 16, 3, 0, 0).getTime()]);
    timer.stop();
  });

  it('when the clock is set back, the next time is found again from the new now', () => {
    vi.useFakeTimers({ now: new Date(2026, 5, 15, 10, 0, 0) });
    const ticks: number[] = [];
    const timer = scheduleCron('*/5 * * * *', () => ticks.push(Date.now()));
    vi.setSystemTime(new Date(2026, 5, 14, 10, 0, 0)); // a day back
    vi.advanceTimersByTime(5 * 60_000); // the timer comes due early by the new clock, and looks again
    expect(timer.nextAt()).toBe(new Date(2026, 5, 14, 10, 5, 0).getTime());
    vi.advanceTimersByTime(10 * 60_000);
    expect(ticks.length).toBeGreaterThanOrEqual(1);
    expect(ticks.every((t) => t < new Date(2026, 5, 15, 0, 0, 0).getTime())).toBe(true);
    timer.stop();
  });

  it('throws on an expression that is not one', () => {
    expect(() => scheduleCron('61 * * * *', () => undefined)).toThrow(/minutes field/);
  });
});
