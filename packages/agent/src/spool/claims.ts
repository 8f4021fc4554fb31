/**
 * Claims and state changes: the spool's writer of records, everything but opening it, admitting captures and recovery.
 *
 * The one invariant everything rests on: a record is exactly one file in exactly one state folder. It changes state
 * only by a rename of that file (claim, release, commit, fail), and its content only by its claim holder renaming a
 * fsynced temp file over its own claim. A crash at any point therefore leaves the record in its old state or its new
 * one, never in two; a half-written file can only ever be a temp file, which is removed once its writer is dead.
 * Record files are never written in place, so a record file's inode (with its size and mtime, against a reused inode)
 * names its content: a record read before its claim is the claimed one when the claim has the same identity.
 *
 * Each state change is made durable by one fsync, of the folder the record lands in (or leaves, when it leaves the
 * spool): a journaling filesystem commits a rename whole, and in order, and state changes that land in one folder at
 * the same time share that fsync. A claim is not fsynced by itself: a power cut that loses it only leaves the record
 * where it was before, and the holder's next change of the record, which is fsynced, makes the claim durable with it.
 *
 * A claim belongs to a live process: one whose pid still runs and which refreshes the claim's mtime (a heartbeat,
 * so a reused pid cannot hold a record forever).
 *
 * Uploads claim `ready` records into `uploading/` the same way. A finished upload is committed by renaming its bundle
 * aside into tmp/, then removing the claim, then the bundle. A ready record names its bundle's size, SHA-256
 * and file identity (device, inode, size, mtime) as written: a bundle whose identity is unchanged need not be re-read
 * to be trusted before its upload, whose bytes are checked on the way out anyway (by the upload, or by the storage
 * service against a signed checksum).
 */
import {
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  type BigIntStats,
} from 'node:fs';
import { link, open, readFile, rename, unlink, utimes, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import { fsyncDir, randomHex } from '@blue-agent/contract/util/startup/fs-light.js';
import { fullDiskError } from './disk-full.js';
import {
  bundleIdentity,
  closeQuietly,
  errno,
  existed,
  fileIdentity,
  listDir,
  syncDir,
  syncFile,
  unlinkIfExists,
} from './fs.js';
import { CLAIMS, REMOVED_KIND, tempOwner, type ClaimableState } from './layout.js';
import {
  damagedRecord,
  harnessRuns,
  parseRecord,
  RETRY_DELAYS_MS,
  type RecordError,
  type RecordState,
  type SpoolRecord,
} from './record.js';
import { SpoolView, type SpoolLocation } from './view.js';

/** A claim's holder refreshes its mtime this often. */
const HEARTBEAT_MS = 30_000;

/** Writing file content: the one operation a full disk makes fail. Replaceable so tests can make it fail on demand. */
export interface SpoolIO {
  write(handle: FileHandle, data: Uint8Array): Promise<void>;
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

export const realIO: SpoolIO = { write: (handle, data) => handle.writeFile(data) };

/**
 * Claims and temp files this process holds, shared by every Spool object in it: a file named with our own pid that is
 * not in here was left by an earlier process that had the same pid.
 */
export const heldClaims = new Map<string, NodeJS.Timeout>();
/** Temp files this process is writing (see heldClaims). */
export const liveTemps = new Set<string>();

/** A record file as read before its claim: its identity, its text, and what it seems to hold. */
export interface Peeked {
  /** `fileIdentity` of the file read. */
  identity: string;
  text: string;
  record: Partial<SpoolRecord> | undefined;
}

/**
 * When a waiting record may be built again (0: now; never while the harness it waits for still runs), and whether a
 * worker died on it before. Unreadable records are due: claiming them fails them.
 */
function schedule(
  state: ClaimableState,
  record: Partial<SpoolRecord> | undefined,
): { dueAt: number; interrupted: boolean } {
  const waiting = state === 'intake' && record !== undefined && harnessRuns(record);
  return {
    dueAt: waiting
      ? Number.POSITIVE_INFINITY
      : typeof record?.next_attempt_at_unix_ms === 'number'
        ? record.next_attempt_at_unix_ms
        : 0,
    interrupted: typeof record?.interruptions === 'number' && record.interruptions > 0,
  };
}

/** Claims records and changes their state: the spool's writer, short of opening it (see Spool) and recovery. */
export class SpoolClaims extends SpoolView {
  protected constructor(
    where: SpoolLocation,
    private readonly io: SpoolIO,
    protected readonly now: () => number,
    ownerUid: number | undefined,
  ) {
    super(where, ownerUid);
  }

  /** A fresh temp file name for `id` written by this process. */
  tempFile(id: string, kind: string): string {
    const file = path.join(this.root, 'tmp', `${id}.${process.pid}.${kind}.${randomHex(8)}.tmp`);
    liveTemps.add(file);
    return file;
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
  claimer(
    from: ClaimableState,
    ids: readonly string[],
    options: { skip?: Set<string>; skipNotDue?: boolean } = {},
  ): () => Promise<Claim | undefined> {
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
      fd = openSync(
        path.join(this.dir(state), `${id}.json`),
        constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOFOLLOW ?? 0),
      );
      const info = fstatSync(fd, { bigint: true });
      if (!info.isFile()) return undefined;
      const text = readFileSync(fd, 'utf8');
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch {
        data = undefined;
      }
      return {
        identity: fileIdentity(info),
        text,
        record: data !== null && typeof data === 'object' ? (data as Partial<SpoolRecord>) : undefined,
      };
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
    const text =
      peeked !== undefined && fileIdentity(lstatSync(file, { bigint: true })) === peeked.identity
        ? peeked.text
        : undefined;
    return this.hold(id, from, file, text);
  }

  /**
   * Commits a built bundle: the fsynced `bundleTemp` becomes bundles/<id>.bundle, the claim is rewritten to name it,
   * and the claim moves to ready/ — that rename is the commit point.
   */
  async commitReady(
    claim: Claim,
    bundleTemp: string,
    bundle: { size: number; sha256: string; manifest?: unknown },
  ): Promise<SpoolRecord> {
    await this.assertHeld(claim);
    const identity = await syncFile(bundleTemp);
    const target = this.bundleFile(claim.id);
    await rename(bundleTemp, target);
    liveTemps.delete(bundleTemp);
    await fsyncDir(this.dir('bundles'));
    const record: SpoolRecord = {
      ...claim.record,
      bundle: {
        ...bundle,
        built_at_unix_ms: this.now(),
        ...(identity.size === bundle.size ? { identity: identity.id } : {}),
      },
    };
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
  async release(
    claim: Claim,
    change: { error?: RecordError; countAttempt?: boolean; interrupted?: boolean } = {},
  ): Promise<SpoolRecord> {
    if (claim.from === 'ready') return this.releaseUpload(claim, change);
    await this.removeLeftovers(claim.id);
    const record: SpoolRecord = { ...claim.record };
    delete record.bundle;
    if (change.error !== undefined) record.last_error = change.error;
    if (change.error !== undefined && change.countAttempt !== false) {
      record.attempts += 1;
      record.next_attempt_at_unix_ms =
        this.now() + RETRY_DELAYS_MS[Math.min(record.attempts, RETRY_DELAYS_MS.length) - 1]!;
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
   * counted as an upload attempt unless `countAttempt` is false; `retryAtUnixMs` is when it is due again (default:
   * now).
   */
  async releaseUpload(
    claim: Claim,
    change: { error?: RecordError; countAttempt?: boolean; interrupted?: boolean; retryAtUnixMs?: number } = {},
  ): Promise<SpoolRecord> {
    if (claim.from !== 'ready') throw new BlueError('INTERNAL', `spool record ${claim.id} is not an upload claim`);
    await this.removeTempsOf(claim.id, process.pid);
    const record: SpoolRecord = { ...claim.record };
    if (change.error !== undefined) record.last_error = change.error;
    if (change.error !== undefined && change.countAttempt !== false)
      record.upload_attempts = (record.upload_attempts ?? 0) + 1;
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
  protected async removeClaimed(claim: Claim): Promise<void> {
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
  async fail(
    claim: Claim,
    error: RecordError,
    change: { interrupted?: boolean; countAttempt?: boolean } = {},
  ): Promise<SpoolRecord> {
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

  /** Holds the claim `file` (its heartbeat) and reads it, unless its `text` was already read. */
  protected async hold(id: string, from: ClaimableState, file: string, text?: string): Promise<Claim> {
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

  private async rewriteClaim(claim: Claim, record: SpoolRecord): Promise<void> {
    await this.assertHeld(claim);
    await this.writeRecord(claim.file, record);
    (claim as { record: SpoolRecord }).record = record;
  }

  protected async move(claim: Claim, to: RecordState): Promise<void> {
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

  protected async removeTempsOf(id: string, pid: number): Promise<void> {
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
  protected async writeRecord(target: string, record: SpoolRecord, place: 'rename' | 'link' = 'rename'): Promise<void> {
    const temp = this.tempFile(record.id, 'record');
    const data = Buffer.from(`${JSON.stringify(record, null, 2)}\n`, 'utf8');
    try {
      const handle = await open(
        temp,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
        0o600,
      );
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
