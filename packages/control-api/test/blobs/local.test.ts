import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLocalBlobStore } from '../../src/blobs/local.js';
import type { BlobStore, SignedRequest } from '../../src/blobs/types.js';

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

interface Reply {
  status: number;
  body: Buffer;
  headers: http.IncomingHttpHeaders;
}

/** Sends exactly the given method, URL and headers, with the body streamed. */
function send(method: string, url: string, headers: Record<string, string>, body?: Buffer | Readable): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), headers: response.headers }),
      );
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

describe('local blob store', () => {
  let dir: string;
  let server: http.Server;
  let store: BlobStore;
  let now: number;
  let baseUrl: string;
  /** What the Control API would say of each upload's key (every key is wanted unless a test says otherwise). */
  let wanted: (key: string) => Promise<boolean>;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blobs-local-'));
    now = Date.now();
    wanted = async () => true;
    server = http.createServer((request, response) => {
      store.serve!(request, response, { wanted: (key) => wanted(key) })
        .then((handled) => {
          if (!handled) response.writeHead(404).end('not a blob');
        })
        .catch(() => response.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
    store = await createLocalBlobStore({ dir: path.join(dir, 'store'), publicUrl: baseUrl, clock: () => now });
  });

  afterEach(async () => {
    await store.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  /** Files in the store directory besides the secret: what a refused upload must not leave behind. */
  async function storedFiles(): Promise<string[]> {
    const entries = await readdir(path.join(dir, 'store'), { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile() && e.name !== '.secret')
      .map((e) => path.relative(path.join(dir, 'store'), path.join(e.parentPath, e.name)));
  }

  it('uploads with exactly the returned request, stats the real digest and downloads the same bytes', async () => {
    const data = randomBytes(300_000);
    const object = { size: data.length, sha256: sha256(data) };
    const up = await store.presignUpload('sessions/u1/rev-1', object, now + 60_000);
    expect(up.method).toBe('PUT');
    expect(up.url.startsWith(`${baseUrl}/blobs/sessions/u1/rev-1?`)).toBe(true);
    expect(up.headers).toEqual({
      'content-length': String(data.length),
      'x-amz-checksum-sha256': Buffer.from(object.sha256, 'hex').toString('base64'),
    });

    const reply = await put(up, Readable.from([data.subarray(0, 1000), data.subarray(1000)]));
    expect(reply.status).toBe(200);
    expect(await store.stat('sessions/u1/rev-1')).toEqual(object);
    // A copy of the bytes hashed, and the file itself for readers in this process.
    const copy = path.join(dir, 'copy');
    expect(await store.stat('sessions/u1/rev-1', { copyTo: copy })).toEqual(object);
    expect((await readFile(copy)).equals(await readFile(store.fileOf!('sessions/u1/rev-1')))).toBe(true);
    expect(() => store.fileOf!('../escape')).toThrow();

    const down = await store.presignDownload('sessions/u1/rev-1', now + 60_000);
    const got = await send(down.method, down.url, down.headers);
    expect(got.status).toBe(200);
    expect(got.headers['content-length']).toBe(String(data.length));
    expect(got.body.equals(data)).toBe(true);

    await store.delete('sessions/u1/rev-1');
    await store.delete('sessions/u1/rev-1');
    expect(await store.stat('sessions/u1/rev-1')).toBeUndefined();
    expect((await send('GET', down.url, {})).status).toBe(404);
  });

  it('stat after an upload uses the digest taken while receiving; reads the bytes again once changed', async () => {
    const data = randomBytes(4 * 1024 * 1024);
    const object = { size: data.length, sha256: sha256(data) };
    const up = await store.presignUpload('sessions/u2/rev-1', object, now + 60_000);
    expect((await put(up, Readable.from([data]))).status).toBe(200);
    // Bytes this process has read from files and sockets so far (Linux).
    const readSoFar = async (): Promise<number> =>
      Number(/rchar: (\d+)/.exec(await readFile('/proc/self/io', 'utf8'))![1]);
    const before = await readSoFar();
    expect(await store.stat('sessions/u2/rev-1')).toEqual(object);
    expect((await readSoFar()) - before).toBeLessThan(data.length / 4);
    // The same size, other bytes, written in place: the remembered digest no longer describes the file.
    const tampered = Buffer.from(data);
    tampered[500] = tampered[500]! ^ 0xff;
    await writeFile(path.join(dir, 'store', 'sessions', 'u2', 'rev-1'), tampered);
    const again = await readSoFar();
    expect(await store.stat('sessions/u2/rev-1')).toEqual({ size: data.length, sha256: sha256(tampered) });
    expect((await readSoFar()) - again).toBeGreaterThanOrEqual(data.length);
  });

  it(
    'keeps nothing the Control API no longer wants at a validly signed URL: 410, asked before and after the bytes ' +
      'arrive',
    async () => {
      const data = randomBytes(200_000);
      const up = await store.presignUpload('sessions/gone', { size: data.length, sha256: sha256(data) }, now + 60_000);
      const asked: string[] = [];
      wanted = async (key) => {
        asked.push(key);
        return false;
      };
      const refused = await put(up, data);
      expect([refused.status, JSON.parse(refused.body.toString()).code]).toEqual([410, 'UPLOAD_GONE']);
      expect(asked).toEqual(['sessions/gone']);
      expect(await storedFiles()).toEqual([]);

      // Wanted when the upload began, not once its bytes were in (its session deleted meanwhile): nothing is renamed
      // into place, and the bytes received are removed.
      asked.length = 0;
      wanted = async (key) => {
        asked.push(key);
        return asked.length === 1;
      };
      const late = await put(up, Readable.from([data.subarray(0, 1000), data.subarray(1000)]));
      expect(late.status).toBe(410);
      expect(asked).toEqual(['sessions/gone', 'sessions/gone']);
      expect(await storedFiles()).toEqual([]);

      // A database that cannot answer: tried again later (503), nothing kept.
      wanted = async () => {
        throw new Error('the database is restarting');
      };
      const unknown = await put(up, data);
      expect([unknown.status, JSON.parse(unknown.body.toString()).code]).toEqual([503, 'STORAGE_UNAVAILABLE']);
      expect(await storedFiles()).toEqual([]);

      wanted = async () => true;
      expect((await put(up, data)).status).toBe(200);
      expect(await storedFiles()).toEqual(['sessions/gone']);
    },
  );

  it('keeps a generated secret private and reuses it across restarts', async () => {
    const info = await stat(path.join(dir, 'store', '.secret'));
    expect(info.mode & 0o777).toBe(0o600);
    const data = Buffer.from('x');
    const up = await store.presignUpload('k', { size: 1, sha256: sha256(data) }, now + 60_000);
    const again = await createLocalBlobStore({ dir: path.join(dir, 'store'), publicUrl: baseUrl, clock: () => now });
    expect((await again.presignUpload('k', { size: 1, sha256: sha256(data) }, now + 60_000)).url).toBe(up.url);
  });

  it('refuses an expired URL with a JSON error and stores nothing', async () => {
    const data = Buffer.from('hello world');
    const up = await store.presignUpload('a/b', { size: data.length, sha256: sha256(data) }, now + 1000);
    now += 1001;
    const reply = await put(up, data);
    expect(reply.status).toBe(403);
    expect(reply.headers['content-type']).toMatch(/application\/json/);
    expect(JSON.parse(reply.body.toString()).error).toMatch(/expired/);
    expect(await storedFiles()).toEqual([]);
    const down = await store.presignDownload('a/b', now + 1000);
    now += 1001;
    expect((await send('GET', down.url, {})).status).toBe(403);
    await expect(store.presignDownload('a/b', now)).rejects.toThrow(/expired/);
  });

  it('leaves nothing behind when the client aborts an upload', async () => {
    const data = randomBytes(1 << 20);
    const up = await store.presignUpload('a/abort', { size: data.length, sha256: sha256(data) }, now + 60_000);
    await new Promise<void>((resolve) => {
      const request = http.request(up.url, { method: 'PUT', headers: up.headers });
      request.on('error', () => resolve());
      request.write(data.subarray(0, 100_000), () => setTimeout(() => request.destroy(), 50));
    });
    // The server notices the reset asynchronously.
    for (let i = 0; i < 50 && (await storedFiles()).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await storedFiles()).toEqual([]);
    expect(await store.stat('a/abort')).toBeUndefined();
  });

  it('refuses URLs whose signature, size, digest, expiry or method was tampered with', async () => {
    const data = Buffer.from('the real bundle');
    const object = { size: data.length, sha256: sha256(data) };
    const up = await store.presignUpload('t/k', object, now + 60_000);
    const other = Buffer.from('the fake bundle');
    const url = new URL(up.url);
    const variants: [string, string, Buffer, Record<string, string>][] = [];
    const tamper = (name: string, value: string): string => {
      const u = new URL(url);
      u.searchParams.set(name, value);
      return u.toString();
    };
    const sig = url.searchParams.get('sig')!;
    variants.push([tamper('sig', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1)), 'sig', data, up.headers]);
    variants.push([tamper('sig', 'short'), 'sig', data, up.headers]);
    variants.push([
      tamper('size', String(data.length + 1)),
      'size',
      Buffer.concat([data, Buffer.from('!')]),
      { ...up.headers, 'content-length': String(data.length + 1) },
    ]);
    variants.push([
      tamper('sha256', sha256(other)),
      'sha256',
      other,
      { ...up.headers, 'x-amz-checksum-sha256': Buffer.from(sha256(other), 'hex').toString('base64') },
    ]);
    variants.push([tamper('expires', String(now + 3_600_000)), 'expires', data, up.headers]);
    variants.push([up.url.replace('/t/k?', '/t/other?'), 'key', data, up.headers]);
    for (const [tampered, what, body, headers] of variants) {
      const reply = await send('PUT', tampered, headers, body);
      expect(reply.status, what).toBe(403);
    }
    // A PUT URL does not authorise a GET, nor a download URL a PUT.
    expect((await send('GET', up.url, {})).status).toBe(403);
    const down = await store.presignDownload('t/k', now + 60_000);
    expect((await send('PUT', down.url, up.headers, data)).status).toBe(403);
    expect((await send('DELETE', up.url, {})).status).toBe(405);
    expect(await storedFiles()).toEqual([]);
  });

  it('refuses a body of another length and a same-length body with another digest, storing nothing', async () => {
    const data = Buffer.from('0123456789abcdef');
    const up = await store.presignUpload('b/k', { size: data.length, sha256: sha256(data) }, now + 60_000);

    const shorter = await put(up, data.subarray(1), { ...up.headers, 'content-length': String(data.length - 1) });
    expect(shorter.status).toBe(400);
    const longer = await put(up, Buffer.concat([data, data]), {
      ...up.headers,
      'content-length': String(data.length * 2),
    });
    expect(longer.status).toBe(400);

    const swapped = Buffer.from(data);
    swapped[0] = swapped[0]! ^ 1;
    const digest = await put(up, swapped);
    expect(digest.status).toBe(400);
    expect(JSON.parse(digest.body.toString()).error).toMatch(/SHA-256/);

    // The checksum header, when sent, must be the signed one.
    const header = await put(up, data, {
      ...up.headers,
      'x-amz-checksum-sha256': Buffer.from(sha256(swapped), 'hex').toString('base64'),
    });
    expect(header.status).toBe(400);

    expect(await storedFiles()).toEqual([]);
    expect(await store.stat('b/k')).toBeUndefined();
    expect((await put(up, data)).status).toBe(200);
    expect(await storedFiles()).toEqual(['b/k']);
  });

  it('validates keys', async () => {
    const object = { size: 0, sha256: sha256(Buffer.alloc(0)) };
    for (const key of [
      '',
      '../x',
      'a/../b',
      '/abs',
      'a//b',
      'a/',
      '.secret',
      'a/.hidden',
      'sp ace',
      'a\\b',
      'ü',
      'a?b',
      'a%2e%2e',
    ]) {
      await expect(store.presignUpload(key, object, now + 1000), key).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
      await expect(store.stat(key), key).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
      await expect(store.delete(key), key).rejects.toMatchObject({ code: 'UNSAFE_PATH' });
    }
    await expect(
      store.presignUpload('ok/key_1.tar-zst', { size: -1, sha256: object.sha256 }, now),
    ).rejects.toMatchObject({
      code: 'ARTIFACT_INVALID',
    });
    await expect(store.presignUpload('ok/key_1.tar-zst', { size: 1, sha256: 'ABC' }, now)).rejects.toMatchObject({
      code: 'ARTIFACT_INVALID',
    });
    // A request for a path outside the store is refused before any signature check.
    expect((await send('GET', `${baseUrl}/blobs/..%2f.secret?expires=1&sig=00`, {})).status).toBe(400);
    expect((await send('GET', `${baseUrl}/blobs/.secret?expires=1&sig=00`, {})).status).toBe(400);
    expect((await send('GET', `${baseUrl}/other`, {})).body.toString()).toBe('not a blob');
  });

  it('round-trips an empty object', async () => {
    const empty = Buffer.alloc(0);
    const up = await store.presignUpload('e', { size: 0, sha256: sha256(empty) }, now + 60_000);
    expect((await put(up, empty)).status).toBe(200);
    expect(await store.stat('e')).toEqual({ size: 0, sha256: sha256(empty) });
  });

  it('moves 128 MiB up and down with bounded memory', async () => {
    const chunk = randomBytes(1 << 20);
    const count = 128;
    const whole = createHash('sha256');
    for (let i = 0; i < count; i++) whole.update(chunk);
    const object = { size: chunk.length * count, sha256: whole.digest('hex') };
    function* body(): Generator<Buffer> {
      for (let i = 0; i < count; i++) yield chunk;
    }

    // Measure what is retained, not garbage the collector has yet to reclaim: collect before each sample.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    gc();
    const baseline = process.memoryUsage();
    let peak = 0;
    let samples = 0;
    const sample = (): void => {
      gc();
      const m = process.memoryUsage();
      peak = Math.max(peak, m.arrayBuffers - baseline.arrayBuffers + (m.heapUsed - baseline.heapUsed));
      samples++;
    };
    const timer = setInterval(sample, 200);
    try {
      const up = await store.presignUpload('big/one', object, now + 60_000);
      expect((await put(up, Readable.from(body()))).status).toBe(200);
      expect(await store.stat('big/one')).toEqual(object);
      const down = await store.presignDownload('big/one', now + 60_000);
      const got = await new Promise<{ size: number; sha256: string }>((resolve, reject) => {
        http
          .get(down.url, (response) => {
            const hash = createHash('sha256');
            let size = 0;
            response.on('data', (c: Buffer) => {
              size += c.length;
              hash.update(c);
            });
            response.on('end', () => resolve({ size, sha256: hash.digest('hex') }));
            response.on('error', reject);
          })
          .on('error', reject);
      });
      expect(got).toEqual(object);
    } finally {
      clearInterval(timer);
    }
    // Buffering the body anywhere would retain at least 128 MiB; streaming retains socket and stream buffers only
    // (transiently a few tens of MiB with client and server in one process), whatever the body size.
    expect(samples).toBeGreaterThan(3);
    expect(peak).toBeLessThan(64 * 1024 * 1024);
  });
});
