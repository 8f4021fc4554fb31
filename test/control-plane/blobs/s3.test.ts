import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3BlobStore, s3OptionsFromEnv } from '../../../src/control-plane/blobs/s3.js';
import { presignV4 } from '../../../src/control-plane/blobs/sigv4.js';
import type { BlobStore, SignedRequest } from '../../../src/control-plane/blobs/types.js';

interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}
type S3rverClass = new (options: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)('s3rver') as S3rverClass;

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const b64 = (hex: string): string => Buffer.from(hex, 'hex').toString('base64');

interface Reply {
  status: number;
  body: Buffer;
}

function send(method: string, url: string, headers: Record<string, string>, body?: Buffer | Readable): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
      response.on('error', reject);
    });
    request.on('error', reject);
    if (body === undefined) request.end();
    else if (Buffer.isBuffer(body)) request.end(body);
    else body.pipe(request);
  });
}

const put = (signed: SignedRequest, body: Buffer | Readable, headers = signed.headers): Promise<Reply> =>
  send(signed.method, signed.url, headers, body);

describe('S3 blob store against s3rver', () => {
  let dir: string;
  let s3: S3rverInstance;
  let endpoint: string;
  let store: BlobStore;
  const base = { bucket: 'blobs', region: 'us-east-1', forcePathStyle: true, accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blobs-s3-'));
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: 'blobs', configs: [] }] });
    const { port } = await s3.run();
    endpoint = `http://127.0.0.1:${port}`;
    store = await createS3BlobStore({ ...base, endpoint });
  });

  afterAll(async () => {
    await store?.close();
    await s3?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('presigns an upload whose length and checksum are signed headers, not query parameters', async () => {
    const data = Buffer.from('bundle');
    const up = await store.presignUpload('s/one', { size: data.length, sha256: sha256(data) }, Date.now() + 60_000);
    const url = new URL(up.url);
    expect(url.pathname).toBe('/blobs/s/one');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;host;x-amz-checksum-sha256');
    expect([...url.searchParams.keys()].some((k) => k.toLowerCase().includes('checksum'))).toBe(false);
    expect(up.url).not.toContain(encodeURIComponent(b64(sha256(data))));
    expect(up.headers).toEqual({ 'content-length': String(data.length), 'x-amz-checksum-sha256': b64(sha256(data)) });
  });

  it('uploads with exactly the returned request, stats by hashing the bytes, downloads and deletes', async () => {
    const data = randomBytes(2_000_000);
    const object = { size: data.length, sha256: sha256(data) };
    const up = await store.presignUpload('sessions/u1/rev-1', object, Date.now() + 60_000);
    const reply = await put(up, Readable.from([data.subarray(0, 12345), data.subarray(12345)]));
    expect(reply.status, reply.body.toString()).toBe(200);
    expect(await store.stat('sessions/u1/rev-1')).toEqual(object);

    const down = await store.presignDownload('sessions/u1/rev-1', Date.now() + 60_000);
    const got = await send(down.method, down.url, down.headers);
    expect(got.status).toBe(200);
    expect(got.body.equals(data)).toBe(true);

    await store.delete('sessions/u1/rev-1');
    await store.delete('sessions/u1/rev-1');
    expect(await store.stat('sessions/u1/rev-1')).toBeUndefined();
  });

  it('s3rver enforces the access key and the expiry of a presigned URL', async () => {
    const data = Buffer.from('x');
    const object = { size: 1, sha256: sha256(data) };
    const stranger = await createS3BlobStore({ ...base, endpoint, accessKeyId: 'NOBODY' });
    expect((await put(await stranger.presignUpload('k/a', object, Date.now() + 60_000), data)).status).toBe(403);
    const past = Date.now() - 10_000;
    const old = await createS3BlobStore({ ...base, endpoint, clock: () => past });
    expect((await put(await old.presignUpload('k/a', object, past + 1000), data)).status).toBe(403);
    expect(await store.stat('k/a')).toBeUndefined();
  });

  // s3rver 3.7.1 checks the access key id and expiry of a SigV4 request but not the signature itself
  // (lib/middleware/authentication.js: "Signature version 4 calculation is unimplemented"), and it ignores
  // x-amz-checksum-sha256. These tests pin that down so the gap stays visible; against real S3 the changed header is a
  // SignatureDoesNotMatch (the header is in X-Amz-SignedHeaders; blobs-sigv4.test.ts shows the signature changes with
  // it) and a wrong body is a BadDigest.
  it('s3rver does not verify SigV4 signatures: a URL signed with a wrong secret and a changed checksum header are accepted', async () => {
    const data = Buffer.from('signed bytes');
    const object = { size: data.length, sha256: sha256(data) };
    const forged = await createS3BlobStore({ ...base, endpoint, secretAccessKey: 'not-the-secret' });
    expect((await put(await forged.presignUpload('gap/wrong-secret', object, Date.now() + 60_000), data)).status).toBe(200);

    const other = Buffer.from('signed bytez');
    const up = await store.presignUpload('gap/changed-header', object, Date.now() + 60_000);
    const reply = await put(up, other, { ...up.headers, 'x-amz-checksum-sha256': b64(sha256(other)) });
    expect(reply.status).toBe(200);
    // The Control API's defence does not depend on the emulator: stat reports what is really stored.
    expect(await store.stat('gap/changed-header')).toEqual({ size: other.length, sha256: sha256(other) });
  });

  it('s3rver stores a body whose digest differs from the signed checksum; stat exposes the real digest', async () => {
    const data = Buffer.from('0123456789');
    const object = { size: data.length, sha256: sha256(data) };
    const up = await store.presignUpload('gap/wrong-body', object, Date.now() + 60_000);
    const wrong = Buffer.from('0123456788');
    const reply = await put(up, wrong);
    expect(reply.status).toBe(200);
    const stored = await store.stat('gap/wrong-body');
    expect(stored?.size).toBe(object.size);
    expect(stored?.sha256).not.toBe(object.sha256);
    expect(stored?.sha256).toBe(sha256(wrong));
  });

  it('stat hashes the stored bytes even when the uploader added a Content-Encoding', async () => {
    const gzipped = gzipSync(Buffer.from('x'.repeat(10_000)));
    const object = { size: gzipped.length, sha256: sha256(gzipped) };
    const up = await store.presignUpload('enc/gz', object, Date.now() + 60_000);
    expect((await put(up, gzipped, { ...up.headers, 'content-encoding': 'gzip' })).status).toBe(200);
    expect(await store.stat('enc/gz')).toEqual(object);
  });

  it('refuses keys outside the alphabet', async () => {
    for (const key of ['../x', 'a//b', '.hidden', 'a b']) {
      await expect(store.presignUpload(key, { size: 0, sha256: sha256(Buffer.alloc(0)) }, Date.now() + 1000)).rejects.toMatchObject({
        code: 'UNSAFE_PATH',
      });
      await expect(store.stat(key)).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    }
  });
});

/**
 * Because s3rver does not check SigV4 signatures, this loopback gateway in front of it does what S3 does with a
 * presigned URL: it recomputes the signature from the request as received (method, path, query, and the values of
 * the headers named in X-Amz-SignedHeaders) and refuses a mismatch with 403 SignatureDoesNotMatch. The signer it
 * recomputes with is pinned to the AWS documentation vectors in blobs-sigv4.test.ts.
 */
function verifyingGateway(upstreamPort: number, secrets: Record<string, string>): http.Server {
  return http.createServer((request, response) => {
    const refuse = (code: string): void => {
      request.resume();
      response.writeHead(403, { 'content-type': 'application/xml', connection: 'close' }).end(`<Error><Code>${code}</Code></Error>`);
    };
    const url = new URL(request.url ?? '/', `http://${request.headers.host}`);
    const q = url.searchParams;
    const [accessKeyId = '', day = '', region = '', service = ''] = (q.get('X-Amz-Credential') ?? '').split('/');
    const secret = secrets[accessKeyId];
    const stamp = q.get('X-Amz-Date') ?? '';
    if (secret === undefined || !/^\d{8}T\d{6}Z$/.test(stamp) || !stamp.startsWith(day)) return refuse('AccessDenied');
    const headers: Record<string, string> = {};
    for (const name of (q.get('X-Amz-SignedHeaders') ?? '').split(';')) {
      if (name === 'host') continue;
      const value = request.headers[name];
      if (typeof value !== 'string') return refuse('SignatureDoesNotMatch');
      headers[name] = value;
    }
    const date = new Date(
      `${stamp.slice(0, 4)}-${stamp.slice(4, 6)}-${stamp.slice(6, 8)}T${stamp.slice(9, 11)}:${stamp.slice(11, 13)}:${stamp.slice(13, 15)}Z`,
    );
    const expected = presignV4({
      method: request.method ?? 'GET',
      url: `${url.origin}${url.pathname}`,
      region,
      service,
      credentials: { accessKeyId, secretAccessKey: secret, sessionToken: q.get('X-Amz-Security-Token') ?? undefined },
      date,
      expiresSeconds: Number(q.get('X-Amz-Expires')),
      headers,
    });
    if (expected.debug.signature !== q.get('X-Amz-Signature') || new URL(expected.url).search !== url.search)
      return refuse('SignatureDoesNotMatch');
    const upstream = http.request(
      { host: '127.0.0.1', port: upstreamPort, method: request.method, path: request.url, headers: request.headers },
      (reply) => {
        response.writeHead(reply.statusCode ?? 502, reply.headers);
        reply.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
}

describe('S3 blob store behind a SigV4-verifying gateway', () => {
  let dir: string;
  let s3: S3rverInstance;
  let gateway: http.Server;
  let endpoint: string;
  let store: BlobStore;
  const base = {
    bucket: 'blobs',
    region: 'eu-west-1',
    forcePathStyle: true,
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    sessionToken: 'session/token+1',
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blobs-s3v-'));
    s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: dir, configureBuckets: [{ name: 'blobs', configs: [] }] });
    const { port } = await s3.run();
    gateway = verifyingGateway(port, { S3RVER: 'S3RVER' });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    store = await createS3BlobStore({ ...base, endpoint });
  });

  afterAll(async () => {
    gateway?.closeAllConnections();
    await new Promise<void>((resolve) => (gateway ? gateway.close(() => resolve()) : resolve()));
    await s3?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('accepts the exact presigned requests (upload, HEAD/GET for stat, download, delete)', async () => {
    const data = randomBytes(100_000);
    const object = { size: data.length, sha256: sha256(data) };
    const up = await store.presignUpload('v/ok', object, Date.now() + 60_000);
    expect((await put(up, Readable.from([data]))).status).toBe(200);
    expect(await store.stat('v/ok')).toEqual(object);
    const down = await store.presignDownload('v/ok', Date.now() + 60_000);
    expect((await send(down.method, down.url, down.headers)).body.equals(data)).toBe(true);
    await store.delete('v/ok');
    expect(await store.stat('v/ok')).toBeUndefined();
  });

  it('refuses an upload whose checksum header or length was changed, or that was signed with another secret', async () => {
    const data = Buffer.from('the real bundle');
    const object = { size: data.length, sha256: sha256(data) };
    const up = await store.presignUpload('v/tampered', object, Date.now() + 60_000);
    const other = Buffer.from('the fake bundle');

    const changedChecksum = await put(up, other, { ...up.headers, 'x-amz-checksum-sha256': b64(sha256(other)) });
    expect(changedChecksum.status).toBe(403);
    expect(changedChecksum.body.toString()).toContain('SignatureDoesNotMatch');

    const longer = Buffer.concat([data, Buffer.from('!')]);
    expect((await put(up, longer, { ...up.headers, 'content-length': String(longer.length) })).status).toBe(403);

    const { ['x-amz-checksum-sha256']: _dropped, ...withoutChecksum } = up.headers;
    expect((await put(up, other, withoutChecksum)).status).toBe(403);

    const forged = await createS3BlobStore({ ...base, endpoint, secretAccessKey: 'not-the-secret' });
    expect((await put(await forged.presignUpload('v/tampered', object, Date.now() + 60_000), data)).status).toBe(403);

    expect(await store.stat('v/tampered')).toBeUndefined();
  });
});

describe('S3 blob store configuration', () => {
  it('builds virtual-host URLs unless path style is forced, and caps expiry at a week', async () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0, 500);
    const store = await createS3BlobStore({
      endpoint: 'https://s3.eu-west-1.amazonaws.com',
      bucket: 'my-bucket',
      region: 'eu-west-1',
      forcePathStyle: false,
      accessKeyId: 'AKID',
      secretAccessKey: 'secret',
      sessionToken: 'token',
      clock: () => now,
    });
    const down = await store.presignDownload('a/b.tar', now + 30 * 24 * 3600 * 1000);
    const url = new URL(down.url);
    expect(url.host).toBe('my-bucket.s3.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/a/b.tar');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('604800');
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('token');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20260101T120000Z');
    expect(down.expiresAtUnixMs).toBe(Date.UTC(2026, 0, 1, 12, 0, 0) + 604800 * 1000);
    const short = await store.presignDownload('a/b.tar', now + 1000);
    expect(new URL(short.url).searchParams.get('X-Amz-Expires')).toBe('2');
    await expect(store.presignDownload('a/b.tar', now - 1)).rejects.toThrow(/expired/);
  });

  it('reads credentials and region from the environment', () => {
    const options = s3OptionsFromEnv(
      { AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'sk', AWS_SESSION_TOKEN: 'st', AWS_REGION: 'eu-central-1' },
      { bucket: 'b' },
    );
    expect(options).toEqual({
      endpoint: 'https://s3.eu-central-1.amazonaws.com',
      bucket: 'b',
      region: 'eu-central-1',
      forcePathStyle: false,
      accessKeyId: 'AKID',
      secretAccessKey: 'sk',
      sessionToken: 'st',
    });
    expect(
      s3OptionsFromEnv(
        { AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' },
        { bucket: 'b', region: 'r', endpoint: 'http://x', forcePathStyle: true },
      ).sessionToken,
    ).toBeUndefined();
    expect(() => s3OptionsFromEnv({ AWS_REGION: 'r' }, { bucket: 'b' })).toThrow(/AWS_ACCESS_KEY_ID/);
    expect(() => s3OptionsFromEnv({ AWS_ACCESS_KEY_ID: 'a', AWS_SECRET_ACCESS_KEY: 'b' }, { bucket: 'b' })).toThrow(/region/);
  });
});
