/**
 * How the run loop runs its heavy steps (tasks.ts): in a short-lived child — the same CLI, `run` with
 * BLUE_AGENT_RUN_TASK=1, the request on stdin and the answer on stdout — so the agent's own process never loads
 * them and stays small while idle. The child ignores SIGTERM/SIGINT (a service manager signals the whole group) and
 * finishes its bounded step, so a write in progress is never cut; the agent waits for it before it exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Context } from '../context.js';
import { toBlueError } from '@blue-agent/contract/errors.js';
import type { TaskRequest } from './tasks.js';

export const TASK_ENV = 'BLUE_AGENT_RUN_TASK';
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface TaskRunner {
  (request: TaskRequest): Promise<unknown>;
  /**
   * The agent is stopping: ends the steps still running — SIGTERM, then SIGKILL after `killMs` (a step ignores
   * SIGTERM to finish its write, so the SIGKILL is what ends a hung one). Resolves with how many there were.
   */
  stop?(killMs: number): Promise<number>;
}

/** Each task in a child process (the default). `timeoutMs` bounds a child that hangs. */
export function processTasks(ctx: Context, timeoutMs = 120_000): TaskRunner {
  const live = new Map<ChildProcess, Promise<void>>();
  const runner: TaskRunner = (request) =>
    new Promise((resolve, reject) => {
      const child = spawn(ctx.self.node, [ctx.self.entry, 'run'], {
        env: { ...ctx.env, [TASK_ENV]: '1' },
        cwd: ctx.paths.home,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      live.set(child, new Promise<void>((done) => child.once('close', () => done())));
      child.once('close', () => live.delete(child));
      child.once('error', () => live.delete(child));
      const out: Buffer[] = [];
      let size = 0;
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= MAX_ANSWER_BYTES) out.push(c);
      });
      child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-2000)));
      child.stdin.on('error', () => undefined);
      child.stdin.end(JSON.stringify(request));
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        try {
          resolve(JSON.parse(Buffer.concat(out).toString('utf8')) as unknown);
        } catch {
          reject(
            new Error(
              `the ${request.task} step ended (${signal ?? `exit code ${code}`}) without an answer: ` +
                `${stderr.trim().split('\n')[0] ?? ''}`,
            ),
          );
        }
      });
    });
  runner.stop = async (killMs) => {
    const children = [...live.entries()];
    if (children.length === 0) return 0;
    for (const [child] of children) child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.all(children.map(([, closed]) => closed));
    await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, killMs)))]);
    clearTimeout(timer);
    for (const [child] of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, 1_000)))]);
    clearTimeout(timer);
    return children.length;
  };
  return runner;
}

/** The child's side: read the request, run it, print the answer. */
export async function serveTask(ctx: Context): Promise<number> {
  const ignore = () => undefined;
  process.on('SIGTERM', ignore);
  process.on('SIGINT', ignore);
  process.on('SIGHUP', ignore);
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.stdin.stream() as AsyncIterable<Buffer>) chunks.push(chunk);
  const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as TaskRequest;
  const { runTask } = await import('./tasks.js');
  const answer = await runTask(ctx, request);
  ctx.stdout.write(`${JSON.stringify(answer)}\n`);
  return 0;
}

/** A task that failed outside its own error handling, as the code and message its result carries. */
export function taskError(error: unknown): { code: string; message: string } {
  const blue = toBlueError(error);
  return { code: blue.code, message: blue.message };
}
