/**
 * Watches the native config files the agent manages (chokidar, native fs.watch, no polling) and asks for a reconcile
 * shortly after one changes. The agent's own writes do not count: after each reconcile the run loop calls `remember`,
 * and an event that leaves a file exactly as remembered (same inode, size and mtime, or still absent) is ignored — so
 * a write by the agent can never start another reconcile, let alone a loop of them.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import chokidar, { type FSWatcher } from 'chokidar';
import type { Logger } from '../logger.js';

export interface Fingerprint {
  exists: boolean;
  ino?: number;
  size?: number;
  mtimeMs?: number;
}

export async function fingerprint(file: string): Promise<Fingerprint> {
  try {
    const info = await stat(file);
    return { exists: true, ino: info.ino, size: info.size, mtimeMs: info.mtimeMs };
  } catch {
    return { exists: false };
  }
}

export function sameFingerprint(a: Fingerprint | undefined, b: Fingerprint): boolean {
  if (a === undefined) return false;
  return a.exists === b.exists && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

export interface ConfigWatcherOptions {
  debounceMs: number;
  log: Logger;
  /** Called once per burst of changes, with the files that changed. */
  onChange(files: string[]): void;
}

export class ConfigWatcher {
  private watcher: FSWatcher | undefined;
  private readonly files = new Set<string>();
  private readonly known = new Map<string, Fingerprint>();
  private readonly changed = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: ConfigWatcherOptions) {}

  /** The files watched now. */
  get watched(): string[] {
    return [...this.files].sort();
  }

  /** Watches exactly these files (missing ones are watched through their nearest folder, for when they appear). */
  async setFiles(list: readonly string[]): Promise<void> {
    if (this.closed) return;
    const wanted = new Set(list.map((f) => path.resolve(f)));
    const added = [...wanted].filter((f) => !this.files.has(f));
    const removed = [...this.files].filter((f) => !wanted.has(f));
    if (added.length === 0 && removed.length === 0) return;
    for (const f of removed) {
      this.files.delete(f);
      this.known.delete(f);
    }
    for (const f of added) this.files.add(f);
    if (this.watcher === undefined) {
      this.watcher = chokidar.watch(added, { ignoreInitial: true, persistent: true });
      this.watcher.on('all', (_event, file) => void this.onEvent(path.resolve(file)));
      this.watcher.on('error', (error) => this.options.log.warn('config watcher error', { error: String(error) }));
      await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    } else {
      if (removed.length > 0) this.watcher.unwatch(removed);
      if (added.length > 0) this.watcher.add(added);
    }
  }

  /** Records how every watched file is now: events that leave a file like this are ignored. */
  async remember(): Promise<void> {
    await Promise.all([...this.files].map(async (f) => this.known.set(f, await fingerprint(f))));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.watcher?.close();
  }

  private async onEvent(file: string): Promise<void> {
    // Chokidar watches a missing file through its folder and reports that folder's other entries too.
    if (this.closed || !this.files.has(file)) return;
    const now = await fingerprint(file);
    if (sameFingerprint(this.known.get(file), now)) return;
    this.changed.add(file);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      const files = [...this.changed];
      this.changed.clear();
      if (!this.closed) this.options.onChange(files);
    }, this.options.debounceMs);
  }
}
