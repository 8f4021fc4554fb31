/**
 * The agent's watches, on `fs.watch` alone (inotify, FSEvents, ReadDirectoryChangesW): a folder is watched, never a
 * file, so a file replaced by a rename (how editors, harnesses and the agent itself save) stays watched. A folder that
 * does not exist yet is watched through its nearest existing ancestor until it appears; a watched folder that is
 * removed or replaced is watched again the same way. Events are hints: their callers compare what they care about
 * (fingerprints, records) and a periodic check backs every watch up, so a missed or extra event costs nothing.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** A running watch; `close` stops it. */
export interface WatchHandle {
  close(): Promise<void>;
}

type OnError = (error: unknown) => void;

/**
 * Watches one folder: `onEvent(name)` for each entry changed in it (undefined when the platform did not say which),
 * and `onEvent(undefined)` when the folder itself appears, goes or is replaced. While the folder is missing its nearest
 * existing ancestor is watched, for when it appears — unless `onGone` is given: the watch then ends and says so.
 */
export class FolderWatch implements WatchHandle {
  private watcher: FSWatcher | undefined;
  /** The folder actually watched: `dir`, or its nearest existing ancestor while `dir` is missing. */
  private at: string | undefined;
  private ino: number | undefined;
  private closed = false;
  private checking = false;
  /** A check asked for while one runs (true: watch again whatever it finds). */
  private pending: boolean | undefined;
  /** After a watch failed: the wait before the next try, doubling up to a minute while it keeps failing. */
  private retryMs = 0;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly dir: string,
    private readonly onEvent: (name: string | undefined) => void,
    private readonly onError: OnError,
    private readonly onGone?: () => void,
  ) {}

  /** Whether a folder is watched (false once a watch with `onGone` has ended). */
  get watching(): boolean {
    return this.watcher !== undefined;
  }

  /** Resolves once the watch is in place. */
  async start(): Promise<void> {
    await this.attach();
    if (this.pending !== undefined) await this.recheck(this.pending);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.watcher?.close();
    this.watcher = undefined;
  }

  private async attach(): Promise<void> {
    this.watcher?.close();
    this.watcher = undefined;
    this.at = this.ino = undefined;
    for (let at = this.dir; !this.closed; ) {
      const ino = await folderIno(at);
      if (ino !== undefined) {
        try {
          const watcher = watch(at, { persistent: true }, (kind, name) => this.event(at, kind, name));
          // A watch that fails later (its folder unmounted, the event stream lost) is set up again, after a while.
          watcher.on('error', (error) => this.failed(watcher, error));
          if (this.closed) watcher.close();
          else [this.watcher, this.at, this.ino] = [watcher, at, ino];
          // The next folder down may have been made before this watch was in place: it raised no event here.
          const next = at === this.dir ? undefined : path.join(at, path.relative(at, this.dir).split(path.sep)[0]!);
          if (next !== undefined && (await folderIno(next)) !== undefined) this.pending ??= false;
          return;
        } catch (error) {
          if (!isGone(error)) {
            this.onError(error);
            return;
          }
        }
      }
      const parent = path.dirname(at);
      if (this.onGone !== undefined || parent === at) return;
      at = parent;
    }
  }

  private event(at: string, kind: string, name: string | Buffer | null): void {
    if (this.closed || at !== this.at) return;
    this.retryMs = 0;
    if (at === this.dir) this.onEvent(name === null ? undefined : String(name));
    // While an ancestor is watched, only the next folder down appearing matters (a home folder changes all the time),
    // and the ancestor itself going (an event about the watched folder itself carries its own name).
    else if (
      name !== null &&
      String(name) !== path.relative(at, this.dir).split(path.sep)[0] &&
      String(name) !== path.basename(at)
    )
      return;
    // An entry came or went: it may be the folder itself, removed or replaced (its watch then sees nothing more), or,
    // while an ancestor is watched, the folder now there. A file written in place ('change') says neither.
    if (kind === 'rename') void this.recheck(false);
  }

  private failed(watcher: FSWatcher, error: unknown): void {
    if (this.closed || watcher !== this.watcher) return;
    this.onError(error);
    watcher.close();
    this.watcher = undefined;
    this.retryMs = Math.min(60_000, Math.max(1_000, this.retryMs * 2));
    this.retryTimer = setTimeout(() => void this.recheck(true), this.retryMs);
    this.retryTimer.unref();
  }

  private async recheck(force: boolean): Promise<void> {
    if (this.closed) return;
    // One check at a time; what happens meanwhile is looked at again once it is done, never dropped.
    this.pending = this.pending === undefined ? force : this.pending || force;
    if (this.checking) return;
    this.checking = true;
    try {
      while (this.pending !== undefined && !this.closed) {
        const forced = this.pending;
        this.pending = undefined;
        const [at, ino] = [this.at, this.ino];
        if (!forced && at === this.dir && (await folderIno(this.dir)) === ino) continue;
        await this.attach();
        if (this.closed) return;
        if (this.at === undefined && this.onGone !== undefined) {
          this.closed = true;
          this.onGone();
        }
        if (this.at !== at || this.ino !== ino) this.onEvent(undefined);
      }
    } finally {
      this.checking = false;
    }
  }
}

/**
 * Watches `files` through their folders and calls `onEvent(file)` when one of them may have changed. Resolves once
 * every watch is in place.
 */
export async function watchFiles(
  files: readonly string[],
  onEvent: (file: string) => void,
  onError: OnError,
): Promise<WatchHandle> {
  const byFolder = new Map<string, string[]>();
  for (const file of files.map((f) => path.resolve(f))) {
    const dir = path.dirname(file);
    byFolder.set(dir, [...(byFolder.get(dir) ?? []), file]);
  }
  const watches = [...byFolder].map(
    ([dir, members]) =>
      new FolderWatch(
        dir,
        (name) => {
          for (const file of members) if (name === undefined || path.basename(file) === name) onEvent(file);
        },
        onError,
      ),
  );
  await Promise.all(watches.map((w) => w.start()));
  return { close: async () => void (await Promise.all(watches.map((w) => w.close()))) };
}

/**
 * Watches `dir` and its folders down to `depth` levels below it (at most `maxFolders` in all) and calls `onEvent` for
 * any change in them. Folders created later are watched as they appear.
 */
export async function watchTree(
  dir: string,
  depth: number,
  onEvent: () => void,
  onError: OnError,
  maxFolders = 1024,
): Promise<WatchHandle> {
  const folders = new Map<string, FolderWatch>();
  let closed = false;
  // Said once per kind: a watch limit reached would otherwise be said again at every new folder.
  const said = new Set<string>();
  const report: OnError = (error) => {
    const kind = (error as NodeJS.ErrnoException | undefined)?.code ?? 'other';
    if (!said.has(kind)) onError(error);
    said.add(kind);
  };
  const add = async (folder: string, level: number): Promise<void> => {
    if (closed || folders.has(folder)) return;
    if (folders.size >= maxFolders) {
      report(
        Object.assign(new Error(`${dir}: more than ${maxFolders} folders; the ones beyond are not watched`), {
          code: 'TOO_MANY_FOLDERS',
        }),
      );
      return;
    }
    const w = new FolderWatch(
      folder,
      (name) => {
        onEvent();
        if (level >= depth || closed) return;
        // A new folder below is watched too; undefined (which entry is unknown, or the folder reappeared): look at all.
        if (name === undefined) void addChildren(folder, level);
        else void childChanged(path.join(folder, name), level + 1);
      },
      report,
      // The top folder is watched through its ancestors while it is missing; one below it that goes is forgotten.
      level === 0
        ? undefined
        : () => {
            if (folders.get(folder) === w) folders.delete(folder);
          },
    );
    folders.set(folder, w);
    await w.start();
    if (!w.watching && folders.get(folder) === w) folders.delete(folder);
    else if (level < depth) await addChildren(folder, level);
  };
  // A folder below that appeared is watched; one that went is forgotten (where the platform does not tell its own
  // watch that its folder went, as FSEvents does not).
  const childChanged = async (folder: string, level: number): Promise<void> => {
    if ((await folderIno(folder)) !== undefined) return add(folder, level);
    const gone = folders.get(folder);
    if (gone === undefined) return;
    folders.delete(folder);
    await gone.close();
  };
  const addChildren = async (folder: string, level: number): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await add(path.join(folder, e.name), level + 1);
  };
  await add(path.resolve(dir), 0);
  return {
    close: async () => {
      closed = true;
      await Promise.all([...folders.values()].map((w) => w.close()));
    },
  };
}

async function folderIno(dir: string): Promise<number | undefined> {
  try {
    const info = await stat(dir);
    return info.isDirectory() ? info.ino : undefined;
  } catch {
    return undefined;
  }
}

function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
