/**
 * The embedded blob store: objects are files under one directory, and upload/download URLs point at the Control API
 * itself, signed with a server secret. The signature binds the method, key, expiry and, for uploads, the exact size
 * and SHA-256, so a URL cannot be reused for other bytes; the body is hashed while it is written and only a body that
 * matches is renamed into place, and only while the Control API still wants it (a URL outlives a deleted session).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { constants, createReadStream, statSync, type Stats } from 'node:fs';
import { access, mkdir, rename, stat, unlink } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { BlueError } from '@blue-agent/contract/errors.js';
import { assertValidKey, assertValidObject, hexToBase64, isValidKey } from './keys.js';
import type { BlobStore, SignedRequest, StoredObject, UploadGate } from './types.js';
import { admitted, sendError, storageFailure, unavailable } from './local-answers.js';
import { loadOrCreateSecret } from './local-secret.js';
import { LocalFolders } from './local-folders.js';
import { batchedWriter, hashCopy } from './local-write.js';

export interface LocalBlobStoreOptions {
  dir: string;
  /** The Control API's public base URL; blob URLs are `<publicUrl>/blobs/<key>`. */
  publicUrl: string;
  /** HMAC key for blob URLs; generated once and kept in `<dir>/.secret` when not given. */
  secret?: string | Buffer;
  /** Milliseconds since the epoch; injectable for expiry tests. */
  clock?: () => number;
}

/** Sent by clients of both stores; the local store checks it against the signed digest when present. */
const CHECKSUM_HEADER = 'x-amz-checksum-sha256';

export async function createLocalBlobStore(options: LocalBlobStoreOptions): Promise<BlobStore> {
  const dir = path.resolve(options.dir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const secret =
    options.secret === undefined
      ? await loadOrCreateSecret(dir)
      : Buffer.isBuffer(options.secret)
        ? options.secret
        : Buffer.from(options.secret, 'utf8');
  if (secret.length < 16) throw new BlueError('CONFIG_INVALID', 'the blob URL secret must be at least 16 bytes');
  const clock = options.clock ?? Date.now;
  const base = new URL(options.publicUrl);
  const prefix = `${base.pathname.replace(/\/+$/, '')}/blobs/`;
  // Digests this store computed while receiving, by file, with the identity of the file they describe: `complete`
  // right after an upload then needs no second pass over the bytes. Any change to the file (new inode, size, mtime or
  // ctime, which nobody can set back) means reading it again.
  const receivedDigests = new Map<
    string,
    { ino: number; size: number; mtimeMs: number; ctimeMs: number; sha256: string }
  >();
  const MAX_REMEMBERED = 10_000;
  const origin = `${base.origin}${prefix}`;

  function signature(method: string, key: string, expires: number, size: string, sha256: string): Buffer {
    return createHmac('sha256', secret)
      .update(['blue-blob-v1', method, key, String(expires), size, sha256].join('\n'))
      .digest();
  }

  function sameSignature(given: string | null, expected: Buffer): boolean {
    if (given === null || !/^[0-9a-f]{64}$/.test(given)) return false;
    return timingSafeEqual(Buffer.from(given, 'hex'), expected);
  }

  function deadline(expiresAtUnixMs: number): number {
    if (!(expiresAtUnixMs > clock())) throw new BlueError('INTERNAL', 'cannot presign a URL that has already expired');
    return Math.floor(expiresAtUnixMs);
  }

  const fileOf = (key: string): string => path.join(dir, ...key.split('/'));

  const folders = new LocalFolders();

  async function receive(
    request: IncomingMessage,
    response: ServerResponse,
    key: string,
    size: number,
    sha256: string,
    uploads: UploadGate,
  ): Promise<void> {
    if (!(await admitted(response, uploads, key))) return;
    const declared = request.headers['content-length'];
    if (declared === undefined || !/^\d+$/.test(declared) || Number(declared) !== size) {
      sendError(
        response,
        400,
        'ARTIFACT_INVALID',
        `the body must be exactly ${size} bytes with a Content-Length header`,
      );
      return;
    }
    const checksum = request.headers[CHECKSUM_HEADER];
    if (checksum !== undefined && checksum !== hexToBase64(sha256)) {
      sendError(response, 400, 'ARTIFACT_INVALID', `${CHECKSUM_HEADER} differs from the signed digest`);
      return;
    }
    const target = fileOf(key);
    const folder = path.dirname(target);
    const temp = path.join(folder, `.${path.basename(target)}.${randomBytes(6).toString('hex')}.upload`);
    const hash = createHash('sha256');
    let received = 0;
    try {
      const handle = await folders.openNew(temp);
      const writer = batchedWriter(handle);
      try {
        for await (const chunk of request as AsyncIterable<Buffer>) {
          received += chunk.length;
          if (received > size)
            throw new BlueError('ARTIFACT_INVALID', `the body is longer than the signed ${size} bytes`);
          hash.update(chunk);
          await writer.push(chunk);
        }
        await writer.end();
        // On disk before the rename below can expose it.
        await handle.datasync();
      } finally {
        await writer.settled();
        await handle.close();
      }
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      const failure = storageFailure(error);
      if (failure !== undefined) unavailable(response, failure);
      else sendError(response, 400, 'ARTIFACT_INVALID', error instanceof Error ? error.message : 'upload failed');
      return;
    }
    const digest = hash.digest('hex');
    if (received !== size || digest !== sha256) {
      await unlink(temp).catch(() => undefined);
      sendError(
        response,
        400,
        'ARTIFACT_INVALID',
        received !== size
          ? `received ${received} bytes, signed for ${size}`
          : 'the body SHA-256 differs from the signed digest',
      );
      return;
    }
    let info: Stats;
    try {
      // Asked again: the session may have been deleted while the bytes arrived (its objects deleted before this
      // rename).
      if (!(await admitted(response, uploads, key))) {
        await unlink(temp).catch(() => undefined);
        return;
      }
      await rename(temp, target);
      await folders.sync(folder);
      // Synchronous, as in stat() below: a stat of a file just written takes microseconds, less than its trip through
      // the thread pool.
      info = statSync(target);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      unavailable(response, storageFailure(error) ?? 'EIO');
      return;
    }
    if (receivedDigests.size >= MAX_REMEMBERED) receivedDigests.delete(receivedDigests.keys().next().value!);
    receivedDigests.set(target, {
      ino: info.ino,
      size: info.size,
      mtimeMs: info.mtimeMs,
      ctimeMs: info.ctimeMs,
      sha256: digest,
    });
    response.writeHead(200, { [CHECKSUM_HEADER]: hexToBase64(digest), 'content-length': 0 });
    response.end();
  }

  async function send(request: IncomingMessage, response: ServerResponse, key: string): Promise<void> {
    const file = fileOf(key);
    let info;
    try {
      info = await stat(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (info === undefined || !info.isFile()) {
      sendError(response, 404, 'NOT_FOUND', 'no object is stored at this URL');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': info.size });
    if (request.method === 'HEAD') {
      response.end();
      return;
    }
    await pipeline(createReadStream(file), response);
  }

  async function answer(
    request: IncomingMessage,
    response: ServerResponse,
    url: URL,
    uploads: UploadGate,
  ): Promise<void> {
    const key = url.pathname.slice(prefix.length);
    const method = request.method ?? 'GET';
    if (method !== 'PUT' && method !== 'GET' && method !== 'HEAD') {
      response.setHeader('allow', 'GET, HEAD, PUT');
      sendError(response, 405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on blob URLs`);
      return;
    }
    if (!isValidKey(key)) {
      sendError(response, 400, 'UNSAFE_PATH', 'invalid blob key');
      return;
    }
    const q = url.searchParams;
    const expiresText = q.get('expires') ?? '';
    const expires = /^\d{1,16}$/.test(expiresText) ? Number(expiresText) : NaN;
    const signedMethod = method === 'HEAD' ? 'GET' : method;
    let size = NaN;
    let sha256 = '';
    if (signedMethod === 'PUT') {
      const sizeText = q.get('size') ?? '';
      size = /^\d{1,16}$/.test(sizeText) ? Number(sizeText) : NaN;
      sha256 = q.get('sha256') ?? '';
      if (!Number.isSafeInteger(size) || !/^[0-9a-f]{64}$/.test(sha256)) {
        sendError(response, 403, 'AUTH_FAILED', 'the blob URL is not validly signed');
        return;
      }
    }
    const expected = signature(signedMethod, key, expires, signedMethod === 'PUT' ? String(size) : '', sha256);
    if (!Number.isSafeInteger(expires) || !sameSignature(q.get('sig'), expected)) {
      sendError(response, 403, 'AUTH_FAILED', 'the blob URL is not validly signed');
      return;
    }
    if (clock() > expires) {
      sendError(response, 403, 'AUTH_FAILED', 'the blob URL has expired');
      return;
    }
    if (signedMethod === 'PUT') await receive(request, response, key, size, sha256, uploads);
    else await send(request, response, key);
  }

  return {
    kind: 'local',

    async check(): Promise<void> {
      await access(dir, constants.W_OK | constants.X_OK);
    },

    async presignUpload(key: string, object: StoredObject, expiresAtUnixMs: number): Promise<SignedRequest> {
      assertValidKey(key);
      assertValidObject(object);
      const expires = deadline(expiresAtUnixMs);
      const sig = signature('PUT', key, expires, String(object.size), object.sha256).toString('hex');
      return {
        method: 'PUT',
        url: `${origin}${key}?expires=${expires}&size=${object.size}&sha256=${object.sha256}&sig=${sig}`,
        headers: { 'content-length': String(object.size), [CHECKSUM_HEADER]: hexToBase64(object.sha256) },
        expiresAtUnixMs: expires,
      };
    },

    async presignDownload(key: string, expiresAtUnixMs: number): Promise<SignedRequest> {
      assertValidKey(key);
      const expires = deadline(expiresAtUnixMs);
      const sig = signature('GET', key, expires, '', '').toString('hex');
      return {
        method: 'GET',
        url: `${origin}${key}?expires=${expires}&sig=${sig}`,
        headers: {},
        expiresAtUnixMs: expires,
      };
    },

    async stat(key: string, statOptions: { copyTo?: string | undefined } = {}): Promise<StoredObject | undefined> {
      assertValidKey(key);
      const file = fileOf(key);
      const known = receivedDigests.get(file);
      // A copy is hashed as it is made: what it holds is what the digest says.
      if (statOptions.copyTo !== undefined) return hashCopy(file, statOptions.copyTo);
      if (known !== undefined) {
        let info;
        try {
          info = statSync(file, { throwIfNoEntry: false });
        } catch {
          info = undefined;
        }
        if (
          info !== undefined &&
          info.ino === known.ino &&
          info.size === known.size &&
          info.mtimeMs === known.mtimeMs &&
          info.ctimeMs === known.ctimeMs
        ) {
          return { size: known.size, sha256: known.sha256 };
        }
        receivedDigests.delete(file);
      }
      const hash = createHash('sha256');
      let size = 0;
      try {
        for await (const chunk of createReadStream(fileOf(key))) {
          size += (chunk as Buffer).length;
          hash.update(chunk as Buffer);
        }
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EISDIR') return undefined;
        throw error;
      }
      return { size, sha256: hash.digest('hex') };
    },

    async serve(request: IncomingMessage, response: ServerResponse, uploads: UploadGate): Promise<boolean> {
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (!url.pathname.startsWith(prefix)) return false;
      try {
        await answer(request, response, url, uploads);
      } catch (error) {
        // Includes a client that goes away mid-download; uploads clean up their temp file before getting here.
        sendError(response, 500, 'INTERNAL', error instanceof Error ? error.message : 'blob request failed');
      }
      return true;
    },

    fileOf(key: string): string {
      assertValidKey(key);
      return fileOf(key);
    },

    async delete(key: string): Promise<void> {
      assertValidKey(key);
      receivedDigests.delete(fileOf(key));
      try {
        await unlink(fileOf(key));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    },

    async close(): Promise<void> {},
  };
}
