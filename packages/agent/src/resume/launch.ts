/**
 * Handing the terminal to the harness: its native resume command runs in the destination with our stdin, stdout and
 * stderr, and its exit status becomes ours. While it runs, the signals a terminal sends (Ctrl-C, Ctrl-\) are the
 * harness's to handle: blue-agent only waits.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { exitStatus } from './flow.js';

export async function launch(ctx: Context, binary: string, argv: readonly string[], cwd: string): Promise<number> {
  const ignore = () => undefined;
  const forwarded: NodeJS.Signals[] = ['SIGINT', 'SIGQUIT', 'SIGTERM', 'SIGHUP'];
  for (const signal of forwarded) process.on(signal, ignore);
  try {
    return await new Promise<number>((resolve, reject) => {
      const child = spawn(binary, argv.slice(1), { cwd, env: ctx.env as NodeJS.ProcessEnv, stdio: 'inherit' });
      child.once('error', (error) =>
        reject(
          new BlueError('HARNESS_NOT_INSTALLED', `could not start ${binary}: ${error.message}`, {
            hint: 'Run the resume command shown above yourself.',
          }),
        ),
      );
      child.once('exit', (code, signal) =>
        resolve(exitStatus(code, signal, constants.signals as Record<string, number>)),
      );
    });
  } finally {
    for (const signal of forwarded) process.off(signal, ignore);
  }
}
