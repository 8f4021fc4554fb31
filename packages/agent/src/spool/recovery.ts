/**
 * Recovery: what dead workers left. Recovery takes a dead claim over by renaming it to its own pid (so two recoverers
 * never both act), then finishes the commit when the claim already names its fsynced bundle, or else removes what the
 * dead worker left and releases the record back to where it was claimed from.
 *
 * A dead upload claim whose bundle was renamed aside (or that names its upload, `uploaded`, as earlier versions wrote
 * first) is removed; any other is released back to `ready` (bundle kept; the Control API answers a re-presign of the
 * same bytes with the upload it already has, so nothing is stored twice); one whose bundle was deleted from outside
 * fails at its next upload.
 */
import { lstat, readFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { processRuns, staleOwnerReason, systemLockWorld } from '../lock/liveness.js';
import { fsyncDir } from '@blue-agent/contract/util/startup/fs-light.js';
import { heldClaims, liveTemps, SpoolClaims, type Claim } from './claims.js';
import { errno, listDir, unlinkIfExists } from './fs.js';
import {
  CLAIM_DIRS,
  CLAIM_NAME,
  CLAIMS,
  HOOK_TEMP_NAME,
  RECORD_DIRS,
  RECORD_NAME,
  REMOVED_KIND,
  tempOwner,
  type ClaimableState,
} from './layout.js';
import { MAX_INTERRUPTIONS, parseRecord, type RecordState, type SpoolRecord } from './record.js';

/** A claim not refreshed for this long is dead even if its pid runs (the pid was reused). */
const CLAIM_STALE_MS = 10 * 60_000;
/** A temp file whose writer still seems to run is removed anyway after this long. */
const TEMP_STALE_MS = 24 * 60 * 60_000;
/** The sh hook writes its file within a few seconds; one left for longer was cut short (the hook was killed). */
const HOOK_TEMP_STALE_MS = 60_000;

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

/** Record ids this process is recovering right now. */
const recovering = new Set<string>();

/**
 * A claim's worker is dead when its pid is gone, or when the claim was not refreshed for CLAIM_STALE_MS (its pid was
 * reused) or not since this machine booted (lock/liveness.ts). A pid of another user still runs: not ours to judge.
 */
async function claimIsDead(file: string, pid: number, now: number): Promise<boolean> {
  const info = await stat(file).catch(() => undefined);
  const world = { ...systemLockWorld(), now: () => now };
  return (
    staleOwnerReason({ pid, recordedAt: info?.mtimeMs }, world, { maxAgeMs: CLAIM_STALE_MS, foreign: 'alive' }) !==
    undefined
  );
}

/** Recovery of what dead workers left, and what live ones hold (see the module comment). */
export class SpoolRecovery extends SpoolClaims {
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
        held.push({
          id,
          state: claimDir,
          pid,
          harness: record?.harness ?? '?',
          session_id: record?.payload.session_id ?? '?',
        });
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
      // A bundle set aside for removal is what tells recovery its claim's commit had begun: it stays while the claim
      // does.
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

  /** True when a claim's record names a bundle that is in place with the recorded size: the commit had happened. */
  private async bundleCommitted(record: SpoolRecord): Promise<boolean> {
    if (record.bundle === undefined) return false;
    const info = await stat(this.bundleFile(record.id)).catch(() => undefined);
    return info !== undefined && info.isFile() && info.size === record.bundle.size;
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
}
