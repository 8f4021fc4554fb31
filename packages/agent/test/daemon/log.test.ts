/**
 * Where the run loop logs, and that the log file stays bounded.
 */
import { existsSync, fstatSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/context.js';
import { createRunLogger, detectLogTarget, stdoutIdentity } from '../../src/daemon/log.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-run-log-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('run log', () => {
  it('goes to stdout when that is the journal or BLUE_AGENT_LOG=json, to run.log otherwise', () => {
    const file = { kind: 'file', file: path.join(dir, 'run.log'), maxBytes: 1024 * 1024 };
    const journal = () => '8:123';
    // JOURNAL_STREAM counts only when it names this process's stdout (dev:ino of fd 1, as systemd documents).
    expect(detectLogTarget({ JOURNAL_STREAM: '8:123' }, path.join(dir, 'run.log'), undefined, journal)).toEqual({
      kind: 'stdout',
    });
    expect(detectLogTarget({ JOURNAL_STREAM: '8:123' }, path.join(dir, 'run.log'), undefined, () => '8:999')).toEqual(
      file,
    );
    expect(detectLogTarget({ JOURNAL_STREAM: '8:123' }, path.join(dir, 'run.log'), undefined, () => undefined)).toEqual(
      file,
    );
    // INVOCATION_ID alone leaks into terminals started from a user service: not enough.
    expect(detectLogTarget({ INVOCATION_ID: 'abc' }, path.join(dir, 'run.log'), undefined, journal)).toEqual(file);
    // launchd never rotates StandardOutPath: its agent (and any other XPC service) logs to the rotated run.log.
    expect(
      detectLogTarget({ XPC_SERVICE_NAME: 'com.blue-agent.agent' }, path.join(dir, 'run.log'), undefined, journal),
    ).toEqual(file);
    expect(
      detectLogTarget(
        { XPC_SERVICE_NAME: 'application.com.apple.Terminal.123' },
        path.join(dir, 'run.log'),
        undefined,
        journal,
      ),
    ).toEqual(file);
    expect(detectLogTarget({ BLUE_AGENT_LOG: 'json' }, path.join(dir, 'run.log'))).toEqual({ kind: 'stdout' });
    expect(
      detectLogTarget(
        { INVOCATION_ID: 'abc', JOURNAL_STREAM: '8:123', BLUE_AGENT_LOG: 'file' },
        path.join(dir, 'run.log'),
        undefined,
        journal,
      ),
    ).toMatchObject({ kind: 'file' });
    expect(detectLogTarget({}, path.join(dir, 'run.log'))).toEqual(file);
  });

  it('reads the identity of its real stdout for JOURNAL_STREAM', async () => {
    const info = fstatSync(1, { bigint: true });
    expect(stdoutIdentity()).toBe(`${info.dev}:${info.ino}`);
    expect(detectLogTarget({ JOURNAL_STREAM: `${info.dev}:${info.ino}` }, path.join(dir, 'run.log'))).toEqual({
      kind: 'stdout',
    });
  });

  it('writes JSON lines with secrets masked', () => {
    const out = bufferOutput();
    const log = createRunLogger({ target: { kind: 'stdout' }, stdout: out, env: {} });
    log.info('hello', { n: 1, header: 'Authorization: Bearer tok_abcdefghijklmnop' });
    log.debug('not shown at the default level');
    const lines = out
      .text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'hello', n: 1, pid: process.pid });
    expect(out.text()).not.toContain('tok_abcdefghijklmnop');
  });

  it('rotates run.log so it never grows past its bound', () => {
    const target = { kind: 'file' as const, file: path.join(dir, 'state', 'run.log'), maxBytes: 4_000 };
    const log = createRunLogger({ target, stdout: bufferOutput(), env: {} });
    for (let i = 0; i < 500; i++) log.info('a line of about one hundred bytes', { i, pad: 'x'.repeat(20) });
    expect(statSync(target.file).size).toBeLessThanOrEqual(4_000);
    expect(statSync(`${target.file}.1`).size).toBeLessThanOrEqual(4_000);
    expect(existsSync(`${target.file}.2`)).toBe(false);
    const last = readFileSync(target.file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(last.at(-1)).toMatchObject({ i: 499 });
    expect(statSync(target.file).mode & 0o077).toBe(0);
  });
});
