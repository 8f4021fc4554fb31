/**
 * The upload stage of `blue-agent drain`, against a real Control API on 127.0.0.1 with the real local blob store and a
 * real spool: end to end, the policy switch (keep or --discard), an outage, a bundle changed on disk, and drains
 * killed with SIGKILL while uploading.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { appendFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { drain, type DrainOptions } from '../../src/drain/index.js';
import { drainCommand } from '../../src/cli/drain.js';
import { spoolListCommand } from '../../src/cli/spool.js';
import { bufferOutput, stateLayout, type Context } from '../../src/context.js';
import { createLocalBlobStore } from '@blue-agent/control-api/blobs/local.js';
import type { BlobStore } from '@blue-agent/control-api/blobs/types.js';
import { createControlServer, type ControlServer } from '@blue-agent/control-api/server.js';
import { openStore } from '@blue-agent/control-api/store/index.js';
import { Spool, type SpoolRecord } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { sha256, startTestServer, type TestServer } from '../../../../test/support/control-server.js';
import {
  claudeSession,
  CLAUDE_PROFILE,
  readJson,
  runCli,
  type ClaudeSession,
} from '../../../../test/support/cli-process.js';
import { startUploadStack } from '../../../../test/support/fault-proxy.js';

let t: TestHome;
let srv: TestServer;
let stateDir: string;
let claudeDir: string;
let cwd: string;
let now: number;
let ctx: Context;
let env: Record<string, string>;

/** No waiting between in-process retries. */
const fastRetry: DrainOptions['upload'] = {
  retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5, maxInlineRetryAfterMs: 10 },
  retryEnv: { sleep: async () => undefined, random: () => 0.5, now: () => Date.now() },
};

beforeEach(async () => {
  t = await makeTestHome();
  srv = await startTestServer();
  srv.server.store.publishPolicy(
    { session_upload: { presign_url: `${srv.url}/session-uploads/presign` } },
    srv.clock.now(),
  );
  stateDir = t.env.BLUE_AGENT_HOME!;
  claudeDir = path.join(t.home, '.claude');
  cwd = path.join(t.home, 'work', 'shop');
  await mkdir(cwd, { recursive: true });
  now = Date.now();
  env = { BLUE_AGENT_CONTROL_URL: srv.url, BLUE_AGENT_TOKEN: srv.alice.token };
  ctx = t.context({ env, clock: { now: () => now } });
});
afterEach(async () => {
  await srv.close().catch(() => undefined);
  await t.cleanup();
});

let enqueued = 0;
async function enqueue(session: { payload: SpoolRecord['payload'] }, profile = CLAUDE_PROFILE): Promise<SpoolRecord> {
  const spool = await Spool.open(stateLayout(stateDir));
  return spool.enqueueIntake({
    harness: 'claude',
    profile,
    payload: session.payload,
    createdAtUnixMs: now - 60_000 + ++enqueued,
  });
}

async function session(id: string, prompt: string, padBytes?: number): Promise<ClaudeSession> {
  return claudeSession(claudeDir, { id, cwd, prompt, ...(padBytes === undefined ? {} : { padBytes }) });
}

function bundleFile(id: string): string {
  return path.join(stateDir, 'spool', 'bundles', `${id}.bundle`);
}

/** Every file left in the spool's folders (uploading/ included). */
function spoolContents(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const folder of ['intake', 'building', 'ready', 'uploading', 'failed', 'bundles', 'tmp']) {
    out[folder] = readdirSync(path.join(stateDir, 'spool', folder)).sort();
  }
  return out;
}
const EMPTY = { intake: [], building: [], ready: [], uploading: [], failed: [], bundles: [], tmp: [] };

async function listUploads(): Promise<any[]> {
  const listed = await srv.call('GET', '/session-uploads', srv.alice.token);
  expect(listed.status).toBe(200);
  return listed.body.items as any[];
}

/** The current bundle of a captured session (by its id), through a signed URL as a client fetches it. */
async function download(sessionId: string): Promise<Buffer> {
  const signed = await srv.call('POST', `/session-uploads/${sessionId}/download`, srv.alice.token, {});
  expect(signed.status).toBe(200);
  const response = await fetch(signed.body.download_url, { method: signed.body.method, headers: signed.body.headers });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

function expectNoSecrets(text: string): void {
  expect(text).not.toContain(srv.alice.token);
  expect(text).not.toMatch(/[?&]sig=/);
}

describe('drain uploads', () => {
  it('end to end: a captured session is built, uploaded, verified by the server, removed from the spool', async () => {
    const s = await session('0e2c1a4e-7b1f-4c55-9a51-2b4d7a4d8e10', 'Add a coupon field to the checkout page');
    const record = await enqueue(s);
    const built = await drain(ctx, { skipUploads: true });
    expect(built.built.map((b) => b.id)).toEqual([record.id]);
    const spooled = await readFile(bundleFile(record.id));
    expect(sha256(spooled)).toBe(built.built[0]!.sha256);

    const out = bufferOutput();
    const code = await drainCommand(t.context({ env, stdout: out, clock: { now: () => now } }), { json: true });
    const report = JSON.parse(out.text());
    expect(code).toBe(0);
    expect(report).toMatchObject({ ok: true, built: [], failed: [], retried: [], left: 0, left_ready: 0 });
    expect(report.uploaded).toMatchObject([
      { id: record.id, session_id: s.id, already: false, size: spooled.length, sha256: sha256(spooled) },
    ]);
    expect(spoolContents()).toEqual(EMPTY);

    const items = await listUploads();
    expect(items).toHaveLength(1);
    // The captured session: the drain names it (our server says it at upload), and its current artifact is the upload.
    expect(report.uploaded[0].captured_session_id).toBe(items[0].id);
    expect(items[0]).toMatchObject({
      artifact_id: report.uploaded[0].upload_id,
      status: 'complete',
      harness: 'claude',
      native_session_id: s.id,
      title: 'Add a coupon field to the checkout page',
      size_bytes: spooled.length,
      sha256: sha256(spooled),
      compatibility_profile: CLAUDE_PROFILE,
      cwd,
      // Its profile supports session_resume: the resume picker lists it.
      resumable: true,
    });
    expect((await download(items[0].id)).equals(spooled)).toBe(true);

    const log = readFileSync(path.join(stateDir, 'capture.log'), 'utf8');
    expect(log).toContain('"event":"uploaded"');
    expectNoSecrets(log);
    expectNoSecrets(out.text());
  });

  it('a session captured under a profile without session_resume is uploaded as not resumable', async () => {
    const s = await session('capture-only-0001', 'Old harness, capture only');
    await enqueue(s, 'claude-v1_0_85');
    const out = bufferOutput();
    expect(
      await drainCommand(t.context({ env, stdout: out, clock: { now: () => now } }), { json: true }),
      out.text(),
    ).toBe(0);
    expect(await listUploads()).toMatchObject([
      { native_session_id: s.id, compatibility_profile: 'claude-v1_0_85', status: 'complete', resumable: false },
    ]);
  });

  it('`node bin/blue-agent.js drain --json` builds and uploads with the Control API from the environment', async () => {
    const s = await session('cli-0001', 'Write the release notes');
    const record = await enqueue(s);
    const result = await runCli(['drain', '--json'], { env: { ...t.env, ...env }, timeoutMs: 30_000 });
    expect(result.stderr).toBe('');
    expect(result.code, result.stdout).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({
      ok: true,
      built: [{ id: record.id }],
      uploaded: [{ id: record.id, session_id: s.id }],
      left: 0,
      left_ready: 0,
    });
    expectNoSecrets(result.stdout);
    expect(spoolContents()).toEqual(EMPTY);
    const items = await listUploads();
    expect(items).toMatchObject([
      {
        native_session_id: s.id,
        status: 'complete',
        title: 'Write the release notes',
        sha256: report.built[0].sha256,
        size_bytes: report.built[0].size,
      },
    ]);
  });

  it('no Control API configured: bundles stay ready, with a note and no error', async () => {
    const record = await enqueue(await session('offline-0001', 'Fix the flaky test'));
    const report = await drain(t.context({ clock: { now: () => now } }));
    expect(report).toMatchObject({ built: [{ id: record.id }], uploaded: [], failed: [], retried: [], left_ready: 1 });
    expect(report.notes.join('\n')).toMatch(/no Control API is configured/);
    expect(spoolContents().ready).toEqual([`${record.id}.json`]);
  });

  it('a policy without session_upload uploads nothing and keeps the records; --discard removes them', async () => {
    srv.server.store.publishPolicy({}, srv.clock.now());
    const record = await enqueue(await session('disabled-0001', 'Rename the config loader'));
    const report = await drain(ctx);
    expect(report).toMatchObject({
      built: [{ id: record.id }],
      uploaded: [],
      discarded: [],
      failed: [],
      retried: [],
      left_ready: 1,
    });
    expect(report.notes.join('\n')).toMatch(/disables session upload/);
    expect(spoolContents()).toMatchObject({ ready: [`${record.id}.json`], bundles: [`${record.id}.bundle`] });
    expect(await listUploads()).toEqual([]);

    const out = bufferOutput();
    const code = await drainCommand(t.context({ env, stdout: out, clock: { now: () => now } }), {
      json: true,
      discard: true,
    });
    expect(code).toBe(0);
    expect(JSON.parse(out.text())).toMatchObject({ ok: true, discarded: [record.id], uploaded: [], left_ready: 0 });
    expect(spoolContents()).toEqual(EMPTY);
    expect(await listUploads()).toEqual([]);
  });

  it('`drain --help` documents --discard', async () => {
    const result = await runCli(['drain', '--help'], { env: t.env });
    expect(result.stdout).toContain('--discard');
    expect(result.stdout).toMatch(/KEPT/);
  });

  it('server down: the record stays ready with attempts, last error; server up: the next drain uploads', async () => {
    // A first upload while the server is up leaves a last-known-good policy, as a real agent has.
    const first = await enqueue(await session('up-0001', 'First session'));
    expect((await drain(ctx, { upload: fastRetry })).uploaded.map((u) => u.id)).toEqual([first.id]);

    const port = Number(new URL(srv.url).port);
    await srv.server.close();
    const second = await enqueue(await session('down-0001', 'Second session'));
    const down = await drain(ctx, { upload: fastRetry });
    expect(down).toMatchObject({ built: [{ id: second.id }], uploaded: [], failed: [], left_ready: 1 });
    expect(down.retried).toMatchObject([{ id: second.id, stage: 'upload', code: 'UPLOAD_FAILED', attempts: 1 }]);
    expect(down.retried[0]!.next_attempt_at_unix_ms).toBeGreaterThan(now);
    const ready = readJson<SpoolRecord>(path.join(stateDir, 'spool', 'ready', `${second.id}.json`));
    expect(ready).toMatchObject({
      upload_attempts: 1,
      last_error: { code: 'UPLOAD_FAILED' },
      bundle: { size: down.built[0]!.size },
    });
    expectNoSecrets(JSON.stringify(down));

    const list = bufferOutput();
    await spoolListCommand(t.context({ stdout: list }), { json: true });
    expect(JSON.parse(list.text()).records).toMatchObject([
      {
        id: second.id,
        state: 'ready',
        upload_attempts: 1,
        last_error: expect.stringContaining('session-uploads/presign'),
        next_attempt_at_unix_ms: ready.next_attempt_at_unix_ms,
      },
    ]);

    // Not due yet: a drain right away leaves it alone.
    let again: ControlServer | undefined = createControlServer({
      store: await openStore(srv.storeOptions),
      blobs: (publicUrl) =>
        createLocalBlobStore({ dir: srv.blobDir, publicUrl, secret: 'x'.repeat(32), clock: () => srv.clock.now() }),
      clock: srv.clock,
    });
    await again.listen('127.0.0.1', port);
    try {
      expect((await drain(ctx, { upload: fastRetry })).uploaded).toEqual([]);
      now += 60 * 60_000;
      const up = await drain(ctx, { upload: fastRetry });
      expect(up).toMatchObject({
        uploaded: [{ id: second.id, already: false }],
        retried: [],
        failed: [],
        left_ready: 0,
      });
      expect(spoolContents()).toEqual(EMPTY);
      const items = await listUploads();
      expect(items.map((i) => [i.native_session_id, i.status]).sort()).toEqual([
        ['down-0001', 'complete'],
        ['up-0001', 'complete'],
      ]);
    } finally {
      await again.close();
      again = undefined;
      await rm(srv.root, { recursive: true, force: true });
    }
  });

  it(
    'a refused token with a record waiting from an earlier failure: not ok, the record listed with its error, the ' +
      'cause named',
    async () => {
      const record = await enqueue(await session('auth-0001', 'Refused token'));
      const badEnv = { BLUE_AGENT_CONTROL_URL: srv.url, BLUE_AGENT_TOKEN: 'blue_not-a-real-token' };
      const first = await drain(t.context({ env: badEnv, clock: { now: () => now } }), { upload: fastRetry });
      expect(first.retried).toMatchObject([{ id: record.id, code: 'AUTH_FAILED', stage: 'upload' }]);

      // A manual drain right away: the record is not due, so nothing is tried; it must still not look fine.
      const out = bufferOutput();
      const code = await drainCommand(
        t.context({ env: badEnv, stdout: out, clock: { now: () => now } }),
        { json: true },
        { upload: fastRetry },
      );
      const report = JSON.parse(out.text());
      expect(code).toBe(1);
      expect(report).toMatchObject({ ok: false, built: [], uploaded: [], failed: [], retried: [], left_ready: 1 });
      expect(report.waiting).toEqual([
        expect.objectContaining({
          id: record.id,
          state: 'ready',
          session_id: 'auth-0001',
          code: 'AUTH_FAILED',
          attempts: 1,
          next_attempt_at_unix_ms: first.retried[0]!.next_attempt_at_unix_ms,
        }),
      ]);
      expect(report.waiting[0].reason).toContain('refused the token from BLUE_AGENT_TOKEN');
      const note = (report.notes as string[]).find((n) => n.includes('[AUTH_FAILED]'));
      expect(note).toContain('cannot check the governance policy');
      expect(note).toContain('BLUE_AGENT_TOKEN (from the environment) overrides the token file: correct or unset it');

      const human = bufferOutput();
      expect(
        await drainCommand(
          t.context({ env: badEnv, stdout: human, clock: { now: () => now } }),
          {},
          { upload: fastRetry },
        ),
      ).toBe(1);
      const next = new Date(first.retried[0]!.next_attempt_at_unix_ms!).toISOString();
      expect(human.text()).toMatch(
        new RegExp(
          `^waiting ${record.id}  claude auth-0001  upload \\[AUTH_FAILED\\] .*\\(next try after ` +
            `${next.replace(/\./g, '\\.')}\\)$`,
          'm',
        ),
      );
      expect(human.text()).toMatch(
        /^note: cannot check the governance policy, so nothing was uploaded \[AUTH_FAILED\]/m,
      );
      expectNoSecrets(human.text());

      // The detached worker (--quiet) prints nothing, whatever the outcome.
      const quiet = bufferOutput();
      await drainCommand(
        t.context({ env: badEnv, stdout: quiet, clock: { now: () => now } }),
        { quiet: true },
        { upload: fastRetry },
      );
      expect(quiet.text()).toBe('');
    },
  );

  it('server down with a record waiting from an earlier failure: not ok, listed, and the outage named', async () => {
    const first = await enqueue(await session('lkg-0001', 'First session'));
    expect((await drain(ctx, { upload: fastRetry })).uploaded.map((u) => u.id)).toEqual([first.id]);
    await srv.server.close();
    const record = await enqueue(await session('wait-0001', 'Waits'));
    const down = await drain(ctx, { upload: fastRetry });
    expect(down.retried).toMatchObject([{ id: record.id, code: 'UPLOAD_FAILED' }]);

    const out = bufferOutput();
    const code = await drainCommand(
      t.context({ env, stdout: out, clock: { now: () => now } }),
      { json: true },
      { upload: fastRetry },
    );
    const report = JSON.parse(out.text());
    expect(code).toBe(1);
    expect(report).toMatchObject({
      ok: false,
      retried: [],
      left_ready: 1,
      waiting: [{ id: record.id, code: 'UPLOAD_FAILED' }],
    });
    expect(report.waiting[0].reason).toMatch(/connection refused|ECONNREFUSED/);
    expect(report.notes.join('\n')).toMatch(
      new RegExp(
        String.raw`\[CONTROL_API_UNREACHABLE\].*last-known-good.*check control_url \/ ` +
          'BLUE_AGENT_CONTROL_URL; run `blue-agent doctor`',
      ),
    );
    await rm(srv.root, { recursive: true, force: true });
  });

  it('the human report lists at most 20 waiting records, then a count', async () => {
    const { renderDrain } = await import('../../src/cli/drain.js');
    const waiting = Array.from({ length: 23 }, (_, i) => ({
      id: `r${i}`,
      state: 'ready' as const,
      harness: 'claude',
      profile: CLAUDE_PROFILE,
      session_id: `s${i}`,
      code: 'UPLOAD_FAILED',
      reason: 'connection refused',
      failed_at_unix_ms: 0,
      attempts: 1,
      next_attempt_at_unix_ms: 1_000,
    }));
    const text = renderDrain({
      recovered: { released: [], completed: [], failed: [], temps_removed: 0 },
      built: [],
      unchanged: [],
      failed: [],
      retried: [],
      left: 0,
      uploaded: [],
      discarded: [],
      left_ready: 23,
      waiting,
      deferred: [],
      changing: [],
      superseded: [],
      held: [],
      notes: [],
    });
    expect(text.split('\n').filter((l) => l.startsWith('waiting r'))).toHaveLength(20);
    expect(text).toContain('waiting … and 3 more after an earlier failure');
  });

  it(
    "the ready record keeps the bundle's manifest, and the upload takes it from there instead of inflating the " +
      'bundle',
    async () => {
      const a = await enqueue(await session('kept-0001', 'Manifest kept in the record'));
      const b = await enqueue(await session('kept-0002', 'Manifest read from the bundle'));
      await drain(ctx, { skipUploads: true });
      const readyFile = (id: string) => path.join(stateDir, 'spool', 'ready', `${id}.json`);
      const ready = readJson<SpoolRecord>(readyFile(a.id));
      expect(ready.bundle!.manifest).toMatchObject({
        title: 'Manifest kept in the record',
        compatibility_profile: CLAUDE_PROFILE,
      });
      // What the upload sends is the record's manifest (here given another title; the bundle is untouched, so its
      // identity still holds). b's record has none, as a record written by an earlier blue-agent: read from the bundle.
      await writeFile(
        readyFile(a.id),
        JSON.stringify({
          ...ready,
          bundle: {
            ...ready.bundle,
            manifest: { ...(ready.bundle!.manifest as object), title: 'Taken from the record' },
          },
        }),
      );
      const rb = readJson<SpoolRecord>(readyFile(b.id));
      delete rb.bundle!.manifest;
      await writeFile(readyFile(b.id), JSON.stringify(rb));
      const report = await drain(ctx, { upload: fastRetry });
      expect(report.uploaded).toHaveLength(2);
      expect((await listUploads()).map((i: { title: string }) => i.title).sort()).toEqual([
        'Manifest read from the bundle',
        'Taken from the record',
      ]);
    },
  );

  it('a bundle changed on disk after it was spooled is failed before any upload, and never uploaded', async () => {
    const record = await enqueue(await session('tamper-0001', 'Tamper with me'));
    await drain(ctx, { skipUploads: true });
    const bytes = await readFile(bundleFile(record.id));
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at]! ^ 0xff;
    await writeFile(bundleFile(record.id), bytes);

    const report = await drain(ctx, { upload: fastRetry });
    expect(report.uploaded).toEqual([]);
    expect(report.failed).toMatchObject([
      { id: record.id, stage: 'upload', code: 'BUNDLE_INVALID', reason: expect.stringContaining('changed on disk') },
    ]);
    // The failed record keeps its bundle for inspection: nothing captured is thrown away.
    expect(spoolContents()).toMatchObject({
      ready: [],
      uploading: [],
      bundles: [`${record.id}.bundle`],
      failed: [`${record.id}.json`],
    });
    expect(readJson<SpoolRecord>(path.join(stateDir, 'spool', 'failed', `${record.id}.json`)).last_error).toMatchObject(
      { code: 'BUNDLE_INVALID' },
    );
    expect(await listUploads()).toEqual([]);
  });

  it('a session captured again with unchanged content uploads nothing; a new turn uploads again', async () => {
    const s = await session('again-0001', 'Draft the changelog');
    const first = await enqueue(s);
    expect((await drain(ctx, { upload: fastRetry })).uploaded.map((u) => u.id)).toEqual([first.id]);

    // The harness fires its end hook again without a new turn (after every turn and at exit, or a resume closed at
    // once).
    const second = await enqueue(s);
    const out = bufferOutput();
    expect(await drainCommand(t.context({ env, stdout: out, clock: { now: () => now } }), {}), out.text()).toBe(0);
    expect(out.text()).toContain(
      `unchanged ${second.id}  claude ${s.id}  holds what ${first.id} captured: nothing to upload`,
    );
    expect(out.text()).toContain('0 built, 1 unchanged, 0 uploaded');
    expect(spoolContents()).toEqual(EMPTY);
    expect(await listUploads()).toHaveLength(1);
    expect(readFileSync(path.join(stateDir, 'capture.log'), 'utf8')).toContain(
      `"event":"unchanged","harness":"claude","profile":"${CLAUDE_PROFILE}","session_id":"${s.id}","record":"` +
        `${second.id}","same_as":"${first.id}"`,
    );

    // A new turn: a new upload (artifact) of the same captured session, which becomes its current one.
    await appendFile(
      s.transcript,
      JSON.stringify({
        type: 'user',
        uuid: 'u2',
        sessionId: s.id,
        message: { role: 'user', content: 'And the README' },
      }) + '\n',
    );
    const third = await enqueue(s);
    const report = await drain(ctx, { upload: fastRetry });
    expect(report).toMatchObject({ built: [{ id: third.id }], unchanged: [], uploaded: [{ id: third.id }] });
    const items = await listUploads();
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ artifact_id: report.uploaded[0]!.upload_id, sha256: report.built[0]!.sha256 });
    expect(
      (await srv.call('GET', `/session-uploads/${items[0].id}`, srv.alice.token)).body.artifacts.map(
        (a: { status: string }) => a.status,
      ),
    ).toEqual(['complete', 'superseded']);
  });

  it('a second capture of the same content while the first waits for upload is not uploaded twice', async () => {
    const s = await session('again-0002', 'Draft the changelog');
    await enqueue(s);
    await enqueue(s);
    const report = await drain(ctx, { upload: fastRetry });
    expect(report.built).toHaveLength(1);
    expect(report.unchanged).toHaveLength(1);
    expect(report.uploaded).toHaveLength(1);
    expect(await listUploads()).toHaveLength(1);
  });

  it('content whose upload failed for good, or was discarded, is uploaded when it is captured again', async () => {
    const s = await session('again-0003', 'Tamper, then capture again');
    const record = await enqueue(s);
    await drain(ctx, { skipUploads: true });
    const bytes = await readFile(bundleFile(record.id));
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    await writeFile(bundleFile(record.id), bytes);
    expect((await drain(ctx, { upload: fastRetry })).failed).toMatchObject([{ id: record.id, stage: 'upload' }]);

    const again = await enqueue(s);
    const report = await drain(ctx, { upload: fastRetry });
    expect(report).toMatchObject({ built: [{ id: again.id }], unchanged: [], uploaded: [{ id: again.id }] });

    // Discarded while the policy disabled capture: never uploaded, so not a duplicate later either.
    const other = await session('again-0004', 'Discard me');
    srv.server.store.publishPolicy({}, srv.clock.now());
    const discarded = await enqueue(other);
    expect((await drain(ctx, { discard: true })).discarded).toEqual([discarded.id]);
    srv.server.store.publishPolicy(
      { session_upload: { presign_url: `${srv.url}/session-uploads/presign` } },
      srv.clock.now(),
    );
    const later = await enqueue(other);
    expect(await drain(ctx, { upload: fastRetry })).toMatchObject({
      built: [{ id: later.id }],
      unchanged: [],
      uploaded: [{ id: later.id }],
    });
  });

  it('drains killed with SIGKILL while uploading: each session registered exactly once, the spool empty', async () => {
    const SESSIONS = 12;
    const MAX_ROUNDS = 30;
    const sessions: ClaudeSession[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const s = await session(`crash-${String(i).padStart(4, '0')}`, `Crash session ${i}`);
      // Incompressible lines, so each bundle takes a moment to upload and the kills land in every step of it.
      const noise = Array.from({ length: 300 }, (_, n) =>
        JSON.stringify({
          sessionId: s.id,
          cwd,
          type: 'system',
          uuid: `n${n}`,
          content: randomBytes(3_000).toString('hex'),
        }),
      );
      await appendFile(s.transcript, `${noise.join('\n')}\n`);
      sessions.push(s);
      await enqueue(s);
    }
    const built = (await drain(ctx, { skipUploads: true })).built;
    expect(built).toHaveLength(SESSIONS);
    const childEnv = { ...t.env, ...env };
    const uploading = path.join(stateDir, 'spool', 'uploading');
    let killed = 0;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const run = runCli(['drain', '--json'], { env: childEnv, timeoutMs: 30_000 });
      let exited = false;
      void run.then(() => void (exited = true));
      // Kill it once it holds an upload claim, a little later each round.
      const deadline = Date.now() + 10_000;
      while (!exited && readdirSync(uploading).length === 0 && Date.now() < deadline) await sleep(2);
      await sleep((round * 13) % 90);
      if (!exited) {
        run.child.kill('SIGKILL');
        killed++;
      }
      await run;
      if (readdirSync(path.join(stateDir, 'spool', 'ready')).length === 0 && readdirSync(uploading).length === 0) break;
    }
    expect(killed).toBeGreaterThanOrEqual(Math.min(SESSIONS, 8));

    const final = await runCli(['drain', '--json'], { env: childEnv, timeoutMs: 30_000 });
    expect(final.code, final.stdout).toBe(0);
    expect(JSON.parse(final.stdout)).toMatchObject({ ok: true, failed: [], retried: [], left_ready: 0 });
    expect(spoolContents()).toEqual(EMPTY);

    const items = await listUploads();
    expect(items.every((i) => i.status === 'complete')).toBe(true);
    // A retried upload of the same bytes never made a second artifact of its session.
    for (const item of items)
      expect((await srv.call('GET', `/session-uploads/${item.id}`, srv.alice.token)).body.artifacts).toHaveLength(1);
    expect(items.map((i) => i.native_session_id).sort()).toEqual(sessions.map((s) => s.id).sort());
    expect(items.map((i) => [i.native_session_id, i.sha256, i.size_bytes]).sort()).toEqual(
      built.map((b) => [b.session_id, b.sha256, b.size]).sort(),
    );
    for (const item of items) expect(sha256(await download(item.id))).toBe(item.sha256);
  }, 120_000);
});

describe('a record another drain holds', () => {
  it('is reported as held, with the holder, by the drain report, its --json, its exit code and status; the holder ' +
    'reports the outcome', async () => {
    const stack = await startUploadStack();
    // The first drain's presign reaches the server, and its answer is held here until the second drain has run.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    stack.proxy.rules.push({
      method: 'POST',
      path: /^\/session-uploads\/presign$/,
      times: 1,
      action: { kind: 'before-relay', hook: () => released },
    });
    const childEnv = { ...t.env, BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token };
    const uploading = path.join(stateDir, 'spool', 'uploading');
    let first: ReturnType<typeof runCli> | undefined;
    try {
      const s = await session('5e1d0000-0000-4000-8000-000000000001', 'The only record');
      const record = await enqueue(s);
      expect((await drain(ctx, { skipUploads: true })).built.map((b) => b.id)).toEqual([record.id]);

      first = runCli(['drain', '--json'], { env: childEnv, timeoutMs: 60_000 });
      const holder = first.child.pid!;
      const deadline = Date.now() + 20_000;
      while (stack.proxy.count('POST', /^\/session-uploads\/presign$/) === 0 && Date.now() < deadline) await sleep(20);
      expect(readdirSync(uploading)).toEqual([`${record.id}.${holder}.json`]);

      // The second drain: nothing it could try, nothing failed; the record is another drain's, and it says so.
      const second = await runCli(['drain', '--json'], { env: childEnv, timeoutMs: 30_000 });
      expect(second.code, second.stdout + second.stderr).toBe(75);
      const report = JSON.parse(second.stdout);
      expect(report).toMatchObject({
        ok: false,
        built: [],
        uploaded: [],
        failed: [],
        retried: [],
        waiting: [],
        left: 0,
        left_ready: 0,
      });
      expect(report.held).toEqual([
        { id: record.id, state: 'uploading', pid: holder, harness: 'claude', session_id: s.id },
      ]);
      const human = await runCli(['drain'], { env: childEnv, timeoutMs: 30_000 });
      expect(human.code).toBe(75);
      expect(human.stdout).toContain(
        `held    ${record.id}  claude ${s.id}  being uploaded by another drain (pid ${holder})`,
      );
      expect(human.stdout).toMatch(
        new RegExp(
          '^0 built, 0 uploaded, 0 failed, 0 to retry, 0 waiting to be built, 0 waiting to be ' +
            'uploaded, 1 held by another drain$',
          'm',
        ),
      );
      const status = await runCli(['status', '--json'], { env: childEnv, timeoutMs: 30_000 });
      expect(JSON.parse(status.stdout).last_drain).toMatchObject({
        ok: false,
        failed: 0,
        retried: 0,
        waiting: 0,
        held: [{ id: record.id, state: 'uploading', pid: holder }],
      });
      const statusText = (await runCli(['status'], { env: childEnv, timeoutMs: 30_000 })).stdout;
      expect(statusText).toMatch(
        new RegExp(
          `^Last drain +.*: not finished: 1 record held by another drain \\(pid ${holder}\\), whose outcome that ` +
            `drain reports`,
          'm',
        ),
      );
      expect(statusText).not.toMatch(/^Last drain .*: ok/m);

      // The holder goes on and reports what became of it.
      release();
      const done = await first;
      expect(done.code, done.stdout + done.stderr).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ ok: true, uploaded: [{ id: record.id }], held: [] });
      expect(
        JSON.parse((await runCli(['status', '--json'], { env: childEnv, timeoutMs: 30_000 })).stdout).last_drain,
      ).toMatchObject({ ok: true, uploaded: 1 });
      expect((await stack.listUploads()).map((u) => u.native_session_id)).toEqual([s.id]);
    } finally {
      release();
      first?.child.kill('SIGKILL');
      await first?.catch(() => undefined);
      await stack.close();
    }
  }, 120_000);
});

describe('uploads in a bounded window', () => {
  it('keeps several uploads in flight at once, never more than the window, each record uploaded once', async () => {
    // The server checks each stored object on complete: count the checks under way at once. Each waits until a third
    // one arrives (or a second passes), so uploads that ran one after the other would never overlap.
    await srv.close();
    let inFlight = 0;
    let most = 0;
    const waiters: (() => void)[] = [];
    const wrapBlobs = (inner: BlobStore): BlobStore => ({
      ...inner,
      stat: async (key, options) => {
        inFlight++;
        most = Math.max(most, inFlight);
        if (inFlight >= 3) for (const w of waiters.splice(0)) w();
        else await new Promise<void>((resolve) => waiters.push(resolve) && setTimeout(resolve, 1_000).unref());
        try {
          return await inner.stat(key, options);
        } finally {
          inFlight--;
        }
      },
    });
    srv = await startTestServer({ wrapBlobs });
    srv.server.store.publishPolicy(
      { session_upload: { presign_url: `${srv.url}/session-uploads/presign` } },
      srv.clock.now(),
    );
    env = { BLUE_AGENT_CONTROL_URL: srv.url, BLUE_AGENT_TOKEN: srv.alice.token };
    ctx = t.context({ env, clock: { now: () => now } });
    const count = 12;
    for (let i = 0; i < count; i++)
      await enqueue(await session(`5a0b0c0d-0000-4000-8000-${String(i).padStart(12, '0')}`, `task ${i}`));
    await drain(ctx, { skipUploads: true });
    const report = await drain(ctx, { uploadWindow: 4 });
    expect(report.uploaded).toHaveLength(count);
    expect(new Set(report.uploaded.map((u) => u.session_id)).size).toBe(count);
    expect(most).toBeGreaterThanOrEqual(3);
    expect(most).toBeLessThanOrEqual(4);
    expect(spoolContents()).toEqual(EMPTY);
  });
});
