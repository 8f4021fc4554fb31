/**
 * Claims and state changes: intake -> building -> ready, releases with their attempts and delays, failing,
 * and the upload claims of ready records.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newRecordId, RETRY_DELAYS_MS, Spool, type SpoolRecord } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { readJson, spoolFiles } from '../../../../test/support/cli-process.js';
import { enqueueRecord, fakeBundle, readyRecord as makeReady, uploadClaims } from '../../../../test/support/spool.js';
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
const uploading = () => uploadClaims(stateDir);

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
    // The file's identity as committed (device, inode, size, mtime): a ready bundle still holding it need not be
    // re-hashed.
    const info = await stat(spool.bundleFile(record.id), { bigint: true });
    expect(ready.bundle).toEqual({
      size: 12,
      sha256: 'a'.repeat(64),
      built_at_unix_ms: now,
      identity: `${info.dev}:${info.ino}:12:${info.mtimeNs}`,
    });
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
    expect(released).toMatchObject({
      attempts: 1,
      last_error: { code: 'INTERNAL', message: 'boom' },
      next_attempt_at_unix_ms: now + RETRY_DELAYS_MS[0]!,
    });
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
    const released = await spool.release(claim, {
      error: { code: 'SPOOL_FULL', message: 'full', at_unix_ms: now },
      countAttempt: false,
    });
    expect(released.attempts).toBe(0);
    expect(released.next_attempt_at_unix_ms).toBeUndefined();
    expect(await spool.claimNext('intake')).toBeDefined();
  });

  it('fail keeps the record with its reason and removes its bundle and temp files', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    const claim = (await spool.claimNext('intake'))!;
    await fakeBundle(spool, record.id);
    const failed = await spool.fail(
      claim,
      { code: 'ARTIFACT_INVALID', message: 'transcript missing', at_unix_ms: now },
      { countAttempt: true },
    );
    expect(failed).toMatchObject({
      attempts: 1,
      last_error: { code: 'ARTIFACT_INVALID', message: 'transcript missing' },
      failed_at_unix_ms: now,
    });
    expect(spoolFiles(stateDir)).toMatchObject({
      intake: [],
      building: [],
      failed: [`${record.id}.json`],
      tmp: [],
      bundles: [],
    });
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

describe('upload claims', () => {
  it(
    'claims ready records into uploading/, releases them with attempts, error and next attempt, completes by ' +
      'removing everything',
    async () => {
      const spool = await Spool.open(stateLayout(stateDir), { now: clock });
      const record = await readyRecord(spool, 'up-1');
      const claim = (await spool.claimNext('ready'))!;
      expect(claim).toMatchObject({ id: record.id, from: 'ready' });
      expect(uploading()).toEqual([`${record.id}.${process.pid}.json`]);
      expect((await spool.listRecords())[0]).toMatchObject({
        state: 'uploading',
        worker_pid: process.pid,
        worker_alive: true,
        size: 12,
      });

      const released = await spool.releaseUpload(claim, {
        error: { code: 'UPLOAD_FAILED', message: 'down', at_unix_ms: now },
        retryAtUnixMs: now + 5_000,
      });
      expect(released).toMatchObject({
        upload_attempts: 1,
        last_error: { code: 'UPLOAD_FAILED' },
        next_attempt_at_unix_ms: now + 5_000,
        bundle: { size: 12 },
      });
      expect(spoolFiles(stateDir)).toMatchObject({ ready: [`${record.id}.json`], bundles: [`${record.id}.bundle`] });
      expect((await spool.listRecords())[0]).toMatchObject({
        state: 'ready',
        upload_attempts: 1,
        last_error: 'down',
        next_attempt_at_unix_ms: now + 5_000,
      });
      expect(await spool.claimNext('ready')).toBeUndefined(); // not due yet

      now += 5_000;
      const again = (await spool.claimNext('ready'))!;
      await spool.completeUpload(again, 'upl_1');
      expect(spoolFiles(stateDir)).toMatchObject({
        intake: [],
        building: [],
        ready: [],
        failed: [],
        bundles: [],
        tmp: [],
      });
      expect(uploading()).toEqual([]);
    },
  );

  it('an upload the server refuses for good is failed with its reason and keeps its bundle', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await readyRecord(spool, 'up-refused');
    const claim = (await spool.claimNext('ready'))!;
    const failed = await spool.fail(claim, {
      code: 'UPLOAD_REJECTED',
      message: 'harness not allowed',
      at_unix_ms: now,
    });
    expect(failed).toMatchObject({ last_error: { code: 'UPLOAD_REJECTED' }, bundle: { size: 12 } });
    expect(spoolFiles(stateDir)).toMatchObject({
      ready: [],
      failed: [`${record.id}.json`],
      bundles: [`${record.id}.bundle`],
    });
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

  it(
    'workers sharing a claimer claim each record once, oldest first, and a record replaced after it was read is ' +
      'read again',
    async () => {
      const spool = await Spool.open(stateLayout(stateDir), { now: clock });
      const ids = [];
      for (let i = 0; i < 6; i++) ids.push((await readyRecord(spool, `up-shared-${i}`)).id);
      const next = spool.claimer('ready', ids);
      const claimed = (
        await Promise.all(
          [1, 2, 3].map(async () => {
            const mine = [];
            for (let c = await next(); c !== undefined; c = await next()) mine.push(c.id);
            return mine;
          }),
        )
      ).flat();
      expect(claimed.sort()).toEqual([...ids].sort());
      expect(await next()).toBeUndefined();

      const b = await readyRecord(spool, 'up-reread');
      const claim = (await spool.claim('ready', b.id, {
        identity: 'another file',
        text: 'not the record',
        record: undefined,
      }))!;
      expect(claim.damaged).toBeUndefined();
      expect(claim.record).toMatchObject({ id: b.id, payload: { session_id: 'up-reread' } });
    },
  );
});
