import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { processRuns } from '../../src/lock/liveness.js';
import { createProcessRunner } from '@blue-agent/contract/util/process.js';

const run = createProcessRunner();

/** Waits until `pid` no longer runs: a SIGKILL is sent, but the kernel takes its moment to end the process. */
async function gone(pid: number): Promise<void> {
  expect(Number.isInteger(pid) && pid > 0).toBe(true);
  for (let i = 0; processRuns(pid); i++) {
    if (i >= 400) throw new Error(`process ${pid} still runs after its group was killed`);
    await sleep(25);
  }
}

describe('process runner', () => {
  it('runs without a shell and returns output and exit code', async () => {
    const result = await run('/bin/echo', ['$HOME', 'a b'], { timeoutMs: 5_000 });
    expect(result).toMatchObject({ exitCode: 0, stdout: '$HOME a b\n', timedOut: false });
  });

  it('reports a binary that cannot be started', async () => {
    const result = await run('/nonexistent/tool', [], { timeoutMs: 5_000 });
    expect(result.spawnError).toBeDefined();
    expect(result.exitCode).toBeUndefined();
  });

  // Both hold stdout open for 30 s in a grandchild: a runner that waited for it would outlive the test's timeout.
  it('ends the whole process group at the deadline, even when a grandchild holds stdout open', {
    timeout: 15_000,
  }, async () => {
    const result = await run('/bin/sh', ['-c', 'sleep 30 & echo started $!; wait'], { timeoutMs: 500 });
    expect(result.timedOut).toBe(true);
    const [word, pid] = result.stdout.trim().split(' ');
    expect(word).toBe('started');
    await gone(Number(pid));
  });

  it('does not wait for a background process the child left holding stdout', { timeout: 15_000 }, async () => {
    const result = await run('/bin/sh', ['-c', 'sleep 30 & echo done $!'], { timeoutMs: 800 });
    const [word, pid] = result.stdout.trim().split(' ');
    expect(word).toBe('done');
    // It went with the group, not left running.
    await gone(Number(pid));
  });

  it('ends the whole process group when its signal aborts, before the deadline', async () => {
    const abort = new AbortController();
    const pending = run('/bin/sh', ['-c', 'sleep 30 & echo started; wait'], {
      timeoutMs: 60_000,
      signal: abort.signal,
    });
    abort.abort();
    const result = await pending;
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).not.toBe(0);
  });

  it('keeps at most maxOutputBytes of output', async () => {
    const result = await run('/bin/sh', ['-c', 'head -c 100000 /dev/zero | tr "\\0" x'], {
      timeoutMs: 5_000,
      maxOutputBytes: 1000,
    });
    expect(result.stdout.length).toBeLessThanOrEqual(1000);
  });
});
