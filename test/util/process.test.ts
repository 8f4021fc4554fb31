import { describe, expect, it } from 'vitest';
import { createProcessRunner } from '../../src/util/process.js';

const run = createProcessRunner();

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

  it('ends the whole process group at the deadline, even when a grandchild holds stdout open', async () => {
    const started = Date.now();
    const result = await run('/bin/sh', ['-c', 'sleep 30 & echo started; wait'], { timeoutMs: 500 });
    expect(result.timedOut).toBe(true);
    expect(result.stdout).toBe('started\n');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('does not wait for a background process the child left holding stdout', async () => {
    const started = Date.now();
    const result = await run('/bin/sh', ['-c', 'sleep 30 & echo done'], { timeoutMs: 800 });
    expect(result.stdout).toBe('done\n');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('ends the whole process group when its signal aborts, before the deadline', async () => {
    const abort = new AbortController();
    const pending = run('/bin/sh', ['-c', 'sleep 30 & echo started; wait'], { timeoutMs: 60_000, signal: abort.signal });
    abort.abort();
    const result = await pending;
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).not.toBe(0);
  });

  it('keeps at most maxOutputBytes of output', async () => {
    const result = await run('/bin/sh', ['-c', 'head -c 100000 /dev/zero | tr "\\0" x'], { timeoutMs: 5_000, maxOutputBytes: 1000 });
    expect(result.stdout.length).toBeLessThanOrEqual(1000);
  });
});
