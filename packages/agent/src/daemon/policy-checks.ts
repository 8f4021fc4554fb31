/** The agent's policy checks: one at a time, each scheduling the next; and what one check's answer means. */
import type { RunLogger } from './log.js';
import { nextPolicyCheck, type CheckOutcome, type NextCheck, type PolicyScheduleOptions } from './schedule.js';
import type { AgentRunState } from './state.js';
import type { PolicyTaskResult } from './tasks.js';

export interface PolicyChecksOptions {
  /** One check; resolves with when the next one is due (ms). */
  run: () => Promise<number>;
  schedule: PolicyScheduleOptions;
  random: () => number;
  log: RunLogger;
  stopping: () => boolean;
}

/** One check at a time: a request meanwhile runs once more afterwards; whatever happens, the next is scheduled. */
export class PolicyChecks {
  /** Failed checks in a row, which the backoff doubles on. */
  failures = 0;
  private checking: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PolicyChecksOptions) {}

  /** The check in progress, if any. */
  get inFlight(): Promise<void> | undefined {
    return this.checking;
  }

  check(): Promise<void> {
    const o = this.options;
    if (o.stopping()) return Promise.resolve();
    if (this.checking !== undefined) {
      this.again = true;
      return this.checking;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    let nextDelay: number | undefined;
    this.checking = o
      .run()
      .then((delayMs) => {
        nextDelay = delayMs;
      })
      .catch((error: unknown) => {
        // Whatever went wrong, the next check is still scheduled: as after a failed fetch.
        const next = nextPolicyCheck(this.failures, { ok: false }, o.schedule, o.random);
        this.failures = next.failures;
        nextDelay = next.delayMs;
        o.log.error('policy check crashed; will be retried', {
          error: String(error),
          next_check_in_ms: next.delayMs,
        });
      })
      .finally(() => {
        this.checking = undefined;
        if (o.stopping()) return;
        if (this.again) {
          this.again = false;
          void this.check();
          return;
        }
        clearTimeout(this.timer);
        this.timer = setTimeout(() => void this.check(), nextDelay ?? o.schedule.backoffBaseMs);
      });
    return this.checking;
  }

  /** No further check is scheduled. */
  halt(): void {
    clearTimeout(this.timer);
  }
}

/** What one policy check's answer means for the schedule, and whether the policy may be applied. */
export interface PolicyReading {
  outcome: CheckOutcome;
  lastError?: { code: string; message: string };
  /** Whether the policy in force may be applied now; undefined: as before. */
  usable?: boolean;
}

/** Reads one policy check's answer, logging what a person should know of it. */
export function readPolicyResult(result: PolicyTaskResult, log: RunLogger): PolicyReading {
  const { resolved, unavailable } = result;
  if (resolved !== undefined) {
    let reading: PolicyReading;
    if (resolved.source === 'cached') {
      reading = {
        outcome: { ok: false, retryAfterMs: unavailable?.retryAfterMs },
        lastError: { code: 'POLICY_UNREACHABLE', message: `Control API ${unavailable?.reason ?? 'unavailable'}` },
        usable: true,
      };
      log.warn('Control API unavailable: using the last-known-good policy', {
        revision: resolved.revision,
        reason: unavailable?.reason ?? null,
        age_seconds: resolved.ageSeconds ?? null,
        stale: resolved.stale,
      });
    } else {
      reading = { outcome: { ok: true, ttlSeconds: resolved.ttlSeconds }, usable: true };
    }
    for (const warning of resolved.warnings)
      if (resolved.source !== 'cached' || !warning.startsWith('Control API')) log.warn(warning);
    return reading;
  }
  const error = result.error ?? { code: 'INTERNAL', message: 'the policy check gave no answer' };
  log.warn('policy check failed', { code: error.code, error: error.message });
  return {
    outcome: { ok: false, retryAfterMs: unavailable?.retryAfterMs },
    lastError: error,
    // A required policy gone stale, or a revision this blue-agent may not apply (another major pinned: the cached
    // copy is gone too; a newer contract or missing capabilities): change nothing until that changes.
    ...(error.code === 'POLICY_STALE' ||
    error.code === 'CLIENT_VERSION_MISMATCH' ||
    error.code === 'POLICY_INCOMPATIBLE'
      ? { usable: false }
      : {}),
  };
}

/** One finished check: what it found, and when the next is due. */
export interface FinishedCheck {
  outcome: CheckOutcome;
  next: NextCheck;
  /** The policy in force after it. */
  resolved: PolicyTaskResult['resolved'];
  /** What `agent-run.json` said of the check before. */
  previous: AgentRunState['policy'];
  startedAt: number;
  checkedAt: number;
  lastError?: { code: string; message: string };
}

/** Logs a finished check; returns what `agent-run.json` keeps of it for `status`. */
export function recordCheck(log: RunLogger, check: FinishedCheck): NonNullable<AgentRunState['policy']> {
  const { outcome, next, resolved } = check;
  const fields = {
    ok: outcome.ok,
    revision: resolved?.revision ?? null,
    source: resolved?.source ?? null,
    failures: next.failures,
    next_check_in_ms: next.delayMs,
    basis: next.basis,
    ...(outcome.ok ? {} : { retry_after_ms: outcome.retryAfterMs ?? null }),
  };
  if (outcome.ok) log.info('policy checked', fields);
  else log.warn('policy check will be retried', fields);
  return {
    revision: resolved?.revision ?? check.previous?.revision ?? 'unknown',
    source: resolved?.source ?? 'cached',
    ...(resolved?.fetchedAt === undefined ? {} : { fetched_at_unix_ms: resolved.fetchedAt }),
    failures: next.failures,
    next_check_at_unix_ms: check.checkedAt + next.delayMs,
    checked_at_unix_ms: check.startedAt,
    ...(check.lastError === undefined ? {} : { last_error: check.lastError }),
  };
}
