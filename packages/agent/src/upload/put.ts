/**
 * Sends a bundle to the signed URL the Control API returned: exactly its method, URL and headers (a storage service
 * checks its signature over them), the file streamed with its Content-Length, never held whole in memory. The bearer
 * token is never sent here: the signed URL is its own credential, and may belong to another origin.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { UploadError } from '../control-api/errors.js';
import {
  discard,
  header,
  MESSAGE_READ_MS,
  parseRetryAfter,
  readSome,
  serverError,
  statusKind,
} from '../control-api/http.js';
import { describeNetworkError, safeUrl, scrubText } from '../control-api/scrub.js';
import { loadUndici } from '../control-api/undici.js';
import type { SignedUpload } from '../control-api/uploads.js';
import { BlueError } from '@blue-agent/contract/errors.js';

/** The slowest upload still waited for: a stalled connection must not hold a drain forever. */
const MIN_BYTES_PER_SECOND = 32 * 1024;
/**
 * The body is read in chunks of this size into a small ring of reused buffers (see readChunks). Every chunk costs a
 * read on the thread pool, a socket write and its drain, so larger chunks spend less CPU per byte (bench/upload.mjs).
 */
const READ_CHUNK = 1024 * 1024;
const RING = 2;
/** The checksum header S3 (and the Control API's own store) checks the body against when it is signed. */
const CHECKSUM_HEADER = 'x-amz-checksum-sha256';
/** Headers the agent sets itself from the file, whatever the signed headers say. */
const OWN_HEADERS = new Set(['content-length', 'transfer-encoding', 'host', 'connection']);

export interface UploadExpectation {
  size: number;
  sha256: string;
}

export interface UploadFileOptions {
  dispatcher: Dispatcher;
  /** Time to connect and to get the answer once the body is sent. */
  timeoutMs: number;
  userAgent?: string;
  now?: () => number;
  /** For tests: the undici module to use. */
  undici?: typeof import('undici');
  /**
   * Hash the bytes on their way out and refuse to call the upload done when they are not the recorded ones (default
   * true). A caller that has just re-hashed the file may skip it. It is skipped anyway when the storage service itself
   * refuses other bytes (see storageChecksDigest): hashing competes with the upload for CPU.
   */
  verifyDigest?: boolean;
  /** The Control API's origin: its own blob store checks the digest its URLs carry (see storageChecksDigest). */
  controlOrigin?: string;
}

export interface UploadFileResult {
  status: number;
  /** Bytes sent: always the expected size. */
  bytes: number;
}

/**
 * Uploads `file` to `signed`. Throws an UploadError: `transient` (network, timeouts, 5xx, 408, 429), `expired` (the
 * storage refused the signature: 401/403, or an expired-token code — ask for a fresh presign), `record` (other 4xx, or
 * the file is not the bundle the record describes), `service` (a redirect).
 */
export async function uploadFile(
  signed: SignedUpload,
  file: string,
  expected: UploadExpectation,
  options: UploadFileOptions,
): Promise<UploadFileResult> {
  const where = `${signed.method} ${safeUrl(signed.url)}`;
  const undici = options.undici ?? (await loadUndici());
  const cannotOpen = (error: NodeJS.ErrnoException): never => {
    throw new UploadError('record', 'UPLOAD_FAILED', `cannot open the bundle ${file}: ${error.code ?? 'error'}`, {
      file,
    });
  };
  // A bundle that fits in one chunk (most sessions) is read whole at once, synchronously, and sent as one buffer: a
  // few KiB cost less to read than the four trips through the thread pool and the streamed body a larger one takes.
  let handle: FileHandle | undefined;
  let whole: { info: Stats; bytes?: Buffer } | undefined;
  if (expected.size <= READ_CHUNK) whole = readSmall(file, expected.size, cannotOpen);
  // Non-blocking, as in readSmall: a FIFO put in the bundle's place fails the size check instead of taking a thread.
  else handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK).catch(cannotOpen);
  try {
    const info = whole?.info ?? (await handle!.stat());
    if (!info.isFile() || info.size !== expected.size) {
      throw new UploadError(
        'record',
        'UPLOAD_FAILED',
        `the bundle ${file} is ${info.isFile() ? `${info.size} bytes` : 'not a regular file'}, not the ` +
          `${expected.size} bytes its record names; not uploading it`,
        { file, hint: 'The bundle changed after it was built; capture the session again.' },
      );
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(signed.headers)) {
      const lower = name.toLowerCase();
      if (lower === 'content-length' && value.trim() !== String(expected.size)) {
        throw new UploadError(
          'service',
          'UPLOAD_FAILED',
          `${where}: the signed Content-Length ${value.slice(0, 20)} is not the bundle's ${expected.size} bytes`,
          {
            hint: 'The Control API signed the upload for another size; check the presign request it received.',
          },
        );
      }
      if (!OWN_HEADERS.has(lower)) headers[lower] = value;
    }
    headers['content-length'] = String(expected.size);
    if (options.userAgent !== undefined && headers['user-agent'] === undefined)
      headers['user-agent'] = options.userAgent;

    // Hashed on the way out, unless the storage service checks the digest itself: a bundle that changed under us must
    // not be completed as if it were the recorded one.
    const hash =
      options.verifyDigest !== false && !storageChecksDigest(signed, expected.sha256, options.controlOrigin)
        ? createHash('sha256')
        : undefined;
    let sent = 0;
    let body: Buffer | Readable;
    if (whole?.bytes !== undefined) {
      hash?.update(whole.bytes);
      sent = whole.bytes.length;
      body = whole.bytes;
    } else {
      // undici's types name only streams, but it sends any async iterable (the path its own fetch() uploads take).
      body = readChunks(handle!, expected.size, (chunk) => {
        hash?.update(chunk);
        sent += chunk.length;
      }) as unknown as Readable;
    }
    const budgetMs = options.timeoutMs + Math.ceil((expected.size / MIN_BYTES_PER_SECOND) * 1000);

    let response: Dispatcher.ResponseData;
    try {
      response = await undici.request(signed.url, {
        method: signed.method as Dispatcher.HttpMethod,
        headers,
        body,
        dispatcher: options.dispatcher,
        signal: AbortSignal.timeout(budgetMs),
      });
    } catch (error) {
      throw new UploadError(
        'transient',
        'UPLOAD_FAILED',
        `${where}: ${describeNetworkError(error)} after ${sent} of ${expected.size} bytes`,
      );
    }
    const status = response.statusCode;
    if (status >= 200 && status < 300) {
      // The upload's own budget is long for a large bundle; what the storage service says after 2xx is not waited for.
      await discard(response, Math.min(options.timeoutMs, MESSAGE_READ_MS));
      if (hash !== undefined && (sent !== expected.size || hash.digest('hex') !== expected.sha256.toLowerCase())) {
        throw new UploadError(
          'record',
          'UPLOAD_FAILED',
          `the bundle ${file} changed while it was uploaded (its SHA-256 is not the recorded one)`,
          {
            file,
            hint: 'The upload is not completed; capture the session again.',
          },
        );
      }
      return { status, bytes: expected.size };
    }
    const text = await readSome(response, 8 * 1024);
    const reason = storageError(text);
    const message = scrubText(`${where} answered HTTP ${status}${reason === undefined ? '' : `: ${reason.text}`}`);
    const extra = { status, ...(reason?.code === undefined ? {} : { serverCode: reason.code }) };
    if (
      status === 401 ||
      status === 403 ||
      (status === 400 && /^(ExpiredToken|TokenRefreshRequired|InvalidToken)$/.test(reason?.code ?? ''))
    ) {
      return expired(message, extra);
    }
    if (status === 400 && reason?.code === 'RequestTimeout')
      throw new UploadError('transient', 'UPLOAD_FAILED', message, extra);
    if (status >= 300 && status < 400) {
      throw new UploadError('service', 'UPLOAD_FAILED', message, {
        ...extra,
        hint: 'The storage service redirected the upload; check its region and endpoint.',
      });
    }
    if (statusKind(status) === 'transient') {
      const retryAfterMs = parseRetryAfter(header(response.headers, 'retry-after'), (options.now ?? Date.now)());
      throw new UploadError('transient', 'UPLOAD_FAILED', message, {
        ...extra,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    }
    throw new UploadError('record', 'UPLOAD_REJECTED', message, extra);
  } catch (error) {
    if (error instanceof BlueError) throw error;
    throw new UploadError('transient', 'UPLOAD_FAILED', `${where}: ${describeNetworkError(error)}`);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** The file's identity and, when it is a regular file of `size` bytes, those bytes. */
function readSmall(
  file: string,
  size: number,
  cannotOpen: (error: NodeJS.ErrnoException) => never,
): { info: Stats; bytes?: Buffer } {
  let fd: number;
  try {
    // Non-blocking: a FIFO put in the bundle's place must not hang the event loop at open (it fails the size check).
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return cannotOpen(error as NodeJS.ErrnoException);
  }
  try {
    const info = fstatSync(fd);
    return info.isFile() && info.size === size ? { info, bytes: readWhole(fd, size) } : { info };
  } catch (error) {
    // A read error, or a file that shrank since its stat: tried again later, as a streamed upload would be.
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UploadError('transient', 'UPLOAD_FAILED', `cannot read the bundle ${file}: ${why}`, { file });
  } finally {
    closeSync(fd);
  }
}

/** The first `size` bytes of `fd`, read at once (a file that ends before is one that changed since its stat). */
function readWhole(fd: number, size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size);
  for (let position = 0; position < size; ) {
    const read = readSync(fd, bytes, position, size - position, position);
    if (read === 0) throw new Error(`the file ended after ${position} of ${size} bytes`);
    position += read;
  }
  return bytes;
}

function expired(message: string, extra: { status: number; serverCode?: string }): never {
  throw new UploadError('expired', 'UPLOAD_EXPIRED', message, {
    ...extra,
    hint: 'The signed upload URL was refused (expired, or signed for other headers); a fresh one is needed.',
  });
}

/**
 * Whether the storage service refuses a body that is not the recorded bytes: the signed headers carry the recorded
 * digest as x-amz-checksum-sha256, which S3 checks the body against (answering 400 BadDigest) when the SigV4 URL
 * lists it among its signed headers (S3 enforces no checksum it was not signed for), and which the Control API's own
 * store (a URL on `controlOrigin`, signed its own way) checks too. A digest merely stored with the object
 * (x-amz-meta-sha256, what Blue's server presigns), or a URL signed some other way elsewhere: then the client hashes.
 */
export function storageChecksDigest(signed: SignedUpload, sha256: string, controlOrigin?: string): boolean {
  const checksum = Object.entries(signed.headers).find(([name]) => name.toLowerCase() === CHECKSUM_HEADER)?.[1];
  if (
    checksum === undefined ||
    !/^[0-9a-f]{64}$/i.test(sha256) ||
    checksum.trim() !== Buffer.from(sha256, 'hex').toString('base64')
  )
    return false;
  let url: URL;
  try {
    url = new URL(signed.url);
  } catch {
    return false;
  }
  const signedHeaders = url.searchParams.get('X-Amz-SignedHeaders');
  if (signedHeaders !== null) return signedHeaders.toLowerCase().split(';').includes(CHECKSUM_HEADER);
  return controlOrigin !== undefined && url.origin === controlOrigin;
}

/** The storage service's reason: S3-style XML `<Code>`/`<Message>`, or a Control-API-style JSON error. */
function storageError(text: string): { code: string | undefined; text: string } | undefined {
  const json = serverError(text);
  if (json !== undefined)
    return { code: json.code, text: `${json.code === undefined ? '' : `[${json.code}] `}${json.message}` };
  const code = /<Code>([^<]{1,64})<\/Code>/.exec(text)?.[1]?.trim();
  const message = /<Message>([^<]{1,300})<\/Message>/
    .exec(text)?.[1]
    ?.replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .trim();
  if (code === undefined && message === undefined) return undefined;
  return { code, text: `${code === undefined ? '' : `[${code}] `}${message ?? ''}`.trim() };
}

/**
 * The file's first `size` bytes as a sequence of chunks read into RING reused buffers. Fresh buffers per chunk (what a
 * file read stream does) cost twice the CPU of the upload itself in allocation and page faults, and on a machine where
 * the storage service runs too that CPU is the throughput. Reuse is safe because undici asks for the next chunk only
 * after the socket took the previous one: a chunk larger than the socket's high-water mark makes the write return
 * false and undici waits for 'drain' (everything flushed to the kernel) first. The spare buffer of the ring is a
 * margin on top, and a storage service that checks the digest refuses any body that differs from the file.
 */
async function* readChunks(handle: FileHandle, size: number, onChunk: (chunk: Buffer) => void): AsyncGenerator<Buffer> {
  const ring = Array.from({ length: RING }, () => Buffer.allocUnsafeSlow(Math.min(READ_CHUNK, size)));
  let position = 0;
  for (let turn = 0; position < size; turn++) {
    const buffer = ring[turn % RING]!;
    const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, size - position), position);
    if (bytesRead === 0) throw new Error(`the file ended after ${position} of ${size} bytes`);
    position += bytesRead;
    const chunk = bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
    onChunk(chunk);
    yield chunk;
  }
}
