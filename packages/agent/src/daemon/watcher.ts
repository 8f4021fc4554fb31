/**
 * Watches the native config files the agent manages (native watches of their folders, native-watch.ts; no polling) and
 * asks for a reconcile shortly after one changes. The agent's own writes do not count: each reconcile step hands back
 * the fingerprint (device, inode, size, mtime, ctime) of every watched file as its writes left it, and the run loop
 * `remember`s them.
 * The decision is taken when the debounce timer fires, not when the event arrives — the event of an own write
 * usually arrives before the step has even answered — and while a reconcile runs (`hold`) it waits for that answer.
 * A file whose fingerprint is then exactly the remembered one is left alone, so a write by the agent can never start
 * another reconcile, let alone a loop of them.
 *
 * Events alone are not enough: a change made before the watch is in place (a harness rewriting its config right
 * after the agent wrote it) raises none, and a native watch can miss one. So `remember` compares every file with what
 * the agent left once the watch is ready, and `check` (run periodically) does the same: `stat`s only, nothing read,
 * nothing started unless a fingerprint differs.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { watchFiles, type WatchHandle } from './native-watch.js';
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
    return {
      exists: true,
      dev: info.dev,
      ino: info.ino,
      size: info.size,
      mtimeMs: info.mtimeMs,
      ctimeMs: info.ctimeMs,
    };
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

export type { WatchHandle } from './native-watch.js';

/** Starts watching `files` and resolves once changes to them are reported through `onEvent`. */
export type WatchFactory = (
  files: string[],
  onEvent: (file: string) => void,
  onError: (error: unknown) => void,
) => Promise<WatchHandle>;

/** Native watches of the files' folders; a missing folder is watched through its nearest ancestor until it appears. */
export const nativeWatch: WatchFactory = watchFiles;

export interface ConfigWatcherOptions {
  debounceMs: number;
  log: Logger;
  /** Called once per burst of changes, with the files that changed. */
  onChange(files: string[]): void;
  /** How files are watched; native watches by default. */
  watch?: WatchFactory;
}

export class ConfigWatcher {
  private handle: WatchHandle | undefined;
  private readonly files = new Set<string>();
  private readonly known = new Map<string, Fingerprint>();
  /** Differences `check` has already handed on, so one that no reconcile settles is not handed on every period. */
  private readonly seen = new Map<string, Fingerprint>();
  private readonly changed = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private held = false;

  constructor(private readonly options: ConfigWatcherOptions) {}

  /** The files watched now. */
  get watched(): string[] {
    return [...this.files].sort();
  }

  /**
   * Watches exactly these files (missing ones are watched through their nearest folder, for when they appear) and
   * resolves once the watch is in place. A new set gets a new watch, ready before the old one is closed, so no file
   * that stays is ever unwatched; what changed while the watch was being set up is found by `remember`.
   */
  async setFiles(list: readonly string[]): Promise<void> {
    if (this.closed) return;
    const wanted = new Set(list.map((f) => path.resolve(f)));
    const added = [...wanted].filter((f) => !this.files.has(f));
    const removed = [...this.files].filter((f) => !wanted.has(f));
    if (added.length === 0 && removed.length === 0) return;
    for (const f of removed) {
      this.files.delete(f);
      this.known.delete(f);
      this.seen.delete(f);
      this.changed.delete(f);
    }
    for (const f of added) this.files.add(f);
    const next = await (this.options.watch ?? nativeWatch)(
      [...this.files],
      (file) => this.onEvent(path.resolve(file)),
      (error) => this.options.log.warn('config watcher error', { error: String(error) }),
    );
    const previous = this.handle;
    if (this.closed) {
      // Closed while the new watch was set up: it is not wanted any more.
      await next.close();
      return;
    }
    this.handle = next;
    await previous?.close();
  }

  /** A reconcile is under way: decide nothing until its fingerprints are remembered. */
  hold(): void {
    this.held = true;
  }

  /**
   * Records how every watched file was left — as the reconcile step saw it right after its writes (`known`), or as it
   * is at this moment for a file the step did not report — and looks again at the changes held meanwhile. Without
   * `known` (the step crashed and left no answer) what was remembered before stays. Then every file is compared with
   * it once: a change made before the watch was ready raised no event.
   */
  async remember(known?: Record<string, Fingerprint>): Promise<void> {
    await Promise.all(
      [...this.files].map(async (f) => {
        const given = known?.[f];
        if (given !== undefined) this.known.set(f, given);
        else if (known !== undefined || !this.known.has(f)) this.known.set(f, await fingerprint(f));
      }),
    );
    this.seen.clear();
    this.held = false;
    await this.check();
    if (this.changed.size > 0 && this.timer === undefined) this.arm();
  }

  /**
   * Compares every watched file with what the agent left (`stat` only) and hands a difference on as a change, after
   * the usual debounce. Resolves with the files that differ and were not handed on before.
   */
  async check(): Promise<string[]> {
    if (this.closed || this.files.size === 0) return [];
    const now = await fingerprints(this.files);
    if (this.closed) return [];
    const found: string[] = [];
    for (const f of this.files) {
      const current = now[f];
      if (
        current === undefined ||
        sameFingerprint(this.known.get(f), current) ||
        sameFingerprint(this.seen.get(f), current)
      )
        continue;
      this.seen.set(f, current);
      this.changed.add(f);
      found.push(f);
    }
    if (found.length > 0 && !this.held && this.timer === undefined) this.arm();
    return found;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }

  private onEvent(file: string): void {
    // A folder's watch may report a file of it that is not (or no longer) watched.
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
