/**
 * The one owner-liveness rule, judged against an injected world: nothing here depends on this machine's uptime, its
 * processes, or who runs the tests.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BOOT_SLACK_MS, staleOwnerReason, type LivenessRules, type LockWorld, type RecordedOwner } from '../../src/lock/liveness.js';

const HOST = 'this-host';
const NOW = 1_800_000_000_000;
const SELF = 4_000_001;

function world(over: Partial<LockWorld> = {}): LockWorld {
  return { host: HOST, pid: SELF, bootAt: NOW - 3_600_000, probe: () => 'alive', procStart: () => undefined, startedAt: () => undefined, now: () => NOW, ...over };
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
          const owner: RecordedOwner = { pid, host, procStart: '1', ...(asProcessStart ? { processStartedAt: at, recordedAt: NOW - 1_000 } : { recordedAt: at }) };
          expect(staleOwnerReason(owner, w, rules)).toBe('taken before this machine booted');
        },
      ),
      { numRuns: 500 },
    );
  });

  it('a live pid of this host that started at another time than recorded is stale (a reused pid)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 2 ** 22 }), fc.string({ minLength: 1, maxLength: 12 }), fc.string({ minLength: 1, maxLength: 12 }), (pid, recorded, now) => {
        fc.pre(recorded !== now);
        const w = world({ procStart: (p) => (p === pid ? now : undefined) });
        expect(staleOwnerReason({ pid, host: HOST, procStart: recorded, recordedAt: NOW - 1_000 }, w)).toBe(`pid ${pid} is another process now`);
        // The same start: the owner.
        expect(staleOwnerReason({ pid, host: HOST, procStart: now, recordedAt: NOW - 1_000 }, w)).toBeUndefined();
      }),
      { numRuns: 300 },
    );
    // Where only a wall-clock start is known (a restore journal): beyond the slack it is another process.
    const w = world({ startedAt: () => NOW - 60_000 });
    expect(staleOwnerReason({ pid: 77, host: HOST, processStartedAt: NOW - 10_000 }, w, { startSlackMs: 5_000 })).toBe('pid 77 is another process now');
    expect(staleOwnerReason({ pid: 77, host: HOST, processStartedAt: NOW - 58_000 }, w, { startSlackMs: 5_000 })).toBeUndefined();
  });

  it('a live owner of this boot with its own start time, within its age, is never stale', () => {
    fc.assert(
      fc.property(rulesArb, fc.integer({ min: 2, max: 2 ** 22 }), fc.integer({ min: 0, max: 3_500_000 }), (rules, pid, age) => {
        fc.pre(pid !== SELF && (rules.maxAgeMs === undefined || age <= rules.maxAgeMs));
        const w = world({ procStart: () => '4242', startedAt: () => NOW - age });
        expect(staleOwnerReason({ pid, host: HOST, procStart: '4242', recordedAt: NOW - age }, w, rules)).toBeUndefined();
      }),
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
    expect(staleOwnerReason({ ...recent, recordedAt: NOW - 61_000 }, world(), { maxAgeMs: 60_000 })).toMatch(/older than/);
    expect(staleOwnerReason({ host: HOST }, world())).toBe('no owner recorded');
  });

  it('a record without a start time from a process that started long before it (no /proc) is stale only for a lock written at start', () => {
    const w = world({ startedAt: () => NOW - 86_400_000 + 1 });
    const owner = { pid: 77, host: HOST, recordedAt: NOW - 1_000 };
    expect(staleOwnerReason(owner, w, { writtenAtStart: true })).toBe('pid 77 is another process now');
    // A per-file lock is taken at any point of its owner's life.
    expect(staleOwnerReason(owner, w)).toBeUndefined();
  });
});
