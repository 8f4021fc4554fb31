/**
 * The run loop's log: one JSON object per line, on stdout when that is the journal, otherwise in `<state>/run.log`,
 * rotated to `run.log.1` when it passes a size bound so it can never fill the disk.
 *   - BLUE_AGENT_LOG=json (or stdout) / file decide outright; the systemd unit sets json, the LaunchAgent file;
 *   - JOURNAL_STREAM counts only when it names this very stdout (`dev:ino` of fd 1, as systemd documents): the
 *     variable is inherited by everything started from a service, terminals included;
 *   - INVOCATION_ID alone does not count (it leaks into the shells of terminal apps run as user services), and
 *     launchd (XPC_SERVICE_NAME = the agent's label) gets the file: launchd never rotates its StandardOutPath.
 * Every line passes through `redact`: tokens and signed URLs never reach it.
 */
import { appendFileSync, fstatSync, mkdirSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Env, Output } from '../context.js';
import type { LogLevel, Logger } from '../logger.js';
import { redact } from '@blue-agent/contract/util/redact.js';

export const DEFAULT_LOG_MAX_BYTES = 1024 * 1024;
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogTarget = { kind: 'stdout' } | { kind: 'file'; file: string; maxBytes: number };

/** `dev:ino` of this process's stdout, as systemd writes JSTREAM; undefined when fd 1 cannot be inspected. */
export function stdoutIdentity(): string | undefined {
  try {
    const info = fstatSync(1, { bigint: true });
    return `${info.dev}:${info.ino}`;
  } catch {
    return undefined;
  }
}

/** Where the log goes, from the environment the process was started with (and what its stdout is). */
export function detectLogTarget(
  env: Env,
  logFile: string,
  maxBytes = DEFAULT_LOG_MAX_BYTES,
  stdoutId: () => string | undefined = stdoutIdentity,
): LogTarget {
  const explicit = env.BLUE_AGENT_LOG?.trim().toLowerCase();
  const file: LogTarget = { kind: 'file', file: logFile, maxBytes };
  if (explicit === 'json' || explicit === 'stdout') return { kind: 'stdout' };
  if (explicit === 'file') return file;
  const journal = env.JOURNAL_STREAM?.trim();
  if (journal !== undefined && /^\d+:\d+$/.test(journal) && journal === stdoutId()) return { kind: 'stdout' };
  return file;
}

export interface RunLogger extends Logger {
  readonly target: LogTarget;
}

export function createRunLogger(options: {
  target: LogTarget;
  stdout: Output;
  env: Env;
  now?: () => number;
}): RunLogger {
  const threshold = order[(options.env.BLUE_AGENT_LOG_LEVEL as LogLevel | undefined) ?? 'info'] ?? order.info;
  const now = options.now ?? Date.now;
  const { target } = options;
  let size = -1;
  const writeFile = (line: string) => {
    if (target.kind !== 'file') return;
    try {
      if (size < 0) {
        mkdirSync(path.dirname(target.file), { recursive: true, mode: 0o700 });
        size = statSync(target.file, { throwIfNoEntry: false })?.size ?? 0;
      }
      const bytes = Buffer.byteLength(line);
      if (size > 0 && size + bytes > target.maxBytes) {
        renameSync(target.file, `${target.file}.1`);
        size = 0;
      }
      appendFileSync(target.file, line, { mode: 0o600 });
      size += bytes;
    } catch {
      // A log that cannot be written must not stop the agent; the next line tries again.
      size = -1;
    }
  };
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (order[level] < threshold) return;
    const time = new Date(now()).toISOString();
    const line = `${redact(JSON.stringify({ time, level, msg, pid: process.pid, ...fields }))}\n`;
    if (target.kind === 'stdout') options.stdout.write(line);
    else writeFile(line);
  };
  return {
    target,
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
