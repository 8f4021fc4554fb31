/**
 * `drain` against the real Control API and local blob store, through a fault-injecting proxy: an outage, 5xx and 429
 * answers, a connection cut mid-upload, a lost complete answer, bytes that do not match their digest, and a signed URL
 * that expires before the upload reaches it. Whatever happens, a session is registered once, complete with its
 * SHA-256, or its record fails with the server's reason and keeps its bundle: nothing is lost and nothing duplicated.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { drain, type DrainOptions, type DrainReport } from '../../src/drain/index.js';
import { stateLayout, type Context } from '../../src/context.js';
import { Spool, type SpoolRecord } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { sha256 } from '../../../../test/support/control-server.js';
import { claudeSession, CLAUDE_PROFILE, readJson, type ClaudeSession } from '../../../../test/support/cli-process.js';
import { startUploadStack, type UploadStack } from '../../../../test/support/fault-proxy.js';

const PRESIGN = /^\/session-uploads\/presign$/;
const COMPLETE = /^\/session-uploads\/[^/]+\/complete$/;
const BLOB = /^\/blobs\//;

let t: TestHome;
let stack: UploadStack | undefined;
let stateDir: string;
let claudeDir: string;
let cwd: string;
let now: number;

/** Every wait the retry loop asked for, by step; the waits themselves are real. */
let waits: { step: string; ms: number; status: number | undefined }[];
function fastUpload(): NonNullable<DrainOptions['upload']> {
  return {
    retry: { maxAttempts: 4, baseDelayMs: 20, maxDelayMs: 100, maxInlineRetryAfterMs: 2_000 },
    retryEnv: {
      sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      random: () => 0.5,
      now: () => Date.now(),
    },
    onRetry: (step, error, ms) => waits.push({ step, ms, status: error.status }),
  };
}

beforeEach(async () => {
  t = await makeTestHome();
  stateDir = t.env.BLUE_AGENT_HOME!;
  claudeDir = path.join(t.home, '.claude');
  cwd = path.join(t.home, 'work', 'shop');
  await mkdir(cwd, { recursive: true });
  now = Date.now();
  waits = [];
});
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await t.cleanup();
});

async function start(options: Parameters<typeof startUploadStack>[0] = {}): Promise<UploadStack> {
  stack = await startUploadStack(options);
  return stack;
}

function ctx(): Context {
  return t.context({
    env: { BLUE_AGENT_CONTROL_URL: stack!.proxy.url, BLUE_AGENT_TOKEN: stack!.token },
    clock: { now: () => now },
  });
}

let enqueued = 0;
/** A captured, spooled session; `noiseKiB` of incompressible lines make its bundle that much larger. */
async function spoolSession(
  id: string,
  prompt: string,
  noiseKiB = 0,
): Promise<{ session: ClaudeSession; record: SpoolRecord }> {
  const session = await claudeSession(claudeDir, { id, cwd, prompt });
  if (noiseKiB > 0) {
    const lines = Array.from({ length: noiseKiB }, (_, n) =>
      JSON.stringify({ sessionId: id, cwd, type: 'system', uuid: `n${n}`, content: randomBytes(512).toString('hex') }),
    );
    await appendFile(session.transcript, `${lines.join('\n')}\n`);
  }
  const spool = await Spool.open(stateLayout(stateDir));
  const record = await spool.enqueueIntake({
    harness: 'claude',
    profile: CLAUDE_PROFILE,
    payload: session.payload,
    createdAtUnixMs: now - 60_000 + ++enqueued,
  });
  return { session, record };
}

function bundleFile(id: string): string {
  return path.join(stateDir, 'spool', 'bundles', `${id}.bundle`);
}

function folder(name: string): string[] {
  return readdirSync(path.join(stateDir, 'spool', name)).sort();
}

/** Builds every spooled session without uploading; returns the built bundles by session id. */
async function build(): Promise<Map<string, { id: string; size: number; sha256: string; bytes: Buffer }>> {
  const report = await drain(ctx(), { skipUploads: true });
  const out = new Map<string, { id: string; size: number; sha256: string; bytes: Buffer }>();
  for (const b of report.built)
    out.set(b.session_id, { id: b.id, size: b.size, sha256: b.sha256, bytes: await readFile(bundleFile(b.id)) });
  return out;
}

/**
 * Nothing lost, nothing duplicated: the server lists exactly these sessions, once each, complete, with the spooled
 * size and SHA-256, and serves back the spooled bytes; the spool is empty.
 */
async function expectUploadedOnce(built: Map<string, { size: number; sha256: string; bytes: Buffer }>): Promise<void> {
  const items = await stack!.listUploads();
  expect(items.map((i) => i.native_session_id).sort()).toEqual([...built.keys()].sort());
  for (const item of items) {
    const b = built.get(item.native_session_id)!;
    expect(item).toMatchObject({ status: 'complete', size_bytes: b.size, sha256: b.sha256 });
    expect((await stack!.download(item.id)).equals(b.bytes)).toBe(true);
  }
  for (const name of ['intake', 'building', 'ready', 'uploading', 'failed', 'bundles', 'tmp'])
    expect(folder(name), name).toEqual([]);
  // No partial upload was left behind in the blob store.
  expect(listFiles(stack!.blobDir).filter((f) => f.endsWith('.upload'))).toEqual([]);
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

function uploadedIds(report: DrainReport): string[] {
  return report.uploaded.map((u) => u.id);
}

describe('drain through a faulty network to the real Control API', () => {
  it(
    'Control API down for a while: records stay ready with attempts and the last error, then upload once it is ' +
      'back',
    async () => {
      await start();
      // A first upload while up leaves a last-known-good policy, as a working agent has.
      const first = await spoolSession('down-first', 'Before the outage');
      const up = await drain(ctx(), { upload: fastUpload() });
      expect(uploadedIds(up)).toEqual([first.record.id]);
      const firstBuilt = {
        size: up.uploaded[0]!.size,
        sha256: up.uploaded[0]!.sha256,
        bytes: await stack!.download(up.uploaded[0]!.captured_session_id!),
      };

      await stack!.proxy.stop();
      const a = await spoolSession('down-a', 'During the outage A');
      const b = await spoolSession('down-b', 'During the outage B');
      const built = await build();
      for (let round = 1; round <= 2; round++) {
        const report = await drain(ctx(), { upload: fastUpload() });
        expect(report.uploaded).toEqual([]);
        expect(report.failed).toEqual([]);
        expect(report.left_ready).toBe(2);
        expect(report.retried.map((r) => [r.id, r.code, r.attempts]).sort()).toEqual(
          [
            [a.record.id, 'UPLOAD_FAILED', round],
            [b.record.id, 'UPLOAD_FAILED', round],
          ].sort(),
        );
        for (const r of [a.record, b.record]) {
          const ready = readJson<SpoolRecord>(path.join(stateDir, 'spool', 'ready', `${r.id}.json`));
          expect(ready).toMatchObject({
            upload_attempts: round,
            last_error: { code: 'UPLOAD_FAILED', message: expect.stringContaining('connection refused') },
          });
          expect(ready.next_attempt_at_unix_ms).toBeGreaterThan(now);
        }
        // The next drain finds them due.
        now += 60 * 60_000;
      }
      expect(folder('bundles')).toEqual([`${a.record.id}.bundle`, `${b.record.id}.bundle`].sort());

      await stack!.proxy.start();
      const back = await drain(ctx(), { upload: fastUpload() });
      expect(uploadedIds(back).sort()).toEqual([a.record.id, b.record.id].sort());
      expect(back).toMatchObject({ failed: [], retried: [], left_ready: 0 });
      await expectUploadedOnce(new Map([...built, ['down-first', firstBuilt]]));
    },
  );

  it('presign answering 500 three times: the drain retries with backoff and uploads once', async () => {
    await start();
    const { record } = await spoolSession('presign-500', 'Retry the presign');
    const built = await build();
    stack!.proxy.rules.push({ method: 'POST', path: PRESIGN, times: 3, action: { kind: 'answer', status: 500 } });

    const report = await drain(ctx(), { upload: fastUpload() });
    expect(report).toMatchObject({
      uploaded: [{ id: record.id, already: false }],
      failed: [],
      retried: [],
      left_ready: 0,
    });
    expect(waits.map((w) => [w.step, w.status])).toEqual([
      ['presign', 500],
      ['presign', 500],
      ['presign', 500],
    ]);
    // Full jitter at 0.5 of a doubling ceiling.
    expect(waits.map((w) => w.ms)).toEqual([10, 20, 40]);
    expect(stack!.proxy.count('POST', PRESIGN)).toBe(4);
    expect(stack!.proxy.count('PUT', BLOB)).toBe(1);
    expect(stack!.proxy.count('POST', COMPLETE)).toBe(1);
    await expectUploadedOnce(built);
  });

  it('presign failing more often than the policy allows: rescheduled, then uploaded by a later drain', async () => {
    await start();
    const { record } = await spoolSession('presign-503', 'Outlast the retries');
    const built = await build();
    stack!.proxy.rules.push({ method: 'POST', path: PRESIGN, times: 4, action: { kind: 'answer', status: 503 } });

    const first = await drain(ctx(), { upload: fastUpload() });
    expect(first.uploaded).toEqual([]);
    expect(first.retried).toMatchObject([
      { id: record.id, code: 'UPLOAD_FAILED', attempts: 1, reason: expect.stringContaining('HTTP 503') },
    ]);
    expect(stack!.proxy.count('POST', PRESIGN)).toBe(4);
    expect(stack!.proxy.count('PUT', BLOB)).toBe(0);
    now += 60 * 60_000;
    const second = await drain(ctx(), { upload: fastUpload() });
    expect(uploadedIds(second)).toEqual([record.id]);
    await expectUploadedOnce(built);
  });

  it('429 with Retry-After: the wait is what the server asked for, on the Control API and the signed URL', async () => {
    await start();
    const { record } = await spoolSession('throttled', 'Slow down');
    const built = await build();
    stack!.proxy.rules.push(
      {
        method: 'POST',
        path: PRESIGN,
        times: 1,
        action: { kind: 'answer', status: 429, headers: { 'retry-after': '1' } },
      },
      { method: 'PUT', path: BLOB, times: 1, action: { kind: 'answer', status: 429, headers: { 'retry-after': '1' } } },
    );

    const report = await drain(ctx(), { upload: fastUpload() });
    expect(uploadedIds(report)).toEqual([record.id]);
    expect(waits.map((w) => [w.step, w.status, w.ms])).toEqual([
      ['presign', 429, 1000],
      ['upload', 429, 1000],
    ]);
    // And really waited: the next try came at least a second after the 429.
    const presigns = stack!.proxy.seen.filter((s) => s.method === 'POST' && PRESIGN.test(s.path));
    const puts = stack!.proxy.seen.filter((s) => s.method === 'PUT' && BLOB.test(s.path));
    expect(presigns.map((s) => s.status)).toEqual([429, 200]);
    expect(puts.map((s) => s.status)).toEqual([429, 200]);
    expect(presigns[1]!.at - presigns[0]!.at).toBeGreaterThanOrEqual(990);
    expect(puts[1]!.at - puts[0]!.at).toBeGreaterThanOrEqual(990);
    await expectUploadedOnce(built);
  });

  it('a Retry-After longer than the drain sleeps through: rescheduled no sooner than asked, then sent', async () => {
    await start();
    const { record } = await spoolSession('throttled-long', 'Come back in two minutes');
    const built = await build();
    stack!.proxy.rules.push({
      method: 'POST',
      path: PRESIGN,
      times: 1,
      action: { kind: 'answer', status: 429, headers: { 'retry-after': '120' } },
    });

    const first = await drain(ctx(), { upload: fastUpload() });
    expect(first.uploaded).toEqual([]);
    expect(waits).toEqual([]);
    expect(first.retried).toMatchObject([{ id: record.id, attempts: 1 }]);
    expect(first.retried[0]!.next_attempt_at_unix_ms).toBeGreaterThanOrEqual(now + 120_000);
    expect(stack!.proxy.count('POST', PRESIGN)).toBe(1);

    // Not due before the server's time.
    now += 119_000;
    expect((await drain(ctx(), { upload: fastUpload() })).uploaded).toEqual([]);
    expect(stack!.proxy.count('POST', PRESIGN)).toBe(1);
    now += 60 * 60_000;
    expect(uploadedIds(await drain(ctx(), { upload: fastUpload() }))).toEqual([record.id]);
    await expectUploadedOnce(built);
  });

  it('the connection reset halfway through the PUT: retried, uploaded once, no partial object kept', async () => {
    await start();
    const { record } = await spoolSession('reset-put', 'Cut the cable', 400);
    const built = await build();
    const size = built.get('reset-put')!.size;
    expect(size).toBeGreaterThan(200_000);
    stack!.proxy.rules.push({
      method: 'PUT',
      path: BLOB,
      times: 1,
      action: { kind: 'reset-mid-body', afterBytes: Math.floor(size / 2) },
    });

    const report = await drain(ctx(), { upload: fastUpload() });
    expect(report).toMatchObject({ uploaded: [{ id: record.id, already: false }], failed: [], retried: [] });
    expect(waits).toMatchObject([{ step: 'upload', status: undefined }]);
    const puts = stack!.proxy.seen.filter((s) => s.method === 'PUT');
    expect(puts.map((s) => [s.fault, s.status])).toEqual([
      ['reset-mid-body', undefined],
      ['pass', 200],
    ]);
    expect(stack!.proxy.count('POST', PRESIGN)).toBe(1);
    expect(stack!.proxy.count('POST', COMPLETE)).toBe(1);
    await expectUploadedOnce(built);
  });

  it('the complete answer lost after the server completed: the retry is answered the same, one upload', async () => {
    await start();
    const { record } = await spoolSession('lost-complete', 'Where did my answer go');
    const built = await build();
    stack!.proxy.rules.push({ method: 'POST', path: COMPLETE, times: 1, action: { kind: 'drop-response' } });

    const report = await drain(ctx(), { upload: fastUpload() });
    expect(report).toMatchObject({ uploaded: [{ id: record.id }], failed: [], retried: [] });
    expect(stack!.proxy.count('POST', COMPLETE)).toBe(2);
    expect(stack!.proxy.count('PUT', BLOB)).toBe(1);
    await expectUploadedOnce(built);
  });

  it(
    'a stored object that does not match its digest at complete: the record fails with the server reason and ' +
      'keeps its bundle',
    async () => {
      const s = await start();
      const { record } = await spoolSession('bad-digest', 'Swap the bytes');
      const built = await build();
      const bundle = built.get('bad-digest')!;
      // The PUT is stored as sent; then the stored file is replaced with other bytes of the same length.
      stack!.proxy.rules.push({
        method: 'PUT',
        path: BLOB,
        times: 1,
        action: {
          kind: 'before-relay',
          hook: async () => {
            const [file] = listFiles(path.join(s.blobDir, 'sessions'));
            const bytes = await readFile(file!);
            bytes[0] = bytes[0]! ^ 0xff;
            await writeFile(file!, bytes);
          },
        },
      });

      const report = await drain(ctx(), { upload: fastUpload() });
      expect(report.uploaded).toEqual([]);
      expect(report.retried).toEqual([]);
      expect(report.failed).toMatchObject([
        {
          id: record.id,
          stage: 'upload',
          code: 'UPLOAD_REJECTED',
          reason: expect.stringMatching(/HTTP 400: \[digest_mismatch\] upload .* does not match its presign/),
        },
      ]);
      // Refused for good: not retried, and the refused bytes are not kept on the server.
      expect(stack!.proxy.count('POST', COMPLETE)).toBe(1);
      expect(listFiles(s.blobDir).filter((f) => !f.endsWith('.secret'))).toEqual([]);
      const failed = readJson<SpoolRecord>(path.join(stateDir, 'spool', 'failed', `${record.id}.json`));
      expect(failed.last_error).toMatchObject({
        code: 'UPLOAD_REJECTED',
        message: expect.stringContaining('digest_mismatch'),
      });
      expect(folder('bundles')).toEqual([`${record.id}.bundle`]);
      expect(sha256(await readFile(bundleFile(record.id)))).toBe(bundle.sha256);

      // A session lists once it has a verified upload: this one has none.
      expect(await s.listUploads()).toEqual([]);
    },
  );

  it(
    'a PUT body corrupted on the way (same length): the store refuses it, the record fails with its reason and ' +
      'keeps its bundle',
    async () => {
      const s = await start();
      const { record } = await spoolSession('corrupt-put', 'Flip a bit', 50);
      const built = await build();
      const bundle = built.get('corrupt-put')!;
      stack!.proxy.rules.push({
        method: 'PUT',
        path: BLOB,
        times: 1,
        action: { kind: 'corrupt-body', at: Math.floor(bundle.size / 3) },
      });

      const report = await drain(ctx(), { upload: fastUpload() });
      expect(report.uploaded).toEqual([]);
      expect(report.failed).toMatchObject([
        {
          id: record.id,
          stage: 'upload',
          code: 'UPLOAD_REJECTED',
          reason: expect.stringContaining('SHA-256 differs from the signed digest'),
        },
      ]);
      expect(stack!.proxy.count('POST', COMPLETE)).toBe(0);
      expect(folder('failed')).toEqual([`${record.id}.json`]);
      expect(sha256(await readFile(bundleFile(record.id)))).toBe(bundle.sha256);
      expect(listFiles(s.blobDir).filter((f) => !f.endsWith('.secret'))).toEqual([]);
      expect(await s.listUploads()).toEqual([]);
    },
  );

  it('a signed URL that expired before the PUT reached the store: a fresh presign is used, one upload', async () => {
    // A few seconds of lifetime: the retried PUT must still make it in time on a busy machine.
    await start({ uploadUrlTtlSeconds: 3 });
    const { record } = await spoolSession('expired-url', 'Too slow');
    const built = await build();
    stack!.proxy.rules.push({ method: 'PUT', path: BLOB, times: 1, action: { kind: 'delay', ms: 4_000 } });

    const report = await drain(ctx(), { upload: fastUpload() });
    expect(report).toMatchObject({ uploaded: [{ id: record.id, already: false }], failed: [], retried: [] });
    const puts = stack!.proxy.seen.filter((s) => s.method === 'PUT');
    expect(puts.map((s) => [s.fault, s.status])).toEqual([
      ['delay', 403],
      ['pass', 200],
    ]);
    expect(stack!.proxy.count('POST', PRESIGN)).toBe(2);
    expect(stack!.proxy.count('POST', COMPLETE)).toBe(1);
    // The second PUT went to a freshly signed URL for the same object.
    expect(puts[1]!.path).toBe(puts[0]!.path);
    expect(new URL(`http://x/${puts[1]!.query}`).searchParams.get('expires')).not.toBe(
      new URL(`http://x/${puts[0]!.query}`).searchParams.get('expires'),
    );
    await expectUploadedOnce(built);
  });
});
