/**
 * Garbage collection in the background (collectWith: objects past retention and of deleted sessions): idempotent, so
 * every replica may run it; the first run at a random point of the interval, so replicas spread.
 */
import { collectWith } from '../admin/gc.js';
import type { RouteContext } from '../route-context.js';

export class BackgroundGc {
  readonly #rc: RouteContext;
  readonly #everyMs: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  /** Runs every `everyMs` once scheduled; 0 never runs. */
  constructor(rc: RouteContext, everyMs: number) {
    this.#rc = rc;
    this.#everyMs = everyMs;
  }

  /** The collection under way, if any: its deletes and their records go together, so a closing server awaits it. */
  get running(): Promise<void> | undefined {
    return this.#running;
  }

  /** The next run, after `delayMs`; each run schedules the one after it. */
  schedule(delayMs: number): void {
    if (this.#everyMs <= 0) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#collect().finally(() => {
        this.#running = undefined;
        this.schedule(this.#everyMs);
      });
    }, delayMs);
    this.#timer.unref();
  }

  /** Cancels the next run (one under way finishes). */
  stop(): void {
    clearTimeout(this.#timer);
  }

  async #collect(): Promise<void> {
    const { log, metrics } = this.#rc;
    const started = Date.now();
    try {
      const result = await collectWith(this.#rc.store, this.#rc.blobs, this.#rc.now());
      const objects = result.deleted.length + result.deleted_objects.length;
      metrics.collected({ objects, failed: result.failed.length }, (Date.now() - started) / 1000);
      if (objects > 0 || result.failed.length > 0) {
        log(
          result.failed.length === 0 ? 'info' : 'error',
          `gc: deleted ${objects} object${objects === 1 ? '' : 's'}` +
            (result.failed.length === 0
              ? ''
              : `, ${result.failed.length} could not be deleted (the first: ${result.failed[0]!.error})`),
          {
            event: 'gc',
            deleted: objects,
            failed: result.failed.length,
          },
        );
      }
    } catch (error) {
      metrics.collected({ objects: 0, failed: 1 }, (Date.now() - started) / 1000);
      log(
        'error',
        `gc failed; it runs again in ${Math.round(this.#everyMs / 60_000)} min: ` +
          `${error instanceof Error ? error.message : String(error)}`,
        { event: 'gc', failed: 1 },
      );
    }
  }
}
