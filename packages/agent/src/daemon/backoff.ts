/**
 * Rate limit for repeated drift corrections of the same file. Something that keeps rewriting a managed file (another
 * tool, a sync client, a person's script) must not turn the agent into a busy loop of reconcile, write and report:
 * after a correction, the next drift reconcile for that file waits base, then 2×base, 4×base … up to a cap, and the
 * count starts again once the file has been left alone for `resetMs`.
 */
import path from 'node:path';

export interface CorrectionBackoffOptions {
  baseMs: number;
  capMs: number;
  resetMs: number;
}

export const DEFAULT_CORRECTION_BACKOFF: CorrectionBackoffOptions = {
  baseMs: 1_000,
  capMs: 5 * 60_000,
  resetMs: 15 * 60_000,
};

export class CorrectionBackoff {
  private readonly entries = new Map<string, { count: number; last: number }>();

  constructor(private readonly options: CorrectionBackoffOptions = DEFAULT_CORRECTION_BACKOFF) {}

  /** How many files it remembers: past 1,000, those left alone for `resetMs` are forgotten. */
  get size(): number {
    return this.entries.size;
  }

  /** The agent has just corrected (rewritten) these files. */
  corrected(files: Iterable<string>, now: number): void {
    for (const raw of files) {
      const file = path.resolve(raw);
      const e = this.entries.get(file);
      const count = e !== undefined && now - e.last < this.options.resetMs ? e.count + 1 : 1;
      this.entries.set(file, { count, last: now });
    }
    if (this.entries.size > 1_000) {
      for (const [f, e] of this.entries) if (now - e.last >= this.options.resetMs) this.entries.delete(f);
    }
  }

  /** How long a drift reconcile for these files has yet to wait (0: now), and for which file and how many corrections.
   * */
  delayFor(files: Iterable<string>, now: number): { delayMs: number; file?: string; corrections?: number } {
    let best: { delayMs: number; file?: string; corrections?: number } = { delayMs: 0 };
    for (const raw of files) {
      const file = path.resolve(raw);
      const e = this.entries.get(file);
      if (e === undefined || now - e.last >= this.options.resetMs) continue;
      const wait = Math.min(this.options.baseMs * 2 ** (e.count - 1), this.options.capMs);
      const left = e.last + wait - now;
      if (left > best.delayMs) best = { delayMs: left, file, corrections: e.count };
    }
    return best;
  }
}
