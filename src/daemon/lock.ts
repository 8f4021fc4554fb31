/**
 * One `blue-agent run` per user: `<state>/agent-run.lock`, created with O_EXCL, holding the owner's pid, host and
 * (on Linux) the process start time. A lock whose owner is gone — or whose pid now belongs to another process, after
 * a reboot — is stale and taken over.
 */
import { constants, readFileSync } from 'node:fs';
import { open, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { BlueError } from '../errors.js';
import { processRuns } from '../spool/index.js';
import { ensurePrivateDir } from '../util/fs.js';

export const RUN_LOCK_FILE = 'agent-run.lock';

interface LockOwner {
  pid: number;
  host: string;
  /** Clock ticks since boot when the owner started (Linux), to tell a reused pid from the owner. */
  proc_start?: string;
  started_at_unix_ms: number;
}

export interface InstanceLock {
  file: string;
  release(): Promise<void>;
}

/** The start time of a process from /proc (Linux); undefined elsewhere or when unknown. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function ownerAlive(owner: Partial<LockOwner>): boolean {
  if (typeof owner.pid !== 'number') return false;
  if (owner.host !== undefined && owner.host !== hostname()) return true; // a shared home: not ours to judge
  if (owner.pid === process.pid) return false;
  if (!processRuns(owner.pid)) return false;
  const start = processStart(owner.pid);
  return owner.proc_start === undefined || start === undefined || start === owner.proc_start;
}

export async function acquireInstanceLock(stateDir: string, now: number): Promise<InstanceLock> {
  await ensurePrivateDir(stateDir);
  const file = path.join(stateDir, RUN_LOCK_FILE);
  const start = processStart(process.pid);
  const mine: LockOwner = { pid: process.pid, host: hostname(), ...(start === undefined ? {} : { proc_start: start }), started_at_unix_ms: now };
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      try {
        await handle.writeFile(`${JSON.stringify(mine)}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return {
        file,
        release: async () => {
          try {
            const owner = JSON.parse(await readFile(file, 'utf8')) as Partial<LockOwner>;
            if (owner.pid === process.pid && owner.host === mine.host) await unlink(file);
          } catch {
            // Gone already: nothing of ours to remove.
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let owner: Partial<LockOwner> = {};
    try {
      owner = JSON.parse(await readFile(file, 'utf8')) as Partial<LockOwner>;
    } catch {
      // Unreadable or half-written: an owner that died between create and write. Treat as stale.
    }
    if (ownerAlive(owner) || attempt >= 5) {
      const since = typeof owner.started_at_unix_ms === 'number' ? `, running since ${new Date(owner.started_at_unix_ms).toISOString()}` : '';
      throw new BlueError('LOCK_TIMEOUT', `another \`blue-agent run\` is already running for this user (pid ${owner.pid}${owner.host !== undefined && owner.host !== hostname() ? ` on ${owner.host}` : ''}${since})`, {
        file,
        hint: 'Only one agent runs per user. Stop the other one first (`blue-agent service status` shows the service), or remove the lock file if that process is not blue-agent.',
      });
    }
    await unlink(file).catch(() => undefined);
  }
}
