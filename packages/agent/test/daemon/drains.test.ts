/**
 * The drain scheduler: one drain at a time, requests made meanwhile folded into one more drain, a real intake
 * watch, and a running drain stopped after its grace period on shutdown.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DrainScheduler, spawnDrain, type DrainProcess, type DrainResult } from '../../src/daemon/drains.js';
import { lastDrainPath } from '../../src/daemon/state.js';
import type { Logger } from '../../src/logger.js';
import { Spool, SpoolView } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { waitFor } from '../../../../test/support/agent-home.js';

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
  const runs: { finish(): void; finishWith(signal: string): void; stoppedWith: string[] }[] = [];
  let concurrent = 0;
  let maxConcurrent = 0;
  const launch = (): DrainProcess => {
    concurrent++;
    maxConcurrent = Math.max(maxConcurrent, concurrent);
    let finish!: (v: { code: number | null; signal: string | null; stdout: string; stderr: string }) => void;
    const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>(
      (resolve) => (finish = resolve),
    );
    const run = {
      stoppedWith: [] as string[],
      finish: () => {
        concurrent--;
        finish({
          code: 0,
          signal: null,
          stdout: JSON.stringify({
            built: [],
            uploaded: [1],
            failed: [],
            retried: [],
            left: 0,
            left_ready: 0,
            notes: [],
          }),
          stderr: '',
        });
      },
      finishWith: (signal: string) => {
        concurrent--;
        finish({ code: null, signal, stdout: '', stderr: '' });
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
    const s = new DrainScheduler({
      ctx: t.ctx,
      log: quiet,
      schedule: '0 0 1 1 *',
      intakeDelayMs: 50,
      launch: fake.launch,
      onResult: (r) => void results.push(r),
    });
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
    const log: Logger = { ...quiet };
    const s = new DrainScheduler({
      ctx: t.ctx,
      log,
      schedule: '0 0 1 1 *',
      intakeDelayMs: 50,
      launch: fake.launch,
      onResult: (r) => void results.push(r),
    });
    await s.start();
    const spool = await Spool.open(t.ctx.paths);
    await spool.enqueueIntake({
      harness: 'claude',
      profile: 'claude-v2_0_12',
      payload: { session_id: 's1' },
      createdAtUnixMs: Date.now(),
    });
    await waitFor('a drain for the new record', () => fake.runs.length === 1, 5_000);
    const logged: string[] = [];
    log.info = (message) => void logged.push(message);
    await s.stop(200, 1_000);
    // Signalled once its grace was over (a drain that finishes within it is not: see below), and SIGTERM first.
    expect(logged).toEqual(['stopping the running drain']);
    expect(fake.runs[0]!.stoppedWith).toEqual(['SIGTERM']);
    expect(results[0]).toMatchObject({ trigger: 'intake', ok: false, interrupted: true, signal: 'SIGTERM' });
    // Once stopped, nothing starts any more.
    s.request('schedule');
    expect(fake.runs).toHaveLength(1);
  });

  it('a running drain that finishes within its grace period is not signalled', async () => {
    const fake = fakeDrains();
    const results: DrainResult[] = [];
    const s = new DrainScheduler({
      ctx: t.ctx,
      log: quiet,
      schedule: '0 0 1 1 *',
      intakeDelayMs: 50,
      launch: fake.launch,
      onResult: (r) => void results.push(r),
    });
    await s.start();
    s.request('schedule');
    expect(fake.runs).toHaveLength(1);
    // A grace far longer than this test may run: the stop can only end because the drain finished.
    const stopping = s.stop(600_000, 1_000);
    let stopped = false;
    void stopping.then(() => (stopped = true));
    await sleep(100);
    expect(stopped).toBe(false);
    expect(fake.runs[0]!.stoppedWith).toEqual([]);
    fake.runs[0]!.finish();
    await stopping;
    expect(fake.runs[0]!.stoppedWith).toEqual([]);
    expect(results[0]).toMatchObject({ trigger: 'schedule', ok: true });
  });
});

describe('drain scheduler: idle, stop and the drain process', () => {
  it('a cron tick with an empty spool starts nothing; one with a record (or a claim) starts a drain', {
    timeout: 15_000,
  }, async () => {
    const fake = fakeDrains();
    const logged: string[] = [];
    const log: Logger = { ...quiet, info: (m) => void logged.push(m), warn: (m) => void logged.push(m) };
    const results: DrainResult[] = [];
    const s = new DrainScheduler({
      ctx: t.ctx,
      log,
      schedule: '* * * * * *', // every second
      intakeDelayMs: 50,
      launch: fake.launch,
      onResult: (r) => void results.push(r),
      hasWork: () => new SpoolView(t.ctx.paths).hasWork(),
    });
    await s.start();
    await sleep(2_500);
    expect(fake.runs).toHaveLength(0);
    expect(logged).toEqual([]);
    // A claim left in uploading/ is work too (a dead worker's, to release).
    await writeFile(path.join(t.ctx.paths.stateDir, 'spool', 'uploading', '0000000aa-0123456789.4242.json'), '{}', {
      mode: 0o600,
    });
    await waitFor('a scheduled drain', () => fake.runs.length === 1, 3_000);
    fake.runs[0]!.finish();
    await waitFor('its result', () => results.length === 1);
    expect(results[0]).toMatchObject({ trigger: 'schedule' });
    await s.stop(100, 100);
  });

  it('a drain ended by a signal while the agent stops is interrupted, not failed', async () => {
    const fake = fakeDrains();
    const results: DrainResult[] = [];
    const s = new DrainScheduler({
      ctx: t.ctx,
      log: quiet,
      schedule: '0 0 1 1 *',
      intakeDelayMs: 50,
      launch: fake.launch,
      onResult: (r) => void results.push(r),
    });
    await s.start();
    s.request('request');
    const run = fake.runs[0]!;
    const stopping = s.stop(5_000, 1_000);
    // The terminal's Ctrl-C (or a service manager) reached the drain before the agent's own grace ran out.
    run.finishWith('SIGINT');
    await stopping;
    expect(results[0]).toMatchObject({ ok: false, interrupted: true, signal: 'SIGINT' });
    const last = JSON.parse(readFileSync(lastDrainPath(t.ctx), 'utf8'));
    expect(last.stopped.code).toBe('INTERRUPTED');
  });

  it('a new schedule after stop starts nothing (SIGHUP, then SIGTERM)', async () => {
    const fake = fakeDrains();
    const s = new DrainScheduler({
      ctx: t.ctx,
      log: quiet,
      schedule: '0 0 1 1 *',
      intakeDelayMs: 50,
      launch: fake.launch,
      onResult: () => undefined,
    });
    await s.start();
    await s.stop(100, 100);
    s.reschedule('*/7 * * * *');
    expect(s.nextRunAt()).toBeUndefined();
  });

  it('runs the drain in its own process group, so a Ctrl-C reaches the agent alone', async () => {
    const script = path.join(t.root, 'fake-drain.mjs');
    await writeFile(script, 'setTimeout(() => process.stdout.write("{}"), 5000);\n');
    const ctx = t.context({ self: { ...t.ctx.self, node: process.execPath, entry: script } });
    const drain = spawnDrain(ctx);
    try {
      expect(drain.pid).toBeGreaterThan(0);
      const pgid = Number(execFileSync('ps', ['-o', 'pgid=', '-p', String(drain.pid)], { encoding: 'utf8' }).trim());
      expect(pgid).toBe(drain.pid);
    } finally {
      drain.stop('SIGKILL');
      await drain.done;
    }
  });
});
