/**
 * The one-per-user lock of `blue-agent run`: created with its content in one step, taken over only when its owner
 * cannot be running (gone, another user's pid, a reused pid, a previous boot), and by one contender only.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireInstanceLock, EXIT_ALREADY_RUNNING, staleReason, type LockWorld } from '../../src/daemon/lock.js';

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-run-lock-'));
  file = path.join(dir, 'agent-run.lock');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const lockOf = (owner: Record<string, unknown>) => writeFile(file, `${JSON.stringify(owner)}\n`);

// The world is injected: nothing here depends on this machine's uptime, its processes, or who runs the tests.
const HOST = 'this-host';
/** A machine booted a minute ago (a short uptime is the hard case: every recent start is still of this boot). */
const BOOT_AT = Date.now() - 60_000;
const SELF = 4_000_001;
function world(over: Partial<LockWorld> = {}): LockWorld {
  return {
    host: HOST,
    pid: SELF,
    bootAt: BOOT_AT,
    probe: () => 'gone',
    procStart: () => undefined,
    startedAt: () => undefined,
    ...over,
  };
}

describe('agent-run.lock', () => {
  it('a lock taken before this boot is stale, even from another host name (renamed across the reboot)', async () => {
    // Its pid runs now (pids restart at boot), which does not make it the owner.
    await lockOf({ pid: 1, host: 'old-laptop-name.local', started_at_unix_ms: BOOT_AT - 3_600_000 });
    const lock = await acquireInstanceLock(file, Date.now(), world({ probe: () => 'alive' }));
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: SELF, host: HOST, boot_at_unix_ms: BOOT_AT });
    await lock.release();
  });

  it('a lock of another host taken during this boot is kept (a shared home), and the refusal exits 3', async () => {
    await lockOf({ pid: 4242, host: 'other-host', started_at_unix_ms: Date.now() - 1_000 });
    const error = await acquireInstanceLock(file, Date.now(), world()).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LOCK_TIMEOUT', exitCode: EXIT_ALREADY_RUNNING });
    expect(String((error as Error).message)).toContain('on other-host');
  });

  it('a pid that now belongs to another process (or another user) is not the owner', async () => {
    // The recorded pid runs, but with another /proc start time than the one recorded: a reused pid.
    await lockOf({ pid: 1234, host: HOST, proc_start: '500', started_at_unix_ms: Date.now() - 1_000 });
    const lock = await acquireInstanceLock(
      file,
      Date.now(),
      world({ probe: () => 'alive', procStart: (pid) => (pid === 1234 ? '900' : '42') }),
    );
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: SELF, proc_start: '42' });
    await lock.release();

    const recent = { pid: 777, host: HOST, started_at_unix_ms: Date.now() - 1_000 };
    expect(staleReason(recent, world({ probe: () => 'foreign' }))).toMatch(/another user/);
    expect(staleReason(recent, world({ probe: () => 'gone' }))).toMatch(/is gone/);
    expect(staleReason(recent, world({ probe: () => 'alive' }))).toBeUndefined();
    expect(
      staleReason({ ...recent, proc_start: '500' }, world({ probe: () => 'alive', procStart: () => '500' })),
    ).toBeUndefined();
    // Without /proc (macOS): the process's own start time must fit the lock's.
    expect(staleReason(recent, world({ probe: () => 'alive', startedAt: () => Date.now() - 86_400_000 }))).toMatch(
      /another process/,
    );
    expect(
      staleReason(recent, world({ probe: () => 'alive', startedAt: () => recent.started_at_unix_ms - 500 })),
    ).toBeUndefined();
  });

  it('shortly after a boot, a live owner that started in this boot keeps its lock', async () => {
    // Booted a minute ago, the agent started 30 s ago: neither "before this boot" nor a reused pid.
    const owner = { pid: 1234, host: HOST, proc_start: '3000', started_at_unix_ms: BOOT_AT + 30_000 };
    await lockOf(owner);
    const alive = world({ probe: () => 'alive', procStart: () => '3000' });
    expect(staleReason(owner, alive)).toBeUndefined();
    await expect(acquireInstanceLock(file, Date.now(), alive)).rejects.toMatchObject({
      code: 'LOCK_TIMEOUT',
      exitCode: EXIT_ALREADY_RUNNING,
    });
    // The same record, taken (by the clock) a while before this boot: stale whatever runs under its pid.
    expect(staleReason({ ...owner, started_at_unix_ms: BOOT_AT - 10 * 60_000 }, alive)).toBe(
      'taken before this machine booted',
    );
  });

  it('of many runs taking over one stale lock together, exactly one wins', async () => {
    await lockOf({ pid: 999_999_999, host: HOST, started_at_unix_ms: Date.now() - 1_000 });
    const contenders = Array.from({ length: 12 }, (_, i) => 3_000_000 + i);
    const contender = (pid: number): LockWorld =>
      world({ pid, probe: (p) => (contenders.includes(p) ? 'alive' : 'gone') });
    for (let round = 0; round < 5; round++) {
      const results = await Promise.allSettled(
        contenders.map((pid) => acquireInstanceLock(file, Date.now(), contender(pid))),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      for (const r of results)
        if (r.status === 'rejected')
          expect(r.reason).toMatchObject({ code: 'LOCK_TIMEOUT', exitCode: EXIT_ALREADY_RUNNING });
      const owner = JSON.parse(await readFile(file, 'utf8'));
      expect(contenders).toContain(owner.pid);
      // The winner "dies": its lock is stale for the next round.
      await lockOf({ pid: 999_999_999, host: HOST, started_at_unix_ms: Date.now() - 1_000 });
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
      const lock = await acquireInstanceLock(file, Date.now(), world());
      await lock.release();
    }
    stop = true;
    await reader;
    expect(bad).toEqual([]);
  });
});
