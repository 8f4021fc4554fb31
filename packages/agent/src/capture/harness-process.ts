/**
 * The harness process that ran the capture hook: the nearest ancestor that is not a shell (harnesses run hook commands
 * through `/bin/sh -c` or `bash -c`, which may or may not exec the command). A capture that must wait until the
 * harness has exited (the profile's capture.wait_for_exit) records it, with its start (Linux: /proc start ticks;
 * elsewhere: `ps`, to the second), so a reused pid is never taken for it.
 *
 * Kept light like the rest of the hook: /proc reads on Linux, one `ps` per step elsewhere; bounded to a few steps.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { processStart, processStartedAt } from '../lock/liveness.js';

const SHELLS = new Set(['sh', 'dash', 'bash', 'zsh', 'ksh', 'mksh', 'ash', 'busybox']);
/** Shell levels looked through (a shell that runs a shell that runs the hook is already unusual). */
const MAX_STEPS = 3;

export interface HarnessProcess {
  pid: number;
  /** Linux: /proc start ticks. */
  proc_start?: string;
  /** Elsewhere: the process's start, wall clock (ms, to the second). */
  started_at_unix_ms?: number;
}

/** A process's parent and command name; undefined when it cannot be read. */
export type ProcessInfo = (pid: number) => { ppid: number; name: string } | undefined;

export function readProcessInfo(pid: number): { ppid: number; name: string } | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 1) return undefined;
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const open = stat.indexOf('(');
      const close = stat.lastIndexOf(')');
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      return Number.isSafeInteger(ppid) ? { ppid, name: stat.slice(open + 1, close) } : undefined;
    } catch {
      return undefined;
    }
  }
  try {
    const text = execFileSync('ps', ['-o', 'ppid=,comm=', '-p', String(pid)], {
      encoding: 'utf8',
      timeout: 2_000,
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const m = /^(\d+)\s+(.+)$/.exec(text);
    return m === null ? undefined : { ppid: Number(m[1]), name: path.basename(m[2]!) };
  } catch {
    return undefined;
  }
}

/** The harness above this hook process (`parent` is its parent pid), or undefined when it cannot be told. */
export function harnessProcess(
  parent: number = process.ppid,
  info: ProcessInfo = readProcessInfo,
): HarnessProcess | undefined {
  let pid = parent;
  for (let step = 0; step < MAX_STEPS; step++) {
    const seen = info(pid);
    if (seen === undefined) return undefined;
    if (!SHELLS.has(seen.name.replace(/^-/, ''))) break;
    pid = seen.ppid;
  }
  if (!Number.isSafeInteger(pid) || pid <= 1) return undefined;
  if (process.platform === 'linux') {
    const start = processStart(pid);
    return start === undefined ? undefined : { pid, proc_start: start };
  }
  const at = processStartedAt(pid);
  return at === undefined ? undefined : { pid, started_at_unix_ms: at };
}
