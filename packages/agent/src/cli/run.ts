/**
 * `blue-agent run`: starts the workstation agent and returns when it has stopped. SIGTERM and SIGINT stop it (after
 * the write in progress, with the spool's claims released), SIGHUP reloads the agent config.
 */
import type { Context } from '../context.js';
import { Daemon } from '../daemon/index.js';
import { EXIT_ALREADY_RUNNING } from '../daemon/lock.js';
import { detectLogTarget, type LogTarget } from '../daemon/log.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { LAUNCHD_LABEL } from '../service/label.js';
import { serveTask, TASK_ENV } from '../daemon/task-process.js';

export async function runCommand(ctx: Context): Promise<number> {
  // One step of a running agent, in its own short-lived process (see src/daemon/task-process.ts).
  if (ctx.env[TASK_ENV] === '1') return serveTask(ctx);
  let daemon: Daemon | undefined;
  // Handlers go in first: a signal that arrives while the agent is still starting must not kill it half-way.
  let stopRequested: string | undefined;
  const onStop = (signal: NodeJS.Signals) => {
    if (daemon === undefined) stopRequested ??= signal;
    else void daemon.stop(signal);
  };
  const onHup = () => void daemon?.reload();
  process.on('SIGTERM', onStop);
  process.on('SIGINT', onStop);
  process.on('SIGHUP', onHup);
  try {
    try {
      daemon = await Daemon.start(ctx);
    } catch (error) {
      // Another agent runs (exit 3; the systemd unit has RestartPreventExitStatus=3). launchd has no such setting and
      // restarts every non-zero exit of its job: started by our LaunchAgent, say so and exit 0 instead.
      if (
        error instanceof BlueError &&
        error.exitCode === EXIT_ALREADY_RUNNING &&
        ctx.env.XPC_SERVICE_NAME === LAUNCHD_LABEL
      ) {
        throw new BlueError(error.code, error.message, {
          ...(error.hint === undefined ? {} : { hint: error.hint }),
          exitCode: 0,
        });
      }
      throw error;
    }
    // Run by hand, the agent is silent on the terminal: say once where its log goes.
    const line = logLocationLine(detectLogTarget(ctx.env, ctx.paths.runLogFile), ctx.stderr.isTTY);
    if (line !== undefined) ctx.stderr.write(`${line}\n`);
    if (stopRequested !== undefined) void daemon.stop(stopRequested);
    return await daemon.stopped;
  } finally {
    process.off('SIGTERM', onStop);
    process.off('SIGINT', onStop);
    process.off('SIGHUP', onHup);
  }
}

/** The line `run` prints at start in a terminal when its log goes to a file (the same target the agent detects). */
export function logLocationLine(target: LogTarget, terminal: boolean): string | undefined {
  if (!terminal || target.kind !== 'file') return undefined;
  return (
    `blue-agent run: the agent is running; its log is ${target.file} (BLUE_AGENT_LOG=json logs here instead). ` +
    `Ctrl-C stops it.`
  );
}
