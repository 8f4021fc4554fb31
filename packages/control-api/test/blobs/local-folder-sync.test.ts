/**
 * The local blob store's group commit of folder entries: an upload is acknowledged only after an fsync of its folder
 * that began after its rename, and uploads that finish while one fsync is under way share the next one.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BlobStore, SignedRequest } from '../../src/blobs/types.js';

/** Each folder fsync, held until the test releases it, with the objects in the folder when it began. */
const syncs: { folder: string; covered: string[]; release: () => void }[] = [];
vi.mock('@blue-agent/contract/util/fs.js', async (original) => {
  const { readdirSync } = await import('node:fs');
  return {
    ...(await original<typeof import('@blue-agent/contract/util/fs.js')>()),
    fsyncDir: (folder: string) =>
      new Promise<void>((resolve) => {
        syncs.push({
          folder,
          covered: readdirSync(folder).filter((name) => !name.endsWith('.upload')),
          release: resolve,
        });
      }),
  };
});
const { createLocalBlobStore } = await import('../../src/blobs/local.js');

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

function put(signed: SignedRequest, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(signed.url, { method: signed.method, headers: signed.headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', reject);
    request.end(body);
  });
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(condition()).toBe(true);
}

describe('local blob store: folder fsyncs', () => {
  let dir: string;
  let server: http.Server;
  let store: BlobStore;

  beforeEach(async () => {
    syncs.length = 0;
    dir = await mkdtemp(path.join(tmpdir(), 'blobs-sync-'));
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
    for (const s of syncs) s.release();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  it(
    'acknowledges an upload only after an fsync that began after its rename; uploads renamed meanwhile share the ' +
      'next',
    async () => {
      const bodies = [0, 1, 2].map(() => randomBytes(1000));
      const signed = await Promise.all(
        bodies.map((b, i) =>
          store.presignUpload(`sessions/o${i}.tar.gz`, { size: b.length, sha256: sha256(b) }, Date.now() + 60_000),
        ),
      );
      const answered: (number | undefined)[] = [undefined, undefined, undefined];
      const first = put(signed[0]!, bodies[0]!).then((status) => (answered[0] = status));
      await until(() => syncs.length === 1);
      expect(syncs[0]!.covered).toEqual(['o0.tar.gz']);

      // Renamed while that fsync is under way: it may not cover them, so they wait for the next.
      const others = [1, 2].map((i) => put(signed[i]!, bodies[i]!).then((status) => (answered[i] = status)));
      const folder = path.join(dir, 'store', 'sessions');
      await until(() => existsSync(path.join(folder, 'o1.tar.gz')) && existsSync(path.join(folder, 'o2.tar.gz')));
      expect(syncs.length).toBe(1);
      expect(answered).toEqual([undefined, undefined, undefined]);

      syncs[0]!.release();
      await first;
      expect(answered[0]).toBe(200);
      await until(() => syncs.length === 2);
      expect(syncs[1]!.covered.sort()).toEqual(['o0.tar.gz', 'o1.tar.gz', 'o2.tar.gz']);
      expect(answered.slice(1)).toEqual([undefined, undefined]);

      syncs[1]!.release();
      await Promise.all(others);
      expect(answered).toEqual([200, 200, 200]);
      // One fsync for the two that finished together, not one each.
      expect(syncs.length).toBe(2);
      expect(syncs.every((s) => s.folder === folder)).toBe(true);
    },
  );
});
