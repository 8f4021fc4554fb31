/**
 * The local blob store's folders: a new object's folder made once, not on every upload, and the folder entries of
 * renamed uploads made durable by group commit.
 */
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir } from '@blue-agent/contract/util/fs.js';

export class LocalFolders {
  /** Folders known to exist. */
  readonly #made = new Set<string>();
  readonly #syncs = new Map<string, { running: Promise<void>; next?: Promise<void> }>();

  /** Opens the new file `file` (0600), its folder made first when it is not known to exist. */
  async openNew(file: string): Promise<FileHandle> {
    const folder = path.dirname(file);
    if (!this.#made.has(folder)) {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      this.#made.add(folder);
    }
    try {
      return await open(file, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // Removed since: made again.
      await mkdir(folder, { recursive: true, mode: 0o700 });
      return open(file, 'wx', 0o600);
    }
  }

  /**
   * Group commit of folder entries: one fsync of a folder covers every rename into it that finished before the fsync
   * began, so concurrent uploads share one. An upload whose rename finished while an fsync was under way waits for
   * the next, which starts once that one ends.
   */
  sync(folder: string): Promise<void> {
    const state = this.#syncs.get(folder);
    if (state === undefined) return this.#start(folder);
    return (state.next ??= state.running.then(() => this.#start(folder)));
  }

  #start(folder: string): Promise<void> {
    const running = fsyncDir(folder).finally(() => {
      const state = this.#syncs.get(folder);
      if (state?.running === running && state.next === undefined) this.#syncs.delete(folder);
    });
    this.#syncs.set(folder, { running });
    return running;
  }
}
