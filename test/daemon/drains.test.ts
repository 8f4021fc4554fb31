/**
 * The drain scheduler: one drain at a time, requests made meanwhile folded into one more drain, a real intake
 * watch, and a running drain stopped after its grace period on shutdown.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DrainScheduler, type DrainProcess, type DrainResult } from '../../src/daemon/drains.js';
import type { Logger } from '../../src/logger.js';
import { Spool } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../support/context.js';
import { waitFor } from './support.js';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
let t: TestHome;
beforeEach(async () => {
  t = await makeTestHome();
});
afterEach(async () => {
  await t.cleanup();
});

/** A drain that runs until `finish` is called (or it is stopped). */
function fakeDrains() {
  const runs: { finish(): void; stoppedWith: string[] }[] = [];
  let concurrent = 0;
  let maxConcurrent = 0;
  const launch = (): DrainProcess => {
    concurrent++;
    maxConcurrent = Math.max(maxConcurrent, concurrent);
    let finish!: (v: { code: number | null; signal: string | null; stdout: string; stderr: string }) => void;
    const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) => (finish = resolve));
    const run = {
      stoppedWith: [] as string[],
      finish: () => {
        concurrent--;
        finish({ code: 0, signal: null, stdout: JSON.stringify({ built: [], uploaded: [1], failed: [], retried: [], left: 0, left_ready: 0, notes: [] }), stderr: '' });
      },
    };
    runs.push(run);
    return {
      done,
      stop: (signal) => {
        run.stoppedWith.push(signal);
        concurrent--;
        finish({ code: null, signal, stdout: '', stderr: '' });
      },
    };
  };
  return { runs, launch, max: () => maxConcurrent };
}

describe('drain scheduler', () => {
  it('runs one drain at a time and folds the requests made meanwhile into one more', async () => {
    const fake = fakeDrains();
    const results: DrainResult[] = [];
    const s = new DrainScheduler({ ctx: t.ctx, log: quiet, schedule: '0 0 1 1 *', intakeDelayMs: 50, launch: fake.launch, onResult: (r) => void results.push(r) });
    await s.start();
    expect(s.nextRunAt()).toBeGreaterThan(Date.now());
    s.request('schedule');
    s.request('intake');
    s.request('intake');
    s.request('schedule');
    expect(fake.runs).toHaveLength(1);
    fake.runs[0]!.finish();
    await waitFor('the second drain', () => fake.runs.length === 2);
    fake.runs[1]!.finish();
    await waitFor('two results', () => results.length === 2);
    await sleep(100);
    expect(fake.runs).toHaveLength(2);
    expect(fake.max()).toBe(1);
    expect(results.map((r) => [r.trigger, r.ok, r.summary?.uploaded])).toEqual([
      ['schedule', true, 1],
      ['intake', true, 1],
    ]);
    await s.stop(100, 100);
  });

  it('starts a drain soon after a new intake record, and stops a running drain after the grace period', async () => {
    const fake = fakeDrains();
    const results: DrainResult[] = [];
    const s = new DrainScheduler({ ctx: t.ctx, log: quiet, schedule: '0 0 1 1 *', intakeDelayMs: 50, launch: fake.launch, onResult: (r) => void results.push(r) });
    await s.start();
    const spool = await Spool.open(t.ctx.paths.stateDir);
    await spool.enqueueIntake({ harness: 'claude', profile: 'claude-v2_0_12', payload: { session_id: 's1' }, createdAtUnixMs: Date.now() });
    await waitFor('a drain for the new record', () => fake.runs.length === 1, 5_000);
    const began = Date.now();
    await s.stop(200, 1_000);
    expect(Date.now() - began).toBeGreaterThanOrEqual(190);
    expect(fake.runs[0]!.stoppedWith).toEqual(['SIGTERM']);
    expect(results[0]).toMatchObject({ trigger: 'intake', ok: false, interrupted: true, signal: 'SIGTERM' });
    // Once stopped, nothing starts any more.
    s.request('schedule');
    expect(fake.runs).toHaveLength(1);
  });
});
