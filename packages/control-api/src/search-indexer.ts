/**
 * The indexer: reads what completed sessions say, off the request path. `complete` answers as soon as the upload is
 * verified, with the session's search entry already holding the upload's title, summary and place (and the text of the
 * upload before, until this loop replaces it), and queues the session (store: search_queue, in the same transaction);
 * this loop claims queued sessions a few at a time (a claim lasts `leaseMs`, so a server that dies leaves its claims to
 * another), reads each bundle from the blob store, and writes its text into the session's search entry only while that
 * upload is still the current one.
 * One bundle at a time per server, and the texts of one claim (at most 10, each bounded) written in one transaction.
 * Woken by completes, and every `pollMs` for what other replicas or an earlier life of this one left. Indexing yields
 * to uploads: a complete wakes it once uploads have been quiet for `quietMs`, and at the latest `maxDelayMs` after the
 * first complete it has not indexed yet, so a backlog being drained is acknowledged first and indexed in batches.
 */
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { BlobStore } from './blobs/types.js';
import type { ServerLog } from './log.js';
import { storedSearchText } from './search-text.js';
import type { ControlStore, SearchIndexed } from './store/index.js';

export interface SearchIndexerOptions {
  store: ControlStore;
  blobs: () => BlobStore;
  profiles: ProfileSet;
  log: ServerLog;
  now: () => number;
  pollMs?: number;
  /** Quiet time after a complete before indexing (default 1 s)... */
  quietMs?: number;
  /** ...but never longer than this after the first complete not yet indexed (default 10 s). */
  maxDelayMs?: number;
  leaseMs?: number;
  /** Index only when `idle()` is awaited: no round at start, after a complete or on a timer (tests that play another
   * replica). */
  manual?: boolean;
}

export class SearchIndexer {
  private timer: NodeJS.Timeout | undefined;
  private kickTimer: NodeJS.Timeout | undefined;
  /** When the first complete not yet indexed woke the indexer (monotonic ms). */
  private kickedAt: number | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;

  constructor(private readonly options: SearchIndexerOptions) {}

  /** Starts polling (the first round at once). */
  start(): void {
    if (this.options.manual !== true) this.round();
  }

  /** An upload completed: a round once uploads are quiet (see above). */
  kick(): void {
    if (this.options.manual === true || this.closed) return;
    const now = performance.now();
    this.kickedAt ??= now;
    const wait = Math.max(
      0,
      Math.min(this.options.quietMs ?? 1_000, this.kickedAt + (this.options.maxDelayMs ?? 10_000) - now),
    );
    clearTimeout(this.kickTimer);
    this.kickTimer = setTimeout(() => {
      this.kickTimer = this.kickedAt = undefined;
      this.round();
    }, wait);
    this.kickTimer.unref();
  }

  private round(): void {
    if (this.closed) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.drain()
      .catch((error: unknown) =>
        this.options.log(
          'error',
          `search indexing failed; it is tried again: ${error instanceof Error ? error.message : String(error)}`,
          { event: 'search_index_failed' },
        ),
      )
      .finally(() => {
        this.running = undefined;
        if (this.closed) return;
        if (this.again) {
          this.again = false;
          this.round();
          return;
        }
        if (this.options.manual === true) return;
        this.timer = setTimeout(() => this.round(), this.options.pollMs ?? 5_000);
        this.timer.unref();
      });
  }

  /** Resolves once nothing claimable is queued (tests; a server about to stop). */
  async idle(): Promise<void> {
    for (let round = 0; round < 1000 && !this.closed; round++) {
      await this.running;
      if (
        (await this.options.store.claimSearchWork(this.options.now(), 0, 1)).length === 0 &&
        this.running === undefined
      )
        return;
      this.round();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearTimeout(this.kickTimer);
    await this.running;
  }

  private async drain(): Promise<void> {
    const lease = this.options.leaseMs ?? 5 * 60_000;
    for (;;) {
      if (this.closed) return;
      const batch = await this.options.store.claimSearchWork(this.options.now(), lease, 10);
      if (batch.length === 0) return;
      const done: SearchIndexed[] = [];
      let failed: unknown;
      for (const { session_id: sessionId, artifact } of batch) {
        if (this.closed) break;
        let text: string | undefined;
        try {
          text = await storedSearchText(this.options.blobs(), artifact, this.options.profiles);
        } catch (error) {
          // The blob store failed (not the bundle): this one waits for its lease; the rest of the claim goes on.
          failed ??= error;
          continue;
        }
        if (text === undefined)
          this.options.log(
            'info',
            `session ${sessionId}: upload ${artifact.id} is searchable by its title only (its bundle cannot be read)`,
            { event: 'search_text_unreadable' },
          );
        done.push({ session_id: sessionId, artifact_id: artifact.id, text: text ?? '' });
      }
      // What a claim read is written together; what it did not read is left to its lease.
      await this.options.store.searchIndexed(done, this.options.now());
      if (failed !== undefined) throw failed;
      if (this.closed) return;
    }
  }
}
