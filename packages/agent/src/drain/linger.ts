/**
 * What the drain a capture hook starts does after its passes (`drain --linger`): it follows the captures that wait for
 * their harness to exit (the profile's capture.wait_for_exit) and has each built once its harness has exited. It
 * follows them as long as the harness runs, since nothing else may ever drain them (no agent runs): a window would
 * leave the capture of a harness slower to exit than the window spooled. The bound is the wait's own maximum
 * (WAIT_FOR_EXIT_MAX_MS, after which a capture is built whatever runs), counted from the newest capture followed.
 *
 * One drain lingers per user and host (the linger lock), following every such capture, so a harness that captures
 * after every turn starts one lingering drain, not one per turn. A drain that finds another lingering leaves its
 * captures to that one. The hand-over loses none: a drain's capture is in intake before it asks for the lock, and the
 * lingering drain, once it has let go of the lock, looks at intake once more and takes the lock back for what waits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ensurePrivateDir } from '@blue-agent/contract/util/fs.js';
import { randomHex } from '@blue-agent/contract/util/startup/fs-light.js';
import type { Context } from '../context.js';
import { acquireLockFile, lockFileFor, lockOwner, type HeldLock } from '../lock/lock.js';
import { staleOwnerReason, systemLockWorld, type LockWorld } from '../lock/liveness.js';
import { harnessRuns, WAIT_FOR_EXIT_MAX_MS, type Spool, type SpoolRecord } from '../spool/index.js';

/** The window after each new capture in which a lingering drain looks often: a headless run exits right after it. */
export const LINGER_MS = 30_000;
/** How often a lingering drain looks at the harnesses it follows, within the window and after it. */
const POLL_MS = 250;
const SLOW_POLL_MS = 2_000;
/** Looks at a lock whose owner is gone before leaving the captures to whoever keeps taking it over. */
const MAX_LOOKS = 20;

export interface LingerOptions {
  /** Follow the captures that wait for a running harness, looking often for this long after each new one. 0: no. */
  lingerMs?: number;
  /** How often to look, within the window and after it; default 250 ms, then 2 s. */
  lingerPollMs?: number;
  /** Stop following after this long without a new capture; default WAIT_FOR_EXIT_MAX_MS. */
  lingerMaxMs?: number;
  /** The processes the linger lock is judged against; replaced in tests. */
  lockWorld?: LockWorld;
}

/** An intake record that waits for a harness process that still runs. */
export interface Waiter {
  id: string;
  record: Partial<SpoolRecord>;
}

/** Tokens of the linger locks this process holds: another drain in this process lingering counts as lingering. */
const heldTokens = new Set<string>();

/**
 * Follows the waiting captures (see above), handing those whose harness has exited to `build`, until none waits, the
 * bound, `stopped()`, or another drain follows them. Returns the captures still waiting.
 */
export async function linger(
  ctx: Context,
  spool: Spool,
  options: LingerOptions,
  build: (ids: string[]) => Promise<void>,
  stopped: () => boolean,
): Promise<Waiter[]> {
  let waiters = await waitingForHarness(spool);
  const windowMs = options.lingerMs ?? 0;
  if (windowMs <= 0) return waiters;
  const maxMs = options.lingerMaxMs ?? WAIT_FOR_EXIT_MAX_MS;
  const followed = new Set<string>();
  let often = 0;
  let until = 0;
  let lock: HeldLock | undefined;
  try {
    for (;;) {
      const now = Date.now();
      for (const { id } of waiters) {
        if (followed.has(id)) continue;
        followed.add(id);
        often = now + windowMs;
        until = now + maxMs;
      }
      if (waiters.length === 0 || now >= until || stopped()) {
        if (lock === undefined) break;
        await lock.release();
        lock = undefined;
        // Once more: a capture whose drain found this one lingering, while it let go, is still this one's.
        waiters = await waitingForHarness(spool);
        if (stopped()) break;
        continue;
      }
      if (lock === undefined) {
        lock = await lingerLock(ctx, options.lockWorld ?? systemLockWorld());
        if (lock === undefined) break;
      }
      const poll = options.lingerPollMs ?? (now < often ? POLL_MS : SLOW_POLL_MS);
      await sleep(Math.max(0, Math.min(poll, until - now)));
      const still = await waitingForHarness(spool);
      const done = waiters.filter((w) => !still.some((s) => s.id === w.id)).map((w) => w.id);
      if (done.length > 0) await build(done);
      waiters = still;
    }
  } finally {
    await lock?.release();
  }
  return waiters;
}

/** Intake records that wait for a harness process that still runs. */
export async function waitingForHarness(spool: Spool): Promise<Waiter[]> {
  const out: Waiter[] = [];
  for (const id of await spool.idsIn('intake')) {
    const record = await spool.peek('intake', id);
    if (record !== undefined && harnessRuns(record)) out.push({ id, record });
  }
  return out;
}

/** The linger lock's file: one per host, since a state folder may be shared between hosts. */
export function lingerLockFile(ctx: Context, world: LockWorld = systemLockWorld()): string {
  return lockFileFor(ctx.paths.locksDir, `drain --linger@${world.host}`);
}

class LingeringElsewhere extends Error {}

/**
 * Takes the linger lock, or undefined when another drain holds it (that one follows the captures). A lock that cannot
 * be taken for another reason is no reason to leave captures behind: this drain then follows them without it.
 */
async function lingerLock(ctx: Context, world: LockWorld): Promise<HeldLock | undefined> {
  const token = randomHex(12);
  const started = world.startedAt(world.pid);
  const record = {
    ...lockOwner(world, Date.now()),
    ...(started === undefined ? {} : { pid_started_at_unix_ms: started }),
    token,
  };
  heldTokens.add(token);
  try {
    await ensurePrivateDir(ctx.paths.locksDir);
    const held = await acquireLockFile(
      lingerLockFile(ctx, world),
      JSON.stringify(record),
      world,
      (owner) =>
        staleOwnerReason(
          {
            pid: owner.pid,
            host: owner.host,
            procStart: owner.proc_start,
            processStartedAt: owner.pid_started_at_unix_ms,
            recordedAt: owner.started_at_unix_ms,
          },
          world,
          { self: typeof owner.token === 'string' && heldTokens.has(owner.token), foreign: 'stale' },
        ),
      async (attempt, _owner, reason) => {
        if (reason === undefined || attempt >= MAX_LOOKS) throw new LingeringElsewhere();
      },
    );
    return {
      file: held.file,
      release: async () => {
        await held.release();
        heldTokens.delete(token);
      },
    };
  } catch (error) {
    heldTokens.delete(token);
    if (error instanceof LingeringElsewhere) return undefined;
    ctx.logger.warn('lingering without the linger lock', { error: (error as Error).message });
    return { file: '', release: async () => undefined };
  }
}
