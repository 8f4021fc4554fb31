/**
 * One `blue-agent run` per user: `<state>/agent-run.lock`, holding the owner's pid, host, start time, the boot it
 * started in and (on Linux) the process start time. Created whole and taken over by one contender only (lock/lock.ts).
 *
 * A lock is stale — taken over — when its owner cannot be the agent any more (lock/liveness.ts): it was taken before
 * this machine last booted; or, on this host, its pid is gone, belongs to another user (EPERM: the state directory is
 * per user, so an agent of ours could always be signalled), or belongs to a process that started at another time (a
 * reused pid). A lock from another host that started after this boot is kept: the state directory then lives on a
 * home shared between machines, where only that host can tell whether its agent runs (its pid means nothing here).
 * The message names the host; remove the lock by hand if that host is gone.
 */
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import { acquireLockFile, lockOwner, type HeldLock, type LockOwner } from '../lock/lock.js';
import { staleOwnerReason, systemLockWorld, type LockWorld } from '../lock/liveness.js';
import { ensurePrivateDir } from '@blue-agent/contract/util/fs.js';

export type { LockOwner } from '../lock/lock.js';
export type { LockWorld } from '../lock/liveness.js';

/** The exit status of a `run` that finds another agent running: the service manager must not restart it. */
export const EXIT_ALREADY_RUNNING = 3;
/** Looks at a lock that keeps changing before giving up. */
const MAX_LOOKS = 20;

export type InstanceLock = HeldLock;

/** Why the recorded owner cannot be running any more, or undefined when it may well be. */
export function staleReason(owner: Partial<LockOwner>, world: LockWorld): string | undefined {
  return staleOwnerReason(
    { pid: owner.pid, host: owner.host, procStart: owner.proc_start, recordedAt: owner.started_at_unix_ms },
    world,
    { otherHost: 'alive', foreign: 'stale', writtenAtStart: true },
  );
}

/** Takes the agent's instance lock `file` (`Paths.runLockFile`), in a private folder made when missing. */
export async function acquireInstanceLock(
  file: string,
  now: number,
  world: LockWorld = systemLockWorld(),
): Promise<InstanceLock> {
  await ensurePrivateDir(path.dirname(file));
  const text = `${JSON.stringify(lockOwner(world, now))}\n`;
  return acquireLockFile(
    file,
    text,
    world,
    (owner) => staleReason(owner as Partial<LockOwner>, world),
    async (attempt, found, reason) => {
      if (reason !== undefined && attempt < MAX_LOOKS) return;
      const o = (found ?? {}) as Partial<LockOwner>;
      const since =
        typeof o.started_at_unix_ms === 'number'
          ? `, running since ${new Date(o.started_at_unix_ms).toISOString()}`
          : '';
      throw new BlueError(
        'LOCK_TIMEOUT',
        `another \`blue-agent run\` is already running for this user (pid ${o.pid}` +
          `${o.host !== undefined && o.host !== world.host ? ` on ${o.host}` : ''}${since})`,
        {
          file,
          exitCode: EXIT_ALREADY_RUNNING,
          hint:
            o.host !== undefined && o.host !== world.host
              ? `The state directory is shared with ${o.host}; only one agent runs per user. If that agent is ` +
                `gone, remove ${file}.`
              : 'Only one agent runs per user. Stop the other one first (`blue-agent service status` shows the ' +
                'service), or remove the lock file if that process is not blue-agent.',
        },
      );
    },
  );
}
