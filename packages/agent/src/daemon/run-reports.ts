/** What the agent logs of a drain it ran and of a status it reported, and what it keeps of each in `agent-run.json`. */
import { EXIT_TEMPFAIL } from '@blue-agent/contract/errors.js';
import type { DrainResult } from './drains.js';
import type { StatusTaskResult } from './tasks.js';
import type { RunLogger } from './log.js';
import type { AgentRunState } from './state.js';

/** Logs a finished drain; returns the record `status` shows of it. */
export function reportDrain(log: RunLogger, result: DrainResult): NonNullable<AgentRunState['last_drain']> {
  const s = result.summary;
  const fields = {
    trigger: result.trigger,
    ok: result.ok,
    ms: result.finished_at_unix_ms - result.started_at_unix_ms,
    ...(s === undefined
      ? {}
      : {
          built: s.built,
          uploaded: s.uploaded,
          failed: s.failed,
          retried: s.retried,
          left: s.left,
          left_ready: s.left_ready,
        }),
    ...(s?.held === undefined ? {} : { held: s.held.length }),
    ...(result.interrupted ? { interrupted: true } : {}),
    ...(result.released.length > 0 ? { released: result.released } : {}),
    ...(result.error === undefined ? {} : { error: result.error }),
  };
  if (result.ok) log.info('drain finished', fields);
  // Nothing failed: another drain (one a capture started) holds records, and reports them itself.
  else if (result.exit_code === EXIT_TEMPFAIL) log.info('drain finished; another drain holds some records', fields);
  else log.warn('drain finished with problems', fields);
  return {
    at_unix_ms: result.finished_at_unix_ms,
    ok: result.ok,
    trigger: result.trigger,
    uploaded: s?.uploaded ?? 0,
    built: s?.built ?? 0,
    failed: s?.failed ?? 0,
    interrupted: result.interrupted,
  };
}

/** Logs how reporting the client status went; returns the record `status` shows of it. */
export function reportStatus(
  log: RunLogger,
  result: StatusTaskResult,
  at: number,
  revision: string | number | undefined,
  corrected: ReadonlySet<string>,
): NonNullable<AgentRunState['last_status_report']> {
  if (result.ok) {
    log.info('client status reported', { revision: revision ?? null, corrected: [...corrected] });
    return { at_unix_ms: at, ok: true };
  }
  log.warn('client status not reported; will try again', {
    code: result.error?.code ?? null,
    error: result.error?.message ?? null,
  });
  return { at_unix_ms: at, ok: false, ...(result.error === undefined ? {} : { error: result.error.message }) };
}
