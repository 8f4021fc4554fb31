/**
 * Policy push for `GET /governance-config/events`: tells every open event stream of this server when a new governance
 * revision is published — by this replica, another one, or `control-plane policy publish` writing to the database.
 *
 * One feed per server asks the store for the current revision every `intervalMs` while at least one stream is open:
 * one small query per replica however many agents listen, the same on both backends, and nothing to re-establish after
 * the database restarts (a failed poll is retried at the next tick; streams stay open meanwhile).
 */
import type { ControlStore } from './store/index.js';

export type RevisionListener = (revision: string) => void;

export interface RevisionFeedOptions {
  /** How often the store is asked while someone listens (default 500 ms: a publish reaches agents within a second). */
  intervalMs?: number | undefined;
  log?: ((level: 'info' | 'error', line: string) => void) | undefined;
}

export class RevisionFeed {
  readonly #store: ControlStore;
  readonly #intervalMs: number;
  readonly #log: (level: 'info' | 'error', line: string) => void;
  /** Each listener with the revision it was last given: every one hears each revision once, in the feed's order. */
  readonly #listeners = new Map<RevisionListener, string | undefined>();
  #timer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #latest: string | undefined;
  #failing = false;

  constructor(store: ControlStore, options: RevisionFeedOptions = {}) {
    this.#store = store;
    this.#intervalMs = options.intervalMs ?? 500;
    this.#log = options.log ?? (() => {});
  }

  get listeners(): number {
    return this.#listeners.size;
  }

  /**
   * Calls `listener` with the current revision (at once when the feed knows it, else after one read of the store),
   * then with each one published later. Returns the unsubscribe function.
   */
  subscribe(listener: RevisionListener): () => void {
    this.#listeners.set(listener, undefined);
    if (this.#latest !== undefined) this.#deliver(listener, this.#latest);
    else void this.#poll();
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.#poll(), this.#intervalMs);
      this.#timer.unref();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#stop();
    };
  }

  close(): void {
    this.#listeners.clear();
    this.#stop();
  }

  #stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    // What was seen goes stale once nobody listens: the next subscriber starts from the store.
    this.#latest = undefined;
  }

  #deliver(listener: RevisionListener, revision: string): void {
    if (this.#listeners.get(listener) === revision || !this.#listeners.has(listener)) return;
    this.#listeners.set(listener, revision);
    listener(revision);
  }

  /** One read at a time, so revisions reach listeners in the order they were read. */
  #poll(): Promise<void> {
    this.#polling ??= this.#read().finally(() => (this.#polling = undefined));
    return this.#polling;
  }

  async #read(): Promise<void> {
    try {
      const revision = (await this.#store.currentPolicy())?.revision;
      if (this.#failing) this.#log('info', 'governance revision feed: the database answers again');
      this.#failing = false;
      if (revision === undefined || this.#listeners.size === 0) return;
      this.#latest = revision;
      for (const listener of [...this.#listeners.keys()]) this.#deliver(listener, revision);
    } catch (error) {
      if (!this.#failing)
        this.#log(
          'error',
          `governance revision feed: cannot read the current revision (${(error as Error).message}); retrying`,
        );
      this.#failing = true;
    }
  }
}
