/**
 * Stopping the running agent from another command, and keeping it stopped while that command works: what must not be
 * undone behind its back (removing the managed hooks, which a running agent would put back as drift).
 *
 * The agent is found by its instance lock (lock.ts), signalled with SIGTERM (it finishes the write in progress and
 * exits 0, which neither systemd's Restart=on-failure nor launchd's KeepAlive restarts), and waited for until its
 * lock is released; the caller then holds the lock itself, so no agent starts until it lets go. An agent that cannot
 * be stopped from here — it runs on another host sharing this state directory, it may not be signalled, or it does
 * not exit in time — is reported (`AGENT_RUNNING`) and nothing is done behind it.
 */
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { BlueError } from '@blue-agent/contract/errors.js';
import { systemLockWorld, type LockWorld } from '../lock/liveness.js';
import { acquireInstanceLock, EXIT_ALREADY_RUNNING, staleReason, type InstanceLock, type LockOwner } from './lock.js';

/** The agent's own stop is bounded well below this (its drain's grace and kill, a reconcile's writes). */
export const STOP_WAIT_MS = 30_000;
const POLL_MS = 50;

/** An agent holding the instance lock, as its record says. */
export interface RunningAgent {
  pid: number;
  host: string;
  /** False when it runs on another host that shares this state directory. */
  here: boolean;
  started_at_unix_ms: number | undefined;
}

/** The agent that holds `file` (`Paths.runLockFile`) now, or undefined when none runs. Reads only. */
export async function runningAgent(
  file: string,
  world: LockWorld = systemLockWorld(),
): Promise<RunningAgent | undefined> {
  let owner: Partial<LockOwner>;
  try {
    owner = JSON.parse(await readFile(file, 'utf8')) as Partial<LockOwner>;
  } catch {
    // No lock, or not a record (taken over by the next agent that starts): nothing runs that holds it.
    return undefined;
  }
  if (owner === null || typeof owner !== 'object' || typeof owner.pid !== 'number') return undefined;
  if (staleReason(owner, world) !== undefined) return undefined;
  const host = typeof owner.host === 'string' ? owner.host : world.host;
  return {
    pid: owner.pid,
    host,
    here: host === world.host,
    started_at_unix_ms: typeof owner.started_at_unix_ms === 'number' ? owner.started_at_unix_ms : undefined,
  };
}

export interface StoppedAgent {
  /** Held by the caller: release it when done. */
  lock: InstanceLock;
  /** The agents signalled (usually one; none when no agent ran). */
  stopped: RunningAgent[];
}

/**
 * Stops whatever agent runs (SIGTERM), waits at most `waitMs` for it to let go of its lock, and takes the lock.
 * `why` completes the refusal's message: "…, so <why>".
 */
export async function stopAgentAndHold(
  file: string,
  options: { why: string; waitMs?: number; world?: LockWorld },
): Promise<StoppedAgent> {
  const world = options.world ?? systemLockWorld();
  const waitMs = options.waitMs ?? STOP_WAIT_MS;
  const deadline = Date.now() + waitMs;
  const stopped: RunningAgent[] = [];
  for (;;) {
    try {
      return { lock: await acquireInstanceLock(file, Date.now(), world), stopped };
    } catch (error) {
      if (!(error instanceof BlueError) || error.exitCode !== EXIT_ALREADY_RUNNING) throw error;
    }
    const agent = await runningAgent(file, world);
    if (agent === undefined) {
      // Released (or found stale) meanwhile: take it at the next look.
      if (Date.now() >= deadline)
        throw new BlueError('LOCK_TIMEOUT', `${file} kept changing while blue-agent waited for it`, {
          file,
          hint: 'Run the command again.',
        });
      await sleep(POLL_MS);
      continue;
    }
    if (!agent.here) {
      const hint =
        `Stop it there (\`blue-agent service uninstall\` on ${agent.host}, or end its \`blue-agent ` +
        `run\`), then run this again.`;
      throw refusal(file, agent, `it runs on ${agent.host}, which shares this state directory`, options.why, hint);
    }
    if (!stopped.some((a) => a.pid === agent.pid)) {
      try {
        process.kill(agent.pid, 'SIGTERM');
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ESRCH') {
          throw refusal(
            file,
            agent,
            `it cannot be signalled (${code ?? String(error)})`,
            options.why,
            `Stop it as the user it runs as (kill ${agent.pid}), then run this again.`,
          );
        }
      }
      stopped.push(agent);
    }
    if (Date.now() >= deadline) {
      const within = waitMs < 1_000 ? `${waitMs} ms` : `${Math.round(waitMs / 1000)} s`;
      const hint = `Stop it (kill ${agent.pid}; if it hangs, kill -KILL ${agent.pid}), then run this again.`;
      throw refusal(file, agent, `it did not stop within ${within} of SIGTERM`, options.why, hint);
    }
    await sleep(POLL_MS);
  }
}

function refusal(file: string, agent: RunningAgent, cause: string, why: string, hint: string): BlueError {
  return new BlueError(
    'AGENT_RUNNING',
    `the agent (\`blue-agent run\`, pid ${agent.pid}${agent.here ? '' : ` on ${agent.host}`}) could not be ` +
      `stopped: ${cause}, so ${why}`,
    { file, hint },
  );
}
