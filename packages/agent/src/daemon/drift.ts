/**
 * Drift repair: the watches of the files the agent manages, a periodic `stat` of them that catches a change no watch
 * reported, and the backoff that keeps the agent from fighting something that changes a file again and again.
 */
import { CorrectionBackoff, type CorrectionBackoffOptions } from './backoff.js';
import type { RunLogger } from './log.js';
import { ConfigWatcher, type WatchFactory } from './watcher.js';

export interface DriftRepairOptions {
  log: RunLogger;
  /** Asks for the drift reconcile. */
  reconcile: () => void;
  stopping: () => boolean;
  debounceMs: number;
  checkMs: number;
  backoff: CorrectionBackoffOptions;
  watch?: WatchFactory;
}

export class DriftRepair {
  readonly watcher: ConfigWatcher;
  readonly corrections: CorrectionBackoff;
  private checkTimer: NodeJS.Timeout | undefined;
  private delayTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: DriftRepairOptions) {
    this.watcher = new ConfigWatcher({
      debounceMs: options.debounceMs,
      log: options.log,
      onChange: (files) => this.changed(files),
      ...(options.watch === undefined ? {} : { watch: options.watch }),
    });
    this.corrections = new CorrectionBackoff(options.backoff);
  }

  /** Starts the periodic check. */
  start(): void {
    this.checkTimer = setInterval(() => void this.check(), this.options.checkMs);
  }

  /**
   * Compares every watched file with what the agent left (a `stat` each, nothing read): a change that no watch event
   * reported starts the usual drift reconcile. Resolves with the files found changed.
   */
  async check(): Promise<string[]> {
    const { log, stopping } = this.options;
    if (stopping()) return [];
    const files = await this.watcher.check().catch((error: unknown) => {
      log.warn('drift check failed', { error: String(error) });
      return [];
    });
    if (files.length > 0) log.info('drift check found changed files', { files });
    return files;
  }

  /** No further check or delayed correction. */
  halt(): void {
    clearInterval(this.checkTimer);
    clearTimeout(this.delayTimer);
  }

  async close(): Promise<void> {
    await this.watcher.close().catch(() => undefined);
  }

  /** A watched file changed (and is not as the agent left it). */
  private changed(files: string[]): void {
    const { log, reconcile, stopping } = this.options;
    if (stopping()) return;
    const wait = this.corrections.delayFor(files, Date.now());
    if (wait.delayMs > 0) {
      // The agent corrected this file moments ago and something changed it again: do not fight it in a tight loop.
      log.warn('drift correction delayed: the file keeps changing', {
        files,
        file: wait.file,
        corrections: wait.corrections,
        delay_ms: wait.delayMs,
      });
      if (this.delayTimer === undefined) {
        this.delayTimer = setTimeout(() => {
          this.delayTimer = undefined;
          reconcile();
        }, wait.delayMs);
      }
      return;
    }
    log.info('managed config changed', { files });
    reconcile();
  }
}
