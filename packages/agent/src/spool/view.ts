/** The spool as its readers see it: records, ids, folders and files, read without changing anything. */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { processRuns } from '../lock/liveness.js';
import { errno, exists, listDir } from './fs.js';
import {
  ADMIT_NAME,
  ALL_DIRS,
  CLAIM_DIRS,
  CLAIM_NAME,
  HOOK_NAME,
  RECORD_DIRS,
  RECORD_NAME,
  type SpoolFolder,
} from './layout.js';
import { checkPrivateDir } from './private-dir.js';
import { harnessRuns, parseRecord, type RecordState, type SpoolRecord } from './record.js';

/** Where a spool lives: its folder, and the private state directory that holds it (`Context.paths` has both). */
export interface SpoolLocation {
  stateDir: string;
  spoolDir: string;
}

export interface ListedRecord {
  id: string;
  state: RecordState;
  harness: string;
  profile: string;
  session_id: string;
  /** Bundle size in bytes (ready records). */
  size: number | null;
  sha256: string | null;
  attempts: number;
  /** Upload tries that ended in an error to retry (ready and uploading records). */
  upload_attempts: number;
  interruptions: number;
  last_error: string | null;
  /** A record waiting out a retry delay: when it is due. */
  next_attempt_at_unix_ms: number | null;
  created_at_unix_ms: number | null;
  /** The worker holding a building or uploading record, and whether it still runs. */
  worker_pid?: number;
  worker_alive?: boolean;
  /** An intake record waiting for its harness process to exit (wait_for_exit) that still runs: its pid. */
  waits_for_pid?: number;
  /** The record could not be read. */
  damaged?: string;
}

/**
 * The spool as its readers see it (status, doctor, the agent's scheduler, a drain's report): it never creates, moves
 * or rewrites anything, and a spool that does not exist yet, or lacks folders, reads as holding nothing there. The
 * folder names stay inside src/spool/; readers ask for records, ids, folders and files.
 */
export class SpoolView {
  readonly stateDir: string;
  readonly root: string;

  /** The uid the spool's folders must belong to: this process's unless told (tests play another user's spool). */
  protected readonly ownerUid: number | undefined;

  constructor(where: SpoolLocation, ownerUid?: number) {
    this.stateDir = where.stateDir;
    this.root = where.spoolDir;
    this.ownerUid = ownerUid ?? process.getuid?.();
  }

  /** Whether the spool folder exists (it is made by the first capture or drain). */
  async exists(): Promise<boolean> {
    return exists(this.root);
  }

  /** Whether every folder of the spool exists, so that opening it would only check them, not create any. */
  async complete(): Promise<boolean> {
    return (await Promise.all(ALL_DIRS.map((sub) => exists(path.join(this.root, sub))))).every(Boolean);
  }

  /**
   * Every folder the spool keeps, in lifecycle order; `transient` ones hold files that come and go while a process
   * writes them (temp files), not records or bundles.
   */
  folders(): { path: string; transient: boolean }[] {
    return ALL_DIRS.map((sub) => ({ path: path.join(this.root, sub), transient: sub === 'tmp' }));
  }

  /** Captures the sh hook handed over that no drain has admitted yet (being admitted included). */
  async handedOver(): Promise<number> {
    return (await listDir(this.dir('inbox'))).filter((name) => HOOK_NAME.test(name) || ADMIT_NAME.test(name)).length;
  }

  /** The folder new captures land in: a watch on it learns of them. */
  intakeDir(): string {
    return this.dir('intake');
  }

  /** Throws SPOOL_UNSAFE unless the state dir, the spool and its folders are this user's and closed to others. */
  async checkSafe(): Promise<void> {
    await checkPrivateDir(this.stateDir, 'state directory', true, this.ownerUid);
    await checkPrivateDir(this.root, 'spool directory', false, this.ownerUid);
    await Promise.all(
      ALL_DIRS.map((sub) => checkPrivateDir(path.join(this.root, sub), 'spool directory', false, this.ownerUid)),
    );
  }

  protected dir(state: SpoolFolder): string {
    return path.join(this.root, state);
  }

  /** Where the bundle of record `id` is kept while the record is ready or uploading. */
  bundleFile(id: string): string {
    return path.join(this.root, 'bundles', `${id}.bundle`);
  }

  /**
   * The record `id` in `state` as it is on disk, unchecked (undefined when it is gone or is no JSON object): for
   * looking at its schedule or last error. Claiming it is what validates it.
   */
  async peek(state: 'intake' | 'ready' | 'failed', id: string): Promise<Partial<SpoolRecord> | undefined> {
    try {
      const data: unknown = JSON.parse(await readFile(path.join(this.dir(state), `${id}.json`), 'utf8'));
      return data !== null && typeof data === 'object' ? (data as Partial<SpoolRecord>) : undefined;
    } catch {
      return undefined;
    }
  }

  /** Record ids waiting in `state`, oldest first. */
  async idsIn(state: 'intake' | 'ready' | 'failed'): Promise<string[]> {
    const ids: string[] = [];
    for (const name of await listDir(this.dir(state))) {
      const match = RECORD_NAME.exec(name);
      if (match !== null) ids.push(match[1]!);
    }
    return ids.sort();
  }

  /** Every record, in every state, oldest first. */
  async listRecords(): Promise<ListedRecord[]> {
    await this.checkSafe();
    const byId = new Map<string, ListedRecord>();
    for (const state of RECORD_DIRS) {
      for (const name of await listDir(this.dir(state))) {
        const match = (CLAIM_DIRS.has(state) ? CLAIM_NAME : RECORD_NAME).exec(name);
        if (match === null) continue;
        const id = match[1]!;
        const file = path.join(this.dir(state), name);
        let text: string;
        try {
          text = await readFile(file, 'utf8');
        } catch (error) {
          if (errno(error) === 'ENOENT') continue; // moved on while listing: it is seen in its next folder
          throw error;
        }
        const parsed = parseRecord(text, id);
        const record = typeof parsed === 'string' ? undefined : parsed;
        const listed: ListedRecord = {
          id,
          state,
          harness: record?.harness ?? '?',
          profile: record?.profile ?? '?',
          session_id: record?.payload.session_id ?? '?',
          size: state === 'ready' || state === 'uploading' ? (record?.bundle?.size ?? null) : null,
          sha256: state === 'ready' || state === 'uploading' ? (record?.bundle?.sha256 ?? null) : null,
          attempts: record?.attempts ?? 0,
          upload_attempts: record?.upload_attempts ?? 0,
          interruptions: record?.interruptions ?? 0,
          last_error: record?.last_error?.message ?? null,
          next_attempt_at_unix_ms:
            state === 'intake' || state === 'ready' ? (record?.next_attempt_at_unix_ms ?? null) : null,
          created_at_unix_ms: record?.created_at_unix_ms ?? null,
          ...(typeof parsed === 'string' ? { damaged: parsed } : {}),
        };
        if (CLAIM_DIRS.has(state)) {
          listed.worker_pid = Number(match[2]);
          listed.worker_alive = processRuns(listed.worker_pid);
        }
        if (state === 'intake' && record !== undefined && harnessRuns(record))
          listed.waits_for_pid = record.wait_for_exit!.pid;
        byId.set(id, listed);
      }
    }
    return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Every record known by its file name alone, without reading or checking anything: for a spool that fails its
   * safety check or lacks folders, so that what is stuck in it can still be counted. Missing folders hold nothing.
   */
  async listByName(): Promise<ListedRecord[]> {
    const out: ListedRecord[] = [];
    for (const state of RECORD_DIRS) {
      let names: string[];
      try {
        names = await readdir(this.dir(state));
      } catch (error) {
        if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') continue;
        throw error;
      }
      const pattern = CLAIM_DIRS.has(state) ? CLAIM_NAME : RECORD_NAME;
      for (const name of names) {
        const id = pattern.exec(name)?.[1];
        if (id === undefined) continue;
        out.push({
          id,
          state,
          harness: '?',
          profile: '?',
          session_id: '?',
          size: null,
          sha256: null,
          attempts: 0,
          upload_attempts: 0,
          interruptions: 0,
          last_error: null,
          next_attempt_at_unix_ms: null,
          created_at_unix_ms: null,
        });
      }
    }
    return out;
  }

  /**
   * Whether a drain has anything to act on: a record in intake or ready, or a claim (a live or a dead process's), or a
   * capture the sh hook handed over (its own drain may never have run).
   */
  async hasWork(): Promise<boolean> {
    for (const state of ['intake', 'ready', 'building', 'uploading'] as const) {
      const names = await readdir(this.dir(state)).catch(() => [] as string[]);
      if (names.some((n) => n.endsWith('.json'))) return true;
    }
    return (await this.handedOver().catch(() => 0)) > 0;
  }
}
