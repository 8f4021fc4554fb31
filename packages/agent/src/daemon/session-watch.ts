/**
 * Watches the folders that hold active harnesses' sessions (native watches, native-watch.ts, bounded in depth and in
 * the number of folders) and says, debounced, that sessions changed: the agent then looks again once the idle time has
 * passed. The watch only brings the sweep forward; a periodic sweep catches whatever a watch misses.
 */
import { watchTree } from './native-watch.js';
import type { Logger } from '../logger.js';

/** At most this many session folders are watched (a harness has one or two). */
export const MAX_WATCHED_DIRS = 16;

export interface WatchedDir {
  dir: string;
  /** How many folder levels below `dir` the sessions' files lie. */
  depth: number;
}

export type DirWatchFactory = (
  dir: WatchedDir,
  onEvent: () => void,
  onError: (error: unknown) => void,
) => Promise<{ close(): Promise<void> }>;

export const nativeDirWatch: DirWatchFactory = ({ dir, depth }, onEvent, onError) =>
  watchTree(dir, depth, onEvent, onError);

export class SessionWatch {
  private handles = new Map<string, { close(): Promise<void> }>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly options: { debounceMs: number; log: Logger; onChange(): void; watch?: DirWatchFactory },
  ) {}

  /** Watches exactly these folders (a change of the set closes and opens watches; the same set changes nothing). */
  async setDirs(dirs: readonly WatchedDir[]): Promise<void> {
    if (this.closed) return;
    const wanted = new Map(dirs.slice(0, MAX_WATCHED_DIRS).map((d) => [`${d.depth}:${d.dir}`, d]));
    for (const [key, handle] of this.handles) {
      if (wanted.has(key)) continue;
      this.handles.delete(key);
      await handle.close().catch(() => undefined);
    }
    for (const [key, dir] of wanted) {
      if (this.handles.has(key)) continue;
      try {
        const handle = await (this.options.watch ?? nativeDirWatch)(
          dir,
          () => this.changed(),
          (error) => this.options.log.warn('session watch error', { dir: dir.dir, error: String(error) }),
        );
        if (this.closed) {
          await handle.close();
          return;
        }
        this.handles.set(key, handle);
      } catch (error) {
        this.options.log.warn('cannot watch a session folder; the periodic sweep still finds its sessions', {
          dir: dir.dir,
          error: String(error),
        });
      }
    }
  }

  get watched(): string[] {
    return [...this.handles.keys()].map((k) => k.slice(k.indexOf(':') + 1));
  }

  private changed(): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.closed) this.options.onChange();
    }, this.options.debounceMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const handles = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(handles.map((h) => h.close().catch(() => undefined)));
  }
}
