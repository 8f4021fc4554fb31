/**
 * Where the run loop logs, and that the log file stays bounded.
 */
import { readFileSync, statSync, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/context.js';
import { createRunLogger, detectLogTarget } from '../../src/daemon/log.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-run-log-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('run log', () => {
  it('goes to stdout under systemd, launchd or BLUE_AGENT_LOG=json, to run.log otherwise', () => {
    expect(detectLogTarget({ INVOCATION_ID: 'abc' }, dir)).toEqual({ kind: 'stdout' });
    expect(detectLogTarget({ JOURNAL_STREAM: '8:123' }, dir)).toEqual({ kind: 'stdout' });
    expect(detectLogTarget({ XPC_SERVICE_NAME: 'dev.blue-agent' }, dir)).toEqual({ kind: 'stdout' });
    expect(detectLogTarget({ BLUE_AGENT_LOG: 'json' }, dir)).toEqual({ kind: 'stdout' });
    expect(detectLogTarget({ INVOCATION_ID: 'abc', BLUE_AGENT_LOG: 'file' }, dir)).toMatchObject({ kind: 'file' });
    expect(detectLogTarget({}, dir)).toEqual({ kind: 'file', file: path.join(dir, 'run.log'), maxBytes: 1024 * 1024 });
  });

  it('writes JSON lines with secrets masked', () => {
    const out = bufferOutput();
    const log = createRunLogger({ target: { kind: 'stdout' }, stdout: out, env: {} });
    log.info('hello', { n: 1, header: 'Authorization: Bearer tok_abcdefghijklmnop' });
    log.debug('not shown at the default level');
    const lines = out.text().trim().split('\n').map((l) => JSON.parse(l));
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
    const last = readFileSync(target.file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(last.at(-1)).toMatchObject({ i: 499 });
    expect(statSync(target.file).mode & 0o077).toBe(0);
  });
});
