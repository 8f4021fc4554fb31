/** The agent's reconciles: one at a time, and what each one's report says was corrected, updated or left alone. */
import type { CorrectionBackoff } from './backoff.js';
import type { RunLogger } from './log.js';
import type { HarnessSummary } from './report.js';

export type ReconcileTrigger = 'start' | 'policy' | 'drift' | 'periodic' | 'reload';

const TRIGGER_RANK: Record<ReconcileTrigger, number> = { periodic: 0, start: 1, reload: 2, drift: 3, policy: 4 };

/** One reconcile at a time; requests meanwhile run once afterwards, as the weightiest trigger among them. */
export class ReconcileQueue {
  private running: Promise<void> | undefined;
  private pending: ReconcileTrigger | undefined;

  constructor(
    private readonly run: (trigger: ReconcileTrigger) => Promise<void>,
    private readonly log: RunLogger,
    private readonly stopping: () => boolean,
  ) {}

  /** The reconcile in progress, if any. */
  get inFlight(): Promise<void> | undefined {
    return this.running;
  }

  request(trigger: ReconcileTrigger): void {
    if (this.stopping()) return;
    if (this.running !== undefined) {
      if (this.pending === undefined || TRIGGER_RANK[trigger] > TRIGGER_RANK[this.pending]) this.pending = trigger;
      return;
    }
    this.running = this.run(trigger)
      .catch((error: unknown) => this.log.error('reconcile crashed', { error: String(error) }))
      .finally(() => {
        this.running = undefined;
        const next = this.pending;
        this.pending = undefined;
        if (next !== undefined) this.request(next);
      });
  }

  /** Forgets the request waiting for the one in progress. */
  clear(): void {
    this.pending = undefined;
  }
}

/**
 * Logs what one reconcile did to each harness and returns the harnesses it corrected: those that are as they were
 * (same state, same version), yet whose file needed changing — somebody or something changed what the agent manages.
 * A harness installed, upgraded or removed is an update, not drift.
 */
export function correctedHarnesses(
  log: RunLogger,
  trigger: ReconcileTrigger,
  harnesses: readonly HarnessSummary[],
  previous: readonly HarnessSummary[] | undefined,
  backoff: CorrectionBackoff,
): Set<string> {
  const corrected = new Set<string>();
  for (const h of harnesses) {
    if (h.action === 'unchanged') continue;
    if (h.action === 'error') {
      log.warn('harness not reconciled', {
        trigger,
        harness: h.harness,
        state: h.state,
        reason: h.reason,
        files: h.files,
      });
      continue;
    }
    const before = previous?.find((p) => p.harness === h.harness);
    if (trigger !== 'policy' && before !== undefined && before.state === h.state && before.version === h.version) {
      corrected.add(h.harness);
      backoff.corrected(h.files, Date.now());
      log.warn('drift corrected', {
        trigger,
        harness: h.harness,
        action: h.action,
        state: h.state,
        files: h.files,
      });
    } else {
      log.info('hooks updated', {
        trigger,
        harness: h.harness,
        action: h.action,
        state: h.state,
        files: h.files,
      });
    }
  }
  return corrected;
}
