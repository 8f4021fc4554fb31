/**
 * The Control API's log: one line per request (method, path without its query, status or what happened instead,
 * duration) and per unexpected error, as text for a terminal or as JSON objects for a log pipeline
 * (`serve --log-format json`). Every line passes through `redact`: tokens and signed URLs never reach it.
 */
import { redact } from '@blue-agent/contract/util/redact.js';

/** Where the lines go (stderr for `serve`). */
export interface LogOutput {
  write(text: string): unknown;
}

export type ServerLogLevel = 'info' | 'error';
export type ServerLog = (level: ServerLogLevel, line: string, fields?: Record<string, unknown>) => void;
export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export interface ServerLogOptions {
  format: LogFormat;
  out: LogOutput;
  /** Lines below this level are dropped: `error` keeps only unexpected errors. */
  level?: ServerLogLevel | undefined;
  now?: (() => number) | undefined;
}

export function createServerLog(options: ServerLogOptions): ServerLog {
  const now = options.now ?? Date.now;
  const quiet = options.level === 'error';
  return (level, line, fields) => {
    if (quiet && level === 'info') return;
    const time = new Date(now()).toISOString();
    const text =
      options.format === 'json' ? JSON.stringify({ time, level, msg: line, ...fields }) : `${time} ${level} ${line}`;
    options.out.write(`${redact(text)}\n`);
  };
}
