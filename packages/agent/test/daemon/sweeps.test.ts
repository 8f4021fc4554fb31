/**
 * The idle sweep's loop on its own, with the step stood in for: one sweep at a time, a sweep asked for meanwhile run
 * once after it, none while there is no policy (the next period instead), a failed step recorded with its error, and
 * nothing started once halted. Timers are vitest's fake ones: nothing here waits on the clock.
 */
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import { bufferOutput } from '../../src/context.js';
import { createRunLogger } from '../../src/daemon/log.js';
import { SweepLoop, type SweepLoopOptions, type SweepRecord } from '../../src/daemon/sweeps.js';
import type { SweepTaskResult } from '../../src/daemon/tasks.js';

const PERIOD_MS = 60_000;
const swept: SweepTaskResult = { ok: true, idle_ms: 1_500, watch: [], enqueued: 1, active: 0 };

let out: ReturnType<typeof bufferOutput>;
let records: { record: SweepRecord; captured: boolean }[];
let loop: SweepLoop | undefined;

beforeEach(() => {
  vi.useFakeTimers();
  out = bufferOutput();
  records = [];
});
afterEach(async () => {
  loop?.halt();
  await loop?.close();
  loop = undefined;
  vi.useRealTimers();
});

function sweepLoop(options: Partial<SweepLoopOptions>): SweepLoop {
  loop = new SweepLoop({
    now: () => Date.now(),
    log: createRunLogger({ target: { kind: 'stdout' }, stdout: out, env: {} }),
    periodicMs: PERIOD_MS,
    mayRun: () => true,
    run: async () => swept,
    onSwept: async (record, captured) => void records.push({ record, captured }),
    watch: async () => ({ close: async () => undefined }),
    ...options,
  });
  return loop;
}

it('runs one sweep at a time; sweeps asked for meanwhile run once, after it', async () => {
  const finish: (() => void)[] = [];
  const l = sweepLoop({ run: () => new Promise((resolve) => finish.push(() => resolve(swept))) });
  const first = l.sweep();
  void l.sweep();
  void l.sweep();
  expect(finish).toHaveLength(1);
  finish[0]!();
  await first;
  expect(finish).toHaveLength(2);
  finish[1]!();
  await l.inFlight;
  expect(finish).toHaveLength(2);
  expect(records).toEqual([
    { record: expect.objectContaining({ ok: true, idle_ms: 1_500, enqueued: 1 }), captured: true },
    { record: expect.objectContaining({ ok: true, idle_ms: 1_500, enqueued: 1 }), captured: true },
  ]);
});

it('without a policy to sweep under, runs no step and looks again a period later', async () => {
  let usable = false;
  let runs = 0;
  const l = sweepLoop({ mayRun: () => usable, run: async () => (runs++, swept) });
  await l.sweep();
  expect(runs).toBe(0);
  usable = true;
  await vi.advanceTimersByTimeAsync(PERIOD_MS - 1);
  expect(runs).toBe(0);
  await vi.advanceTimersByTimeAsync(1);
  await l.inFlight;
  expect(runs).toBe(1);
});

it('keeps the earliest of the sweeps asked for, and the next one a sweep names', async () => {
  let runs = 0;
  const l = sweepLoop({ run: async () => (runs++, { ...swept, next_due_at_unix_ms: Date.now() + 5_000 }) });
  l.request(Date.now() + 10_000);
  l.request(Date.now() + 20_000);
  await vi.advanceTimersByTimeAsync(10_000);
  await l.inFlight;
  expect(runs).toBe(1);
  // Due 5 s after the sweep, plus the second it waits past it: before the period.
  await vi.advanceTimersByTimeAsync(6_000);
  await l.inFlight;
  expect(runs).toBe(2);
});

it('records a failed step with its error, captures nothing, and says so in the log', async () => {
  const l = sweepLoop({
    run: async () => {
      throw new Error('the step child died');
    },
  });
  await l.sweep();
  expect(records).toEqual([
    {
      record: expect.objectContaining({
        ok: false,
        enqueued: 0,
        error: { code: 'INTERNAL', message: expect.stringContaining('the step child died') },
      }),
      captured: false,
    },
  ]);
  expect(out.text()).toContain('idle sweep failed');
});

it('starts nothing once halted', async () => {
  let runs = 0;
  const l = sweepLoop({ run: async () => (runs++, swept) });
  l.request(Date.now() + 1_000);
  l.halt();
  l.request(Date.now() + 2_000);
  await l.sweep();
  await vi.advanceTimersByTimeAsync(PERIOD_MS * 2);
  expect(runs).toBe(0);
  expect(records).toEqual([]);
});
