/**
 * Shared by the spool and capture tests: running the built CLI as a real process (the way a harness runs the hook),
 * laying out native sessions in a temporary HOME, and looking at the spool from the outside.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HookPayload } from '../../packages/agent/src/harnesses/types.js';
import { processRuns } from '../../packages/agent/src/lock/liveness.js';
import { agentRoot } from './context.js';

export const ENTRY = path.join(agentRoot, 'bin', 'blue-agent.js');
export const CLAUDE_PROFILE = 'claude-v2_0_12';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env: Record<string, string>;
  /** Written to stdin. */
  input?: string | Buffer;
  /** Keep stdin open after writing (a harness that never closes it). */
  keepStdinOpen?: boolean;
  cwd?: string;
  /** Kill after this long (a hung process fails the test instead of hanging it). */
  timeoutMs?: number;
}

/** `node bin/blue-agent.js ...args`, as a harness would run it. */
export function runCli(args: readonly string[], options: CliOptions): Promise<CliResult> & { child: ChildProcess } {
  const child = spawn(process.execPath, [ENTRY, ...args], {
    env: options.env,
    cwd: options.cwd ?? options.env.HOME,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout!.on('data', (c: Buffer) => stdout.push(c));
  child.stderr!.on('data', (c: Buffer) => stderr.push(c));
  child.stdin!.on('error', () => undefined); // the hook may stop reading early (EPIPE)
  if (options.input !== undefined) child.stdin!.write(options.input);
  if (options.keepStdinOpen !== true) child.stdin!.end();
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000);
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      // Output pipes may still hold the last bytes: wait for them to close.
      const finish = () =>
        resolve({
          code,
          signal,
          stdout: Buffer.concat(stdout).toString('utf8'),
          stderr: Buffer.concat(stderr).toString('utf8'),
        });
      if (child.stdout!.closed && child.stderr!.closed) finish();
      else child.on('close', finish);
      if (options.keepStdinOpen === true) child.stdin!.destroy();
    });
  });
  return Object.assign(done, { child });
}

export function capture(
  env: Record<string, string>,
  payload: unknown,
  harness = 'claude',
  profile = CLAUDE_PROFILE,
  extra: Partial<CliOptions> = {},
) {
  const input = typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : `${JSON.stringify(payload)}\n`;
  return runCli(['capture', '--harness', harness, '--profile', profile], { env, input, ...extra });
}

// ---------------------------------------------------------------------------------------------------------------
// Native sessions

export interface ClaudeSession {
  id: string;
  cwd: string;
  transcript: string;
  companionDir: string;
  payload: HookPayload & { hook_event_name: string; reason: string };
}

/** Claude Code's project folder name for a working directory (every character outside [A-Za-z0-9] becomes `-`). */
export function claudeProjectKey(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, '-');
}

/**
 * A Claude Code session as Claude leaves it: `<config>/projects/<key>/<id>.jsonl` plus the companion folder with a
 * subagent transcript and a tool result. `padBytes` makes the transcript that much larger.
 */
export async function claudeSession(
  claudeDir: string,
  options: { id: string; cwd: string; prompt: string; padBytes?: number; companions?: boolean },
): Promise<ClaudeSession> {
  const dir = path.join(claudeDir, 'projects', claudeProjectKey(options.cwd));
  await mkdir(dir, { recursive: true });
  const transcript = path.join(dir, `${options.id}.jsonl`);
  const base = { sessionId: options.id, cwd: options.cwd, version: '2.1.197', timestamp: '2026-11-30T10:00:00.000Z' };
  const lines = [
    { ...base, type: 'user', uuid: 'u1', parentUuid: null, message: { role: 'user', content: options.prompt } },
    {
      ...base,
      type: 'assistant',
      uuid: 'a1',
      parentUuid: 'u1',
      message: { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
    },
  ];
  let text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
  if (options.padBytes !== undefined && options.padBytes > 0) {
    const filler = JSON.stringify({ ...base, type: 'system', uuid: 'p', content: 'x'.repeat(1000) }) + '\n';
    text += filler.repeat(Math.ceil(options.padBytes / filler.length));
  }
  await writeFile(transcript, text);
  const companionDir = path.join(dir, options.id);
  if (options.companions !== false) {
    await mkdir(path.join(companionDir, 'subagents'), { recursive: true });
    await mkdir(path.join(companionDir, 'tool-results'), { recursive: true });
    await writeFile(
      path.join(companionDir, 'subagents', 'agent-a1.jsonl'),
      `${JSON.stringify({ ...base, type: 'user', message: { role: 'user', content: 'sub' } })}\n`,
    );
    await writeFile(path.join(companionDir, 'subagents', 'agent-a1.meta.json'), '{"agentType":"general-purpose"}\n');
    await writeFile(path.join(companionDir, 'tool-results', 'toolu_01.txt'), 'tool output\n');
  }
  return {
    id: options.id,
    cwd: options.cwd,
    transcript,
    companionDir,
    payload: {
      session_id: options.id,
      transcript_path: transcript,
      cwd: options.cwd,
      hook_event_name: 'SessionEnd',
      reason: 'other',
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The spool from the outside

export const SPOOL_FOLDERS = ['intake', 'building', 'ready', 'failed', 'bundles', 'tmp', 'inbox'] as const;

/** File names in each spool folder. */
export function spoolFiles(stateDir: string): Record<(typeof SPOOL_FOLDERS)[number], string[]> {
  const out = {} as Record<(typeof SPOOL_FOLDERS)[number], string[]>;
  for (const folder of SPOOL_FOLDERS) {
    const dir = path.join(stateDir, 'spool', folder);
    out[folder] = existsSync(dir) ? readdirSync(dir).sort() : [];
  }
  return out;
}

export function readJson<T = Record<string, unknown>>(file: string): T {
  return JSON.parse(readFileSync(file, 'utf8')) as T;
}

export function captureLog(stateDir: string): Record<string, unknown>[] {
  const file = path.join(stateDir, 'capture.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * Waits until the workers started by captures have finished: nothing being built and nothing in intake that was not
 * tried yet, and no worker process that logged about the spool still running.
 */
export async function waitForWorkers(stateDir: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const files = spoolFiles(stateDir);
    const untried = files.intake.filter((name) => {
      try {
        return readJson(path.join(stateDir, 'spool', 'intake', name)).last_error === undefined;
      } catch {
        return false;
      }
    });
    const log = captureLog(stateDir);
    const workers = [
      ...log
        .filter((l) => l.event !== 'spooled' && l.event !== 'refused' && l.event !== 'failed')
        .map((l) => l.pid as number),
      // Each hook names the worker it started: wait for those too, even before they have logged anything.
      ...log
        .filter((l) => l.event === 'spooled' && typeof l.worker_pid === 'number')
        .map((l) => l.worker_pid as number),
    ];
    // What the sh hook handed over is not tried until a drain has admitted it.
    const handedOver = files.inbox.filter((name) => name.endsWith('.hook'));
    if (
      files.building.length === 0 &&
      untried.length === 0 &&
      handedOver.length === 0 &&
      workers.every((pid) => !running(pid))
    )
      return;
    if (Date.now() > deadline)
      throw new Error(`the capture workers did not finish within ${timeoutMs} ms: ${JSON.stringify(files)}`);
    await sleep(25);
  }
}

/** True while the process runs (an exited process that is not reaped yet does not count). */
export function running(pid: number): boolean {
  return processRuns(pid);
}

/** True when this process may mount a tmpfs (root on Linux, with mount available): used for real full-disk tests. */
export async function canMountTmpfs(scratch: string): Promise<boolean> {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  const { execFileSync } = await import('node:child_process');
  const dir = path.join(scratch, 'mount-probe');
  await mkdir(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    execFileSync('umount', [dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Mounts a tmpfs of `size` (e.g. `256k`) on `dir`; returns the unmount function. */
export async function mountTmpfs(dir: string, size: string): Promise<() => void> {
  const { execFileSync } = await import('node:child_process');
  await mkdir(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
  return () => {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    } catch {
      // Already gone.
    }
  };
}
