/**
 * The one-per-user lock of `blue-agent run`: created with its content in one step, taken over only when its owner
 * cannot be running (gone, another user's pid, a reused pid, a previous boot), and by one contender only.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireInstanceLock, bootTime, EXIT_ALREADY_RUNNING, RUN_LOCK_FILE, staleReason, systemLockWorld, type LockWorld } from '../../src/daemon/lock.js';

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-run-lock-'));
  file = path.join(dir, RUN_LOCK_FILE);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const lockOf = (owner: Record<string, unknown>) => writeFile(file, `${JSON.stringify(owner)}\n`);

describe('agent-run.lock', () => {
  it('a lock taken before this boot is stale, even from another host name (renamed across the reboot)', async () => {
    await lockOf({ pid: process.pid === 1 ? 2 : 1, host: 'old-laptop-name.local', started_at_unix_ms: bootTime() - 3_600_000 });
    const lock = await acquireInstanceLock(dir, Date.now());
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    await lock.release();
  });

  it('a lock of another host taken during this boot is kept (a shared home), and the refusal exits 3', async () => {
    await lockOf({ pid: 4242, host: 'other-host', started_at_unix_ms: Date.now() - 1_000 });
    const error = await acquireInstanceLock(dir, Date.now()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LOCK_TIMEOUT', exitCode: EXIT_ALREADY_RUNNING });
    expect(String((error as Error).message)).toContain('on other-host');
  });

  it('a pid that now belongs to another process (or another user) is not the owner', async () => {
    // pid 1 runs (init), but it started long before this lock was recorded (or, unprivileged, is not ours: EPERM).
    await lockOf({ pid: 1, host: hostname(), started_at_unix_ms: Date.now() - 1_000 });
    const lock = await acquireInstanceLock(dir, Date.now());
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: process.pid });
    await lock.release();

    const world = (over: Partial<LockWorld>): LockWorld => ({ ...systemLockWorld(), procStart: () => undefined, startedAt: () => undefined, ...over });
    const recent = { pid: 777, host: hostname(), started_at_unix_ms: Date.now() - 1_000 };
    expect(staleReason(recent, world({ probe: () => 'foreign' }))).toMatch(/another user/);
    expect(staleReason(recent, world({ probe: () => 'alive' }))).toBeUndefined();
    // Without /proc (macOS): the process's own start time must fit the lock's.
    expect(staleReason(recent, world({ probe: () => 'alive', startedAt: () => Date.now() - 86_400_000 }))).toMatch(/another process/);
    expect(staleReason(recent, world({ probe: () => 'alive', startedAt: () => recent.started_at_unix_ms - 500 }))).toBeUndefined();
  });

  it('of many runs taking over one stale lock together, exactly one wins', async () => {
    await lockOf({ pid: 999_999_999, host: hostname(), started_at_unix_ms: Date.now() - 1_000 });
    const contenders = Array.from({ length: 12 }, (_, i) => 3_000_000 + i);
    const world = (pid: number): LockWorld => ({
      host: hostname(),
      pid,
      bootAt: bootTime(),
      probe: (p) => (contenders.includes(p) ? 'alive' : 'gone'),
      procStart: () => undefined,
      startedAt: () => undefined,
    });
    for (let round = 0; round < 5; round++) {
      const results = await Promise.allSettled(contenders.map((pid) => acquireInstanceLock(dir, Date.now(), world(pid))));
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'LOCK_TIMEOUT', exitCode: EXIT_ALREADY_RUNNING });
      const owner = JSON.parse(await readFile(file, 'utf8'));
      expect(contenders).toContain(owner.pid);
      // The winner "dies": its lock is stale for the next round.
      await lockOf({ pid: 999_999_999, host: hostname(), started_at_unix_ms: Date.now() - 1_000 });
    }
  });

  it('a reader never finds the lock empty or half written', async () => {
    let stop = false;
    const bad: string[] = [];
    const reader = (async () => {
      while (!stop) {
        try {
          const text = readFileSync(file, 'utf8');
          try {
            JSON.parse(text);
          } catch {
            bad.push(text);
          }
        } catch {
          // absent
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    for (let i = 0; i < 300; i++) {
      const lock = await acquireInstanceLock(dir, Date.now());
      await lock.release();
    }
    stop = true;
    await reader;
    expect(bad).toEqual([]);
  });
});
