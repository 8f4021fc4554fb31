/**
 * One `blue-agent run` per user: `<state>/agent-run.lock`, holding the owner's pid, host, start time, the boot it
 * started in and (on Linux) the process start time.
 *
 * The lock appears with its content in one step: the record is written to a private temp file first and then
 * link()ed into place, which fails when a lock exists. A reader therefore never finds an empty or half-written lock.
 *
 * A lock is stale — taken over — when its owner cannot be the agent any more:
 *   - it was taken before this machine last booted (its recorded start predates the current boot, with slack): every
 *     process of that boot is gone, whatever its pid names now. This also covers a host name changed across a
 *     reboot (a laptop's name often follows the network);
 *   - on this host: its pid is gone, or belongs to another user (EPERM: the state directory is per user, so an agent
 *     of ours could always be signalled), or belongs to a process that started at another time (a reused pid: the
 *     start time from /proc on Linux, from `ps -o lstart=` elsewhere).
 * A lock from another host that started after this boot is kept: the state directory then lives on a home shared
 * between machines, where only that host can tell whether its agent runs (its pid means nothing here). The message
 * names the host; remove the lock by hand if that host is gone.
 *
 * Takeover is exclusive: a contender first creates `<lock>.takeover` (O_EXCL), checks that the lock is still the one it
 * judged stale, and only then moves it aside; the others wait for the marker and look again.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { link, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { hostname, uptime } from 'node:os';
import path from 'node:path';
import { BlueError } from '../errors.js';
import { ensurePrivateDir } from '../util/fs.js';

/** The exit status of a `run` that finds another agent running: the service manager must not restart it. */
export const EXIT_ALREADY_RUNNING = 3;
/** How far a recorded start may lie before the computed boot time and still count as this boot (clock steps, NTP). */
const BOOT_SLACK_MS = 5 * 60_000;
/** A takeover marker older than this was left by a contender that died holding it (holding it takes milliseconds). */
const TAKEOVER_STALE_MS = 10_000;

export interface LockOwner {
  pid: number;
  host: string;
  /** Clock ticks since boot when the owner started (Linux), to tell a reused pid from the owner. */
  proc_start?: string;
  started_at_unix_ms: number;
  /** When the owner's machine booted (wall clock), as the owner computed it. */
  boot_at_unix_ms?: number;
}

export interface InstanceLock {
  file: string;
  release(): Promise<void>;
}

/** What the staleness rules need from the world; replaced in tests. */
export interface LockWorld {
  host: string;
  pid: number;
  /** The current boot's start, wall clock. */
  bootAt: number;
  /** 'alive', 'gone', or 'foreign' (exists, but not ours to signal). */
  probe(pid: number): 'alive' | 'gone' | 'foreign';
  /** Linux: /proc start ticks. */
  procStart(pid: number): string | undefined;
  /** Elsewhere: the process's start, wall clock ms. */
  startedAt(pid: number): number | undefined;
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

/** A process's start time from `ps -o lstart=` (macOS and other Unixes without /proc), to the second. */
export function processStartedAt(pid: number): number | undefined {
  if (process.platform === 'win32' || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    const text = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8', timeout: 2_000, stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LC_ALL: 'C', LANG: 'C' } }).trim();
    const ms = Date.parse(text);
    return Number.isFinite(ms) ? ms : undefined;
  } catch {
    return undefined;
  }
}

export function bootTime(): number {
  return Date.now() - uptime() * 1000;
}

function probe(pid: number): 'alive' | 'gone' | 'foreign' {
  if (!Number.isSafeInteger(pid) || pid <= 0) return 'gone';
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? 'foreign' : 'gone';
  }
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) return 'gone';
    } catch {
      // Vanished meanwhile, or no /proc: kill(0) said it runs.
    }
  }
  return 'alive';
}

export function systemLockWorld(): LockWorld {
  return { host: hostname(), pid: process.pid, bootAt: bootTime(), probe, procStart: processStart, startedAt: processStartedAt };
}

/** Why the recorded owner cannot be running any more, or undefined when it may well be. */
export function staleReason(owner: Partial<LockOwner>, world: LockWorld): string | undefined {
  if (typeof owner.pid !== 'number' || !Number.isSafeInteger(owner.pid)) return 'no owner recorded';
  const started = typeof owner.started_at_unix_ms === 'number' ? owner.started_at_unix_ms : undefined;
  if (started !== undefined && started < world.bootAt - BOOT_SLACK_MS) return 'taken before this machine booted';
  if (owner.host !== undefined && owner.host !== world.host) return undefined; // a shared home, another host's agent
  if (owner.pid === world.pid) return 'recorded by this very process';
  const seen = world.probe(owner.pid);
  if (seen === 'gone') return `pid ${owner.pid} is gone`;
  if (seen === 'foreign') return `pid ${owner.pid} belongs to another user`;
  if (owner.proc_start !== undefined) {
    const now = world.procStart(owner.pid);
    if (now !== undefined && now !== owner.proc_start) return `pid ${owner.pid} is another process now`;
    return undefined;
  }
  if (started !== undefined) {
    // No /proc: the process must have started shortly before it took the lock (ps has a one-second resolution).
    const at = world.startedAt(owner.pid);
    if (at !== undefined && (at > started + 2_000 || at < started - 10 * 60_000)) return `pid ${owner.pid} is another process now`;
  }
  return undefined;
}

/** Takes the agent's instance lock `file` (`Paths.runLockFile`), in a private folder made when missing. */
export async function acquireInstanceLock(file: string, now: number, world: LockWorld = systemLockWorld()): Promise<InstanceLock> {
  await ensurePrivateDir(path.dirname(file));
  const start = world.procStart(world.pid);
  const mine: LockOwner = {
    pid: world.pid,
    host: world.host,
    ...(start === undefined ? {} : { proc_start: start }),
    started_at_unix_ms: now,
    boot_at_unix_ms: Math.round(world.bootAt),
  };
  const text = `${JSON.stringify(mine)}\n`;
  const unique = () => `${file}.${world.pid}.${randomBytes(6).toString('hex')}`;
  for (let attempt = 0; ; attempt++) {
    // Atomic create-with-content: write aside, then link into place (fails when a lock exists).
    const temp = `${unique()}.tmp`;
    await writeFile(temp, text, { mode: 0o600, flag: 'wx' });
    let created = false;
    try {
      await link(temp, file);
      created = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      await unlink(temp).catch(() => undefined);
    }
    if (created) {
      return {
        file,
        release: async () => {
          try {
            if ((await readFile(file, 'utf8')) === text) await unlink(file);
          } catch {
            // Gone already: nothing of ours to remove.
          }
        },
      };
    }
    let seen: string;
    try {
      seen = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && attempt < 20) continue; // released meanwhile
      throw error;
    }
    let owner: Partial<LockOwner> | undefined;
    try {
      owner = JSON.parse(seen) as Partial<LockOwner>;
    } catch {
      owner = undefined;
    }
    let reason: string | undefined;
    if (owner === undefined) {
      // Not a record (an older version wrote the lock in two steps, or the file was damaged): stale once it is not
      // being written any more.
      const age = Date.now() - ((await stat(file).catch(() => undefined))?.mtimeMs ?? 0);
      if (age < 2_000 && attempt < 20) {
        await delay(100);
        continue;
      }
      reason = 'not a lock record';
    } else {
      reason = staleReason(owner, world);
    }
    if (reason === undefined || attempt >= 20) {
      const o = owner ?? {};
      const since = typeof o.started_at_unix_ms === 'number' ? `, running since ${new Date(o.started_at_unix_ms).toISOString()}` : '';
      throw new BlueError('LOCK_TIMEOUT', `another \`blue-agent run\` is already running for this user (pid ${o.pid}${o.host !== undefined && o.host !== world.host ? ` on ${o.host}` : ''}${since})`, {
        file,
        exitCode: EXIT_ALREADY_RUNNING,
        hint:
          o.host !== undefined && o.host !== world.host
            ? `The state directory is shared with ${o.host}; only one agent runs per user. If that agent is gone, remove ${file}.`
            : 'Only one agent runs per user. Stop the other one first (`blue-agent service status` shows the service), or remove the lock file if that process is not blue-agent.',
      });
    }
    // Take over, one contender at a time: only the holder of the takeover marker removes a lock, and only the very
    // lock it judged stale. (Without the marker, a contender could move aside a lock just created by another one
    // and, while putting it back, let a third create its own: two owners.)
    const marker = `${file}.takeover`;
    try {
      await writeFile(marker, `${world.pid}\n`, { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // Left by a contender that died in the few steps it holds the marker for: removed once clearly old.
      const info = await stat(marker).catch(() => undefined);
      if (info !== undefined && Date.now() - info.mtimeMs > TAKEOVER_STALE_MS) await unlink(marker).catch(() => undefined);
      await delay(20 + Math.floor(Math.random() * 50));
      continue;
    }
    try {
      // Judged on an earlier read: taken over (and created anew) meanwhile, it is judged again.
      if ((await readFile(file, 'utf8').catch(() => undefined)) !== seen) continue;
      const aside = `${unique()}.stale`;
      try {
        await rename(file, aside);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile
        throw error;
      }
      const moved = await readFile(aside, 'utf8').catch(() => undefined);
      if (moved !== seen) await link(aside, file).catch(() => undefined); // replaced between the read and the rename
      await unlink(aside).catch(() => undefined);
    } finally {
      await unlink(marker).catch(() => undefined);
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
