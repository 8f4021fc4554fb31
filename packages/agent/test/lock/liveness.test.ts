/**
 * The one owner-liveness rule, judged against an injected world: nothing here depends on this machine's uptime, its
 * processes, or who runs the tests.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BOOT_SLACK_MS,
  staleOwnerReason,
  type LivenessRules,
  type LockWorld,
  type RecordedOwner,
} from '../../src/lock/liveness.js';

const HOST = 'this-host';
const NOW = 1_800_000_000_000;
const SELF = 4_000_001;

function world(over: Partial<LockWorld> = {}): LockWorld {
  return {
    host: HOST,
    pid: SELF,
    bootAt: NOW - 3_600_000,
    probe: () => 'alive',
    procStart: () => undefined,
    startedAt: () => undefined,
    now: () => NOW,
    ...over,
  };
}

const rulesArb: fc.Arbitrary<LivenessRules> = fc.record(
  {
    self: fc.boolean(),
    maxAgeMs: fc.integer({ min: 1, max: 86_400_000 }),
    bootSlackMs: fc.integer({ min: 0, max: 600_000 }),
    startSlackMs: fc.integer({ min: 0, max: 60_000 }),
    otherHost: fc.constantFrom('alive' as const, 'stale' as const),
    foreign: fc.constantFrom('alive' as const, 'stale' as const),
    writtenAtStart: fc.boolean(),
  },
  { requiredKeys: [] },
);
const probeArb = fc.constantFrom('alive' as const, 'gone' as const, 'foreign' as const);

describe('owner liveness', () => {
  it('a record from before this boot is stale, whatever runs under its pid, on any host, under any rules', () => {
    fc.assert(
      fc.property(
        rulesArb,
        probeArb,
        fc.integer({ min: 1, max: 2 ** 22 }),
        fc.option(fc.constantFrom(HOST, 'other-host'), { nil: undefined }),
        fc.integer({ min: 1, max: 10 * 86_400_000 }),
        fc.boolean(),
        (rules, seen, pid, host, before, asProcessStart) => {
          const w = world({ probe: () => seen, procStart: () => '1', startedAt: () => NOW - 1_000 });
          const at = w.bootAt - (rules.bootSlackMs ?? BOOT_SLACK_MS) - before;
          const owner: RecordedOwner = {
            pid,
            host,
            procStart: '1',
            ...(asProcessStart ? { processStartedAt: at, recordedAt: NOW - 1_000 } : { recordedAt: at }),
          };
          expect(staleOwnerReason(owner, w, rules)).toBe('taken before this machine booted');
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a live pid of this host that started at another time than recorded is stale (a reused pid)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 2 ** 22 }),
        fc.string({ minLength: 1, maxLength: 12 }),
        fc.string({ minLength: 1, maxLength: 12 }),
        (pid, recorded, now) => {
          fc.pre(recorded !== now);
          const w = world({ procStart: (p) => (p === pid ? now : undefined) });
          expect(staleOwnerReason({ pid, host: HOST, procStart: recorded, recordedAt: NOW - 1_000 }, w)).toBe(
            `pid ${pid} is another process now`,
          );
          // The same start: the owner.
          expect(staleOwnerReason({ pid, host: HOST, procStart: now, recordedAt: NOW - 1_000 }, w)).toBeUndefined();
        },
      ),
      { numRuns: 300 },
    );
    // Where only a wall-clock start is known (a restore journal): beyond the slack it is another process.
    const w = world({ startedAt: () => NOW - 60_000 });
    expect(staleOwnerReason({ pid: 77, host: HOST, processStartedAt: NOW - 10_000 }, w, { startSlackMs: 5_000 })).toBe(
      'pid 77 is another process now',
    );
    expect(
      staleOwnerReason({ pid: 77, host: HOST, processStartedAt: NOW - 58_000 }, w, { startSlackMs: 5_000 }),
    ).toBeUndefined();
  });

  it('a live owner of this boot with its own start time, within its age, is never stale', () => {
    fc.assert(
      fc.property(
        rulesArb,
        fc.integer({ min: 2, max: 2 ** 22 }),
        fc.integer({ min: 0, max: 3_500_000 }),
        (rules, pid, age) => {
          fc.pre(pid !== SELF && (rules.maxAgeMs === undefined || age <= rules.maxAgeMs));
          const w = world({ procStart: () => '4242', startedAt: () => NOW - age });
          expect(
            staleOwnerReason({ pid, host: HOST, procStart: '4242', recordedAt: NOW - age }, w, rules),
          ).toBeUndefined();
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a gone pid is stale; a foreign pid and another host follow the rules; our own pid counts only when held', () => {
    const recent = { pid: 77, host: HOST, recordedAt: NOW - 1_000 };
    expect(staleOwnerReason(recent, world({ probe: () => 'gone' }))).toBe('pid 77 is gone');
    expect(staleOwnerReason(recent, world({ probe: () => 'foreign' }))).toMatch(/another user/);
    expect(staleOwnerReason(recent, world({ probe: () => 'foreign' }), { foreign: 'alive' })).toBeUndefined();
    const elsewhere = { ...recent, host: 'other-host' };
    expect(staleOwnerReason(elsewhere, world({ probe: () => 'gone' }))).toBeUndefined();
    expect(staleOwnerReason(elsewhere, world(), { otherHost: 'stale' })).toMatch(/another host/);
    const mine = { ...recent, pid: SELF };
    expect(staleOwnerReason(mine, world())).toMatch(/this process/);
    expect(staleOwnerReason(mine, world(), { self: true })).toBeUndefined();
    expect(staleOwnerReason({ ...recent, recordedAt: NOW - 61_000 }, world(), { maxAgeMs: 60_000 })).toMatch(
      /older than/,
    );
    expect(staleOwnerReason({ host: HOST }, world())).toBe('no owner recorded');
  });

  it(
    'a record without a start time from a process that started long before it (no /proc) is stale only for a lock ' +
      'written at start',
    () => {
      const w = world({ startedAt: () => NOW - 86_400_000 + 1 });
      const owner = { pid: 77, host: HOST, recordedAt: NOW - 1_000 };
      expect(staleOwnerReason(owner, w, { writtenAtStart: true })).toBe('pid 77 is another process now');
      // A per-file lock is taken at any point of its owner's life.
      expect(staleOwnerReason(owner, w)).toBeUndefined();
    },
  );
});

describe('owner liveness, rule by rule', () => {
  const recent = { pid: 77, host: HOST, recordedAt: NOW - 1_000 };

  it('needs a recorded pid that is a safe integer', () => {
    for (const pid of [undefined, '77', 1.5, Number.NaN, 2 ** 53, null]) {
      expect(staleOwnerReason({ ...recent, pid }, world({ probe: () => 'gone' }))).toBe('no owner recorded');
    }
  });

  it('reads the wall clock when the world has none', () => {
    const { now: _, ...clockless } = world({ bootAt: -1e15 });
    expect(staleOwnerReason({ ...recent, recordedAt: 0 }, clockless, { maxAgeMs: 1_000 })).toBe('older than 1 s');
  });

  it('counts a record as this boot up to the slack, preferring the process start to the record time', () => {
    const w = world();
    const edge = w.bootAt - BOOT_SLACK_MS;
    expect(staleOwnerReason({ ...recent, recordedAt: edge }, w)).toBeUndefined();
    expect(staleOwnerReason({ ...recent, recordedAt: edge - 1 }, w)).toBe('taken before this machine booted');
    expect(staleOwnerReason({ ...recent, recordedAt: w.bootAt - 10 }, w, { bootSlackMs: 10 })).toBeUndefined();
    expect(staleOwnerReason({ ...recent, recordedAt: w.bootAt - 11 }, w, { bootSlackMs: 10 })).toBe(
      'taken before this machine booted',
    );
    // A process of this boot that refreshed nothing since: its start decides, not an old record time.
    const started = { ...recent, processStartedAt: w.bootAt + 1, recordedAt: edge - 1 };
    expect(staleOwnerReason(started, world({ startedAt: () => w.bootAt + 1 }))).toBeUndefined();
    // Times that are not finite numbers are not recorded times.
    for (const bad of [Number.NaN, Number.NEGATIVE_INFINITY, '0', null]) {
      expect(staleOwnerReason({ ...recent, recordedAt: bad }, w, { maxAgeMs: 1 })).toBeUndefined();
      expect(staleOwnerReason({ ...recent, processStartedAt: bad }, world({ startedAt: () => 0 }))).toBeUndefined();
    }
  });

  it('is older than maxAgeMs only past it, and only with a record time', () => {
    expect(staleOwnerReason({ ...recent, recordedAt: NOW - 60_000 }, world(), { maxAgeMs: 60_000 })).toBeUndefined();
    expect(staleOwnerReason({ ...recent, recordedAt: NOW - 60_001 }, world(), { maxAgeMs: 60_000 })).toBe(
      'older than 60 s',
    );
    expect(staleOwnerReason({ ...recent, recordedAt: NOW - 2_000 }, world(), { maxAgeMs: 1_499 })).toBe(
      'older than 1 s',
    );
    expect(staleOwnerReason({ pid: 77, host: HOST }, world(), { maxAgeMs: 1 })).toBeUndefined();
  });

  it('judges a record of another host by the caller’s rule, before its pid', () => {
    const elsewhere = { ...recent, host: 'other-host' };
    const gone = world({ probe: () => 'gone' });
    expect(staleOwnerReason(elsewhere, gone, { otherHost: 'stale' })).toBe('recorded on another host (other-host)');
    expect(staleOwnerReason(elsewhere, gone, { otherHost: 'alive' })).toBeUndefined();
    expect(staleOwnerReason({ ...elsewhere, host: 42 }, gone, { otherHost: 'stale' })).toBe(
      'recorded on another host (42)',
    );
    // No host recorded: this one, so the pid is looked at.
    expect(staleOwnerReason({ pid: 77, recordedAt: NOW - 1_000 }, gone, { otherHost: 'stale' })).toBe('pid 77 is gone');
    expect(staleOwnerReason(recent, gone, { otherHost: 'stale' })).toBe('pid 77 is gone');
  });

  it('names our own pid not held, and another user’s pid unless the caller keeps it', () => {
    expect(staleOwnerReason({ ...recent, pid: SELF }, world({ probe: () => 'gone' }), { self: false })).toBe(
      `pid ${SELF} is this process, which does not hold it`,
    );
    expect(staleOwnerReason({ ...recent, pid: SELF }, world({ probe: () => 'gone' }), { self: true })).toBeUndefined();
    expect(staleOwnerReason(recent, world({ probe: () => 'foreign' }), { foreign: 'stale' })).toBe(
      'pid 77 belongs to another user',
    );
    expect(staleOwnerReason(recent, world({ probe: () => 'foreign' }))).toBe('pid 77 belongs to another user');
    const probed: number[] = [];
    expect(staleOwnerReason(recent, world({ probe: (p) => (probed.push(p), 'alive') }))).toBeUndefined();
    expect(probed).toEqual([77]);
  });

  it('compares recorded /proc start ticks with those of the pid, when both are known', () => {
    const ticks = (value: string | undefined) => world({ procStart: (p) => (p === 77 ? value : 'other') });
    expect(staleOwnerReason({ ...recent, procStart: '100' }, ticks('100'))).toBeUndefined();
    expect(staleOwnerReason({ ...recent, procStart: '100' }, ticks('101'))).toBe('pid 77 is another process now');
    expect(staleOwnerReason({ ...recent, procStart: '100' }, ticks(undefined))).toBeUndefined();
    // Ticks that are not a string are not recorded: the wall-clock start decides.
    const w = world({ procStart: () => '5', startedAt: () => NOW - 60_000 });
    expect(staleOwnerReason({ ...recent, procStart: 100, processStartedAt: NOW - 1_000 }, w)).toBe(
      'pid 77 is another process now',
    );
    expect(staleOwnerReason({ ...recent, procStart: 5, processStartedAt: NOW - 60_000 }, w)).toBeUndefined();
    // Recorded ticks decide even when the recorded wall-clock start is far off.
    expect(staleOwnerReason({ ...recent, procStart: '5', processStartedAt: NOW - 1_000 }, w)).toBeUndefined();
  });

  it('compares a recorded wall-clock start within the slack, either way', () => {
    const at = (start: number | undefined) => world({ startedAt: (p) => (p === 77 ? start : NOW) });
    const owner = { ...recent, processStartedAt: NOW - 100_000 };
    expect(staleOwnerReason(owner, at(NOW - 100_000 + 5_000))).toBeUndefined();
    expect(staleOwnerReason(owner, at(NOW - 100_000 - 5_000))).toBeUndefined();
    expect(staleOwnerReason(owner, at(NOW - 100_000 + 5_001))).toBe('pid 77 is another process now');
    expect(staleOwnerReason(owner, at(NOW - 100_000 - 5_001))).toBe('pid 77 is another process now');
    expect(staleOwnerReason(owner, at(NOW - 100_000 + 20), { startSlackMs: 20 })).toBeUndefined();
    expect(staleOwnerReason(owner, at(NOW - 100_000 + 21), { startSlackMs: 20 })).toBe('pid 77 is another process now');
    expect(staleOwnerReason(owner, at(undefined))).toBeUndefined();
    // The recorded start decides over writtenAtStart's window.
    expect(staleOwnerReason(owner, at(NOW - 100_000), { writtenAtStart: true })).toBeUndefined();
  });

  it('for a lock written at start: the process started at most 2 s after the record, at most 10 min before', () => {
    const rec = NOW - 1_000;
    const at = (start: number | undefined) => world({ startedAt: (p) => (p === 77 ? start : rec) });
    const rules = { writtenAtStart: true };
    expect(staleOwnerReason(recent, at(rec + 2_000), rules)).toBeUndefined();
    expect(staleOwnerReason(recent, at(rec + 2_001), rules)).toBe('pid 77 is another process now');
    expect(staleOwnerReason(recent, at(rec - 600_000), rules)).toBeUndefined();
    expect(staleOwnerReason(recent, at(rec - 600_001), rules)).toBe('pid 77 is another process now');
    expect(staleOwnerReason(recent, at(undefined), rules)).toBeUndefined();
    expect(staleOwnerReason({ pid: 77, host: HOST }, world({ startedAt: () => 0 }), rules)).toBeUndefined();
    expect(staleOwnerReason(recent, at(rec + 2_001), { writtenAtStart: false })).toBeUndefined();
  });
});
