/**
 * Captures that wait for their harness to exit (a profile whose capture event fires after every turn says
 * wait_for_exit): the hook records the harness process above it, the drain leaves such a capture in intake while that
 * process runs (deferred, not a failure) and builds it once it has exited — only the last capture of a run: earlier
 * ones are superseded. (How the drain a capture hook starts follows such captures: test/drain/linger.test.ts.)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harnessProcess } from '../../src/capture/harness-process.js';
import { captureCommand } from '../../src/cli/capture.js';
import type { Context } from '../../src/context.js';
import { drain } from '../../src/drain/index.js';
import { processStart } from '../../src/lock/liveness.js';
import { Spool, type SpoolRecord } from '../../src/spool/index.js';
import { captureLog, claudeSession, CLAUDE_PROFILE, spoolFiles } from '../../../../test/support/cli-process.js';
import { agentRoot, makeTestHome, type TestHome } from '../../../../test/support/context.js';

let t: TestHome;
let ctx: Context;
let profiles: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  t = await makeTestHome();
  // The shipped profiles, with Claude Code's capture made to wait for the harness to exit.
  profiles = path.join(t.root, 'profiles');
  await cp(path.join(agentRoot, 'profiles'), profiles, { recursive: true });
  const claude = path.join(profiles, 'claude.yaml');
  await writeFile(
    claude,
    (await readFile(claude, 'utf8')).replaceAll(
      '      event: SessionEnd\n',
      '      event: SessionEnd\n      wait_for_exit: true\n',
    ),
  );
  ctx = t.context({ env: { BLUE_AGENT_PROFILES_DIR: profiles } });
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await t.cleanup();
});

/** A stand-in harness process: runs until killed, or for `ms`. */
function harness(ms = 60_000): ChildProcess {
  const child = spawn(process.execPath, ['-e', `setTimeout(() => {}, ${ms})`], { stdio: 'ignore' });
  children.push(child);
  return child;
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise((resolve) => child.once('exit', resolve));
}

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

describe('the hook', () => {
  it('records the harness process and starts a lingering drain when the profile waits for exit; else not', async () => {
    const started: boolean[] = [];
    const payload = JSON.stringify({ session_id: 'wait-0001', cwd: '/w', hook_event_name: 'Stop' });
    const code = await captureCommand(ctx, { harness: 'claude', profile: CLAUDE_PROFILE }, Readable.from([payload]), {
      startDrain: (_c, options) => {
        started.push(options.linger);
        return 1;
      },
      harnessProcess: () => ({ pid: 4242, proc_start: '777' }),
    });
    expect(code).toBe(0);
    const [name] = spoolFiles(t.env.BLUE_AGENT_HOME!).intake;
    const record = JSON.parse(
      await readFile(path.join(t.env.BLUE_AGENT_HOME!, 'spool', 'intake', name!), 'utf8'),
    ) as SpoolRecord;
    expect(record.wait_for_exit).toEqual({ pid: 4242, proc_start: '777' });
    expect(started).toEqual([true]);

    const plain = t.context();
    await captureCommand(plain, { harness: 'claude', profile: CLAUDE_PROFILE }, Readable.from([payload]), {
      startDrain: (_c, options) => {
        started.push(options.linger);
        return 1;
      },
      harnessProcess: () => ({ pid: 4242 }),
    });
    expect(started).toEqual([true, false]);
  });

  it('the real hook, run through a shell as harnesses run it, records the process above the shell', async () => {
    // This test's process plays the harness: it runs `sh -c '<node> blue-agent.js capture ...'`.
    const payload = JSON.stringify({ session_id: 'wait-0009', cwd: '/w', hook_event_name: 'Stop' });
    const command =
      `'${process.execPath}' '${path.join(agentRoot, 'bin', 'blue-agent.js')}' capture --harness ` +
      `claude --profile ${CLAUDE_PROFILE}`;
    execFileSync('/bin/sh', ['-c', command], {
      input: payload,
      env: { ...t.env, BLUE_AGENT_PROFILES_DIR: profiles },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const stateDir = t.env.BLUE_AGENT_HOME!;
    const [name] = spoolFiles(stateDir).intake;
    const record = JSON.parse(await readFile(path.join(stateDir, 'spool', 'intake', name!), 'utf8')) as SpoolRecord;
    // The lingering drain the hook started would wait for this very process: it is stopped here.
    const log = captureLog(stateDir);
    const worker = log.find((l) => l.event === 'spooled')?.worker_pid;
    if (typeof worker === 'number') process.kill(worker, 'SIGKILL');
    expect(record.wait_for_exit?.pid).toBe(process.pid);
    expect(log[0]).toMatchObject({ event: 'spooled', waits_for_pid: process.pid });
    if (process.platform === 'linux') expect(record.wait_for_exit?.proc_start).toBe(processStart(process.pid));
  });

  it('looks through shells only, a few levels at most, and gives up on what it cannot read', () => {
    const tree: Record<number, { ppid: number; name: string }> = {
      10: { ppid: 9, name: 'sh' },
      9: { ppid: 8, name: '-bash' },
      8: { ppid: 1, name: 'kimi-code' },
      20: { ppid: 19, name: 'sh' },
    };
    const info = (pid: number) => tree[pid];
    expect(harnessProcess(10, info)?.pid).toBe(8);
    expect(harnessProcess(8, info)?.pid).toBe(8);
    expect(harnessProcess(20, info)).toBeUndefined();
    const deep: Record<number, { ppid: number; name: string }> = {
      5: { ppid: 4, name: 'sh' },
      4: { ppid: 3, name: 'sh' },
      3: { ppid: 2, name: 'sh' },
      2: { ppid: 1, name: 'sh' },
    };
    expect(harnessProcess(5, (pid) => deep[pid])?.pid).not.toBe(1);
  });
});

describe('the drain', () => {
  it('leaves a capture deferred while its harness runs (not a failure); builds it once the harness exits', async () => {
    const child = harness();
    const record = await enqueueWaiting(child.pid!, 'wait-0002');
    const first = await drain(ctx, { skipUploads: true });
    expect(first).toMatchObject({
      built: [],
      failed: [],
      waiting: [],
      deferred: [{ id: record.id, harness: 'claude', session_id: 'wait-0002', pid: child.pid }],
    });
    expect(spoolFiles(t.env.BLUE_AGENT_HOME!).intake).toEqual([`${record.id}.json`]);

    child.kill('SIGKILL');
    await exited(child);
    const second = await drain(ctx, { skipUploads: true });
    expect(second.built.map((b) => b.id)).toEqual([record.id]);
    expect(second.deferred).toEqual([]);
  });

  it('builds only the last capture of a harness run; earlier ones of its session and process are dropped', async () => {
    const child = harness();
    const session = await claudeSession(path.join(t.home, '.claude'), {
      id: 'wait-0006',
      cwd: path.join(t.home, 'work'),
      prompt: 'Three turns',
    });
    const spool = await Spool.open(ctx.paths);
    const wait = { pid: child.pid!, proc_start: processStart(child.pid!) };
    const turns: SpoolRecord[] = [];
    for (const ago of [90_000, 80_000, 70_000])
      turns.push(
        await spool.enqueueIntake({
          harness: 'claude',
          profile: CLAUDE_PROFILE,
          payload: session.payload,
          createdAtUnixMs: Date.now() - ago,
          waitForExit: wait,
        }),
      );
    // Another run of the same session (another process), and another session of this run: not superseded by these.
    const other = harness();
    const otherRun = await spool.enqueueIntake({
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      payload: session.payload,
      createdAtUnixMs: Date.now() - 60_000,
      waitForExit: { pid: other.pid!, proc_start: processStart(other.pid!) },
    });
    const otherSession = await enqueueWaiting(child.pid!, 'wait-0007');
    other.kill('SIGKILL');
    child.kill('SIGKILL');
    await Promise.all([exited(child), exited(other)]);

    const report = await drain(ctx, { skipUploads: true });
    expect(report.superseded).toEqual([
      { id: turns[0]!.id, harness: 'claude', session_id: 'wait-0006', by: turns[2]!.id },
      { id: turns[1]!.id, harness: 'claude', session_id: 'wait-0006', by: turns[2]!.id },
    ]);
    expect(report.built.map((b) => b.id).sort()).toEqual([turns[2]!.id, otherSession.id].sort());
    expect(report.unchanged.map((u) => u.id)).toEqual([otherRun.id]);
    expect(
      captureLog(t.env.BLUE_AGENT_HOME!)
        .filter((l) => l.event === 'superseded')
        .map((l) => [l.record, l.by]),
    ).toEqual([
      [turns[0]!.id, turns[2]!.id],
      [turns[1]!.id, turns[2]!.id],
    ]);
    expect(spoolFiles(t.env.BLUE_AGENT_HOME!).intake).toEqual([]);
  });

  it('a harness pid now used by another process does not hold the capture back', async () => {
    const child = harness();
    const session = await claudeSession(path.join(t.home, '.claude'), {
      id: 'wait-0003',
      cwd: path.join(t.home, 'work'),
      prompt: 'Reused pid',
    });
    const spool = await Spool.open(ctx.paths);
    await spool.enqueueIntake({
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      payload: session.payload,
      createdAtUnixMs: Date.now() - 60_000,
      waitForExit: { pid: child.pid!, proc_start: '1' },
    });
    expect((await drain(ctx, { skipUploads: true })).built).toHaveLength(1);
  });
});
