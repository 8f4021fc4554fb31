/**
 * The agent's idle sweep loop: when to sweep (periodically, and once the idle time has passed after a watched session
 * folder changed), one sweep at a time, and the session-folder watches each sweep asks for. The sweep itself runs in a
 * task child (tasks.ts); what the agent keeps of it is the caller's.
 */
import type { RunLogger } from './log.js';
import type { AgentRunState } from './state.js';
import { SessionWatch, type DirWatchFactory } from './session-watch.js';
import { taskError } from './task-process.js';
import type { SweepTaskResult } from './tasks.js';

export type SweepRecord = NonNullable<AgentRunState['last_sweep']>;

export interface SweepLoopOptions {
  now: () => number;
  log: RunLogger;
  /** The periodic sweep. */
  periodicMs: number;
  /** False while there is no policy to sweep under: the sweep waits for the next period. */
  mayRun: () => boolean;
  /** Runs one sweep (a task child). */
  run: () => Promise<SweepTaskResult>;
  /** A sweep ended; `captured`: it enqueued sessions, which want a drain. */
  onSwept: (record: SweepRecord, captured: boolean) => Promise<void>;
  /** How session folders are watched; native watches by default. */
  watch?: DirWatchFactory;
}

export class SweepLoop {
  private readonly sessions: SessionWatch;
  private timer: NodeJS.Timeout | undefined;
  private at: number | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private halted = false;
  /** The idle time the last sweep used. */
  private idleMs: number | undefined;

  constructor(private readonly options: SweepLoopOptions) {
    this.sessions = new SessionWatch({
      debounceMs: 2_000,
      log: options.log,
      onChange: () => this.onSessionsChanged(),
      ...(options.watch === undefined ? {} : { watch: options.watch }),
    });
  }

  /** The sweep under way, if any. */
  get inFlight(): Promise<void> | undefined {
    return this.running;
  }

  /** Sweeps at `at` (ms), unless a sweep is already due earlier. */
  request(at: number): void {
    if (this.halted) return;
    if (this.at !== undefined && this.at <= at) return;
    clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.at = undefined;
        void this.sweep();
      },
      Math.max(0, at - this.options.now()),
    );
  }

  /** Runs the idle sweep now (one at a time; a request meanwhile runs once more afterwards). */
  sweep(): Promise<void> {
    if (this.halted) return Promise.resolve();
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    this.running = this.runOnce()
      .catch((error: unknown) => this.options.log.error('sweep crashed', { error: String(error) }))
      .finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          void this.sweep();
        }
      });
    return this.running;
  }

  /** Stops scheduling at once: no sweep starts after this. */
  halt(): void {
    this.halted = true;
    clearTimeout(this.timer);
  }

  /** Closes the session-folder watches. */
  async close(): Promise<void> {
    await this.sessions.close();
  }

  private async runOnce(): Promise<void> {
    const { now, log, periodicMs } = this.options;
    if (!this.options.mayRun()) {
      this.request(now() + periodicMs);
      return;
    }
    const at = now();
    let result: SweepTaskResult;
    try {
      result = await this.options.run();
    } catch (error) {
      result = { ok: false, idle_ms: this.idleMs ?? 0, watch: [], enqueued: 0, active: 0, error: taskError(error) };
    }
    if (this.halted) return;
    // A failed step says nothing about the folders: the watches stay as they are.
    if (result.ok) {
      this.idleMs = result.idle_ms;
      await this.sessions.setDirs(result.watch);
    }
    const backfilled = result.backfill?.enqueued ?? 0;
    if (result.error !== undefined)
      log.warn('idle sweep failed', { code: result.error.code, error: result.error.message });
    else if (result.enqueued > 0 || backfilled > 0) {
      log.info('sessions captured without their end hook', {
        idle: result.enqueued,
        backfill: backfilled,
        backfill_remaining: result.backfill?.remaining ?? null,
      });
    }
    const record: SweepRecord = {
      at_unix_ms: at,
      ok: result.ok,
      idle_ms: result.idle_ms,
      enqueued: result.enqueued,
      active: result.active,
      ...(result.backfill === undefined
        ? {}
        : { backfill_enqueued: result.backfill.enqueued, backfill_remaining: result.backfill.remaining }),
      ...(result.error === undefined ? {} : { error: result.error }),
    };
    await this.options.onSwept(record, result.enqueued > 0 || backfilled > 0);
    // Next: when the first session being written to goes idle, or the periodic sweep, whichever is sooner.
    const then = now();
    this.request(
      Math.min(
        then + periodicMs,
        result.next_due_at_unix_ms === undefined ? Infinity : Math.max(then, result.next_due_at_unix_ms + 1_000),
      ),
    );
  }

  /** A session folder changed: look again once the idle time has passed. */
  private onSessionsChanged(): void {
    if (this.halted || this.idleMs === undefined) return;
    this.request(this.options.now() + this.idleMs + 1_000);
  }
}
