/**
 * Whether the process that wrote a record (a lock, a spool claim, a restore journal) can still be running: the one
 * owner-liveness rule of the agent, judged against an injectable world (pids, process start times, boot time, host,
 * clock) so that tests depend on none of this machine's.
 *
 * An owner cannot be running any more when:
 *   - its record (or its process) dates from before this machine last booted, with slack: every process of that boot
 *     is gone, whatever its pid names now (pids restart at boot). This also covers a host name changed across a
 *     reboot (a laptop's name often follows the network);
 *   - the record is older than the caller's `maxAgeMs` (a holder that hangs, or a reused pid nothing else can tell);
 *   - on this host: its pid is gone (a zombie counts as gone), or runs but started at another time than recorded (a
 *     reused pid: /proc start ticks on Linux, the process's wall-clock start elsewhere), or is this very process
 *     while the caller does not hold the record (an earlier process had the same pid);
 *   - a pid of another user (EPERM), or a record from another host, where the caller says so: the state directory is
 *     per user, but only some callers may act on that.
 *
 * Kept free of node:crypto and other heavy modules: the capture hook's spool imports it.
 */
import { readFileSync } from 'node:fs';
import { hostname, uptime } from 'node:os';

/** What the liveness rules need from the world; replaced in tests. */
export interface LockWorld {
  host: string;
  pid: number;
  /** The current boot's start, wall clock. */
  bootAt: number;
  /** 'alive', 'gone', or 'foreign' (exists, but not ours to signal). */
  probe(pid: number): 'alive' | 'gone' | 'foreign';
  /** Linux: /proc start ticks. */
  procStart(pid: number): string | undefined;
  /** The process's start, wall clock ms (Linux: from /proc and the boot time; elsewhere: `ps`, to the second). */
  startedAt(pid: number): number | undefined;
  /** The wall clock (defaults to Date.now). */
  now?(): number;
}

/** An owner as recorded, whatever the record's format. */
export interface RecordedOwner {
  pid?: unknown;
  /** Absent: this host (a record only ever read where it was written, such as a spool claim). */
  host?: unknown;
  /** /proc start ticks of the owner (Linux). */
  procStart?: unknown;
  /** The owner process's start, wall clock. */
  processStartedAt?: unknown;
  /** When the record was written (or last refreshed), wall clock. */
  recordedAt?: unknown;
}

/** How a caller weighs what cannot be known for sure. */
export interface LivenessRules {
  /** The record is this process's own, held now (a record with our pid that we do not hold is an earlier process's). */
  self?: boolean;
  /** A record older than this belongs to no running owner. */
  maxAgeMs?: number;
  /** How far a recorded time may lie before the boot time and still count as this boot (clock steps, NTP). */
  bootSlackMs?: number;
  /** Slack when comparing a recorded process start with the running one's. */
  startSlackMs?: number;
  /** A record of another host: kept ('alive', a shared home where only that host can tell) or not ('stale'). */
  otherHost?: 'alive' | 'stale';
  /** A pid of another user: 'alive' (it runs, we cannot tell more) or 'stale' (no agent of ours would be one). */
  foreign?: 'alive' | 'stale';
  /**
   * The record was written as its owner started (an instance lock): where no start of the owner is recorded, the
   * running process's start must fit `recordedAt`.
   */
  writtenAtStart?: boolean;
}

/** Default boot slack: a wall clock stepped by NTP shortly after boot. */
export const BOOT_SLACK_MS = 5 * 60_000;

/**
 * Why the recorded owner cannot be running any more, or undefined when it may well be. Rules checked in order: boot,
 * age, host, our own pid, the pid's existence, its start time.
 */
export function staleOwnerReason(
  owner: RecordedOwner,
  world: LockWorld,
  rules: LivenessRules = {},
): string | undefined {
  const pid = owner.pid;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid)) return 'no owner recorded';
  const now = world.now?.() ?? Date.now();
  const recordedAt = finite(owner.recordedAt);
  const processStartedAt = finite(owner.processStartedAt);
  const procStart = typeof owner.procStart === 'string' ? owner.procStart : undefined;
  const start = processStartedAt ?? recordedAt;
  if (start !== undefined && start < world.bootAt - (rules.bootSlackMs ?? BOOT_SLACK_MS))
    return 'taken before this machine booted';
  if (rules.maxAgeMs !== undefined && recordedAt !== undefined && now - recordedAt > rules.maxAgeMs)
    return `older than ${Math.round(rules.maxAgeMs / 1000)} s`;
  if (owner.host !== undefined && owner.host !== world.host)
    return rules.otherHost === 'stale' ? `recorded on another host (${String(owner.host)})` : undefined;
  if (pid === world.pid) return rules.self === true ? undefined : `pid ${pid} is this process, which does not hold it`;
  const seen = world.probe(pid);
  if (seen === 'gone') return `pid ${pid} is gone`;
  if (seen === 'foreign') return rules.foreign === 'alive' ? undefined : `pid ${pid} belongs to another user`;
  if (procStart !== undefined) {
    const current = world.procStart(pid);
    return current !== undefined && current !== procStart ? `pid ${pid} is another process now` : undefined;
  }
  if (processStartedAt !== undefined) {
    const current = world.startedAt(pid);
    const slack = rules.startSlackMs ?? 5_000;
    return current !== undefined && Math.abs(current - processStartedAt) > slack
      ? `pid ${pid} is another process now`
      : undefined;
  }
  if (rules.writtenAtStart === true && recordedAt !== undefined) {
    // Only when the record was written: the process must have started shortly before (ps has a one-second
    // resolution), and not long before either.
    const at = world.startedAt(pid);
    if (at !== undefined && (at > recordedAt + 2_000 || at < recordedAt - 10 * 60_000))
      return `pid ${pid} is another process now`;
  }
  return undefined;
}

function finite(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** When this machine booted (wall clock): the one place it is computed. */
export function bootTime(): number {
  return Date.now() - uptime() * 1000;
}

/** The start ticks of a process from /proc (Linux); undefined elsewhere or when unknown. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces; field 22 (starttime) is the 20th after it.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** A process's start time from `ps -o lstart=` (macOS and other Unixes without /proc), to the second. */
export function processStartedAt(pid: number): number | undefined {
  if (process.platform === 'win32' || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    // node:child_process (with node:dgram and more) loads only here: most checks never ask ps.
    const { execFileSync } = process.getBuiltinModule('node:child_process');
    const text = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      timeout: 2_000,
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
    }).trim();
    const ms = Date.parse(text);
    return Number.isFinite(ms) ? ms : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a pid runs: 'foreign' when it does but belongs to another user; a zombie (Linux) is 'gone'. */
export function probeProcess(pid: number): 'alive' | 'gone' | 'foreign' {
  if (!Number.isSafeInteger(pid) || pid <= 0) return 'gone';
  let seen: 'alive' | 'foreign' = 'alive';
  try {
    process.kill(pid, 0); // signal 0 checks without sending anything
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return 'gone';
    seen = 'foreign';
  }
  if (process.platform === 'linux') {
    // Exited, not yet reaped (which can last long under a container's init): not running.
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) return 'gone';
    } catch {
      // Vanished meanwhile, or no /proc: kill(0) said it runs.
    }
  }
  return seen;
}

/** True when a process with this pid runs, ours or another user's. */
export function processRuns(pid: number): boolean {
  return probeProcess(pid) !== 'gone';
}

/** The world as this machine sees it. */
export function systemLockWorld(): LockWorld {
  const bootAt = bootTime();
  const startedAt = (pid: number): number | undefined => {
    if (process.platform === 'linux') {
      const ticks = Number(processStart(pid));
      // USER_HZ is 100 on every Linux that Node.js runs on.
      return Number.isFinite(ticks) ? Math.round(bootAt + ticks * 10) : undefined;
    }
    if (pid === process.pid) return Math.round(Date.now() - process.uptime() * 1000);
    return processStartedAt(pid);
  };
  return {
    host: hostname(),
    pid: process.pid,
    bootAt,
    probe: probeProcess,
    procStart: processStart,
    startedAt,
    now: Date.now,
  };
}
