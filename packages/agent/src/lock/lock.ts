/**
 * Lock files between blue-agent processes: per-file locks (`withLock`: reconcile's targets, the ledger, restores) and
 * the agent's instance lock (daemon/lock.ts) are both made here.
 *
 * A lock appears with its content in one step: the record is written to a private temp file first and then link()ed
 * into place, which fails when a lock exists. A reader therefore never finds an empty or half-written lock.
 *
 * A lock whose owner cannot be running any more (lock/liveness.ts: gone, a reused pid, a previous boot, too old) is
 * taken over, by one contender only: a contender first creates `<lock>.takeover` (O_EXCL), checks that the lock is
 * still the one it judged stale, and only then moves it aside with a rename; the others wait for the marker and look
 * again. (Deleting a stale lock and creating one's own instead lets two contenders both win: the second deletes the
 * lock the first has just created.)
 */
import { link, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BlueError } from '@blue-agent/contract/errors.js';
import { ensurePrivateDir, sha256 } from '@blue-agent/contract/util/fs.js';
import { randomHex } from '@blue-agent/contract/util/startup/fs-light.js';
import { staleOwnerReason, systemLockWorld, type LockWorld } from './liveness.js';

/** A takeover marker older than this was left by a contender that died holding it (holding it takes milliseconds). */
const TAKEOVER_STALE_MS = 10_000;
/** A lock that is not a record is stale once it has not changed for this long (an older version wrote in two steps). */
const UNREADABLE_GRACE_MS = 2_000;
/** Transient misses (the lock released or rewritten between two looks) before the last error counts. */
const MAX_MISSES = 20;

export interface HeldLock {
  file: string;
  release(): Promise<void>;
}

/**
 * What to do with a lock held by someone else. `reason` says why its owner cannot be running (undefined: it may be);
 * `owner` is its record, undefined when it is not one. Resolve to take a stale lock over, or to look again after
 * waiting for a live one; throw to give up. `attempt` counts these decisions from 0.
 */
export type LockDecision = (
  attempt: number,
  owner: Record<string, unknown> | undefined,
  reason: string | undefined,
) => Promise<void>;

/** Creates `file` holding `text` once no live owner holds it, judging each record found there with `judge`. */
export async function acquireLockFile(
  file: string,
  text: string,
  world: LockWorld,
  judge: (owner: Record<string, unknown>) => string | undefined,
  decide: LockDecision,
): Promise<HeldLock> {
  const unique = () => `${file}.${world.pid}.${randomHex(12)}`;
  let misses = 0;
  for (let attempt = 0; ; ) {
    if (await createWhole(file, text, unique)) return heldLock(file, text);
    let seen: string;
    try {
      seen = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && ++misses < MAX_MISSES) continue; // released meanwhile
      throw error;
    }
    const owner = parseRecord(seen);
    let reason: string | undefined;
    if (owner === undefined) {
      // Not a record (an older version wrote the lock in two steps, or the file was damaged): stale once it is not
      // being written any more.
      const age = Date.now() - ((await stat(file).catch(() => undefined))?.mtimeMs ?? 0);
      if (age < UNREADABLE_GRACE_MS && ++misses < MAX_MISSES) {
        await sleep(100);
        continue;
      }
      reason = 'not a lock record';
    } else {
      reason = judge(owner);
    }
    await decide(attempt++, owner, reason);
    if (reason !== undefined) await takeOver(file, seen, world.pid, unique);
  }
}

/** Atomic create-with-content: write aside, then link into place (fails when a lock exists). */
async function createWhole(file: string, text: string, unique: () => string): Promise<boolean> {
  const temp = `${unique()}.tmp`;
  await writeFile(temp, text, { mode: 0o600, flag: 'wx' });
  try {
    await link(temp, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/**
 * Moves aside the lock judged stale (its text `seen`), one contender at a time: only the holder of the takeover marker
 * removes a lock, and only the very lock it judged stale. (Without the marker, a contender could move aside a lock
 * just created by another one and, while putting it back, let a third create its own: two owners.) Returns with
 * nothing done when another contender holds the marker, or the lock changed since it was judged.
 */
async function takeOver(file: string, seen: string, pid: number, unique: () => string): Promise<void> {
  const marker = `${file}.takeover`;
  try {
    await writeFile(marker, `${pid}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Left by a contender that died in the few steps it holds the marker for: removed once clearly old.
    const info = await stat(marker).catch(() => undefined);
    if (info !== undefined && Date.now() - info.mtimeMs > TAKEOVER_STALE_MS)
      await unlink(marker).catch(() => undefined);
    await sleep(20 + Math.floor(Math.random() * 50));
    return;
  }
  try {
    // Judged on an earlier read: taken over (and created anew) meanwhile, it is judged again.
    if ((await readFile(file, 'utf8').catch(() => undefined)) !== seen) return;
    const aside = `${unique()}.stale`;
    try {
      await rename(file, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // released meanwhile
      throw error;
    }
    const moved = await readFile(aside, 'utf8').catch(() => undefined);
    if (moved !== seen) await link(aside, file).catch(() => undefined); // replaced between the read and the rename
    await unlink(aside).catch(() => undefined);
  } finally {
    await unlink(marker).catch(() => undefined);
  }
}

function heldLock(file: string, text: string): HeldLock {
  return {
    file,
    release: async () => {
      try {
        if ((await readFile(file, 'utf8')) === text) await unlink(file);
      } catch {
        // Gone already: nothing of ours to remove.
      }
    },
  };
}

function parseRecord(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Who holds a lock: the fields every lock record carries. */
export interface LockOwner {
  pid: number;
  host: string;
  /** Clock ticks since boot when the owner started (Linux), to tell a reused pid from the owner. */
  proc_start?: string;
  started_at_unix_ms: number;
  /** When the owner's machine booted (wall clock), as the owner computed it. */
  boot_at_unix_ms?: number;
}

/** This process as a lock owner, at `now`. */
export function lockOwner(world: LockWorld, now: number): LockOwner {
  const start = world.procStart(world.pid);
  return {
    pid: world.pid,
    host: world.host,
    ...(start === undefined ? {} : { proc_start: start }),
    started_at_unix_ms: now,
    boot_at_unix_ms: Math.round(world.bootAt),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Per-file locks

export interface LockOptions {
  timeoutMs?: number;
  /** A lock held longer than this is taken over, whoever holds it. */
  staleMs?: number;
  /** Replaced in tests. */
  world?: LockWorld;
}

/** Tokens of the per-file locks this process holds: a lock naming our pid with another token is an earlier process's.
 * */
const heldTokens = new Set<string>();

/** The file of the per-file lock for `key` in `locksDir`. */
export function lockFileFor(locksDir: string, key: string): string {
  return path.join(locksDir, `${sha256(key).slice(0, 32)}.lock`);
}

/**
 * Runs `fn` holding the advisory lock for `key`, waiting up to `timeoutMs` for another holder (LOCK_TIMEOUT after
 * that). A lock whose owner cannot be running, or that is older than `staleMs`, is taken over.
 */
export async function withLock<T>(
  locksDir: string,
  key: string,
  fn: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  const world = options.world ?? systemLockWorld();
  const now = () => world.now?.() ?? Date.now();
  const timeoutMs = options.timeoutMs ?? 15_000;
  const staleMs = options.staleMs ?? 120_000;
  const file = lockFileFor(locksDir, key);
  const owner = lockOwner(world, now());
  const selfStart = world.startedAt(world.pid);
  // `token` and `created` are read by earlier versions of blue-agent (its host after the `@`).
  const token = `${world.pid}@${world.host}#${randomHex(12)}`;
  const record = {
    token,
    ...owner,
    ...(selfStart === undefined ? {} : { pid_started_at_unix_ms: selfStart }),
    key,
    created: owner.started_at_unix_ms,
  };
  const deadline = now() + timeoutMs;
  await ensurePrivateDir(locksDir);
  heldTokens.add(token);
  let lock: HeldLock;
  try {
    lock = await acquireLockFile(
      file,
      JSON.stringify(record),
      world,
      (found) =>
        staleOwnerReason(perFileOwner(found), world, {
          self: typeof found.token === 'string' && heldTokens.has(found.token),
          maxAgeMs: staleMs,
          otherHost: 'alive',
          foreign: 'alive',
        }),
      async (attempt, _found, reason) => {
        if (reason !== undefined) return;
        if (now() >= deadline) {
          throw new BlueError('LOCK_TIMEOUT', `another blue-agent process holds the lock for ${key}`, {
            hint: `Wait for it to finish, or remove ${file} if no blue-agent is running.`,
          });
        }
        await sleep(Math.min(10 * 2 ** Math.min(attempt, 5), 250) + Math.random() * 10);
      },
    );
  } catch (error) {
    heldTokens.delete(token);
    throw error;
  }
  try {
    return await fn();
  } finally {
    await lock.release();
    heldTokens.delete(token);
  }
}

/** A per-file lock record, this version's or an earlier one's (`{token: "pid@host#hex", pid, key, created}`). */
function perFileOwner(found: Record<string, unknown>) {
  const tokenHost = typeof found.token === 'string' ? /@(.*)#[^#]*$/.exec(found.token)?.[1] : undefined;
  return {
    pid: found.pid,
    // Without a host it cannot be told whose it is: like another host's, it is kept until too old.
    host: found.host ?? tokenHost ?? '',
    procStart: found.proc_start,
    processStartedAt: found.pid_started_at_unix_ms,
    recordedAt: found.started_at_unix_ms ?? found.created,
  };
}
