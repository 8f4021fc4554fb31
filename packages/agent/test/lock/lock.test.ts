/**
 * Per-file locks (reconcile's targets, the ledger, restores): held by one process at a time, waited for up to the
 * timeout (LOCK_TIMEOUT after that), created whole, and taken over — by exactly one contender — only when the owner
 * cannot be running (gone, a reused pid, a previous boot) or the lock is older than `staleMs`. The world is injected:
 * nothing here depends on this machine's uptime, its processes, or who runs the tests.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compileRunner } from '../../../../scripts/compile-runner.mjs';
import { lockFileFor, withLock } from '../../src/lock/lock.js';
import type { LockWorld } from '../../src/lock/liveness.js';

const HOST = 'this-host';
/** A machine booted a minute ago (a short uptime is the hard case: every recent start is still of this boot). */
const BOOT_AT = Date.now() - 60_000;
const SELF = 4_000_001;
const KEY = '/home/someone/.claude/settings.json';

function world(over: Partial<LockWorld> = {}): LockWorld {
  return {
    host: HOST,
    pid: SELF,
    bootAt: BOOT_AT,
    probe: () => 'alive',
    procStart: () => undefined,
    startedAt: () => undefined,
    ...over,
  };
}

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-file-lock-'));
  file = lockFileFor(dir, KEY);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const lockOf = (owner: Record<string, unknown>) => writeFile(file, JSON.stringify({ key: KEY, ...owner }));
const recent = () => Date.now() - 1_000;
/** Runs under the lock and reports whether it got it. */
const took = (w: LockWorld, options: { timeoutMs?: number; staleMs?: number } = {}) =>
  withLock(dir, KEY, async () => JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>, {
    world: w,
    timeoutMs: 0,
    ...options,
  });

describe('per-file locks', () => {
  it('a live owner keeps its lock: LOCK_TIMEOUT after the timeout, naming the key and the lock file', async () => {
    await lockOf({ pid: 1234, host: HOST, proc_start: '500', started_at_unix_ms: recent() });
    const error = await took(world({ procStart: () => '500' }), { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'LOCK_TIMEOUT',
      message: `another blue-agent process holds the lock for ${KEY}`,
      hint: `Wait for it to finish, or remove ${file} if no blue-agent is running.`,
    });
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: 1234 });
  });

  it('a lock taken before this boot is stale, whatever runs under its pid now', async () => {
    await lockOf({ pid: 1234, host: HOST, proc_start: '500', started_at_unix_ms: BOOT_AT - 3_600_000 });
    expect(await took(world({ procStart: () => '500' }))).toMatchObject({
      pid: SELF,
      host: HOST,
      boot_at_unix_ms: BOOT_AT,
    });
  });

  it('a live pid with another start time than recorded is stale (a reused pid)', async () => {
    await lockOf({ pid: 1234, host: HOST, proc_start: '500', started_at_unix_ms: recent() });
    expect(await took(world({ procStart: (pid) => (pid === 1234 ? '900' : '42') }))).toMatchObject({
      pid: SELF,
      proc_start: '42',
    });
  });

  it('a gone owner, and a lock older than staleMs, are taken over; another host is kept until then', async () => {
    await lockOf({ pid: 1234, host: HOST, started_at_unix_ms: recent() });
    expect(await took(world({ probe: () => 'gone' }))).toMatchObject({ pid: SELF });
    await lockOf({ pid: 1234, host: 'other-host', started_at_unix_ms: recent() });
    await expect(took(world({ probe: () => 'gone' }))).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    await lockOf({ pid: 1234, host: 'other-host', started_at_unix_ms: Date.now() - 10_000 });
    expect(await took(world(), { staleMs: 5_000 })).toMatchObject({ pid: SELF });
  });

  it("an earlier version's lock (pid and host in its token) is judged by the same rules", async () => {
    await writeFile(file, JSON.stringify({ token: `1234@${HOST}#abcdef`, pid: 1234, key: KEY, created: recent() }));
    await expect(took(world())).rejects.toMatchObject({ code: 'LOCK_TIMEOUT' });
    expect(await took(world({ probe: () => 'gone' }))).toMatchObject({
      pid: SELF,
      token: expect.stringMatching(new RegExp(`^${SELF}@${HOST}#`)),
      created: expect.any(Number),
    });
  });

  it('our own pid holds a lock only while this process holds it: in the process a second holder waits', async () => {
    // Left by an earlier process that had our pid.
    await lockOf({ pid: SELF, host: HOST, token: `${SELF}@${HOST}#000000`, started_at_unix_ms: recent() });
    expect(await took(world())).toMatchObject({ pid: SELF });
    // Two holders in this process: one after the other, never both.
    const events: string[] = [];
    const holder = (name: string) =>
      withLock(
        dir,
        KEY,
        async () => {
          events.push(`${name} in`);
          await new Promise((resolve) => setTimeout(resolve, 20));
          events.push(`${name} out`);
        },
        { world: world(), timeoutMs: 10_000 },
      );
    await Promise.all([holder('a'), holder('b')]);
    expect(events.join()).toMatch(/^(a in,a out,b in,b out|b in,b out,a in,a out)$/);
    await expect(readFile(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('of many holders in this process taking over one stale lock together, one holds it at a time', async () => {
    const contenders = Array.from({ length: 12 }, (_, i) => 3_000_000 + i);
    for (let round = 0; round < 5; round++) {
      await lockOf({ pid: 999_999, host: HOST, started_at_unix_ms: recent() });
      let inside = 0;
      let most = 0;
      await Promise.all(
        contenders.map((pid) =>
          withLock(
            dir,
            KEY,
            async () => {
              most = Math.max(most, ++inside);
              await new Promise((resolve) => setImmediate(resolve));
              inside--;
            },
            { world: world({ pid, probe: (p) => (contenders.includes(p) ? 'alive' : 'gone') }), timeoutMs: 30_000 },
          ),
        ),
      );
      expect(most).toBe(1);
    }
  });
});

describe('per-file lock takeover between processes', () => {
  let work: string;
  let runner: string;
  beforeAll(async () => {
    work = await mkdtemp(path.join(tmpdir(), 'blue-file-lock-runner-'));
    runner = await compileRunner(
      path.join(
        path.dirname(fileURLToPath(import.meta.url)),
        '..',
        '..',
        '..',
        '..',
        'test',
        'support',
        'lock-contender.ts',
      ),
      path.join(work, 'lock-contender.mjs'),
    );
  });
  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** Starts a contender and hands out its stdout lines one by one (bounded: a silent child fails the test). */
  function contender(stalePid: number): { child: ChildProcessWithoutNullStreams; line: () => Promise<string> } {
    const child = spawn(process.execPath, [runner, dir, KEY, String(BOOT_AT), String(stalePid), '1500'], {
      stdio: 'pipe',
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const line = () =>
      Promise.race([
        lines.next().then((r) => String(r.value ?? 'exited')),
        new Promise<string>((resolve) => setTimeout(() => resolve('silent'), 60_000).unref()),
      ]);
    return { child, line };
  }

  it('of many processes taking over one stale lock together, exactly one wins (repeatedly)', {
    timeout: 240_000,
  }, async () => {
    const STALE = 2 ** 22 + 17;
    const stale = [
      // Its pid is gone.
      { token: `${STALE}@${HOST}#000000`, pid: STALE, host: HOST, started_at_unix_ms: recent() },
      // Taken before this boot: its pid runs now, which does not make it the owner.
      { pid: STALE + 1, host: HOST, started_at_unix_ms: BOOT_AT - 3_600_000 },
    ];
    for (let round = 0; round < 4; round++) {
      await lockOf({ ...stale[round % stale.length]!, created: recent() });
      const all = Array.from({ length: 6 }, () => contender(STALE));
      try {
        expect(await Promise.all(all.map((c) => c.line()))).toEqual(all.map(() => 'ready'));
        for (const c of all) c.child.stdin.write('go\n');
        const results = await Promise.all(all.map((c) => c.line()));
        expect(results.filter((r) => r === 'won')).toHaveLength(1);
        expect(results.filter((r) => r === 'timeout')).toHaveLength(all.length - 1);
        const winner = all[results.indexOf('won')]!;
        expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: winner.child.pid, host: HOST });
        winner.child.stdin.write('release\n');
        await new Promise((resolve) => winner.child.once('exit', resolve));
        await expect(readFile(file)).rejects.toMatchObject({ code: 'ENOENT' });
      } finally {
        for (const c of all) c.child.kill('SIGKILL');
      }
    }
  });
});
