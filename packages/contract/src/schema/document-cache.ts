/**
 * Remembers documents (profiles, policy files) that were parsed and validated in an earlier run, keyed by their exact
 * text: the same bytes are not parsed again. YAML parsing is the largest cost of a no-change reconcile. The cache lives
 * in the private state directory; a damaged or foreign cache is simply ignored.
 */
import { readFile } from 'node:fs/promises';
import { writeStateFile } from '../util/startup/fs-light.js';

interface Entry {
  text: string;
  data: unknown;
}

const MAX_ENTRIES = 64;

export class DocumentCache {
  private dirty = false;
  private constructor(
    private readonly file: string | undefined,
    private readonly entries: Map<string, Entry>,
    private readonly persist: boolean,
  ) {}

  /** A cache that remembers nothing: every document is parsed. */
  static none(): DocumentCache {
    return new DocumentCache(undefined, new Map(), false);
  }

  /** Opens the cache file; with `persist` false (dry runs) it is read but never written. */
  static async open(file: string, persist: boolean): Promise<DocumentCache> {
    const entries = new Map<string, Entry>();
    try {
      const raw = JSON.parse(await readFile(file, 'utf8')) as { version?: number; entries?: Record<string, Entry> };
      if (raw.version === 1 && raw.entries !== null && typeof raw.entries === 'object') {
        for (const [key, entry] of Object.entries(raw.entries)) {
          if (typeof entry?.text === 'string') entries.set(key, entry);
        }
      }
    } catch {
      // Missing or damaged: start empty.
    }
    return new DocumentCache(file, entries, persist);
  }

  /** The validated data for `text` under `key` (a kind and a file name), parsing and validating only when unseen. */
  load<T>(key: string, text: string, parse: (text: string) => T): T {
    const entry = this.entries.get(key);
    if (entry !== undefined && entry.text === text) return entry.data as T;
    return this.remember(key, text, parse(text));
  }

  /**
   * `load` for a parser that is itself loaded on demand: a hit never imports the YAML parser or the schema validators,
   * the largest modules a no-change reconcile would otherwise load.
   */
  async loadAsync<T>(key: string, text: string, parse: (text: string) => Promise<T>): Promise<T> {
    const entry = this.entries.get(key);
    if (entry !== undefined && entry.text === text) return entry.data as T;
    return this.remember(key, text, await parse(text));
  }

  private remember<T>(key: string, text: string, data: T): T {
    this.entries.delete(key);
    this.entries.set(key, { text, data });
    while (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.dirty = true;
    return data;
  }

  async save(): Promise<void> {
    if (!this.dirty || !this.persist || this.file === undefined) return;
    await writeStateFile(this.file, JSON.stringify({ version: 1, entries: Object.fromEntries(this.entries) }));
    this.dirty = false;
  }
}
