/**
 * How the local blob store writes an upload: in batches of 512 KiB or 256 socket reads (not one write per read), one
 * batch written at a time, and a failing disk answered as the store's failure (503, tried again later), not the body's.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BlobStore, SignedRequest } from '../../src/blobs/types.js';

/** Every batch written, in order; `gate` (when set) holds each write until the test lets it go; `fail` fails the nth.
 * */
const writes: { bytes: number; buffers: number; release: () => void }[] = [];
let gate = false;
let failAt = Infinity;
vi.mock('@blue-agent/contract/util/fs.js', async (original) => {
  const real = await original<typeof import('@blue-agent/contract/util/fs.js')>();
  return {
    ...real,
    writeBuffers: async (handle: FileHandle, buffers: readonly Buffer[]) => {
      const bytes = buffers.reduce((sum, b) => sum + b.length, 0);
      if (bytes === 0) return;
      const n = writes.length + 1;
      await new Promise<void>((resolve) => {
        writes.push({ bytes, buffers: buffers.length, release: resolve });
        if (!gate) resolve();
      });
      if (n === failAt)
        throw Object.assign(new Error("ENOSPC: no space left on device, write '/srv/secret/path'"), {
          code: 'ENOSPC',
          errno: -28,
          syscall: 'write',
        });
      await real.writeBuffers(handle, buffers);
    },
  };
});
const { createLocalBlobStore } = await import('../../src/blobs/local.js');
const { batchedWriter } = await import('../../src/blobs/local-write.js');

const MiB = 1024 * 1024;
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** Sends `body` in pieces of `piece` bytes; resolves with the status and the answer's body. */
function put(signed: SignedRequest, body: Buffer, piece: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(signed.url, { method: signed.method, headers: signed.headers }, (response) => {
      let text = '';
      response.on('data', (c) => (text += c));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    request.on('error', reject);
    void (async () => {
      for (let at = 0; at < body.length; at += piece) {
        if (!request.write(body.subarray(at, at + piece))) await new Promise((r) => request.once('drain', r));
      }
      request.end();
    })();
  });
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

describe('local blob store: writing an upload', () => {
  let dir: string;
  let server: http.Server;
  let store: BlobStore;

  beforeEach(async () => {
    writes.length = 0;
    gate = false;
    failAt = Infinity;
    dir = await mkdtemp(path.join(tmpdir(), 'blobs-write-'));
    server = http.createServer(
      (request, response) => void store.serve!(request, response, { wanted: async () => true }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    store = await createLocalBlobStore({
      dir: path.join(dir, 'store'),
      publicUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      secret: 'x'.repeat(32),
    });
  });

  afterEach(async () => {
    for (const w of writes) w.release();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the body in batches of at least 512 KiB, one at a time, and stores exactly the bytes sent', async () => {
    gate = true;
    const body = randomBytes(3 * MiB + 12_345);
    const signed = await store.presignUpload(
      'sessions/big.tar.gz',
      { size: body.length, sha256: sha256(body) },
      Date.now() + 60_000,
    );
    // Small pieces: many socket reads make up each batch.
    const answer = put(signed, body, 7_000);
    await until(() => writes.length === 1);
    // Held: the next batch fills meanwhile but is not written until this one is done.
    await new Promise((r) => setTimeout(r, 100));
    expect(writes.length).toBe(1);
    writes[0]!.release();
    await until(() => writes.length === 2);
    gate = false;
    writes[1]!.release();
    expect((await answer).status).toBe(200);
    expect(writes.reduce((sum, w) => sum + w.bytes, 0)).toBe(body.length);
    // 3 MiB and a bit: six or seven batches (a batch ends with the socket read that takes it past 512 KiB).
    expect([6, 7]).toContain(writes.length);
    expect(writes.slice(0, -1).every((w) => w.bytes >= MiB / 2 && w.bytes < MiB / 2 + 64 * 1024)).toBe(true);
    expect((await readFile(store.fileOf!('sessions/big.tar.gz'))).equals(body)).toBe(true);
  });

  it('answers a disk failure 503 STORAGE_UNAVAILABLE without a server path, and keeps nothing', async () => {
    failAt = 2;
    const body = randomBytes(2 * MiB + 1);
    const signed = await store.presignUpload(
      'sessions/full.tar.gz',
      { size: body.length, sha256: sha256(body) },
      Date.now() + 60_000,
    );
    const answer = await put(signed, body, 64 * 1024);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toEqual({
      code: 'STORAGE_UNAVAILABLE',
      error: 'the blob store could not keep the upload (ENOSPC); try again later',
    });
    expect(answer.text).not.toContain('/srv');
    const left = await readdir(path.join(dir, 'store', 'sessions'));
    expect(left).toEqual([]);
    expect(await store.stat('sessions/full.tar.gz')).toBeUndefined();
  });

  it('batches by count as well as bytes: 1,000 tiny reads make batches of 256 buffers at most', async () => {
    const written: Buffer[] = [];
    const handle = {
      writev: async (list: Buffer[]) => {
        written.push(...list);
        return { bytesWritten: list.reduce((sum, b) => sum + b.length, 0), buffers: list };
      },
      write: async () => {
        throw new Error('not expected: writev took everything');
      },
    };
    const writer = batchedWriter(handle as never);
    const chunks = Array.from({ length: 1000 }, (_, i) => Buffer.from(String(i % 10)));
    for (const chunk of chunks) await writer.push(chunk);
    await writer.end();
    expect(writes.map((w) => w.buffers)).toEqual([256, 256, 256, 232]);
    expect(Buffer.concat(written).equals(Buffer.concat(chunks))).toBe(true);
  });

  it('answers 503 when the object cannot be put in place, and leaves no temporary file', async () => {
    const body = randomBytes(1000);
    // A folder where the object should go: the rename into place fails.
    const target = store.fileOf!('sessions/taken.tar.gz');
    await mkdir(target, { recursive: true });
    await writeFile(path.join(target, 'x'), 'x');
    const signed = await store.presignUpload(
      'sessions/taken.tar.gz',
      { size: body.length, sha256: sha256(body) },
      Date.now() + 60_000,
    );
    const answer = await put(signed, body, 1000);
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    expect(answer.text).not.toContain(dir);
    expect(await readdir(path.join(dir, 'store', 'sessions'))).toEqual(['taken.tar.gz']);
  });
});
