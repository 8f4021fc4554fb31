/**
 * The embedded blob store: objects are files under one directory, and upload/download URLs point at the Control API
 * itself, signed with a server secret. The signature binds the method, key, expiry and, for uploads, the exact size
 * and SHA-256, so a URL cannot be reused for other bytes; the body is hashed while it is written and only a body that
 * matches is renamed into place, and only while the Control API still wants it (a URL outlives a deleted session).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { constants, createReadStream, statSync, type Stats } from 'node:fs';
import { access, mkdir, open, readFile, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { BlueError, isSystemError } from '@blue-agent/contract/errors.js';
import { fsyncDir, writeBuffers } from '@blue-agent/contract/util/fs.js';
import { assertValidKey, assertValidObject, hexToBase64, isValidKey } from './keys.js';
import type { BlobStore, SignedRequest, StoredObject, UploadGate } from './types.js';

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
/**
 * The bytes of an upload gathered before they are written. Written chunk by chunk, each 64 KiB socket read waited for
 * its own trip through the thread pool and an upload went at the pace of those trips; batches of this size make far
 * fewer (bench/upload.mjs). An upload holds two
 * batches at most: the one being written and the one filling.
 */
const WRITE_BATCH = 512 * 1024;
const WRITE_BATCH_CHUNKS = 256;

async function loadOrCreateSecret(dir: string): Promise<Buffer> {
  const file = path.join(dir, '.secret');
  try {
    const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(randomBytes(32).toString('hex'), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsyncDir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const text = (await readFile(file, 'utf8')).trim();
  // A concurrent first start may read the file before the other process has written it.
  if (!/^[0-9a-f]{64}$/.test(text)) {
    throw new BlueError('CONFIG_INVALID', `${file} does not hold a blob URL secret`, {
      file,
      hint: 'Delete the file and restart the server; outstanding blob URLs stop working.',
    });
  }
  return Buffer.from(text, 'hex');
}

/**
 * Writes the chunks pushed to it (an upload's socket reads, 64 KiB at most each) in batches of WRITE_BATCH bytes or
 * WRITE_BATCH_CHUNKS chunks, whichever comes first, one batch on the thread pool while the next fills: memory stays
 * within two batches, and a client trickling bytes cannot make a batch of thousands of tiny Buffers.
 */
export function batchedWriter(handle: Pick<FileHandle, 'write' | 'writev'>): {
  push(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
  settled(): Promise<void>;
} {
  let batch: Buffer[] = [];
  let bytes = 0;
  let writing: Promise<void> | undefined;
  const flush = async (): Promise<void> => {
    await writing;
    const buffers = batch;
    batch = [];
    bytes = 0;
    writing = writeBuffers(handle, buffers);
    // Its failure is taken where it is awaited; until then it must not count as an unhandled rejection.
    writing.catch(() => undefined);
  };
  return {
    async push(chunk) {
      batch.push(chunk);
      bytes += chunk.length;
      if (bytes >= WRITE_BATCH || batch.length >= WRITE_BATCH_CHUNKS) await flush();
    },
    async end() {
      await flush();
      await writing;
    },
    /** Once no write is under way, whatever its outcome: before the file is closed. */
    async settled() {
      await writing?.catch(() => undefined);
    },
  };
}

/** File-system calls of an upload: an error from one of them is the store's, not the request's. */
const STORAGE_CALLS = new Set(['open', 'mkdir', 'write', 'fsync', 'fdatasync', 'close', 'rename', 'stat']);

/** The error code when `error` is the store's own failure (not the client's body or connection). */
function storageFailure(error: unknown): string | undefined {
  if (error instanceof BlueError) return error.code === 'IO_ERROR' ? error.code : undefined;
  return isSystemError(error) && error.syscall !== undefined && STORAGE_CALLS.has(error.syscall)
    ? error.code
    : undefined;
}

/**
 * The store's own failure (a full or broken disk) is not the body's: answered 503, which the client tries again
 * later, with the error code and no server path.
 */
function unavailable(response: ServerResponse, code: string): void {
  sendError(
    response,
    503,
    'STORAGE_UNAVAILABLE',
    `the blob store could not keep the upload (${code}); try again later`,
  );
}

/**
 * Whether the Control API still wants bytes at `key`; when not, the upload is answered: 410 for a validly signed URL
 * whose session was deleted (or whose upload expired or failed), 503 when the database cannot tell now.
 */
async function admitted(response: ServerResponse, uploads: UploadGate, key: string): Promise<boolean> {
  let wanted: boolean;
  try {
    wanted = await uploads.wanted(key);
  } catch {
    sendError(
      response,
      503,
      'STORAGE_UNAVAILABLE',
      'the Control API cannot tell now whether this upload is still wanted; try again later',
    );
    return false;
  }
  if (!wanted)
    sendError(
      response,
      410,
      'UPLOAD_GONE',
      'this upload URL takes no bytes any more: the session it was signed for was deleted, or its upload expired ' +
        'or failed',
    );
  return wanted;
}

function sendError(response: ServerResponse, status: number, code: string, message: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = JSON.stringify({ error: message, code });
  // The request body may be unread; closing the connection keeps it from being parsed as the next request.
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  response.end(body);
}

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

  /** Folders known to exist: a new object's folder is made once, not on every upload. */
  const folders = new Set<string>();
  async function openNew(file: string): Promise<FileHandle> {
    const folder = path.dirname(file);
    if (!folders.has(folder)) {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      folders.add(folder);
    }
    try {
      return await open(file, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // Removed since: made again.
      await mkdir(folder, { recursive: true, mode: 0o700 });
      return open(file, 'wx', 0o600);
    }
  }

  // Group commit of folder entries: one fsync of a folder covers every rename into it that finished before the fsync
  // began, so concurrent uploads share one. An upload whose rename finished while an fsync was under way waits for
  // the next, which starts once that one ends.
  const folderSyncs = new Map<string, { running: Promise<void>; next?: Promise<void> }>();
  function startFolderSync(folder: string): Promise<void> {
    const running = fsyncDir(folder).finally(() => {
      const state = folderSyncs.get(folder);
      if (state?.running === running && state.next === undefined) folderSyncs.delete(folder);
    });
    folderSyncs.set(folder, { running });
    return running;
  }
  function syncFolder(folder: string): Promise<void> {
    const state = folderSyncs.get(folder);
    if (state === undefined) return startFolderSync(folder);
    return (state.next ??= state.running.then(() => startFolderSync(folder)));
  }

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
      const handle = await openNew(temp);
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
      await syncFolder(folder);
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

/** Copies `file` to the new file `to`, hashing the bytes on the way; undefined when there is no such file. */
async function hashCopy(file: string, to: string): Promise<StoredObject | undefined> {
  const hash = createHash('sha256');
  let size = 0;
  const copy = await open(to, 'wx', 0o600);
  try {
    for await (const chunk of createReadStream(file)) {
      size += (chunk as Buffer).length;
      hash.update(chunk as Buffer);
      await copy.write(chunk as Buffer);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EISDIR') return undefined;
    throw error;
  } finally {
    await copy.close();
  }
  return { size, sha256: hash.digest('hex') };
}
