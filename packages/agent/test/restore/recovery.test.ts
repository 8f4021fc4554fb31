/**
 * Rollback and recovery only ever remove what the restore itself placed: a file the user kept working in after a
 * crash is kept and reported; a journal whose pid now names another process (after a reboot, or a reused pid) is
 * recovered; a journal that is still owned blocks another restore into the same files; a folder someone else made
 * meanwhile is never removed; a parent folder swapped for a link during placement is caught and undone.
 */
import {
  appendFile,
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  rename,
  stat,
  symlink,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { LockWorld } from '../../src/lock/liveness.js';
import {
  applyRestore,
  prepareRestore,
  realRestoreIO,
  recoverRestores,
  type PreparedRestore,
  type RestoreIO,
} from '../../src/restore/index.js';
import type { TestHome } from '../../../../test/support/context.js';
import {
  errnoError,
  fixtureBundle,
  shippedProfiles,
  snapshot,
  useRestoreHomes,
} from '../../../../test/support/restore-homes.js';

let source: TestHome;
let target: TestHome;
let destination: string;

useRestoreHomes('proj', (homes) => ({ source, target, destination } = homes));

async function prepare(bundle: string): Promise<PreparedRestore> {
  return prepareRestore(target.ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() });
}

async function blueError(fn: () => Promise<unknown>): Promise<BlueError> {
  try {
    await fn();
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(BlueError);
    return error as BlueError;
  }
  throw new Error('expected a BlueError');
}

function restoresDir(): string {
  return path.join(target.env.BLUE_AGENT_HOME!, 'restores');
}

async function journals(): Promise<string[]> {
  return readdir(restoresDir()).catch(() => []);
}

/**
 * What a restore killed after placing every file but before its commit point leaves behind: every target hard-linked
 * from staging, and its journal in state `placing`, owned by `owner`.
 */
async function crashedAfterPlacement(prepared: PreparedRestore, owner: Record<string, unknown>): Promise<string> {
  const id = 'fedcba9876543210';
  const ancestors = new Set<string>();
  for (const p of prepared.plan.placements)
    for (let d = path.dirname(p.to); d.startsWith(`${target.home}${path.sep}`); d = path.dirname(d)) ancestors.add(d);
  const dirs: string[] = [];
  for (const d of [...ancestors].sort((a, b) => a.length - b.length))
    if ((await lstat(d).catch(() => undefined)) === undefined) dirs.push(d);
  for (const d of dirs) await mkdir(d);
  for (const p of prepared.plan.placements) await link(p.from, p.to);
  const journal = {
    format: 'blue-agent-restore-journal-v1',
    id,
    host: hostname(),
    started_at_unix_ms: Date.now(),
    ...owner,
    harness: prepared.harness,
    session_id: prepared.sessionId,
    state: 'placing',
    staging: prepared.staging,
    root: prepared.plan.root,
    dirs,
    targets: prepared.plan.placements.map((p) => ({
      path: p.to,
      staged: p.from,
      sha256: p.sha256,
      size: p.size,
      temp: path.join(path.dirname(p.to), `.blue-agent-restore-${id}.tmp.${path.basename(p.to)}`),
    })),
    indexes: [],
  };
  await mkdir(restoresDir(), { recursive: true });
  await writeFile(path.join(restoresDir(), `${id}.json`), JSON.stringify(journal));
  return id;
}

const DEAD_PID = 2 ** 22 + 13;

describe('recovery after a crash between placement and the commit point', () => {
  it('keeps (and reports) a restored file the harness appended to in place; removes the untouched ones', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const prepared = await prepare(session.bundle);
    const id = await crashedAfterPlacement(prepared, { pid: DEAD_PID });
    const transcript = prepared.plan.placements.find((p) => p.role === 'primary_transcript')!;
    // The user resumed the complete-looking session: the harness appends in place (same inode as the staged file).
    const inode = (await stat(transcript.to)).ino;
    await appendFile(transcript.to, '{"type":"user","message":{"role":"user","content":"new work"}}\n');
    expect((await stat(transcript.to)).ino).toBe(inode);
    const kept = await readFile(transcript.to);

    const report = await recoverRestores(target.ctx);
    expect(report.rolledBack).toEqual([id]);
    expect(report.warnings).toEqual([expect.stringContaining(transcript.to)]);
    expect(report.warnings![0]).toMatch(/kept/);
    expect(await readFile(transcript.to)).toEqual(kept);
    for (const p of prepared.plan.placements.filter((x) => x !== transcript))
      expect(await lstat(p.to).catch(() => undefined)).toBeUndefined();
    expect(await journals()).toEqual([]);
  });

  it('keeps a file at a target that is not the inode placed, even with the same bytes', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const prepared = await prepare(session.bundle);
    await crashedAfterPlacement(prepared, { pid: DEAD_PID });
    const transcript = prepared.plan.placements.find((p) => p.role === 'primary_transcript')!;
    // The harness rewrote it (new inode, same bytes): it is the user's file now.
    const bytes = await readFile(transcript.to);
    await rename(transcript.to, `${transcript.to}.old`);
    await writeFile(transcript.to, bytes);
    const report = await recoverRestores(target.ctx);
    expect(report.warnings).toEqual([expect.stringContaining(transcript.to)]);
    expect(await readFile(transcript.to)).toEqual(bytes);
  });

  it('keeps, without reading it, a placed file that gained another hard link (a third name of the inode)', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const prepared = await prepare(session.bundle);
    const id = await crashedAfterPlacement(prepared, { pid: DEAD_PID });
    const transcript = prepared.plan.placements.find((p) => p.role === 'primary_transcript')!;
    const third = path.join(target.root, 'third-name.jsonl');
    await link(transcript.to, third);
    const report = await recoverRestores(target.ctx);
    expect(report.rolledBack).toEqual([id]);
    expect(report.warnings).toEqual([
      `${transcript.to} was kept: it has another hard link now, so it is not only the restore's`,
    ]);
    expect((await lstat(transcript.to)).ino).toBe((await lstat(third)).ino);
    for (const p of prepared.plan.placements.filter((x) => x !== transcript))
      expect(await lstat(p.to).catch(() => undefined)).toBeUndefined();
  });
});

/**
 * The world recovery judges owners in (injected: nothing depends on this machine's uptime or processes): booted an
 * hour ago; LIVE_PID runs, every other pid is gone.
 */
const LIVE_PID = 4_000_123;
const BOOT_AT = Date.now() - 3_600_000;
function world(over: Partial<LockWorld> = {}): LockWorld {
  return {
    host: hostname(),
    pid: process.pid,
    bootAt: BOOT_AT,
    probe: (pid) => (pid === LIVE_PID ? 'alive' : 'gone'),
    procStart: () => undefined,
    startedAt: () => undefined,
    ...over,
  };
}

describe('whose journal it is', () => {
  it('an owner pid that is alive but names a process started at another time is dead (a reused pid)', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const before = await snapshot(target.home);
    const prepared = await prepare(session.bundle);
    // LIVE_PID runs, but it is not the process recorded: that one started (after this boot) at another time.
    const recorded = Date.now() - 60_000;
    const id = await crashedAfterPlacement(prepared, { pid: LIVE_PID, pid_started_at_unix_ms: recorded });
    // Started when recorded: the owner, left alone.
    expect(await recoverRestores(target.ctx, { world: world({ startedAt: () => recorded + 1_000 }) })).toEqual({
      rolledBack: [],
      completed: [],
    });
    const reused = world({ startedAt: (pid) => (pid === LIVE_PID ? Date.now() - 1_000 : undefined) });
    expect(await recoverRestores(target.ctx, { world: reused })).toEqual({ rolledBack: [id], completed: [] });
    expect(await snapshot(target.home)).toEqual(before);
  });

  it('a journal written before this boot belongs to no running process, whatever runs under its pid now', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const before = await snapshot(target.home);
    const prepared = await prepare(session.bundle);
    const id = await crashedAfterPlacement(prepared, { pid: LIVE_PID, started_at_unix_ms: BOOT_AT - 60_000 });
    // Had the machine booted earlier, the same journal would be a running restore's.
    expect(await recoverRestores(target.ctx, { world: world({ bootAt: BOOT_AT - 3_600_000 }) })).toEqual({
      rolledBack: [],
      completed: [],
    });
    expect(await recoverRestores(target.ctx, { world: world() })).toEqual({ rolledBack: [id], completed: [] });
    expect(await snapshot(target.home)).toEqual(before);
  });

  it('a live owner keeps its journal, and a restore into the same files is refused until it is recovered', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const first = await prepare(session.bundle);
    const id = await crashedAfterPlacement(first, { pid: LIVE_PID, pid_started_at_unix_ms: Date.now() - 1_000 });
    // Undo the placements by hand (the journal still names them): the machine looks free to restore into.
    for (const p of first.plan.placements) await unlink(p.to);
    expect(await recoverRestores(target.ctx, { world: world({ startedAt: () => Date.now() - 1_000 }) })).toEqual({
      rolledBack: [],
      completed: [],
    });
    const before = await snapshot(target.home);
    const second = await prepare(session.bundle);
    const error = await blueError(() => applyRestore(target.ctx, second));
    expect(error.code).toBe('RESTORE_FAILED');
    expect(error.message).toContain(id);
    expect(error.message).toMatch(/unfinished restore/);
    await second.dispose();
    expect(await snapshot(target.home)).toEqual(before);
  });
});

/** realRestoreIO with hooks before each effect. */
function hookedIO(
  hooks: Partial<{ mkdir: (dir: string) => Promise<void>; link: (from: string, to: string) => Promise<void> }>,
): RestoreIO {
  return {
    ...realRestoreIO,
    mkdir: async (dir, mode) => {
      await hooks.mkdir?.(dir);
      return realRestoreIO.mkdir(dir, mode);
    },
    link: async (from, to) => {
      await hooks.link?.(from, to);
      return realRestoreIO.link(from, to);
    },
  };
}

describe('rollback removes only what the restore created', () => {
  it('a folder that someone else made between the preflight and mkdir is kept', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const prepared = await prepare(session.bundle);
    const planned = prepared.summary.create.map((p) => path.dirname(p)).sort((a, b) => b.length - a.length)[0]!;
    let links = 0;
    const io = hookedIO({
      mkdir: async (dir) => {
        if (dir === planned) await mkdir(dir); // someone else's, a moment earlier
      },
      link: async (_from, to) => {
        if (++links === 1) throw errnoError('ENOSPC', 'link', to);
      },
    });
    const error = await blueError(() => applyRestore(target.ctx, prepared, { io }));
    expect(error.code).toBe('RESTORE_NO_SPACE');
    expect((await stat(planned)).isDirectory()).toBe(true);
    await prepared.dispose();
    expect(await journals()).toEqual([]);
  });

  it('the copy fallback (another filesystem) keeps its temp until commit: rollback knows it by inode', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const before = await snapshot(target.home);
    const prepared = await prepare(session.bundle);
    const count = prepared.summary.create.length;
    let placed = 0;
    const exdev = (fail: boolean): RestoreIO => ({
      ...realRestoreIO,
      link: async (from, to) => {
        if (from.startsWith(prepared.staging)) throw errnoError('EXDEV', 'link', to);
        if (fail && ++placed === count) throw errnoError('ENOSPC', 'link', to);
        return realRestoreIO.link(from, to);
      },
    });
    const error = await blueError(() => applyRestore(target.ctx, prepared, { io: exdev(true) }));
    expect(error.code).toBe('RESTORE_NO_SPACE');
    await prepared.dispose();
    expect(await snapshot(target.home)).toEqual(before);

    const again = await prepare(session.bundle);
    const result = await applyRestore(target.ctx, again, { io: exdev(false) });
    await again.dispose();
    expect(result.placed.length).toBe(count);
    for (const p of again.plan.placements) expect((await stat(p.to)).size).toBe(p.size);
    const all = Object.keys(await snapshot(target.home));
    expect(all.filter((f) => f.includes('.blue-agent-restore'))).toEqual([]);
  });
});

describe('a parent folder swapped for a link while placing', () => {
  it('is caught after the placement and undone with RESTORE_UNSAFE', async () => {
    const session = await fixtureBundle('claude', source, path.join(source.root, 'claude.bundle'));
    const prepared = await prepare(session.bundle);
    const last = prepared.summary.create.at(-1)!;
    const outside = path.join(target.root, 'outside');
    const io = hookedIO({
      link: async (_from, to) => {
        if (to !== last) return;
        // Between the check of the parents and the link: the target's folder becomes a link to elsewhere.
        await rename(path.dirname(to), outside);
        await symlink(outside, path.dirname(to));
      },
    });
    const error = await blueError(() => applyRestore(target.ctx, prepared, { io }));
    expect(error.code).toBe('RESTORE_UNSAFE');
    expect(error.message).toMatch(/outside the session root/);
    // Nothing of the session is left outside, nor inside.
    expect(await readdir(outside)).toEqual([]);
    for (const p of prepared.summary.create.slice(0, -1)) expect(await lstat(p).catch(() => undefined)).toBeUndefined();
    await prepared.dispose();
    expect(await journals()).toEqual([]);
  });
});
