/**
 * The spool: captured sessions on their way from the capture hook to the Control API, kept in the private state
 * directory so that a crash, a full disk or a reboot at any moment loses nothing and builds nothing twice.
 *
 * Layout under the spool folder (`Paths.spoolDir`, inside the private state directory; folders 0700, files 0600):
 *
 *   intake/<id>.json               a capture the hook accepted, waiting for a worker
 *   building/<id>.<pid>.json       the same record, claimed by the worker with that pid
 *   ready/<id>.json                bundle built: bundles/<id>.bundle holds it
 *   uploading/<id>.<pid>.json      a ready record, claimed by the worker with that pid while it uploads the bundle
 *   failed/<id>.json               given up, with the reason and the attempts
 *   bundles/<id>.bundle            the bundle of a ready record
 *   tmp/<id>.<pid>.<kind>.<r>.tmp  every file is written here first, fsynced, then renamed into place
 *   inbox/<pid>-<n>.hook           a capture the sh hook (bin/blue-agent-hook) handed over, not yet checked; a drain
 *                                  admits it (<pid>-<n>.<drain pid>.admit while it does) into intake/ or refuses it
 *
 * The one invariant everything rests on: a record is exactly one file in exactly one state folder. It changes state
 * only by a rename of that file (claim, release, commit, fail), and its content only by its claim holder renaming a
 * fsynced temp file over its own claim. A crash at any point therefore leaves the record in its old state or its new
 * one, never in two; a half-written file can only ever be a temp file, which is removed once its writer is dead.
 * Record files are never written in place, so a record file's inode (with its size and mtime, against a reused inode)
 * names its content: a record read before its claim is the claimed one when the claim has the same identity.
 *
 * Each state change is made durable by one fsync, of the folder the record lands in (or leaves, when it leaves the
 * spool): a journaling filesystem commits a rename whole, and in order, and state changes that land in one folder at the
 * same time share that fsync. A claim is not fsynced by itself: a power cut that loses it only leaves the record where
 * it was before, and the holder's next change of the record, which is fsynced, makes the claim durable with it.
 *
 * A claim belongs to a live process: one whose pid still runs and which refreshes the claim's mtime (a heartbeat,
 * so a reused pid cannot hold a record forever). Recovery takes a dead claim over by renaming it to its own pid (so
 * two recoverers never both act), then finishes the commit when the claim already names its fsynced bundle, or else
 * removes what the dead worker left and releases the record back to where it was claimed from.
 *
 * Uploads claim `ready` records into `uploading/` the same way. A finished upload is committed by renaming its bundle
 * aside into tmp/, then removing the claim, then the bundle. Recovery finishes the removal for a dead upload claim whose
 * bundle was renamed aside (or that names its upload, `uploaded`, as earlier versions wrote first), and releases any
 * other dead upload claim back to `ready` (bundle kept; the Control API answers a re-presign of the same bytes with the
 * upload it already has, so nothing is stored twice); one whose bundle was deleted from outside fails at its next
 * upload. A ready record names its bundle's size, SHA-256
 * and file identity (device, inode, size, mtime) as written: a bundle whose identity is unchanged need not be re-read
 * to be trusted before its upload, whose bytes are checked on the way out anyway (by the upload, or by the storage
 * service against a signed checksum).
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, renameSync, statSync, unlinkSync, type BigIntStats } from 'node:fs';
import { link, lstat, mkdir, open, readdir, readFile, rename, rm, stat, unlink, utimes, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { BlueError } from '../errors.js';
import type { HookPayload } from '../harnesses/types.js';
import { processRuns, staleOwnerReason, systemLockWorld } from '../lock/liveness.js';
import { fsyncDir, randomHex } from '../util/startup/fs-light.js';

export const RECORD_FORMAT = 'blue-agent-spool-record-v1';

/** States a record can be listed in. */
export type RecordState = 'intake' | 'building' | 'ready' | 'uploading' | 'failed';
/** States a record can be claimed from, and the folder its claim lives in while it is held. */
const CLAIMS = { intake: 'building', ready: 'uploading' } as const satisfies Partial<Record<RecordState, RecordState>>;
export type ClaimableState = keyof typeof CLAIMS;
/** Folders that hold records, in lifecycle order. */
const RECORD_DIRS: readonly RecordState[] = ['intake', 'building', 'ready', 'uploading', 'failed'];
/** Folders that hold claims (record files named `<id>.<pid>.json`). */
const CLAIM_DIRS: ReadonlySet<RecordState> = new Set(Object.values(CLAIMS));
const ALL_DIRS = [...RECORD_DIRS, 'bundles', 'tmp', 'inbox'] as const;

/** A capture waits for its harness to exit at most this long (a session left open for days is captured meanwhile). */
export const WAIT_FOR_EXIT_MAX_MS = 12 * 60 * 60_000;
/** Transient build failures before a record is failed for good. */
export const MAX_ATTEMPTS = 5;
/** Wait before the next build after the 1st, 2nd, 3rd, 4th... transient failure. */
export const RETRY_DELAYS_MS: readonly number[] = [30_000, 120_000, 600_000, 1_800_000];
/** Builds cut short by a crash (the worker was killed) before a record is failed for good: a record that kills the worker every time must not loop. */
export const MAX_INTERRUPTIONS = 10;
/** A claim's holder refreshes its mtime this often... */
const HEARTBEAT_MS = 30_000;
/** ...and a claim not refreshed for this long is dead even if its pid runs (the pid was reused). */
const CLAIM_STALE_MS = 10 * 60_000;
/** A temp file whose writer still seems to run is removed anyway after this long. */
const TEMP_STALE_MS = 24 * 60 * 60_000;

const ID = '[0-9a-z]{9}-[0-9a-f]{10}';
const RECORD_NAME = new RegExp(`^(${ID})\\.json$`);
const CLAIM_NAME = new RegExp(`^(${ID})\\.(\\d{1,10})\\.json$`);
const TEMP_NAME = new RegExp(`^(${ID})\\.(\\d{1,10})\\.([a-z]+)\\.[0-9a-f]+\\.tmp$`);
/** A bundle renamed aside while its record is removed for good (see removeClaimed). */
const REMOVED_KIND = 'removed';
/** The sh hook's files in inbox/: handed over, being admitted by a drain, being written. */
const HOOK_NAME = /^(\d{1,10}-\d{1,6})\.hook$/;
const ADMIT_NAME = /^(\d{1,10}-\d{1,6})\.(\d{1,10})\.admit$/;
const HOOK_TEMP_NAME = /^\.hook\.(\d{1,10})\.tmp$/;
/** The sh hook writes its file within a few seconds; one left for longer was cut short (the hook was killed). */
const HOOK_TEMP_STALE_MS = 60_000;
/** An admission takes milliseconds: a claim on an inbox file older than this is a dead drain's, whatever its pid. */
const ADMIT_STALE_MS = 10 * 60_000;

export interface RecordError {
  code: string;
  message: string;
  at_unix_ms: number;
}

export interface SpoolRecord {
  format: typeof RECORD_FORMAT;
  id: string;
  harness: string;
  profile: string;
  /** The validated hook payload: ids and paths only, never free text. */
  payload: HookPayload;
  created_at_unix_ms: number;
  /** Build attempts that ended in a transient error. */
  attempts: number;
  /** Builds cut short because the worker died. */
  interruptions: number;
  last_error?: RecordError;
  /** After a transient failure: not built again before this time. */
  next_attempt_at_unix_ms?: number;
  /** Not built before this harness process has exited (its capture event fires after every turn). */
  wait_for_exit?: WaitForExit;
  /** What captured it when not the hook: the agent's idle sweep, or backfill. */
  capture_reason?: CaptureReason;
  /** false: the session's files predate its capture profile; it is uploaded as not resumable. */
  resumable?: false;
  /** Set on commit: the bundle in bundles/<id>.bundle. */
  bundle?: {
    size: number;
    sha256: string;
    built_at_unix_ms: number;
    /** `bundleIdentity` of the file as committed. */
    identity?: string;
    /** The bundle's manifest as written (when small): its upload need not inflate the bundle to find it. */
    manifest?: unknown;
  };
  /** Upload tries of the bundle that ended in an error to retry (kept apart from the build attempts). */
  upload_attempts?: number;
  /** Set on an upload claim once the Control API holds the bundle: what is left is removing the local copy. */
  uploaded?: { upload_id: string; at_unix_ms: number };
  failed_at_unix_ms?: number;
}

/** An inbox file this process claimed: `name` is the hook's (`<pid>-<n>`), `file` where the claim is now. */
export interface InboxClaim {
  name: string;
  file: string;
  mtimeMs: number;
  ino: number;
  /** Claimed from a drain that died while admitting it: its record may exist already. */
  takenOver: boolean;
}

export interface IntakeInput {
  harness: string;
  profile: string;
  payload: HookPayload;
  createdAtUnixMs: number;
  /** Build it only once this process (the harness that fired the hook) has exited. */
  waitForExit?: WaitForExit;
  reason?: CaptureReason;
  resumable?: false;
  /** The record's id when it is known in advance (an admitted inbox file's); a new one otherwise. */
  id?: string;
}

/** Captures not made by a session's end hook: the agent found the session idle, or backfill found it never uploaded. */
export type CaptureReason = 'idle' | 'backfill';

/** A harness process a capture waits for (the profile's capture.wait_for_exit): its pid and start. */
export interface WaitForExit {
  pid: number;
  proc_start?: string;
  started_at_unix_ms?: number;
}

/** Writing file content: the one operation a full disk makes fail. Replaceable so tests can make it fail on demand. */
export interface SpoolIO {
  write(handle: FileHandle, data: Uint8Array): Promise<void>;
}

/** Where a spool lives: its folder, and the private state directory that holds it (`Context.paths` has both). */
export interface SpoolLocation {
  stateDir: string;
  spoolDir: string;
}

export interface SpoolOptions {
  io?: SpoolIO;
  /** Clock for record times. */
  now?: () => number;
  /**
   * The uid that must own the state directory and the spool; default: this process's. Injectable so the ownership
   * check can be exercised without chown (which needs root).
   */
  ownerUid?: number;
}

export interface Claim {
  readonly id: string;
  readonly from: ClaimableState;
  /** Absolute path of the claim file. */
  readonly file: string;
  readonly record: SpoolRecord;
  /** Set when the record could not be read; the only thing to do with it is fail it. */
  readonly damaged?: string;
}

export interface RecoveryReport {
  /** Dead claims put back where they were claimed from. */
  released: string[];
  /** Dead claims whose step had already been committed: build claims moved on to ready, upload claims removed. */
  completed: string[];
  /** Dead claims failed for good (interrupted too often, or unreadable). */
  failed: string[];
}

/** A record another live process (another drain) holds. */
export interface HeldRecord {
  id: string;
  /** `building`: being built; `uploading`: being uploaded. */
  state: 'building' | 'uploading';
  /** The process that holds it. */
  pid: number;
  harness: string;
  session_id: string;
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

const realIO: SpoolIO = { write: (handle, data) => handle.writeFile(data) };

/**
 * Claims and temp files this process holds, shared by every Spool object in it: a file named with our own pid that is
 * not in here was left by an earlier process that had the same pid.
 */
const heldClaims = new Map<string, NodeJS.Timeout>();
/** Record ids this process is recovering right now. */
const recovering = new Set<string>();
const liveTemps = new Set<string>();

/**
 * Folder fsyncs per folder: the one running, and the one that starts after it, which every state change made meanwhile
 * joins. A change made while an fsync runs may have missed it, so it waits for the next one, never a running one.
 */
const dirSyncs = new Map<string, { running?: Promise<void>; next?: Promise<void> }>();

function syncDir(dir: string): Promise<void> {
  let sync = dirSyncs.get(dir);
  if (sync === undefined) dirSyncs.set(dir, (sync = {}));
  const entry = sync;
  if (entry.next !== undefined) return entry.next;
  const start = (): Promise<void> => {
    const run = fsyncDir(dir).finally(() => {
      if (entry.running === run) entry.running = undefined;
      if (entry.running === undefined && entry.next === undefined && dirSyncs.get(dir) === entry) dirSyncs.delete(dir);
    });
    entry.running = run;
    return run;
  };
  if (entry.running === undefined) return start();
  entry.next = entry.running.then(() => {
    entry.next = undefined;
    return start();
  });
  return entry.next;
}

/**
 * The spool as its readers see it (status, doctor, the agent's scheduler, a drain's report): it never creates, moves
 * or rewrites anything, and a spool that does not exist yet, or lacks folders, reads as holding nothing there. The
 * folder names stay inside this module; readers ask for records, ids, folders and files.
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
    await Promise.all(ALL_DIRS.map((sub) => checkPrivateDir(path.join(this.root, sub), 'spool directory', false, this.ownerUid)));
  }

  protected dir(state: RecordState | 'bundles' | 'tmp' | 'inbox'): string {
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
          next_attempt_at_unix_ms: state === 'intake' || state === 'ready' ? (record?.next_attempt_at_unix_ms ?? null) : null,
          created_at_unix_ms: record?.created_at_unix_ms ?? null,
          ...(typeof parsed === 'string' ? { damaged: parsed } : {}),
        };
        if (CLAIM_DIRS.has(state)) {
          listed.worker_pid = Number(match[2]);
          listed.worker_alive = processRuns(listed.worker_pid);
        }
        if (state === 'intake' && record !== undefined && harnessRuns(record)) listed.waits_for_pid = record.wait_for_exit!.pid;
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

/** The spool's one writer: every change of a record goes through here (see the module comment). */
export class Spool extends SpoolView {
  private constructor(
    where: SpoolLocation,
    private readonly io: SpoolIO,
    private readonly now: () => number,
    ownerUid: number | undefined,
  ) {
    super(where, ownerUid);
  }

  /** Opens (creating when missing) the spool at `where`; refuses one that other users could tamper with. */
  static async open(where: SpoolLocation, options: SpoolOptions = {}): Promise<Spool> {
    const spool = new Spool(where, options.io ?? realIO, options.now ?? Date.now, options.ownerUid);
    await spool.prepare();
    return spool;
  }

  private async prepare(): Promise<void> {
    // Check first and create only what is missing: the hook opens the spool on every capture.
    if (!(await exists(this.stateDir))) await mkdir(this.stateDir, { recursive: true, mode: 0o700 }).catch(mapFull(this.stateDir));
    await checkPrivateDir(this.stateDir, 'state directory', true, this.ownerUid);
    if (!(await exists(this.root))) await mkdir(this.root, { mode: 0o700 }).catch(ignoreExists(this.root));
    await checkPrivateDir(this.root, 'spool directory', false, this.ownerUid);
    await Promise.all(
      ALL_DIRS.map(async (sub) => {
        const dir = path.join(this.root, sub);
        if (!(await exists(dir))) await mkdir(dir, { mode: 0o700 }).catch(ignoreExists(dir));
        await checkPrivateDir(dir, 'spool directory', false, this.ownerUid);
      }),
    );
  }

  /** A fresh temp file name for `id` written by this process. */
  tempFile(id: string, kind: string): string {
    const file = path.join(this.root, 'tmp', `${id}.${process.pid}.${kind}.${randomHex(8)}.tmp`);
    liveTemps.add(file);
    return file;
  }

  /**
   * Writes a new intake record (temp file, fsync, link into intake/, fsync the folder). Linking, unlike renaming,
   * never replaces an existing record, so even an id collision cannot lose a capture. Throws SPOOL_FULL on a full disk.
   */
  async enqueueIntake(input: IntakeInput): Promise<SpoolRecord> {
    for (let attempt = 0; ; attempt++) {
      const record: SpoolRecord = {
        format: RECORD_FORMAT,
        id: input.id ?? newRecordId(input.createdAtUnixMs),
        harness: input.harness,
        profile: input.profile,
        payload: input.payload,
        created_at_unix_ms: input.createdAtUnixMs,
        attempts: 0,
        interruptions: 0,
        ...(input.waitForExit === undefined ? {} : { wait_for_exit: input.waitForExit }),
        ...(input.reason === undefined ? {} : { capture_reason: input.reason }),
        ...(input.resumable === undefined ? {} : { resumable: input.resumable }),
      };
      try {
        await this.writeRecord(path.join(this.dir('intake'), `${record.id}.json`), record, 'link');
        return record;
      } catch (error) {
        if (errno(error) !== 'EEXIST' || attempt >= 3 || input.id !== undefined) throw error;
      }
    }
  }

  /**
   * The sh hook's files waiting in inbox/, oldest first, each claimed for this process by a rename (so two drains
   * never admit one twice): files of drains that died while admitting them first (`takenOver`), then new ones; at
   * most `limit`. An admitting drain is dead when its pid no longer runs, or when its claim is older than any
   * admission takes (its pid was reused), or when the pid is this process's own (an earlier process had it).
   */
  async claimInbox(limit: number): Promise<InboxClaim[]> {
    const dir = this.dir('inbox');
    const names = await listDir(dir);
    const now = this.now();
    const claims: InboxClaim[] = [];
    const bases = new Set<string>();
    const take = async (name: string, base: string, takenOver: boolean) => {
      const file = path.join(dir, `${base}.${process.pid}.admit`);
      try {
        await rename(path.join(dir, name), file);
      } catch (error) {
        if (errno(error) === 'ENOENT') return; // another drain took it
        throw error;
      }
      const info = await lstat(file);
      claims.push({ name: base, file, mtimeMs: info.mtimeMs, ino: info.ino, takenOver });
    };
    for (const name of names) {
      const admit = ADMIT_NAME.exec(name);
      if (admit === null) continue;
      // A base being admitted is never claimed twice in one batch: both claims would have the same name.
      bases.add(admit[1]!);
      if (claims.length >= limit) continue;
      const pid = Number(admit[2]);
      const info = await lstat(path.join(dir, name)).catch(() => undefined);
      if (info === undefined) continue;
      if (pid === process.pid || !processRuns(pid) || now - info.ctimeMs > ADMIT_STALE_MS) await take(name, admit[1]!, true);
    }
    const fresh: { name: string; base: string; mtimeMs: number }[] = [];
    for (const name of names) {
      const hook = HOOK_NAME.exec(name);
      if (hook === null || bases.has(hook[1]!)) continue;
      const info = await lstat(path.join(dir, name)).catch(() => undefined);
      if (info !== undefined) fresh.push({ name, base: hook[1]!, mtimeMs: info.mtimeMs });
    }
    fresh.sort((a, b) => a.mtimeMs - b.mtimeMs);
    for (const { name, base } of fresh) {
      if (claims.length >= limit) break;
      await take(name, base, false);
    }
    return claims;
  }

  /** Done with an inbox file (admitted into intake/, or refused), whatever it turned out to be. */
  async finishInbox(claim: InboxClaim): Promise<void> {
    await rm(claim.file, { recursive: true, force: true });
  }

  /** Gives an inbox file back unadmitted (a transient error: the next drain tries it again). */
  async releaseInbox(claim: InboxClaim): Promise<void> {
    const back = path.join(this.dir('inbox'), `${claim.name}.hook`);
    if (await exists(back)) return; // the name is taken again: the claim stays, and is taken over once this process is gone
    await rename(claim.file, back).catch(() => undefined);
  }

  /**
   * The ids of the records in `states` (every state by default: an admission cut short may have written its record
   * already), claims included: one listing per folder.
   */
  async recordIds(states: Iterable<RecordState> = RECORD_DIRS): Promise<Set<string>> {
    const ids = new Set<string>();
    for (const state of states) {
      for (const name of await listDir(this.dir(state))) {
        const match = (CLAIM_DIRS.has(state) ? CLAIM_NAME : RECORD_NAME).exec(name);
        if (match !== null) ids.add(match[1]!);
      }
    }
    return ids;
  }

  /**
   * Claims the next due record of `from`, skipping the ids in `skip` and, with `only`, any id not in it. With
   * `skipNotDue`, ids found not due yet are added to `skip`, so that a caller claiming in a loop reads each delayed
   * record once, not once per claim.
   */
  async claimNext(
    from: ClaimableState,
    options: { skip?: Set<string>; skipNotDue?: boolean; only?: ReadonlySet<string> } = {},
  ): Promise<Claim | undefined> {
    const ids = (await this.idsIn(from)).filter((id) => options.only?.has(id) !== false);
    return this.claimer(from, ids, options)();
  }

  /**
   * Claims from a list of `from`'s ids taken once (a drain's pass), by claimNext's rules: each call claims the next
   * due record of the list, undefined when none is left. Workers may share it: each id is tried by one of them, and no
   * call lists the folder again (a backlog of thousands made every claim re-read the folder).
   */
  claimer(from: ClaimableState, ids: readonly string[], options: { skip?: Set<string>; skipNotDue?: boolean } = {}): () => Promise<Claim | undefined> {
    const queue = [...ids].sort();
    // Oldest first, but records whose worker died while on them go after the others: a record that kills its worker
    // must not hold up the rest, and a run of unlucky crashes must not pile up on one record.
    const deferred: { id: string; peeked: Peeked | undefined }[] = [];
    let next = 0;
    let nextDeferred = 0;
    let checked: Promise<void> | undefined;
    return async () => {
      await (checked ??= this.checkSafe());
      const now = this.now();
      while (next < queue.length) {
        const id = queue[next++]!;
        if (options.skip?.has(id) === true) continue;
        const peeked = await this.peekFile(from, id);
        const { dueAt, interrupted } = schedule(from, peeked?.record);
        if (dueAt > now) {
          if (options.skipNotDue === true) options.skip?.add(id);
          continue;
        }
        if (interrupted) {
          deferred.push({ id, peeked });
          continue;
        }
        const claim = await this.claim(from, id, peeked);
        if (claim !== undefined) return claim;
      }
      while (nextDeferred < deferred.length) {
        const { id, peeked } = deferred[nextDeferred++]!;
        const claim = await this.claim(from, id, peeked);
        if (claim !== undefined) return claim;
      }
      return undefined;
    };
  }

  /**
   * The record file `id` in `state` with its text and inode; undefined when it is gone. Read synchronously, like the
   * claim's rename and stats (see `claim`): a record is a few hundred bytes.
   */
  private async peekFile(state: ClaimableState, id: string): Promise<Peeked | undefined> {
    let fd: number | undefined;
    try {
      // Non-blocking, and only a regular file is read: anything else put there must not hold up the event loop.
      fd = openSync(path.join(this.dir(state), `${id}.json`), constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0));
      const info = fstatSync(fd, { bigint: true });
      if (!info.isFile()) return undefined;
      const text = readFileSync(fd, 'utf8');
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch {
        data = undefined;
      }
      return { identity: fileIdentity(info), text, record: data !== null && typeof data === 'object' ? (data as Partial<SpoolRecord>) : undefined };
    } catch {
      return undefined;
    } finally {
      if (fd !== undefined) closeQuietly(fd);
    }
  }

  /**
   * Claims one record by renaming it into the claim folder; undefined when another process got it first. `peeked`, the
   * record as read just before, is used as the claim's record when the claim is that same file (its inode).
   *
   * The claim's rename and stats, like every metadata call a record's upload makes here (peek, claim, hold checks,
   * removal; not the fsyncs), are synchronous: each takes microseconds in the spool's own folders, and a round trip
   * through the thread pool costs several times that in CPU (a drain of a backlog makes about fifteen per record).
   */
  async claim(from: ClaimableState, id: string, peeked?: Peeked): Promise<Claim | undefined> {
    const source = path.join(this.dir(from), `${id}.json`);
    const file = path.join(this.dir(CLAIMS[from]), `${id}.${process.pid}.json`);
    try {
      renameSync(source, file);
    } catch (error) {
      if (errno(error) === 'ENOENT') return undefined;
      throw error;
    }
    const text = peeked !== undefined && fileIdentity(lstatSync(file, { bigint: true })) === peeked.identity ? peeked.text : undefined;
    return this.hold(id, from, file, text);
  }

  /**
   * Commits a built bundle: the fsynced `bundleTemp` becomes bundles/<id>.bundle, the claim is rewritten to name it,
   * and the claim moves to ready/ — that rename is the commit point.
   */
  async commitReady(claim: Claim, bundleTemp: string, bundle: { size: number; sha256: string; manifest?: unknown }): Promise<SpoolRecord> {
    await this.assertHeld(claim);
    const identity = await syncFile(bundleTemp);
    const target = this.bundleFile(claim.id);
    await rename(bundleTemp, target);
    liveTemps.delete(bundleTemp);
    await fsyncDir(this.dir('bundles'));
    const record: SpoolRecord = { ...claim.record, bundle: { ...bundle, built_at_unix_ms: this.now(), ...(identity.size === bundle.size ? { identity: identity.id } : {}) } };
    delete record.last_error;
    delete record.next_attempt_at_unix_ms;
    await this.rewriteClaim(claim, record);
    await this.move(claim, 'ready');
    return record;
  }

  /**
   * Puts a claimed record back where it came from, after removing what its build left. With `error` the failure is
   * recorded, and counted as an attempt unless `countAttempt` is false (a full disk is not the record's fault).
   */
  async release(claim: Claim, change: { error?: RecordError; countAttempt?: boolean; interrupted?: boolean } = {}): Promise<SpoolRecord> {
    if (claim.from === 'ready') return this.releaseUpload(claim, change);
    await this.removeLeftovers(claim.id);
    const record: SpoolRecord = { ...claim.record };
    delete record.bundle;
    if (change.error !== undefined) record.last_error = change.error;
    if (change.error !== undefined && change.countAttempt !== false) {
      record.attempts += 1;
      record.next_attempt_at_unix_ms = this.now() + RETRY_DELAYS_MS[Math.min(record.attempts, RETRY_DELAYS_MS.length) - 1]!;
    } else {
      delete record.next_attempt_at_unix_ms;
    }
    if (change.interrupted === true) record.interruptions += 1;
    if (JSON.stringify(record) !== JSON.stringify(claim.record)) await this.rewriteClaim(claim, record);
    await this.move(claim, claim.from);
    return record;
  }

  /**
   * Puts an upload claim back in ready/, its bundle kept. With `error` the failure is recorded as the last error, and
   * counted as an upload attempt unless `countAttempt` is false; `retryAtUnixMs` is when it is due again (default: now).
   */
  async releaseUpload(
    claim: Claim,
    change: { error?: RecordError; countAttempt?: boolean; interrupted?: boolean; retryAtUnixMs?: number } = {},
  ): Promise<SpoolRecord> {
    if (claim.from !== 'ready') throw new BlueError('INTERNAL', `spool record ${claim.id} is not an upload claim`);
    await this.removeTempsOf(claim.id, process.pid);
    const record: SpoolRecord = { ...claim.record };
    if (change.error !== undefined) record.last_error = change.error;
    if (change.error !== undefined && change.countAttempt !== false) record.upload_attempts = (record.upload_attempts ?? 0) + 1;
    if (change.retryAtUnixMs !== undefined) record.next_attempt_at_unix_ms = change.retryAtUnixMs;
    else delete record.next_attempt_at_unix_ms;
    if (change.interrupted === true) record.interruptions += 1;
    if (JSON.stringify(record) !== JSON.stringify(claim.record)) await this.rewriteClaim(claim, record);
    await this.move(claim, 'ready');
    return record;
  }

  /**
   * Commits a finished upload: the bundle is set aside, then the claim removed, then the bundle (see removeClaimed:
   * recovery finishes a commit cut short, and never uploads it again). The record leaves the spool.
   */
  async completeUpload(claim: Claim, uploadId: string): Promise<SpoolRecord> {
    if (claim.from !== 'ready') throw new BlueError('INTERNAL', `spool record ${claim.id} is not an upload claim`);
    await this.assertHeld(claim);
    const record: SpoolRecord = { ...claim.record, uploaded: { upload_id: uploadId, at_unix_ms: this.now() } };
    await this.removeClaimed(claim);
    return record;
  }

  /**
   * True when the bundle of a ready record is the very file that was committed (same device, inode, size and mtime):
   * its bytes are then the hashed ones, short of someone rewriting it in place and resetting its mtime.
   */
  async bundleUnchanged(record: SpoolRecord): Promise<boolean> {
    if (record.bundle?.identity === undefined) return false;
    let info: BigIntStats | undefined;
    try {
      info = statSync(this.bundleFile(record.id), { bigint: true, throwIfNoEntry: false });
    } catch {
      return false;
    }
    return info !== undefined && info.isFile() && bundleIdentity(info) === record.bundle.identity;
  }

  /**
   * Removes a claimed intake record whose capture needs no upload (the session's content is what an earlier capture
   * already holds), with what its build left.
   */
  async discardBuild(claim: Claim): Promise<void> {
    if (claim.from !== 'intake') throw new BlueError('INTERNAL', `spool record ${claim.id} is not a build claim`);
    await this.assertHeld(claim);
    await this.removeClaimed(claim);
  }

  /** Removes a claimed ready record and its bundle without uploading it (capture was disabled by the policy). */
  async discardUpload(claim: Claim): Promise<void> {
    if (claim.from !== 'ready') throw new BlueError('INTERNAL', `spool record ${claim.id} is not an upload claim`);
    await this.assertHeld(claim);
    await this.removeClaimed(claim);
  }

  /**
   * Removes a claimed record for good: its bundle is first renamed aside into tmp/ (kind `removed`, this pid), then
   * the claim goes (the record leaves the spool: one fsync of its folder), then the bundle. A crash before the claim
   * goes leaves a dead claim beside its `removed` bundle, which recovery finishes; a crash after it leaves a temp file
   * of a dead process, which removeOrphanTemps removes. A dead upload claim without either had its bundle deleted
   * from outside: it is not taken as uploaded.
   */
  private async removeClaimed(claim: Claim): Promise<void> {
    const aside = this.tempFile(claim.id, REMOVED_KIND);
    let moved = true;
    try {
      renameSync(this.bundleFile(claim.id), aside);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw error;
      moved = false;
    }
    try {
      existed(() => unlinkSync(claim.file));
    } finally {
      this.drop(claim);
    }
    await syncDir(path.dirname(claim.file));
    if (moved) existed(() => unlinkSync(aside));
    liveTemps.delete(aside);
    await this.removeTempsOf(claim.id, process.pid);
  }

  /**
   * Gives a claimed record up for good: failed/<id>.json keeps it with the reason. A record that could not be read is
   * moved there as it is, so what damaged it can still be looked at.
   */
  async fail(claim: Claim, error: RecordError, change: { interrupted?: boolean; countAttempt?: boolean } = {}): Promise<SpoolRecord> {
    // A bundle the server refused is still the only copy of that capture: it stays, named by the failed record.
    const keepBundle = claim.from === 'ready' && claim.damaged === undefined;
    if (keepBundle) await this.removeTempsOf(claim.id, process.pid);
    else await this.removeLeftovers(claim.id);
    if (claim.damaged !== undefined) {
      await this.move(claim, 'failed');
      return claim.record;
    }
    const record: SpoolRecord = { ...claim.record, last_error: error, failed_at_unix_ms: this.now() };
    if (change.interrupted === true) record.interruptions += 1;
    if (change.countAttempt === true) record.attempts += 1;
    if (!keepBundle) delete record.bundle;
    delete record.next_attempt_at_unix_ms;
    await this.rewriteClaim(claim, record);
    await this.move(claim, 'failed');
    return record;
  }

  /**
   * The records another live process holds — being built or uploaded by another drain — by the rule releaseDeadClaims
   * follows: a claim of another pid that still runs and refreshes it. What becomes of them is that process's to say.
   */
  async heldByOthers(): Promise<HeldRecord[]> {
    const held: HeldRecord[] = [];
    for (const claimDir of Object.values(CLAIMS)) {
      for (const name of await listDir(this.dir(claimDir))) {
        const match = CLAIM_NAME.exec(name);
        if (match === null) continue;
        const [, id, pidText] = match as unknown as [string, string, string];
        const pid = Number(pidText);
        const file = path.join(this.dir(claimDir), name);
        if (pid === process.pid || (await claimIsDead(file, pid, this.now()))) continue;
        // Read as it is: its holder may be rewriting it (then it is named by its id alone).
        const text = await readFile(file, 'utf8').catch(() => '');
        const parsed = text === '' ? undefined : parseRecord(text, id);
        const record = typeof parsed === 'object' ? parsed : undefined;
        held.push({ id, state: claimDir, pid, harness: record?.harness ?? '?', session_id: record?.payload.session_id ?? '?' });
      }
    }
    return held.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Recovers every claim whose worker is gone (see the module comment). Safe to run from several processes at once. */
  async releaseDeadClaims(): Promise<RecoveryReport> {
    const report: RecoveryReport = { released: [], completed: [], failed: [] };
    for (const [from, claimDir] of Object.entries(CLAIMS) as [ClaimableState, RecordState][]) {
      for (const name of await listDir(this.dir(claimDir))) {
        const match = CLAIM_NAME.exec(name);
        if (match === null) continue;
        const [, id, pidText] = match as unknown as [string, string, string];
        const pid = Number(pidText);
        const file = path.join(this.dir(claimDir), name);
        if (heldClaims.has(file) || recovering.has(id)) continue;
        if (pid !== process.pid && !(await claimIsDead(file, pid, this.now()))) continue;
        // Reserved before any await: a second recoverer in this process would see our pid in the name and take over.
        if (recovering.has(id)) continue;
        recovering.add(id);
        try {
          const mine = path.join(this.dir(claimDir), `${id}.${process.pid}.json`);
          try {
            await rename(file, mine);
          } catch (error) {
            if (errno(error) === 'ENOENT') continue; // another recoverer took it over first
            throw error;
          }
          await fsyncDir(this.dir(claimDir));
          await this.recoverClaim(await this.hold(id, from, mine), pid, report);
        } finally {
          recovering.delete(id);
        }
      }
    }
    return report;
  }

  /** Finishes, releases or fails a dead worker's claim that this process has just taken over. */
  private async recoverClaim(claim: Claim, deadPid: number, report: RecoveryReport): Promise<void> {
    const { id, from } = claim;
    const committedRemoval = (await listDir(this.dir('tmp'))).some((name) => {
      const owner = tempOwner(name);
      return owner !== undefined && owner.pid === deadPid && owner.name.startsWith(`${id}.${deadPid}.${REMOVED_KIND}.`);
    });
    await this.removeTempsOf(id, deadPid);
    if (claim.damaged !== undefined) {
      await this.fail(claim, { code: 'SPOOL_RECORD_DAMAGED', message: claim.damaged, at_unix_ms: this.now() });
      report.failed.push(id);
    } else if (from === 'intake' && (await this.bundleCommitted(claim.record))) {
      await this.move(claim, 'ready');
      report.completed.push(id);
    } else if (from === 'ready' && (claim.record.uploaded !== undefined || committedRemoval)) {
      // Its commit had begun: the bundle was moved aside for removal (earlier versions named the upload in the claim).
      await this.removeClaimed(claim);
      report.completed.push(id);
    } else if (from === 'ready') {
      // An interrupted upload is always released, never failed: the bundle is the only copy, and a re-presign of the
      // same bytes is answered with the upload the Control API already has.
      await this.releaseUpload(claim, { interrupted: true });
      report.released.push(id);
    } else if (claim.record.interruptions + 1 >= MAX_INTERRUPTIONS) {
      const error = {
        code: 'CAPTURE_INTERRUPTED',
        message: `the worker died ${claim.record.interruptions + 1} times while building this capture`,
        at_unix_ms: this.now(),
      };
      await this.fail(claim, error, { interrupted: true });
      report.failed.push(id);
    } else {
      await this.release(claim, { interrupted: true });
      report.released.push(id);
    }
  }

  /** Removes temp files whose writer is gone (or that are too old to be in use). Returns how many. */
  async removeOrphanTemps(): Promise<number> {
    let removed = 0;
    const now = this.now();
    let claimed: Set<string> | undefined;
    for (const name of await listDir(this.dir('tmp'))) {
      const file = path.join(this.dir('tmp'), name);
      const owner = tempOwner(name);
      if (liveTemps.has(owner === undefined ? file : path.join(this.dir('tmp'), owner.name))) continue;
      const info = await lstat(file).catch(() => undefined);
      if (info === undefined) continue;
      // A bundle set aside for removal is what tells recovery its claim's commit had begun: it stays while the claim does.
      if (owner !== undefined && owner.name.split('.')[2] === REMOVED_KIND) {
        claimed ??= await this.recordIds(CLAIM_DIRS);
        if (claimed.has(owner.name.slice(0, owner.name.indexOf('.')))) continue;
      }
      const old = now - info.mtimeMs > TEMP_STALE_MS;
      // A name we do not know is left alone until it is old: it may belong to a newer blue-agent.
      if (old || (owner !== undefined && (owner.pid === process.pid || !processRuns(owner.pid)))) {
        if (await unlinkIfExists(file)) removed++;
      }
    }
    if (removed > 0) await fsyncDir(this.dir('tmp'));
    // The sh hook's temp files: a hook that was killed while it wrote leaves one behind.
    for (const name of await listDir(this.dir('inbox'))) {
      const hook = HOOK_TEMP_NAME.exec(name);
      if (hook === null) continue;
      const file = path.join(this.dir('inbox'), name);
      const info = await lstat(file).catch(() => undefined);
      if (info === undefined || (now - info.mtimeMs <= HOOK_TEMP_STALE_MS && processRuns(Number(hook[1])))) continue;
      if (await unlinkIfExists(file)) removed++;
    }
    return removed;
  }

  // -------------------------------------------------------------------------------------------------------------

  /** Holds the claim `file` (its heartbeat) and reads it, unless its `text` was already read. */
  private async hold(id: string, from: ClaimableState, file: string, text?: string): Promise<Claim> {
    const timer = setInterval(() => {
      const now = new Date();
      utimes(file, now, now).catch(() => undefined);
    }, HEARTBEAT_MS);
    timer.unref();
    heldClaims.set(file, timer);
    const parsed = parseRecord(text ?? (await readFile(file, 'utf8')), id);
    if (typeof parsed === 'string') {
      return { id, from, file, damaged: parsed, record: damagedRecord(id) };
    }
    return { id, from, file, record: parsed };
  }

  /** True while the claim file is still where this process put it. */
  async holds(claim: Claim): Promise<boolean> {
    if (existed(() => statSync(claim.file))) return true;
    this.drop(claim);
    return false;
  }

  /** Removes a temp file this process made and no longer needs. */
  async discardTemp(file: string): Promise<void> {
    await unlinkIfExists(file);
    liveTemps.delete(file);
  }

  private async assertHeld(claim: Claim): Promise<void> {
    if (!existed(() => statSync(claim.file))) {
      this.drop(claim);
      throw new BlueError('INTERNAL', `the claim on spool record ${claim.id} was taken over by another worker`, {
        hint: 'Another blue-agent worker judged this one dead; it builds the record instead.',
      });
    }
  }

  /** True when a claim's record names a bundle that is in place with the recorded size: the commit had happened. */
  private async bundleCommitted(record: SpoolRecord): Promise<boolean> {
    if (record.bundle === undefined) return false;
    const info = await stat(this.bundleFile(record.id)).catch(() => undefined);
    return info !== undefined && info.isFile() && info.size === record.bundle.size;
  }

  private async rewriteClaim(claim: Claim, record: SpoolRecord): Promise<void> {
    await this.assertHeld(claim);
    await this.writeRecord(claim.file, record);
    (claim as { record: SpoolRecord }).record = record;
  }

  private async move(claim: Claim, to: RecordState): Promise<void> {
    const target = path.join(this.dir(to), `${claim.id}.json`);
    try {
      await rename(claim.file, target);
    } finally {
      this.drop(claim);
    }
    await syncDir(this.dir(to));
  }

  private drop(claim: Claim): void {
    const timer = heldClaims.get(claim.file);
    if (timer !== undefined) clearInterval(timer);
    heldClaims.delete(claim.file);
  }

  /** Removes the bundle and this process's temp files of a record it holds. */
  private async removeLeftovers(id: string): Promise<void> {
    await unlinkIfExists(this.bundleFile(id));
    await this.removeTempsOf(id, process.pid);
  }

  private async removeTempsOf(id: string, pid: number): Promise<void> {
    // This process's temp files are all in liveTemps (an earlier process's with our pid are removeOrphanTemps' job):
    // a record it made none for (every upload) needs no listing of tmp/.
    const prefix = path.join(this.dir('tmp'), `${id}.`);
    if (pid === process.pid && ![...liveTemps].some((file) => file.startsWith(prefix))) return;
    for (const name of await listDir(this.dir('tmp'))) {
      const owner = tempOwner(name);
      if (owner === undefined || owner.pid !== pid || !owner.name.startsWith(`${id}.`)) continue;
      await unlinkIfExists(path.join(this.dir('tmp'), name));
      liveTemps.delete(path.join(this.dir('tmp'), owner.name));
    }
  }

  /**
   * Temp file in tmp/, fsync, rename over `target` (or link to a new `target`), fsync the target's folder. Leaves no
   * temp file behind, whatever fails.
   */
  private async writeRecord(target: string, record: SpoolRecord, place: 'rename' | 'link' = 'rename'): Promise<void> {
    const temp = this.tempFile(record.id, 'record');
    const data = Buffer.from(`${JSON.stringify(record, null, 2)}\n`, 'utf8');
    try {
      const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o600);
      try {
        await this.io.write(handle, data);
        await handle.sync();
      } finally {
        await handle.close();
      }
      if (place === 'rename') await rename(temp, target);
      else {
        await link(temp, target);
        await unlink(temp);
      }
    } catch (error) {
      await unlinkIfExists(temp);
      throw fullDiskError(error, this.root) ?? error;
    } finally {
      liveTemps.delete(temp);
    }
    await fsyncDir(path.dirname(target));
  }
}

// ---------------------------------------------------------------------------------------------------------------

/** A new record id: sortable by creation time (base-36 milliseconds), then 40 random bits. */
/**
 * Whether the harness a record waits for (wait_for_exit) may still run: its pid runs and started when recorded. A
 * record that names none, or one that cannot be read, does not wait.
 */
export function harnessRuns(record: Partial<SpoolRecord>): boolean {
  const wait = record.wait_for_exit;
  if (wait === undefined || wait === null || typeof wait !== 'object' || typeof wait.pid !== 'number') return false;
  const owner = { pid: wait.pid, procStart: wait.proc_start, processStartedAt: wait.started_at_unix_ms, recordedAt: record.created_at_unix_ms };
  return staleOwnerReason(owner, systemLockWorld(), { foreign: 'stale', maxAgeMs: WAIT_FOR_EXIT_MAX_MS }) === undefined;
}

export function newRecordId(nowMs: number): string {
  return `${Math.max(0, Math.trunc(nowMs)).toString(36).padStart(9, '0').slice(-9)}-${randomHex(10)}`;
}

/** The record in `text`, or why it is not one. */
function parseRecord(text: string, id: string): SpoolRecord | string {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return 'the record file is not valid JSON';
  }
  const r = data as Partial<SpoolRecord> | null;
  if (r === null || typeof r !== 'object' || r.format !== RECORD_FORMAT) return `the record file is not a ${RECORD_FORMAT}`;
  if (r.id !== id) return `the record file names id ${String(r.id)}, not ${id}`;
  if (typeof r.harness !== 'string' || typeof r.profile !== 'string') return 'the record has no harness or profile';
  if (r.payload === null || typeof r.payload !== 'object' || typeof r.payload.session_id !== 'string') return 'the record has no session id';
  if (typeof r.created_at_unix_ms !== 'number') return 'the record has no creation time';
  const record = { ...r, attempts: typeof r.attempts === 'number' ? r.attempts : 0, interruptions: typeof r.interruptions === 'number' ? r.interruptions : 0 } as SpoolRecord;
  if (record.capture_reason !== undefined && record.capture_reason !== 'idle' && record.capture_reason !== 'backfill') delete record.capture_reason;
  if (record.resumable !== undefined && record.resumable !== false) delete record.resumable;
  return record;
}

function damagedRecord(id: string): SpoolRecord {
  return {
    format: RECORD_FORMAT,
    id,
    harness: '?',
    profile: '?',
    payload: { session_id: '?' },
    created_at_unix_ms: 0,
    attempts: 0,
    interruptions: 0,
  };
}

/**
 * Refuses a folder another user owns or that group or others may write to: they could plant or swap records and
 * bundles that this user then uploads. Spool folders must also be real folders, not links.
 */
async function checkPrivateDir(dir: string, what: string, followLinks: boolean, uid: number | undefined): Promise<void> {
  let info;
  try {
    info = followLinks ? await stat(dir) : await lstat(dir);
  } catch (error) {
    throw new BlueError('SPOOL_UNSAFE', `the ${what} ${dir} cannot be read: ${(error as Error).message}`, {
      file: dir,
      hint: `Check that ${dir} exists and belongs to you.`,
    });
  }
  if (!info.isDirectory()) {
    throw new BlueError('SPOOL_UNSAFE', `the ${what} ${dir} is not a directory${info.isSymbolicLink() ? ' (it is a symbolic link)' : ''}`, {
      file: dir,
      hint: `Remove ${dir}; blue-agent recreates it.`,
    });
  }
  if (uid !== undefined && info.uid !== uid) {
    throw new BlueError('SPOOL_UNSAFE', `the ${what} ${dir} is owned by uid ${info.uid}, not by you (uid ${uid})`, {
      file: dir,
      hint: `Another user could read or plant captured sessions there. Remove ${dir} or give it to your user (chown), then capture again.`,
    });
  }
  if ((info.mode & 0o022) !== 0) {
    const who = (info.mode & 0o022) === 0o022 ? 'group and others' : info.mode & 0o020 ? 'its group' : 'others';
    throw new BlueError('SPOOL_UNSAFE', `the ${what} ${dir} is writable by ${who} (mode ${(info.mode & 0o7777).toString(8).padStart(4, '0')})`, {
      file: dir,
      hint: `Other users could plant or swap captured sessions there. Run: chmod 700 '${dir}'`,
    });
  }
}

/**
 * The temp file a name belongs to and its writer's pid: our own temp names, and the `.<name>.<random>.partial` files
 * the bundle writer makes beside the file it was asked to write.
 */
function tempOwner(name: string): { name: string; pid: number } | undefined {
  const base = /^\.(.+)\.[0-9a-f]+\.partial$/.exec(name)?.[1] ?? name;
  const match = TEMP_NAME.exec(base);
  return match === null ? undefined : { name: base, pid: Number(match[2]) };
}

/**
 * A claim's worker is dead when its pid is gone, or when the claim was not refreshed for CLAIM_STALE_MS (its pid was
 * reused) or not since this machine booted (lock/liveness.ts). A pid of another user still runs: not ours to judge.
 */
async function claimIsDead(file: string, pid: number, now: number): Promise<boolean> {
  const info = await stat(file).catch(() => undefined);
  const world = { ...systemLockWorld(), now: () => now };
  return staleOwnerReason({ pid, recordedAt: info?.mtimeMs }, world, { maxAgeMs: CLAIM_STALE_MS, foreign: 'alive' }) !== undefined;
}

async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch (error) {
    if (errno(error) === 'ENOENT') return false;
    throw error;
  }
}

async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errno(error) === 'ENOENT') return [];
    throw error;
  }
}

/** Runs a synchronous call on a file: false when the file is gone (ENOENT); any other error (ENOTDIR too) is thrown. */
function existed(call: () => unknown): boolean {
  try {
    call();
    return true;
  } catch (error) {
    if (errno(error) === 'ENOENT') return false;
    throw error;
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Read only: nothing is lost.
  }
}

async function unlinkIfExists(file: string): Promise<boolean> {
  try {
    await unlink(file);
    return true;
  } catch (error) {
    if (errno(error) === 'ENOENT') return false;
    throw error;
  }
}

/** Flushes a file written by someone else (the bundle writer) to disk; its size and identity (`bundleIdentity`). */
async function syncFile(file: string): Promise<{ size: number; id: string }> {
  const handle = await open(file, constants.O_RDWR | (constants.O_NOFOLLOW ?? 0));
  try {
    await handle.chmod(0o600);
    await handle.sync();
    const info = await handle.stat({ bigint: true });
    return { size: Number(info.size), id: bundleIdentity(info) };
  } finally {
    await handle.close();
  }
}

/** A file's identity: what a rename keeps and a rewrite changes (device, inode, size, mtime in ns). */
function bundleIdentity(info: BigIntStats): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}`;
}

/** A record file as read before its claim: its inode, its text, and what it seems to hold. */
/** Inode, size and mtime (ns): an inode freed and reused for a new record file is told apart by its write time. */
function fileIdentity(info: BigIntStats): string {
  return `${info.ino}:${info.size}:${info.mtimeNs}`;
}

interface Peeked {
  /** `fileIdentity` of the file read. */
  identity: string;
  text: string;
  record: Partial<SpoolRecord> | undefined;
}

/**
 * When a waiting record may be built again (0: now; never while the harness it waits for still runs), and whether a
 * worker died on it before. Unreadable records are due: claiming them fails them.
 */
function schedule(state: ClaimableState, record: Partial<SpoolRecord> | undefined): { dueAt: number; interrupted: boolean } {
  const waiting = state === 'intake' && record !== undefined && harnessRuns(record);
  return {
    dueAt: waiting ? Number.POSITIVE_INFINITY : typeof record?.next_attempt_at_unix_ms === 'number' ? record.next_attempt_at_unix_ms : 0,
    interrupted: typeof record?.interruptions === 'number' && record.interruptions > 0,
  };
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** True for the errors a full disk or an exhausted quota gives. */
export function isDiskFull(error: unknown): boolean {
  const code = errno(error);
  return code === 'ENOSPC' || code === 'EDQUOT' || (error instanceof BlueError && error.code === 'SPOOL_FULL');
}

function fullDiskError(error: unknown, where: string): BlueError | undefined {
  if (!isDiskFull(error) || error instanceof BlueError) return undefined;
  return new BlueError('SPOOL_FULL', `no space left on the disk that holds ${where} (${errno(error)})`, {
    file: where,
    hint: 'Free some disk space; captures already in the spool are kept and built later.',
    cause: error,
  });
}

function mapFull(where: string): (error: unknown) => never {
  return (error) => {
    throw fullDiskError(error, where) ?? error;
  };
}

function ignoreExists(where: string): (error: unknown) => void {
  return (error) => {
    if (errno(error) === 'EEXIST') return;
    throw fullDiskError(error, where) ?? error;
  };
}
