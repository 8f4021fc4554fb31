/**
 * Whether the upload hashes the bundle on its way out: only when nobody else would refuse bytes that are not the
 * recorded ones. A storage service signed to check the digest (S3's x-amz-checksum-sha256) does it itself, and the
 * hash would only compete with the upload for CPU.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import type { SignedUpload } from '../../src/control-api/uploads.js';
import { uploadFile } from '../../src/upload/put.js';

const counted = vi.hoisted(() => ({ bytes: 0 }));
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    createHash: (algorithm: string) => {
      const hash = real.createHash(algorithm);
      const update = hash.update.bind(hash);
      hash.update = ((data: Buffer) => {
        counted.bytes += data.length;
        return update(data);
      }) as typeof hash.update;
      return hash;
    },
  };
});

const bytes = Buffer.alloc(3 * 1024 * 1024 + 5, 9);
let sha256: string;
let dir: string;
let file: string;
let server: Server;
let origin: string;
const dispatcher = new Agent();

beforeAll(async () => {
  const { createHash } = await vi.importActual<typeof import('node:crypto')>('node:crypto');
  sha256 = createHash('sha256').update(bytes).digest('hex');
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-digest-'));
  file = path.join(dir, 'a.bundle');
  await writeFile(file, bytes);
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await dispatcher.destroy();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

async function hashedWhileUploading(
  headers: Record<string, string>,
  verifyDigest?: boolean,
  controlOrigin?: string,
): Promise<number> {
  counted.bytes = 0;
  const signed: SignedUpload = { method: 'PUT', url: `${origin}/bucket/k?X-Amz-Signature=s`, headers };
  const result = await uploadFile(
    signed,
    file,
    { size: bytes.length, sha256 },
    {
      dispatcher,
      timeoutMs: 30_000,
      ...(verifyDigest === undefined ? {} : { verifyDigest }),
      ...(controlOrigin === undefined ? {} : { controlOrigin }),
    },
  );
  expect(result).toEqual({ status: 200, bytes: bytes.length });
  return counted.bytes;
}

it('hashes every byte when the storage service only keeps the digest', async () => {
  expect(await hashedWhileUploading({ 'x-amz-meta-sha256': sha256 })).toBe(bytes.length);
  expect(await hashedWhileUploading({})).toBe(bytes.length);
});

it(
  'hashes nothing when the storage service checks the recorded digest itself, or the caller has just hashed the ' +
    'file',
  async () => {
    const checksum = { 'x-amz-checksum-sha256': Buffer.from(sha256, 'hex').toString('base64') };
    // The Control API's own store (this URL is on its origin) checks the digest; elsewhere a URL not signed with SigV4
    // proves nothing about the storage service, and the client hashes.
    expect(await hashedWhileUploading(checksum, undefined, origin)).toBe(0);
    expect(await hashedWhileUploading(checksum)).toBe(bytes.length);
    expect(await hashedWhileUploading({}, false)).toBe(0);
  },
);
