/** The demo's child processes: blue-agent commands and the capture hook on one demo machine, and their traces. */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context, Paths } from '../context.js';
import { processRuns } from '../lock/liveness.js';
import type { MachineLayout } from './layout.js';
import { cause, throwIfAborted } from './steps.js';

export interface Machine {
  layout: MachineLayout;
  env: Record<string, string>;
  paths: Paths;
}

interface ChildOptions {
  signal: AbortSignal;
  timeoutMs: number;
  input?: string;
  cwd?: string;
  /** Return the JSON document even when the command exits non-zero (its `ok` says how it went). */
  allowFailure?: boolean;
}

/** `blue-agent ARGS --json` as a child of the same Node.js and entry, on one demo machine. */
export function childRunner(ctx: Context) {
  return {
    async cli(m: Machine, args: string[], o: ChildOptions): Promise<Record<string, unknown>> {
      const result = await ctx.run(ctx.self.node, [ctx.self.entry, ...args], {
        env: m.env,
        cwd: o.cwd ?? m.layout.workDir,
        timeoutMs: o.timeoutMs,
        signal: o.signal,
        maxOutputBytes: 4 * 1024 * 1024,
        ...(o.input === undefined ? {} : { input: o.input }),
      });
      throwIfAborted(o.signal);
      const command = `blue-agent ${args[0]}${args[1] !== undefined && !args[1].startsWith('-') ? ` ${args[1]}` : ''}`;
      if (result.spawnError !== undefined)
        throw cause('INTERNAL', `${command} could not be started: ${result.spawnError}`);
      if (result.timedOut) throw cause('TIMEOUT', `${command} did not finish within ${o.timeoutMs / 1000} s`);
      let doc: Record<string, unknown> | undefined;
      try {
        const parsed = JSON.parse(result.stdout) as unknown;
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
          doc = parsed as Record<string, unknown>;
      } catch {
        doc = undefined;
      }
      const error = doc?.error as { code?: unknown; message?: unknown; hint?: unknown } | undefined;
      if (error !== undefined && typeof error.code === 'string') {
        throw cause(
          error.code,
          `${command}: ${String(error.message)}`,
          typeof error.hint === 'string' ? error.hint : undefined,
        );
      }
      if (doc === undefined)
        throw cause(
          'EXIT',
          `${command} exited ${result.exitCode ?? 'abnormally'} without a JSON result: ` +
            `${oneLine(result.stderr) || oneLine(result.stdout) || 'no output'}`,
        );
      if (result.exitCode !== 0 && o.allowFailure !== true)
        throw cause('EXIT', `${command} exited ${result.exitCode}: ${oneLine(result.stderr) || 'no output'}`);
      return doc;
    },
  };
}

/** The managed hook in the harness's hook file, exactly as reconcile wrote it. */
export async function managedHook(
  settingsFile: string,
  demo: { managedHook(text: string): { command: string; timeoutSeconds: number } | undefined },
): Promise<{ command: string; timeoutSeconds: number }> {
  const found = demo.managedHook(await readFile(settingsFile, 'utf8'));
  if (found !== undefined) return found;
  throw cause('INTERNAL', `${settingsFile} has no managed SessionEnd hook after reconcile`);
}

export function captureCode(stderr: string): string {
  if (/refused:/.test(stderr)) return 'CAPTURE_REFUSED';
  return /failed \[([A-Z_]+)\]/.exec(stderr)?.[1] ?? 'EXIT';
}

export async function readCaptureLog(file: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const entries: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      entries.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // A line cut by a concurrent writer: not ours to judge here.
    }
  }
  return entries;
}

/** Waits (bounded) until the detached capture worker has exited. */
export async function waitForExit(pid: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (processRuns(pid)) {
    throwIfAborted(signal);
    if (performance.now() > deadline)
      throw cause('TIMEOUT', `the capture worker (pid ${pid}) did not finish within ${timeoutMs / 1000} s`);
    await sleep(25);
  }
}

/** Ends the capture worker's process group, if it still runs, so nothing writes into the directories being removed. */
export async function stopWorker(pid: number): Promise<void> {
  if (!processRuns(pid)) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Gone meanwhile.
  }
  for (let i = 0; i < 40 && processRuns(pid); i++) await sleep(25);
}

export async function sameBytes(x: string, y: string): Promise<boolean> {
  const digest = async (f: string) =>
    createHash('sha256')
      .update(await readFile(f))
      .digest('hex');
  try {
    return (await digest(x)) === (await digest(y));
  } catch {
    return false;
  }
}

export function arrayLength(value: unknown): number {
  return Array.isArray(value) ? value.length : 0;
}

export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 600);
}

/** A path (or a text naming paths) under the demo root written as `$DEMO/...`, to keep lines short. */
export function short(root: string, text: string): string {
  return text.split(root).join('$DEMO');
}
