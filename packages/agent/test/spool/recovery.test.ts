/**
 * Recovery after crashes at each step: dead claims released, finished or failed, temp files of dead writers
 * removed. Crashes are made real where a process can be: a killed worker's pid is one that has exited.
 */
import { writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_INTERRUPTIONS, newRecordId, Spool, type SpoolRecord } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { readJson, spoolFiles } from '../../../../test/support/cli-process.js';
import {
  deadPid,
  enqueueRecord,
  killedWorker as leaveKilledWorker,
  readyRecord as makeReady,
  uploadClaims,
} from '../../../../test/support/spool.js';
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

const enqueue = (spool: Spool, sessionId?: string) => enqueueRecord(spool, now, sessionId);
const readyRecord = (spool: Spool, sessionId: string) => makeReady(spool, now, sessionId);
const killedWorker = (id: string, leave?: { temp?: boolean; bundle?: string; named?: boolean }) =>
  leaveKilledWorker(stateDir, now, id, leave);
const uploading = () => uploadClaims(stateDir);

describe('recovery after a crash', () => {
  it('a claim whose worker died goes back to intake, counted as an interruption; its temp files go', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    await killedWorker(record.id, { temp: true });
    const report = await spool.releaseDeadClaims();
    expect(report).toEqual({ released: [record.id], completed: [], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [`${record.id}.json`], building: [], tmp: [], bundles: [] });
    expect(readJson(path.join(stateDir, 'spool', 'intake', `${record.id}.json`))).toMatchObject({
      interruptions: 1,
      attempts: 0,
    });
  });

  it('a crash after the bundle was placed but before the claim named it: released, the bundle removed', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    await killedWorker(record.id, { bundle: 'bundle' });
    expect(await spool.releaseDeadClaims()).toEqual({ released: [record.id], completed: [], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [`${record.id}.json`], building: [], bundles: [] });
  });

  it('a crash between naming the bundle in the claim and the commit rename: the commit is finished', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    await killedWorker(record.id, { bundle: 'bundle!', named: true });
    expect(await spool.releaseDeadClaims()).toEqual({ released: [], completed: [record.id], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({
      intake: [],
      building: [],
      ready: [`${record.id}.json`],
      bundles: [`${record.id}.bundle`],
    });
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
    const reports = await Promise.all([
      other.releaseDeadClaims(),
      spool.releaseDeadClaims(),
      (await Spool.open(stateLayout(stateDir))).releaseDeadClaims(),
    ]);
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
      await rename(
        path.join(stateDir, 'spool', 'intake', `${theirs.id}.json`),
        path.join(stateDir, 'spool', 'building', `${theirs.id}.${other.pid}.json`),
      );
      expect(await spool.heldByOthers()).toEqual([
        { id: theirs.id, state: 'building', pid: other.pid, harness: 'claude', session_id: 'theirs' },
      ]);
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
    await rename(
      path.join(stateDir, 'spool', 'intake', `${record.id}.json`),
      path.join(stateDir, 'spool', 'building', `${record.id}.${process.pid}.json`),
    );
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

describe('recovery of upload claims', () => {
  it('recovery: a dead upload claim goes back to ready with its bundle; one naming its upload is done', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const a = await readyRecord(spool, 'up-a');
    const b = await readyRecord(spool, 'up-b');
    const pid = await deadPid();
    const dir = path.join(stateDir, 'spool');
    const { rename } = await import('node:fs/promises');
    await rename(path.join(dir, 'ready', `${a.id}.json`), path.join(dir, 'uploading', `${a.id}.${pid}.json`));
    const bRecord = readJson<SpoolRecord>(path.join(dir, 'ready', `${b.id}.json`));
    await writeFile(
      path.join(dir, 'uploading', `${b.id}.${pid}.json`),
      JSON.stringify({ ...bRecord, uploaded: { upload_id: 'upl_b', at_unix_ms: now } }),
      { mode: 0o600 },
    );
    await (await import('node:fs/promises')).unlink(path.join(dir, 'ready', `${b.id}.json`));

    const report = await spool.releaseDeadClaims();
    expect(report).toEqual({ released: [a.id], completed: [b.id], failed: [] });
    expect(spoolFiles(stateDir)).toMatchObject({ ready: [`${a.id}.json`], bundles: [`${a.id}.bundle`] });
    expect(uploading()).toEqual([]);
    expect(readJson<SpoolRecord>(path.join(dir, 'ready', `${a.id}.json`))).toMatchObject({
      interruptions: 1,
      bundle: { size: 12 },
    });
  });

  it(
    'an upload commit killed at any step is finished, never uploaded again; a bundle deleted from outside is ' +
      'never taken as uploaded',
    async () => {
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

      // Another drain's clean-up first: the bundle b set aside goes (no claim names it); a's stays, the mark of its
      // commit.
      expect(await spool.removeOrphanTemps()).toBe(1);
      expect(spoolFiles(stateDir).tmp).toEqual([path.basename(aside(a.id))]);
      expect(await spool.releaseDeadClaims()).toEqual({ released: [c.id], completed: [a.id], failed: [] });
      expect(await spool.removeOrphanTemps()).toBe(0);
      expect(spoolFiles(stateDir)).toMatchObject({ ready: [`${c.id}.json`], bundles: [], tmp: [] });
      expect(uploading()).toEqual([]);
    },
  );
});
