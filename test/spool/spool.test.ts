/**
 * The spool's record states and transitions, recovery after crashes at each step, safety checks and listing.
 * Crashes are made real where a process can be: a child process claims a record and is killed.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FileHandle } from 'node:fs/promises';
import {
  MAX_ATTEMPTS,
  MAX_INTERRUPTIONS,
  newRecordId,
  RETRY_DELAYS_MS,
  Spool,
  type SpoolIO,
  type SpoolRecord,
} from '../../src/spool/index.js';
import { rejected } from '../support/errors.js';
import { makeTestHome, type TestHome } from '../support/context.js';
import { readJson, spoolFiles } from '../support/cli-process.js';
import { stateLayout } from '../../src/context.js';

let t: TestHome;
let stateDir: string;
let now: number;
const clock = () => now;

beforeEach(async () => {
  t = await makeTestHome();
  stateDir = t.env.BLUE_AGENT_HOME!;
  now = Date.now();
});
afterEach(async () => {
  await t.cleanup();
});

const payload = { session_id: 'sess-1', cwd: '/work/project', transcript_path: '/home/me/.claude/projects/-work-project/sess-1.jsonl' };

async function enqueue(spool: Spool, sessionId = 'sess-1'): Promise<SpoolRecord> {
  return spool.enqueueIntake({ harness: 'claude', profile: 'claude-v2_0_12', payload: { ...payload, session_id: sessionId }, createdAtUnixMs: now });
}

/** Writes a bundle-like temp file for a claim, the way the worker's bundle writer would. */
async function fakeBundle(spool: Spool, id: string, bytes = 'bundle bytes'): Promise<string> {
  const file = spool.tempFile(id, 'bundle');
  await writeFile(file, bytes, { mode: 0o600 });
  return file;
}

/** The pid of a process that has exited: what a killed worker leaves in its claim and temp file names. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

/**
 * What a worker killed at some point of a build leaves: its claim (named with its now dead pid), and optionally a
 * partial bundle temp file, a bundle already renamed into place, or a claim that already names that bundle.
 */
async function killedWorker(id: string, leave: { temp?: boolean; bundle?: string; named?: boolean } = {}): Promise<number> {
  const pid = await deadPid();
  const spool = path.join(stateDir, 'spool');
  const claim = path.join(spool, 'building', `${id}.${pid}.json`);
  const { rename } = await import('node:fs/promises');
  await rename(path.join(spool, 'intake', `${id}.json`), claim);
  if (leave.temp === true) {
    await writeFile(path.join(spool, 'tmp', `${id}.${pid}.bundle.0badc0de.tmp`), 'partial');
    await writeFile(path.join(spool, 'tmp', `.${id}.${pid}.bundle.0badc0de.tmp.1f2e3d.partial`), 'partial');
  }
  if (leave.bundle !== undefined) await writeFile(path.join(spool, 'bundles', `${id}.bundle`), leave.bundle);
  if (leave.named === true) {
    const record = readJson<SpoolRecord>(claim);
    await writeFile(claim, JSON.stringify({ ...record, bundle: { size: leave.bundle?.length ?? 0, sha256: 'b'.repeat(64), built_at_unix_ms: now } }));
  }
  return pid;
}

describe('layout and safety', () => {
  it('creates the spool folders 0700 and writes records 0600', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    for (const folder of ['', 'intake', 'building', 'ready', 'failed', 'bundles', 'tmp']) {
      expect(((await stat(path.join(stateDir, 'spool', folder))).mode & 0o777).toString(8), folder).toBe('700');
    }
    const file = path.join(stateDir, 'spool', 'intake', `${record.id}.json`);
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600');
    expect(readJson(file)).toMatchObject({ id: record.id, harness: 'claude', profile: 'claude-v2_0_12', payload, attempts: 0 });
    expect(spoolFiles(stateDir).tmp).toEqual([]);
  });

  it.each([
    ['the spool', 'spool'],
    ['a state folder', 'spool/intake'],
    ['the state directory', ''],
  ])('refuses %s when group or others may write to it', async (_what, rel) => {
    await Spool.open(stateLayout(stateDir));
    await chmod(path.join(stateDir, rel), 0o777);
    const error = await rejected(Spool.open(stateLayout(stateDir)));
    expect(error.code).toBe('SPOOL_UNSAFE');
    expect(error.message).toContain('writable by');
    expect(error.hint).toContain('chmod 700');
  });

  it('refuses a spool owned by another user', async () => {
    await Spool.open(stateLayout(stateDir));
    const mine = (await stat(path.join(stateDir, 'spool'))).uid;
    // As if another user ran the agent on this state directory: the folders are not theirs (no chown, so any user).
    const someoneElse = mine + 1;
    const error = await rejected(Spool.open(stateLayout(stateDir), { ownerUid: someoneElse }));
    expect(error.code).toBe('SPOOL_UNSAFE');
    expect(error.message).toContain(`is owned by uid ${mine}, not by you (uid ${someoneElse})`);
    expect(error.hint).toContain('chown');
    // The owner it expects by default is the process's own user.
    await expect(Spool.open(stateLayout(stateDir), { ownerUid: mine })).resolves.toBeInstanceOf(Spool);
  });

  it('refuses a spool folder that is a symbolic link', async () => {
    await mkdir(path.join(stateDir), { recursive: true, mode: 0o700 });
    const elsewhere = path.join(t.root, 'elsewhere');
    await mkdir(elsewhere, { mode: 0o700 });
    await symlink(elsewhere, path.join(stateDir, 'spool'));
    const error = await rejected(Spool.open(stateLayout(stateDir)));
    expect(error.code).toBe('SPOOL_UNSAFE');
    expect(error.message).toContain('symbolic link');
  });

  it('checks again on every claim, not only when opened', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    await enqueue(spool);
    await chmod(path.join(stateDir, 'spool', 'building'), 0o757);
    expect((await rejected(spool.claimNext('intake'))).code).toBe('SPOOL_UNSAFE');
    expect(spoolFiles(stateDir).intake).toHaveLength(1);
  });
});

describe('transitions', () => {
  it('intake -> building -> ready: one file at every step, the bundle beside it', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    const claim = (await spool.claimNext('intake'))!;
    expect(claim.id).toBe(record.id);
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [`${record.id}.${process.pid}.json`] });
    const temp = await fakeBundle(spool, record.id);
    now += 5;
    const ready = await spool.commitReady(claim, temp, { size: 12, sha256: 'a'.repeat(64) });
    // The file's identity as committed (device, inode, size, mtime): a ready bundle still holding it need not be re-hashed.
    const info = await stat(spool.bundleFile(record.id), { bigint: true });
    expect(ready.bundle).toEqual({ size: 12, sha256: 'a'.repeat(64), built_at_unix_ms: now, identity: `${info.dev}:${info.ino}:12:${info.mtimeNs}` });
    expect(spoolFiles(stateDir)).toEqual({
      intake: [],
      building: [],
      ready: [`${record.id}.json`],
      failed: [],
      bundles: [`${record.id}.bundle`],
      tmp: [],
      inbox: [],
    });
    expect(await readFile(spool.bundleFile(record.id), 'utf8')).toBe('bundle bytes');
    expect(((await stat(spool.bundleFile(record.id))).mode & 0o777).toString(8)).toBe('600');
  });

  it('claims the oldest first, and a record only once across claimers', async () => {
    const a = await Spool.open(stateLayout(stateDir), { now: clock });
    const b = await Spool.open(stateLayout(stateDir), { now: clock });
    const first = await enqueue(a, 's1');
    now += 1;
    const second = await enqueue(a, 's2');
    const [x, y, z] = await Promise.all([a.claimNext('intake'), b.claimNext('intake'), b.claimNext('intake')]);
    const ids = [x, y, z].filter((c) => c !== undefined).map((c) => c!.id);
    expect(ids.sort()).toEqual([first.id, second.id].sort());
    expect(await a.claim('intake', first.id)).toBeUndefined();
  });

  it('release after a transient error counts the attempt and delays the next one', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    const claim = (await spool.claimNext('intake'))!;
    await fakeBundle(spool, record.id);
    const released = await spool.release(claim, { error: { code: 'INTERNAL', message: 'boom', at_unix_ms: now } });
    expect(released).toMatchObject({ attempts: 1, last_error: { code: 'INTERNAL', message: 'boom' }, next_attempt_at_unix_ms: now + RETRY_DELAYS_MS[0]! });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [`${record.id}.json`], building: [], tmp: [], bundles: [] });
    // Not due yet: nothing to claim; due: claimed again.
    expect(await spool.claimNext('intake')).toBeUndefined();
    now += RETRY_DELAYS_MS[0]!;
    expect((await spool.claimNext('intake'))?.id).toBe(record.id);
  });

  it('release for a full disk keeps the attempts and the record due', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    await enqueue(spool);
    const claim = (await spool.claimNext('intake'))!;
    const released = await spool.release(claim, { error: { code: 'SPOOL_FULL', message: 'full', at_unix_ms: now }, countAttempt: false });
    expect(released.attempts).toBe(0);
    expect(released.next_attempt_at_unix_ms).toBeUndefined();
    expect(await spool.claimNext('intake')).toBeDefined();
  });

  it('fail keeps the record with its reason and removes its bundle and temp files', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    const claim = (await spool.claimNext('intake'))!;
    await fakeBundle(spool, record.id);
    const failed = await spool.fail(claim, { code: 'ARTIFACT_INVALID', message: 'transcript missing', at_unix_ms: now }, { countAttempt: true });
    expect(failed).toMatchObject({ attempts: 1, last_error: { code: 'ARTIFACT_INVALID', message: 'transcript missing' }, failed_at_unix_ms: now });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [], failed: [`${record.id}.json`], tmp: [], bundles: [] });
  });

  it('a damaged intake record is failed as it is, for inspection', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const id = newRecordId(now);
    await writeFile(path.join(stateDir, 'spool', 'intake', `${id}.json`), '{"half": ', { mode: 0o600 });
    const claim = (await spool.claimNext('intake'))!;
    expect(claim.damaged).toBe('the record file is not valid JSON');
    await spool.fail(claim, { code: 'SPOOL_RECORD_DAMAGED', message: claim.damaged!, at_unix_ms: now });
    expect(await readFile(path.join(stateDir, 'spool', 'failed', `${id}.json`), 'utf8')).toBe('{"half": ');
    const listed = await spool.listRecords();
    expect(listed).toMatchObject([{ id, state: 'failed', damaged: 'the record file is not valid JSON' }]);
  });

  it('enqueueing never replaces an existing record, even with the same id', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const records = await Promise.all(Array.from({ length: 50 }, (_, i) => enqueue(spool, `s${i}`)));
    expect(new Set(records.map((r) => r.id)).size).toBe(50);
    expect(spoolFiles(stateDir).intake).toHaveLength(50);
  });

  it('ids sort by creation time', () => {
    expect(newRecordId(1000) < newRecordId(2000)).toBe(true);
    expect(newRecordId(1_800_000_000_000)).toMatch(/^[0-9a-z]{9}-[0-9a-f]{10}$/);
  });
});

describe('a full disk', () => {
  const full: SpoolIO = {
    async write(handle: FileHandle, data: Uint8Array) {
      await handle.write(data.subarray(0, 10));
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    },
  };

  it('leaves no partial intake record and reports SPOOL_FULL', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { io: full });
    const error = await rejected(enqueue(spool));
    expect(error.code).toBe('SPOOL_FULL');
    expect(error.message).toContain('no space left');
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], tmp: [] });
  });

  it('keeps a claimed record where it was when its rewrite cannot be written', async () => {
    const good = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(good);
    const spool = await Spool.open(stateLayout(stateDir), { io: full, now: clock });
    const claim = (await spool.claimNext('intake'))!;
    expect((await rejected(spool.release(claim, { error: { code: 'X', message: 'y', at_unix_ms: now } }))).code).toBe('SPOOL_FULL');
    // Still one file: the claim, with its old content; recovery puts it back once this holder is gone.
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [`${record.id}.${process.pid}.json`], tmp: [] });
    expect(readJson(claim.file)).toMatchObject({ attempts: 0 });
  });
});

describe('recovery after a crash', () => {
  it('a claim whose worker died goes back to intake, counted as an interruption; its temp files go', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    await killedWorker(record.id, { temp: true });
    const report = await spool.releaseDeadClaims();
    expect(report).toEqual({ released: [record.id], completed: [], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [`${record.id}.json`], building: [], tmp: [], bundles: [] });
    expect(readJson(path.join(stateDir, 'spool', 'intake', `${record.id}.json`))).toMatchObject({ interruptions: 1, attempts: 0 });
  });

  it('a crash after the bundle was placed but before the claim named it: released, the bundle removed', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    await killedWorker(record.id, { bundle: 'bundle' });
    expect(await spool.releaseDeadClaims()).toEqual({ released: [record.id], completed: [], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [`${record.id}.json`], building: [], bundles: [] });
  });

  it('a crash between naming the bundle in the claim and the commit rename: the commit is finished, not redone', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    await killedWorker(record.id, { bundle: 'bundle!', named: true });
    expect(await spool.releaseDeadClaims()).toEqual({ released: [], completed: [record.id], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [], ready: [`${record.id}.json`], bundles: [`${record.id}.bundle`] });
  });

  it('a claim that names a bundle which is not in place is rebuilt, not committed', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    await killedWorker(record.id, { named: true, bundle: 'short' });
    await writeFile(spool.bundleFile(record.id), 'truncated'); // not the size the claim names
    expect((await spool.releaseDeadClaims()).released).toEqual([record.id]);
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [`${record.id}.json`], ready: [], bundles: [] });
  });

  it('a claim of a live worker is left alone; of several recoverers, one takes a dead claim', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    await enqueue(spool, 'live');
    const mine = (await spool.claimNext('intake'))!;
    const other = await Spool.open(stateLayout(stateDir), { now: clock });
    expect(await other.releaseDeadClaims()).toEqual({ released: [], completed: [], failed: [] });
    expect(spoolFiles(stateDir).building).toEqual([path.basename(mine.file)]);

    const dead = await enqueue(spool, 'dead');
    await killedWorker(dead.id);
    const reports = await Promise.all([other.releaseDeadClaims(), spool.releaseDeadClaims(), (await Spool.open(stateLayout(stateDir))).releaseDeadClaims()]);
    expect(reports.flatMap((r) => r.released)).toEqual([dead.id]);
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [`${dead.id}.json`], building: [path.basename(mine.file)] });
  });

  it("names the records another live process holds, not its own or a dead worker's", async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const mine = await enqueue(spool, 'mine');
    await spool.claimNext('intake');
    const dead = await enqueue(spool, 'dead');
    await killedWorker(dead.id);
    const theirs = await enqueue(spool, 'theirs');
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    try {
      const { rename } = await import('node:fs/promises');
      await rename(path.join(stateDir, 'spool', 'intake', `${theirs.id}.json`), path.join(stateDir, 'spool', 'building', `${theirs.id}.${other.pid}.json`));
      expect(await spool.heldByOthers()).toEqual([{ id: theirs.id, state: 'building', pid: other.pid, harness: 'claude', session_id: 'theirs' }]);
      expect(mine.id).not.toBe(theirs.id);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('a record whose worker died goes after the records nobody has tried yet', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const unlucky = await enqueue(spool, 'unlucky');
    await killedWorker(unlucky.id);
    expect((await spool.releaseDeadClaims()).released).toEqual([unlucky.id]);
    now += 1_000;
    const fresh = await enqueue(spool, 'fresh');
    expect(fresh.id > unlucky.id).toBe(true); // younger: by age alone it would come second
    expect((await spool.claimNext('intake'))?.id).toBe(fresh.id);
    expect((await spool.claimNext('intake'))?.id).toBe(unlucky.id);
  });

  it('a claim not refreshed for a long time is dead even if its pid runs (a reused pid)', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    const { rename, utimes } = await import('node:fs/promises');
    // A process of our own runs under the claim's pid; the claim was last refreshed an hour ago.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    try {
      const claim = path.join(stateDir, 'spool', 'building', `${record.id}.${other.pid}.json`);
      await rename(path.join(stateDir, 'spool', 'intake', `${record.id}.json`), claim);
      const hourAgo = new Date(now - 3_600_000);
      await utimes(claim, hourAgo, hourAgo);
      expect((await spool.releaseDeadClaims()).released).toEqual([record.id]);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it(`a record whose worker keeps dying is failed after ${MAX_INTERRUPTIONS} interruptions`, async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    for (let i = 1; i <= MAX_INTERRUPTIONS; i++) {
      await killedWorker(record.id);
      const report = await spool.releaseDeadClaims();
      if (i < MAX_INTERRUPTIONS) expect(report.released, `crash ${i}`).toEqual([record.id]);
      else expect(report.failed).toEqual([record.id]);
    }
    const failed = readJson<SpoolRecord>(path.join(stateDir, 'spool', 'failed', `${record.id}.json`));
    expect(failed.interruptions).toBe(MAX_INTERRUPTIONS);
    expect(failed.last_error?.code).toBe('CAPTURE_INTERRUPTED');
  });

  it('a claim left by an earlier process with our own pid is recovered too', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    // What a killed worker whose pid was later reused by this process would leave.
    const { rename } = await import('node:fs/promises');
    await rename(path.join(stateDir, 'spool', 'intake', `${record.id}.json`), path.join(stateDir, 'spool', 'building', `${record.id}.${process.pid}.json`));
    expect((await spool.releaseDeadClaims()).released).toEqual([record.id]);
  });

  it('temp files of live writers stay; those of dead writers go; unknown names stay until old', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const id = newRecordId(now);
    const live = spool.tempFile(id, 'bundle');
    await writeFile(live, 'x');
    const livePartial = `.${path.basename(live)}.abc123.partial`;
    await writeFile(path.join(stateDir, 'spool', 'tmp', livePartial), 'x');
    const pid = await deadPid();
    await writeFile(path.join(stateDir, 'spool', 'tmp', `${id}.${pid}.bundle.deadbeef.tmp`), 'x');
    await writeFile(path.join(stateDir, 'spool', 'tmp', `.${id}.${pid}.bundle.deadbeef.tmp.0a0b.partial`), 'x');
    await writeFile(path.join(stateDir, 'spool', 'tmp', 'unknown-name'), 'x');
    expect(await spool.removeOrphanTemps()).toBe(2);
    expect(spoolFiles(stateDir).tmp).toEqual([livePartial, path.basename(live), 'unknown-name'].sort());
    now += 25 * 3_600_000;
    await spool.discardTemp(live);
    expect(await spool.removeOrphanTemps()).toBe(2);
    expect(spoolFiles(stateDir).tmp).toEqual([]);
  });
});

describe('listing', () => {
  it('lists every record with state, session, size, attempts, last error and time', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const a = await enqueue(spool, 'waiting');
    now += 1;
    const b = await enqueue(spool, 'built');
    now += 1;
    const c = await enqueue(spool, 'broken');
    now += 1;
    const d = await enqueue(spool, 'inflight');
    const cb = (await spool.claim('intake', b.id))!;
    await spool.commitReady(cb, await fakeBundle(spool, b.id, '0123456789'), { size: 10, sha256: 'c'.repeat(64) });
    const cc = (await spool.claim('intake', c.id))!;
    for (let i = 0; i < MAX_ATTEMPTS - 1; i++) {
      const again = i === 0 ? cc : (await spool.claim('intake', c.id))!;
      await spool.release(again, { error: { code: 'INTERNAL', message: `try ${i}`, at_unix_ms: now } });
    }
    await spool.fail((await spool.claim('intake', c.id))!, { code: 'INTERNAL', message: 'gave up', at_unix_ms: now }, { countAttempt: true });
    await spool.claim('intake', d.id);
    const listed = await spool.listRecords();
    expect(listed.map((r) => [r.session_id, r.state, r.size, r.attempts, r.last_error])).toEqual([
      ['waiting', 'intake', null, 0, null],
      ['built', 'ready', 10, 0, null],
      ['broken', 'failed', null, MAX_ATTEMPTS, 'gave up'],
      ['inflight', 'building', null, 0, null],
    ]);
    expect(listed[0]).toMatchObject({ id: a.id, harness: 'claude', profile: 'claude-v2_0_12', created_at_unix_ms: a.created_at_unix_ms });
    expect(listed[3]).toMatchObject({ worker_pid: process.pid, worker_alive: true });
  });
});

describe('upload claims', () => {
  /** A record built and committed to ready/ with its bundle. */
  async function readyRecord(spool: Spool, sessionId: string): Promise<SpoolRecord> {
    const record = await enqueue(spool, sessionId);
    const claim = (await spool.claim('intake', record.id))!;
    await spool.commitReady(claim, await fakeBundle(spool, record.id), { size: 12, sha256: 'a'.repeat(64) });
    return record;
  }
  const uploading = () => readJsonDir(path.join(stateDir, 'spool', 'uploading'));
  function readJsonDir(dir: string): string[] {
    return readdirSync(dir).sort();
  }

  it('claims ready records into uploading/, releases them with attempts, error and next attempt, completes by removing everything', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await readyRecord(spool, 'up-1');
    const claim = (await spool.claimNext('ready'))!;
    expect(claim).toMatchObject({ id: record.id, from: 'ready' });
    expect(uploading()).toEqual([`${record.id}.${process.pid}.json`]);
    expect((await spool.listRecords())[0]).toMatchObject({ state: 'uploading', worker_pid: process.pid, worker_alive: true, size: 12 });

    const released = await spool.releaseUpload(claim, { error: { code: 'UPLOAD_FAILED', message: 'down', at_unix_ms: now }, retryAtUnixMs: now + 5_000 });
    expect(released).toMatchObject({ upload_attempts: 1, last_error: { code: 'UPLOAD_FAILED' }, next_attempt_at_unix_ms: now + 5_000, bundle: { size: 12 } });
    expect(spoolFiles(stateDir)).toMatchObject({ ready: [`${record.id}.json`], bundles: [`${record.id}.bundle`] });
    expect((await spool.listRecords())[0]).toMatchObject({ state: 'ready', upload_attempts: 1, last_error: 'down', next_attempt_at_unix_ms: now + 5_000 });
    expect(await spool.claimNext('ready')).toBeUndefined(); // not due yet

    now += 5_000;
    const again = (await spool.claimNext('ready'))!;
    await spool.completeUpload(again, 'upl_1');
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [], ready: [], failed: [], bundles: [], tmp: [] });
    expect(uploading()).toEqual([]);
  });

  it('an upload the server refuses for good is failed with its reason and keeps its bundle', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await readyRecord(spool, 'up-refused');
    const claim = (await spool.claimNext('ready'))!;
    const failed = await spool.fail(claim, { code: 'UPLOAD_REJECTED', message: 'harness not allowed', at_unix_ms: now });
    expect(failed).toMatchObject({ last_error: { code: 'UPLOAD_REJECTED' }, bundle: { size: 12 } });
    expect(spoolFiles(stateDir)).toMatchObject({ ready: [], failed: [`${record.id}.json`], bundles: [`${record.id}.bundle`] });
    expect(uploading()).toEqual([]);
  });

  it('recovery: a dead upload claim goes back to ready with its bundle; one that names its upload is finished', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const a = await readyRecord(spool, 'up-a');
    const b = await readyRecord(spool, 'up-b');
    const pid = await deadPid();
    const dir = path.join(stateDir, 'spool');
    const { rename } = await import('node:fs/promises');
    await rename(path.join(dir, 'ready', `${a.id}.json`), path.join(dir, 'uploading', `${a.id}.${pid}.json`));
    const bRecord = readJson<SpoolRecord>(path.join(dir, 'ready', `${b.id}.json`));
    await writeFile(path.join(dir, 'uploading', `${b.id}.${pid}.json`), JSON.stringify({ ...bRecord, uploaded: { upload_id: 'upl_b', at_unix_ms: now } }), { mode: 0o600 });
    await (await import('node:fs/promises')).unlink(path.join(dir, 'ready', `${b.id}.json`));

    const report = await spool.releaseDeadClaims();
    expect(report).toEqual({ released: [a.id], completed: [b.id], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({ ready: [`${a.id}.json`], bundles: [`${a.id}.bundle`] });
    expect(uploading()).toEqual([]);
    expect(readJson<SpoolRecord>(path.join(dir, 'ready', `${a.id}.json`))).toMatchObject({ interruptions: 1, bundle: { size: 12 } });
  });

  it('an upload commit killed at any step is finished, never uploaded again; a bundle deleted from outside is never taken as uploaded', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const a = await readyRecord(spool, 'up-moved-aside');
    const b = await readyRecord(spool, 'up-claim-gone');
    const c = await readyRecord(spool, 'up-bundle-deleted');
    const pid = await deadPid();
    const dir = path.join(stateDir, 'spool');
    const { rename, unlink } = await import('node:fs/promises');
    const aside = (id: string) => path.join(dir, 'tmp', `${id}.${pid}.removed.00000000.tmp`);
    // a: killed after its bundle was renamed aside, before the claim went.
    await rename(path.join(dir, 'ready', `${a.id}.json`), path.join(dir, 'uploading', `${a.id}.${pid}.json`));
    await rename(spool.bundleFile(a.id), aside(a.id));
    // b: killed after the claim went, before the bundle set aside did.
    await unlink(path.join(dir, 'ready', `${b.id}.json`));
    await rename(spool.bundleFile(b.id), aside(b.id));
    // c: a dead upload claim whose bundle someone deleted: released, and its next upload fails it (not "completed").
    await rename(path.join(dir, 'ready', `${c.id}.json`), path.join(dir, 'uploading', `${c.id}.${pid}.json`));
    await unlink(spool.bundleFile(c.id));

    // Another drain's clean-up first: the bundle b set aside goes (no claim names it); a's stays, the mark of its commit.
    expect(await spool.removeOrphanTemps()).toBe(1);
    expect(spoolFiles(stateDir).tmp).toEqual([path.basename(aside(a.id))]);
    expect(await spool.releaseDeadClaims()).toEqual({ released: [c.id], completed: [a.id], failed: [] });
    expect(await spool.removeOrphanTemps()).toBe(0);
    expect(spoolFiles(stateDir)).toMatchObject({ ready: [`${c.id}.json`], bundles: [], tmp: [] });
    expect(uploading()).toEqual([]);
  });

  it('an upload commit leaves nothing behind: the claim, the bundle and the bundle set aside are gone', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const a = await readyRecord(spool, 'up-commit');
    const claim = (await spool.claimNext('ready'))!;
    expect(claim.id).toBe(a.id);
    await spool.completeUpload(claim, 'up-1');
    expect(spoolFiles(stateDir)).toMatchObject({ ready: [], bundles: [], tmp: [] });
    expect(uploading()).toEqual([]);
  });

  it('a ready bundle is trusted unread only while it is the very file committed', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const a = await readyRecord(spool, 'up-identity');
    const record = readJson<SpoolRecord>(path.join(stateDir, 'spool', 'ready', `${a.id}.json`));
    expect(await spool.bundleUnchanged(record)).toBe(true);
    // Same size, rewritten in place: its mtime moves on (set here: the clock may not have ticked yet).
    await writeFile(spool.bundleFile(a.id), 'bundle byteZ');
    const { utimes } = await import('node:fs/promises');
    await utimes(spool.bundleFile(a.id), new Date(now + 1_000), new Date(now + 1_000));
    expect(await spool.bundleUnchanged(record)).toBe(false);
    // A record from before identities were kept is always re-hashed.
    expect(await spool.bundleUnchanged({ ...record, bundle: { ...record.bundle!, identity: undefined } })).toBe(false);
  });

  it('workers sharing a claimer claim each record once, oldest first, and a record replaced after it was read is read again', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push((await readyRecord(spool, `up-shared-${i}`)).id);
    const next = spool.claimer('ready', ids);
    const claimed = (await Promise.all([1, 2, 3].map(async () => {
      const mine = [];
      for (let c = await next(); c !== undefined; c = await next()) mine.push(c.id);
      return mine;
    }))).flat();
    expect(claimed.sort()).toEqual([...ids].sort());
    expect(await next()).toBeUndefined();

    const b = await readyRecord(spool, 'up-reread');
    const claim = (await spool.claim('ready', b.id, { identity: 'another file', text: 'not the record', record: undefined }))!;
    expect(claim.damaged).toBeUndefined();
    expect(claim.record).toMatchObject({ id: b.id, payload: { session_id: 'up-reread' } });
  });
});
