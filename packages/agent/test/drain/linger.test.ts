/**
 * The drain a capture hook starts (`drain --linger`) follows the captures that wait for their harness to exit and
 * builds each once its harness has exited: past its window, as long as the harness runs, up to its bound; one
 * lingering drain at a time, which the others leave their captures to.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { drain, type DrainReport } from '../../src/drain/index.js';
import { lingerLockFile } from '../../src/drain/linger.js';
import { processStart } from '../../src/lock/liveness.js';
import { Spool, type SpoolRecord } from '../../src/spool/index.js';
import { claudeSession, CLAUDE_PROFILE } from '../../../../test/support/cli-process.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { deadPid } from '../../../../test/support/spool.js';

let t: TestHome;
let ctx: Context;
const children: ChildProcess[] = [];

beforeEach(async () => {
  t = await makeTestHome();
  ctx = t.context();
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await t.cleanup();
});

/** A short window, looked at often: the test need not wait out the real one. */
const LINGER = { skipUploads: true, lingerMs: 100, lingerPollMs: 50 } as const;
/** Far past the window: a drain that gave up at it has returned by then. */
const PAST_WINDOW_MS = 2_000;

/** A stand-in harness process: runs until killed, or for `ms`. */
function harness(ms = 60_000): ChildProcess {
  const child = spawn(process.execPath, ['-e', `setTimeout(() => {}, ${ms})`], { stdio: 'ignore' });
  children.push(child);
  return child;
}

async function exit(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }
}

/** A capture of session `id` that waits for process `pid` to exit. */
async function enqueueWaiting(pid: number, id: string): Promise<SpoolRecord> {
  const session = await claudeSession(path.join(t.home, '.claude'), {
    id,
    cwd: path.join(t.home, 'work'),
    prompt: `Task ${id}`,
  });
  const spool = await Spool.open(ctx.paths);
  return spool.enqueueIntake({
    harness: 'claude',
    profile: CLAUDE_PROFILE,
    payload: session.payload,
    createdAtUnixMs: Date.now() - 60_000,
    waitForExit: { pid, proc_start: processStart(pid) },
  });
}

/** Whether `drain` is still running after `ms`. */
async function runsAfter(drained: Promise<DrainReport>, ms: number): Promise<boolean> {
  return Promise.race([drained.then(() => false), sleep(ms).then(() => true)]);
}

/** Waits (bounded) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await sleep(50);
  expect(check()).toBe(true);
}

describe('a lingering drain', () => {
  it('builds a capture whose harness exits within the window', async () => {
    const soon = harness(400);
    const record = await enqueueWaiting(soon.pid!, 'linger-0001');
    const report = await drain(ctx, { skipUploads: true, lingerMs: 20_000, lingerPollMs: 50 });
    expect(report.built.map((b) => b.id)).toEqual([record.id]);
    expect(report.deferred).toEqual([]);
  });

  it('follows a capture whose harness runs past the window, and builds it once the harness has exited', async () => {
    const slow = harness();
    const record = await enqueueWaiting(slow.pid!, 'linger-0002');
    const drained = drain(ctx, LINGER);
    expect(await runsAfter(drained, PAST_WINDOW_MS)).toBe(true);
    await exit(slow);
    const report = await drained;
    expect(report.built.map((b) => b.id)).toEqual([record.id]);
    expect(report.deferred).toEqual([]);
  });

  it('stops following at its bound, and leaves the capture deferred for the next drain', async () => {
    const stays = harness();
    const record = await enqueueWaiting(stays.pid!, 'linger-0003');
    const report = await drain(ctx, { ...LINGER, lingerMaxMs: 300 });
    expect(report.built).toEqual([]);
    expect(report.deferred.map((d) => d.id)).toEqual([record.id]);
  });

  it('is one at a time: another drain leaves its capture to the lingering one, which builds both', async () => {
    const first = harness();
    const second = harness();
    const a = await enqueueWaiting(first.pid!, 'linger-0004');
    const drained = drain(ctx, LINGER);
    await until(() => existsSync(lingerLockFile(ctx)));
    const b = await enqueueWaiting(second.pid!, 'linger-0005');
    const other = await Promise.race([drain(ctx, LINGER), sleep(PAST_WINDOW_MS * 5).then(() => undefined)]);
    expect(other?.deferred.map((d) => d.id).sort()).toEqual([a.id, b.id].sort());

    await exit(second);
    await exit(first);
    const report = await drained;
    expect(report.built.map((r) => r.id).sort()).toEqual([a.id, b.id].sort());
    expect(existsSync(lingerLockFile(ctx))).toBe(false);
  });

  it('takes over the linger lock of a drain that died', async () => {
    const slow = harness();
    const record = await enqueueWaiting(slow.pid!, 'linger-0006');
    await mkdir(ctx.paths.locksDir, { recursive: true, mode: 0o700 });
    const dead = { pid: await deadPid(), host: hostname(), started_at_unix_ms: Date.now() - 60_000 };
    await writeFile(lingerLockFile(ctx), JSON.stringify(dead), { mode: 0o600 });
    const drained = drain(ctx, LINGER);
    expect(await runsAfter(drained, PAST_WINDOW_MS)).toBe(true);
    await exit(slow);
    expect((await drained).built.map((b) => b.id)).toEqual([record.id]);
  });
});
