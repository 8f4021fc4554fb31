/**
 * The real `blue-agent run` process (the built CLI): one per user, signals, where it logs, and SIGTERM in the middle
 * of a drain losing nothing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spool } from '../../src/spool/index.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';
import {
  CLAUDE_PROFILE,
  claudeSession,
  runCli,
  spoolFiles,
  type CliResult,
} from '../../../../test/support/cli-process.js';
import { agentHome, parseLog, uploadPolicy, waitFor, type AgentHome } from '../../../../test/support/agent-home.js';
import { stateLayout } from '../../src/context.js';

let t: AgentHome;
let stack: UploadStack;
const children: ReturnType<typeof runCli>[] = [];

beforeEach(async () => {
  stack = await startUploadStack();
  stack.server.store.publishPolicy(uploadPolicy(stack.proxy.url, { ttl_seconds: 60 }), Date.now());
  t = await agentHome();
});
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    await c.catch(() => undefined);
  }
  await stack.close();
  await t.cleanup();
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  return { ...t.env, BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token, ...extra };
}

function run(extra: Record<string, string> = {}) {
  const c = runCli(['run'], { env: env(extra), timeoutMs: 90_000 });
  children.push(c);
  return c;
}

const runLog = () => path.join(t.stateDir, 'run.log');
const fileLog = () => (existsSync(runLog()) ? parseLog(readFileSync(runLog(), 'utf8')) : []);
const has = (msg: string) => fileLog().find((l) => l.msg === msg);

describe('blue-agent run (process)', () => {
  it('refuses a second instance, logs to run.log when not under a service manager, SIGTERM stops it (0)', async () => {
    const first = run();
    await waitFor('the first agent to check the policy', () => has('policy checked'));
    await waitFor(
      'the hook',
      () => existsSync(t.settings) && readFileSync(t.settings, 'utf8').includes('capture --harness claude'),
    );

    const second: CliResult = await run();
    // Its own exit status: the systemd unit's RestartPreventExitStatus keeps the service manager from retrying it.
    expect(second.code).toBe(3);
    expect(second.stderr).toContain('another `blue-agent run` is already running for this user');
    expect(second.stderr).toContain(`pid ${first.child.pid}`);

    // Started by our LaunchAgent (launchd restarts every non-zero exit): the same refusal, exit 0.
    const underLaunchd: CliResult = await run({ XPC_SERVICE_NAME: 'com.blue-agent.agent' });
    expect(underLaunchd.code).toBe(0);
    expect(underLaunchd.stderr).toContain('another `blue-agent run` is already running for this user');

    const lock = JSON.parse(readFileSync(path.join(t.stateDir, 'agent-run.lock'), 'utf8'));
    expect(lock.pid).toBe(first.child.pid);
    first.child.kill('SIGTERM');
    const done = await first;
    expect(done.code).toBe(0);
    expect(done.stdout).toBe('');
    expect(existsSync(path.join(t.stateDir, 'agent-run.lock'))).toBe(false);
    const lines = fileLog();
    expect(lines.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['agent started', 'policy checked', 'reconciled', 'stopping', 'stopped']),
    );
    expect(readFileSync(runLog(), 'utf8')).not.toContain(stack.token);
    const state = JSON.parse(readFileSync(path.join(t.stateDir, 'agent-run.json'), 'utf8'));
    expect(state).toMatchObject({
      pid: first.child.pid,
      stopped_at_unix_ms: expect.any(Number),
      policy: { revision: expect.any(String), source: 'fetched' },
    });

    // A lock left by a dead agent is taken over.
    await writeFile(
      path.join(t.stateDir, 'agent-run.lock'),
      JSON.stringify({ pid: 999_999, host: hostname(), started_at_unix_ms: 1 }),
    );
    const third = run();
    await waitFor('the third agent to start', () => fileLog().filter((l) => l.msg === 'agent started').length === 2);
    third.child.kill('SIGINT');
    expect((await third).code).toBe(0);
  });

  it('logs JSON lines to stdout under systemd (the unit sets BLUE_AGENT_LOG=json); SIGHUP reloads config', async () => {
    const agent = run({ INVOCATION_ID: '0123456789abcdef', BLUE_AGENT_LOG: 'json' });
    const out: string[] = [];
    agent.child.stdout!.on('data', (c: Buffer) => out.push(c.toString('utf8')));
    const lines = () => parseLog(out.join(''));
    await waitFor('policy checked on stdout', () => lines().find((l) => l.msg === 'policy checked'));
    expect(existsSync(runLog())).toBe(false);

    await mkdir(path.dirname(t.env.BLUE_AGENT_CONFIG!), { recursive: true });
    await writeFile(t.env.BLUE_AGENT_CONFIG!, 'drain_schedule: "*/10 * * * *"\n');
    agent.child.kill('SIGHUP');
    const reloaded = await waitFor('config reloaded', () => lines().find((l) => l.msg === 'config reloaded'));
    expect(reloaded).toMatchObject({ drain_schedule: '*/10 * * * *' });
    expect(agent.child.exitCode).toBeNull();

    agent.child.kill('SIGTERM');
    const done = await agent;
    expect(done.code).toBe(0);
    for (const line of done.stdout.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
    expect(done.stdout).not.toContain(stack.token);
  });

  it('SIGTERM during a drain loses nothing: the record is uploaded or still spooled; no claim stays held', async () => {
    // Every bundle PUT hangs: the drain is caught mid-upload.
    stack.proxy.rules.push({ method: 'PUT', path: /./, times: 100, action: { kind: 'delay', ms: 60_000 } });
    const agent = run();
    await waitFor('the agent', () => has('policy checked'));
    const session = await claudeSession(path.join(t.home, '.claude'), {
      id: 'sess-sigterm-1',
      cwd: t.home,
      prompt: 'hello',
    });
    const spool = await Spool.open(stateLayout(t.stateDir));
    const record = await spool.enqueueIntake({
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      payload: session.payload,
      createdAtUnixMs: Date.now(),
    });
    await waitFor('the upload to be under way', () => readdirUploading().length > 0);
    expect(has('drain started')).toMatchObject({ trigger: 'intake' });

    agent.child.kill('SIGTERM');
    const done = await agent;
    expect(done.code).toBe(0);
    const files = spoolFiles(t.stateDir);
    expect(files.building).toEqual([]);
    expect(readdirUploading()).toEqual([]);
    const uploaded = (await stack.listUploads()).some((u) => u.status === 'complete');
    const kept = files.ready.includes(`${record.id}.json`);
    expect(uploaded || kept).toBe(true);
    expect(fileLog().find((l) => l.msg === 'drain finished with problems')).toMatchObject({ interrupted: true });
    expect(JSON.parse(readFileSync(path.join(t.stateDir, 'last-drain.json'), 'utf8'))).toMatchObject({
      ok: false,
      stopped: { code: 'INTERRUPTED' },
    });

    // The kept record goes up with the next drain once uploads work again.
    stack.proxy.rules.length = 0;
    const drained = await runCli(['drain', '--json'], { env: env(), timeoutMs: 30_000 });
    expect(drained.code).toBe(0);
    expect((await stack.listUploads()).filter((u) => u.status === 'complete')).toHaveLength(1);
  });
});

function readdirUploading(): string[] {
  const dir = path.join(t.stateDir, 'spool', 'uploading');
  return existsSync(dir) ? readdirSync(dir) : [];
}
