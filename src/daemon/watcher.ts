/**
 * Watches the native config files the agent manages (chokidar, native fs.watch, no polling) and asks for a reconcile
 * shortly after one changes. The agent's own writes do not count: each reconcile step hands back the fingerprint
 * (device, inode, size, mtime, ctime) of every watched file as its writes left it, and the run loop `remember`s them.
 * The decision is taken when the debounce timer fires, not when the event arrives — the event of an own write
 * usually arrives before the step has even answered — and while a reconcile runs (`hold`) it waits for that answer.
 * A file whose fingerprint is then exactly the remembered one is left alone, so a write by the agent can never start
 * another reconcile, let alone a loop of them.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import chokidar, { type FSWatcher } from 'chokidar';
import type { Logger } from '../logger.js';

export interface Fingerprint {
  exists: boolean;
  dev?: number;
  ino?: number;
  size?: number;
  mtimeMs?: number;
  ctimeMs?: number;
}

export async function fingerprint(file: string): Promise<Fingerprint> {
  try {
    const info = await stat(file);
    return { exists: true, dev: info.dev, ino: info.ino, size: info.size, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs };
  } catch {
    return { exists: false };
  }
}

export async function fingerprints(files: Iterable<string>): Promise<Record<string, Fingerprint>> {
  const out: Record<string, Fingerprint> = {};
  await Promise.all([...files].map(async (f) => (out[path.resolve(f)] = await fingerprint(f))));
  return out;
}

export function sameFingerprint(a: Fingerprint | undefined, b: Fingerprint): boolean {
  if (a === undefined) return false;
  if (!a.exists || !b.exists) return a.exists === b.exists;
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
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
  private held = false;

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

  /** A reconcile is under way: decide nothing until its fingerprints are remembered. */
  hold(): void {
    this.held = true;
  }

  /**
   * Records how every watched file is now — as the reconcile step saw it right after its writes (`known`), or as it
   * is at this moment for a file the step did not report — and looks again at the changes held meanwhile.
   */
  async remember(known: Record<string, Fingerprint> = {}): Promise<void> {
    await Promise.all(
      [...this.files].map(async (f) => {
        this.known.set(f, known[f] ?? (await fingerprint(f)));
      }),
    );
    this.held = false;
    if (this.changed.size > 0 && this.timer === undefined) this.arm();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.watcher?.close();
  }

  private onEvent(file: string): void {
    // Chokidar watches a missing file through its folder and reports that folder's other entries too.
    if (this.closed || !this.files.has(file)) return;
    this.changed.add(file);
    clearTimeout(this.timer);
    this.arm();
  }

  private arm(): void {
    this.timer = setTimeout(() => void this.fire(), this.options.debounceMs);
  }

  /** The debounce is over: which files really differ from what the agent left? */
  private async fire(): Promise<void> {
    this.timer = undefined;
    if (this.closed || this.held) return; // remember() looks again
    const candidates = [...this.changed];
    const now = await fingerprints(candidates);
    if (this.closed) return;
    if (this.held) return;
    const files: string[] = [];
    for (const f of candidates) {
      this.changed.delete(f);
      if (!sameFingerprint(this.known.get(f), now[f]!)) files.push(f);
    }
    if (files.length > 0) this.options.onChange(files);
  }
}
