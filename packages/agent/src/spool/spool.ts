/** The spool's one writer, opened: creating its folders, taking new captures in, admitting the sh hook's inbox. */
import { lstat, mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { processRuns } from '../lock/liveness.js';
import { realIO, type SpoolIO } from './claims.js';
import { ignoreExists, mapFull } from './disk-full.js';
import { errno, exists, listDir } from './fs.js';
import { ADMIT_NAME, ALL_DIRS, HOOK_NAME } from './layout.js';
import { checkPrivateDir } from './private-dir.js';
import { newRecordId, RECORD_FORMAT, type IntakeInput, type SpoolRecord } from './record.js';
import { SpoolRecovery } from './recovery.js';
import type { SpoolLocation } from './view.js';

/** An admission takes milliseconds: a claim on an inbox file older than this is a dead drain's, whatever its pid. */
const ADMIT_STALE_MS = 10 * 60_000;

/** An inbox file this process claimed: `name` is the hook's (`<pid>-<n>`), `file` where the claim is now. */
export interface InboxClaim {
  name: string;
  file: string;
  mtimeMs: number;
  ino: number;
  /** Claimed from a drain that died while admitting it: its record may exist already. */
  takenOver: boolean;
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

/** The spool's one writer: every change of a record goes through it (see claims.ts). */
export class Spool extends SpoolRecovery {
  private constructor(where: SpoolLocation, io: SpoolIO, now: () => number, ownerUid: number | undefined) {
    super(where, io, now, ownerUid);
  }

  /** Opens (creating when missing) the spool at `where`; refuses one that other users could tamper with. */
  static async open(where: SpoolLocation, options: SpoolOptions = {}): Promise<Spool> {
    const spool = new Spool(where, options.io ?? realIO, options.now ?? Date.now, options.ownerUid);
    await spool.prepare();
    return spool;
  }

  private async prepare(): Promise<void> {
    // Check first and create only what is missing: the hook opens the spool on every capture.
    if (!(await exists(this.stateDir)))
      await mkdir(this.stateDir, { recursive: true, mode: 0o700 }).catch(mapFull(this.stateDir));
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
      if (pid === process.pid || !processRuns(pid) || now - info.ctimeMs > ADMIT_STALE_MS)
        await take(name, admit[1]!, true);
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
    // the name is taken again: the claim stays, and is taken over once this process is gone
    if (await exists(back)) return;
    await rename(claim.file, back).catch(() => undefined);
  }
}
