/**
 * The spool opened: its folders and their safety checks, a full disk, and listing what it holds.
 */
import { chmod, mkdir, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FileHandle } from 'node:fs/promises';
import { MAX_ATTEMPTS, Spool, type SpoolIO } from '../../src/spool/index.js';
import { rejected } from '../../../../test/support/errors.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { readJson, spoolFiles } from '../../../../test/support/cli-process.js';
import { enqueueRecord, fakeBundle } from '../../../../test/support/spool.js';
import { stateLayout } from '../../src/context.js';

const payload = {
  session_id: 'sess-1',
  cwd: '/work/project',
  transcript_path: '/home/me/.claude/projects/-work-project/sess-1.jsonl',
};

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

describe('layout and safety', () => {
  it('creates the spool folders 0700 and writes records 0600', async () => {
    const spool = await Spool.open(stateLayout(stateDir), { now: clock });
    const record = await enqueue(spool);
    for (const folder of ['', 'intake', 'building', 'ready', 'failed', 'bundles', 'tmp']) {
      expect(((await stat(path.join(stateDir, 'spool', folder))).mode & 0o777).toString(8), folder).toBe('700');
    }
    const file = path.join(stateDir, 'spool', 'intake', `${record.id}.json`);
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600');
    expect(readJson(file)).toMatchObject({
      id: record.id,
      harness: 'claude',
      profile: 'claude-v2_0_12',
      payload,
      attempts: 0,
    });
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
    expect((await rejected(spool.release(claim, { error: { code: 'X', message: 'y', at_unix_ms: now } }))).code).toBe(
      'SPOOL_FULL',
    );
    // Still one file: the claim, with its old content; recovery puts it back once this holder is gone.
    expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [`${record.id}.${process.pid}.json`], tmp: [] });
    expect(readJson(claim.file)).toMatchObject({ attempts: 0 });
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
    await spool.fail(
      (await spool.claim('intake', c.id))!,
      { code: 'INTERNAL', message: 'gave up', at_unix_ms: now },
      { countAttempt: true },
    );
    await spool.claim('intake', d.id);
    const listed = await spool.listRecords();
    expect(listed.map((r) => [r.session_id, r.state, r.size, r.attempts, r.last_error])).toEqual([
      ['waiting', 'intake', null, 0, null],
      ['built', 'ready', 10, 0, null],
      ['broken', 'failed', null, MAX_ATTEMPTS, 'gave up'],
      ['inflight', 'building', null, 0, null],
    ]);
    expect(listed[0]).toMatchObject({
      id: a.id,
      harness: 'claude',
      profile: 'claude-v2_0_12',
      created_at_unix_ms: a.created_at_unix_ms,
    });
    expect(listed[3]).toMatchObject({ worker_pid: process.pid, worker_alive: true });
  });
});
