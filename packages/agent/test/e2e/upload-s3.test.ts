/**
 * `drain` end to end with the Control API keeping bundles in an S3 bucket (s3rver on 127.0.0.1): the agent uploads
 * to the presigned S3 URL, the server's complete hashes what S3 holds, and the bundle downloads back byte for byte.
 * s3rver ignores x-amz-checksum-sha256, so a body changed on the way is stored; the server's complete must refuse it.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { drain } from '../../src/drain/index.js';
import { createS3BlobStore, type S3BlobStoreOptions } from '@blue-agent/control-api/blobs/s3.js';
import type { BlobStore } from '@blue-agent/control-api/blobs/types.js';
import { stateLayout, type Context } from '../../src/context.js';
import { Spool, type SpoolRecord } from '../../src/spool/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { sha256 } from '../../../../test/support/control-server.js';
import { claudeSession, CLAUDE_PROFILE, readJson } from '../../../../test/support/cli-process.js';
import {
  startFaultProxy,
  startUploadStack,
  type FaultProxy,
  type UploadStack,
} from '../../../../test/support/fault-proxy.js';

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;

const BUCKET = 'bundles';
let s3Dir: string;
let s3: S3rverInstance;
let s3Url: string;
const s3Options = (endpoint: string): S3BlobStoreOptions => ({
  endpoint,
  bucket: BUCKET,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
});

let t: TestHome;
let stack: UploadStack | undefined;
let s3Proxy: FaultProxy | undefined;
/** The bucket as the tests see it, straight to s3rver. */
let bucket: BlobStore;
let stateDir: string;
let claudeDir: string;
let cwd: string;
let now: number;

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(tmpdir(), 'blue-e2e-s3-'));
  s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: s3Dir,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const { port } = await s3.run();
  s3Url = `http://127.0.0.1:${port}`;
  bucket = await createS3BlobStore(s3Options(s3Url));
});
afterAll(async () => {
  await s3?.close();
  await rm(s3Dir, { recursive: true, force: true });
});

beforeEach(async () => {
  t = await makeTestHome();
  stateDir = t.env.BLUE_AGENT_HOME!;
  claudeDir = path.join(t.home, '.claude');
  cwd = path.join(t.home, 'work', 'shop');
  await mkdir(cwd, { recursive: true });
  now = Date.now();
});
afterEach(async () => {
  await stack?.close();
  stack = undefined;
  await s3Proxy?.close();
  s3Proxy = undefined;
  await t.cleanup();
});

/** A Control API whose blob store is the bucket at `endpoint`. */
async function start(endpoint: string): Promise<UploadStack> {
  stack = await startUploadStack({ blobs: () => createS3BlobStore(s3Options(endpoint)) });
  return stack;
}

function ctx(): Context {
  return t.context({
    env: { BLUE_AGENT_CONTROL_URL: stack!.proxy.url, BLUE_AGENT_TOKEN: stack!.token },
    clock: { now: () => now },
  });
}

async function spoolSession(id: string, prompt: string): Promise<SpoolRecord> {
  const session = await claudeSession(claudeDir, { id, cwd, prompt, padBytes: 20_000 });
  const spool = await Spool.open(stateLayout(stateDir));
  return spool.enqueueIntake({
    harness: 'claude',
    profile: CLAUDE_PROFILE,
    payload: session.payload,
    createdAtUnixMs: now - 60_000,
  });
}

function bundleFile(id: string): string {
  return path.join(stateDir, 'spool', 'bundles', `${id}.bundle`);
}

function folder(name: string): string[] {
  return readdirSync(path.join(stateDir, 'spool', name)).sort();
}

describe('drain to a Control API that keeps bundles in S3 (s3rver)', () => {
  it(
    'end to end: captured, drained, completed against the bucket, listed with its size and SHA-256, downloaded ' +
      'intact',
    async () => {
      const s = await start(s3Url);
      const record = await spoolSession('s3-0001', 'Store me in a bucket');
      const built = await drain(ctx(), { skipUploads: true });
      const spooled = await readFile(bundleFile(record.id));
      expect(sha256(spooled)).toBe(built.built[0]!.sha256);

      const report = await drain(ctx());
      expect(report).toMatchObject({
        uploaded: [
          { id: record.id, session_id: 's3-0001', already: false, size: spooled.length, sha256: sha256(spooled) },
        ],
        failed: [],
        retried: [],
        left_ready: 0,
      });
      for (const name of ['ready', 'uploading', 'failed', 'bundles']) expect(folder(name), name).toEqual([]);

      const items = await s.listUploads();
      expect(items).toHaveLength(1);
      expect(items[0]).toMatchObject({
        id: report.uploaded[0]!.captured_session_id,
        artifact_id: report.uploaded[0]!.upload_id,
        status: 'complete',
        native_session_id: 's3-0001',
        title: 'Store me in a bucket',
        size_bytes: spooled.length,
        sha256: sha256(spooled),
      });
      // The object really is in the bucket, under the upload's key, and the signed download serves the spooled bytes.
      expect(await bucket.stat(`sessions/${items[0].artifact_id}.tar.gz`)).toEqual({
        size: spooled.length,
        sha256: sha256(spooled),
      });
      expect((await s.download(items[0].id)).equals(spooled)).toBe(true);
      // The agent only ever spoke to the Control API for presign and complete: the bundle went straight to the bucket.
      expect(s.proxy.seen.filter((r) => r.method === 'PUT')).toEqual([]);

      // Drained again: nothing more to send, nothing duplicated.
      expect((await drain(ctx())).uploaded).toEqual([]);
      expect(await s.listUploads()).toHaveLength(1);
    },
  );

  it(
    'a body whose digest differs from the signed one: s3rver stores it, complete refuses it, the record fails and ' +
      'nothing is listed complete',
    async () => {
      // The bucket behind a proxy that flips one byte of the PUT body: the same length, another digest.
      s3Proxy = await startFaultProxy();
      s3Proxy.target = s3Url;
      const s = await start(s3Proxy.url);
      const record = await spoolSession('s3-bad', 'Change me on the way');
      const built = (await drain(ctx(), { skipUploads: true })).built[0]!;
      s3Proxy.rules.push({
        method: 'PUT',
        path: new RegExp(`^/${BUCKET}/`),
        times: 1,
        action: { kind: 'corrupt-body', at: Math.floor(built.size / 2) },
      });

      const report = await drain(ctx());
      expect(report.uploaded).toEqual([]);
      expect(report.retried).toEqual([]);
      expect(report.failed).toMatchObject([
        {
          id: record.id,
          stage: 'upload',
          code: 'UPLOAD_REJECTED',
          reason: expect.stringMatching(
            new RegExp(
              String.raw`HTTP 400: \[digest_mismatch\] upload .* does not match its presign: stored object ` +
                String.raw`has \d+ bytes and SHA-256 [0-9a-f]{64}`,
            ),
          ),
        },
      ]);
      // s3rver took the changed body (it does not check the checksum header), so the refusal is the Control API's.
      expect(s3Proxy.seen.filter((r) => r.method === 'PUT').map((r) => [r.fault, r.status])).toEqual([
        ['corrupt-body', 200],
      ]);

      // A session lists once it has a verified upload: this one has none.
      expect(await s.listUploads()).toEqual([]);
      // Bytes nobody vouched for are removed from the bucket.
      const put = s3Proxy.seen.find((r) => r.method === 'PUT')!;
      expect(put.path).toMatch(new RegExp(`^/${BUCKET}/sessions/[0-9a-f-]{36}\\.tar\\.gz$`));
      expect(await bucket.stat(put.path.slice(BUCKET.length + 2))).toBeUndefined();

      // The record keeps its bundle, intact, with the server's reason.
      expect(folder('failed')).toEqual([`${record.id}.json`]);
      expect(
        readJson<SpoolRecord>(path.join(stateDir, 'spool', 'failed', `${record.id}.json`)).last_error,
      ).toMatchObject({
        code: 'UPLOAD_REJECTED',
        message: expect.stringContaining('digest_mismatch'),
      });
      expect(sha256(await readFile(bundleFile(record.id)))).toBe(built.sha256);
    },
  );
});
