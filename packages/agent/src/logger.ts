/**
 * A small leveled logger. Messages pass through `redact` so tokens and signed URLs never reach a log line.
 */
import type { Output } from './context.js';
import { redact } from '@blue-agent/contract/util/redact.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export function createLogger(options: { env: Readonly<Record<string, string | undefined>>; stderr: Output }): Logger {
  const configured = options.env.BLUE_AGENT_LOG_LEVEL as LogLevel | undefined;
  const threshold = order[configured ?? 'warn'] ?? order.warn;
  const emit = (level: LogLevel, message: string, fields?: Record<string, unknown>) => {
    if (order[level] < threshold) return;
    const extra = fields === undefined ? '' : ` ${redact(JSON.stringify(fields))}`;
    options.stderr.write(`blue-agent ${level}: ${redact(message)}${extra}\n`);
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
