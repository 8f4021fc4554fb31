/**
 * Stopping the running agent from another command: real processes hold the instance lock the way `blue-agent run`
 * does (a record with their pid and start), and the caller signals, waits and takes the lock — or says why it cannot.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { processStart } from '../../src/lock/liveness.js';
import { runningAgent, stopAgentAndHold } from '../../src/daemon/stop.js';
import { waitFor } from '../../../../test/support/agent-home.js';

let dir: string;
let file: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-stop-'));
  file = path.join(dir, 'agent-run.lock');
});
afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

/**
 * A process that holds the instance lock as an agent does and, on SIGTERM, either lets go of it after a moment and
 * exits 0 (`stops`) or carries on (`ignores`). Resolves once its SIGTERM handler is in place.
 */
async function agentStandIn(
  behaviour: 'stops' | 'ignores',
): Promise<{ child: ChildProcess; exited: Promise<number | null> }> {
  const script =
    behaviour === 'stops'
      ? `process.on('SIGTERM', () => setTimeout(() => { require('fs').unlinkSync(process.argv[1]); ` +
        `process.exit(0); }, 200)); setInterval(() => {}, 1000); console.log('ready');`
      : `process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready');`;
  const child = spawn(process.execPath, ['-e', script, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await waitFor('the stand-in to start', () => out.includes('ready'));
  const pid = child.pid!;
  const start = processStart(pid);
  await writeFile(
    file,
    JSON.stringify({
      pid,
      host: hostname(),
      ...(start === undefined ? {} : { proc_start: start }),
      started_at_unix_ms: Date.now(),
    }) + '\n',
  );
  return { child, exited };
}

describe('stopAgentAndHold', () => {
  it('with no agent running, takes the lock at once and stops nobody', async () => {
    expect(await runningAgent(file)).toBeUndefined();
    const held = await stopAgentAndHold(file, { why: 'x' });
    expect(held.stopped).toEqual([]);
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: process.pid });
    await held.lock.release();
    expect(existsSync(file)).toBe(false);
  });

  it('signals the running agent, waits until it lets go of its lock, and holds the lock itself', async () => {
    const agent = await agentStandIn('stops');
    expect(await runningAgent(file)).toMatchObject({ pid: agent.child.pid, here: true });
    const held = await stopAgentAndHold(file, { why: 'x' });
    expect(held.stopped.map((a) => a.pid)).toEqual([agent.child.pid]);
    expect(await agent.exited).toBe(0);
    // Held by the caller: an agent started now would find it taken.
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: process.pid });
    await held.lock.release();
  });

  it('an agent that does not exit in time is reported (AGENT_RUNNING), and its lock is left to it', async () => {
    const agent = await agentStandIn('ignores');
    const error = await stopAgentAndHold(file, { why: 'the hooks were left in place', waitMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'AGENT_RUNNING', file });
    expect(String((error as Error).message)).toBe(
      `the agent (\`blue-agent run\`, pid ${agent.child.pid}) could not be stopped: it did not stop within 300 ms ` +
        `of SIGTERM, so the hooks were left in place`,
    );
    expect((error as { hint: string }).hint).toContain(`kill ${agent.child.pid}`);
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: agent.child.pid });
    expect(agent.child.exitCode).toBeNull();
  });

  it('an agent of another host sharing the state directory is not signalled: reported at once', async () => {
    await writeFile(file, JSON.stringify({ pid: 4242, host: 'other-host', started_at_unix_ms: Date.now() - 1_000 }));
    expect(await runningAgent(file)).toMatchObject({ pid: 4242, host: 'other-host', here: false });
    const error = await stopAgentAndHold(file, { why: 'nothing was removed' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'AGENT_RUNNING' });
    expect(String((error as Error).message)).toContain(
      'pid 4242 on other-host) could not be stopped: it runs on other-host, which shares this state directory, so ' +
        'nothing was removed',
    );
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ pid: 4242 });
  });

  it('a lock left by an agent that is gone is no running agent', async () => {
    await writeFile(file, JSON.stringify({ pid: 999_999_9, host: hostname(), started_at_unix_ms: Date.now() }));
    expect(await runningAgent(file)).toBeUndefined();
    const held = await stopAgentAndHold(file, { why: 'x' });
    expect(held.stopped).toEqual([]);
    await held.lock.release();
  });
});
