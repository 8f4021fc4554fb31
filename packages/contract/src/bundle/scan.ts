/**
 * Reading a bundle in one streamed pass: the file is read in chunks and hashed, the deflate stream inside the gzip
 * frame is inflated, and the tar is parsed as it comes out. Every structural rule is applied the moment its entry is
 * seen, and reading stops at the first violation. Only the manifest (bounded) is ever held whole.
 */
import { createHash, type Hash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import zlib from 'node:zlib';
import { BlueError } from '../errors.js';
import { GZIP_HEADER_MAX, GZIP_TRAILER_BYTES, parseGzipHeader } from './gzip.js';
import { formatBytes, type Limits } from './limits.js';
import { FILE_ENTRY_PATTERN, MANIFEST_NAME } from './manifest.js';
import { TarReader, type TarEntry, type Violation } from './tar.js';
import { RawInflater, type InflateStep } from './zlib-handle.js';

const READ_CHUNK = 256 * 1024;
const INFLATE_CHUNK = 128 * 1024;
export const BUNDLE_HINT =
  'The bundle is damaged or was not made by blue-agent: do not restore it. Download or capture it again.';

export function violation(file: string): Violation {
  return (what: string) => new BlueError('BUNDLE_INVALID', `${file}: ${what}`, { file, hint: BUNDLE_HINT });
}

export interface ScannedFile {
  name: string;
  size: number;
  sha256: string;
}

export interface ScanResult {
  /** Bytes of the bundle file. */
  size: number;
  /** SHA-256 of the bundle file; empty when reading stopped at the manifest. */
  sha256: string;
  /** The files/ entries, in archive order. */
  files: Map<string, ScannedFile>;
  manifest: Buffer | undefined;
}

/** Receives each files/ entry's bytes as they are read, for extraction. */
export interface EntrySink {
  open(name: string, size: number): Promise<void>;
  write(chunk: Buffer): Promise<void>;
  close(): Promise<void>;
}

export interface ScanOptions {
  limits: Limits;
  sink?: EntrySink;
  /** Stop as soon as manifest.json has been read, without hashing file data (inspect). */
  manifestOnly?: boolean;
}

class Stop extends Error {}

/** Opens a bundle for reading; a FIFO or a device is refused, not waited on. */
export async function openBundle(file: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BlueError('BUNDLE_INVALID', `${file}: cannot be read (${code ?? (error as Error).message})`, {
      file,
      hint: code === 'ENOENT' ? 'Check the path of the bundle.' : BUNDLE_HINT,
    });
  }
  const stat = await handle.stat();
  if (!stat.isFile()) {
    await handle.close();
    throw violation(file)('is not a regular file');
  }
  return handle;
}

export async function scanBundle(handle: FileHandle, file: string, options: ScanOptions): Promise<ScanResult> {
  const { limits, sink } = options;
  const fail = violation(file);
  const size = (await handle.stat()).size;
  if (size > limits.bundleBytes)
    throw fail(`is ${size} bytes, over the ${formatBytes(limits.bundleBytes)} cap for a bundle`);

  const head = Buffer.alloc(Math.min(size, GZIP_HEADER_MAX));
  await readFully(handle, head, 0);
  const start = parseGzipHeader(head, fail);
  const end = size - GZIP_TRAILER_BYTES;
  if (end <= start) throw fail('is truncated: no compressed data after the gzip header');

  const bundleHash = createHash('sha256');
  const trailer = Buffer.alloc(GZIP_TRAILER_BYTES);

  const files = new Map<string, ScannedFile>();
  let manifestChunks: Buffer[] | undefined;
  let manifest: Buffer | undefined;
  let sawFilesDir = false;
  let contentTotal = 0;
  let current:
    | { kind: 'file'; name: string; size: number; hash: Hash | undefined }
    | { kind: 'manifest' }
    | { kind: 'none' } = { kind: 'none' };

  const tar = new TarReader(
    {
      entry: async (entry: TarEntry) => {
        const shown = JSON.stringify(entry.name);
        if (entry.type === 'directory') {
          if (entry.name !== 'files/' && entry.name !== 'files') {
            throw fail(`has the directory entry ${shown}; a bundle holds only manifest.json and files/NNNN-<name>`);
          }
          if (sawFilesDir) throw fail('has the directory entry "files/" twice');
          sawFilesDir = true;
          current = { kind: 'none' };
          return;
        }
        if (entry.name === MANIFEST_NAME) {
          if (manifest !== undefined || manifestChunks !== undefined) throw fail('has manifest.json twice');
          if (entry.size > limits.manifestBytes) {
            throw fail(`has a manifest.json of ${entry.size} bytes, over the ${formatBytes(limits.manifestBytes)} cap`);
          }
          manifestChunks = [];
          current = { kind: 'manifest' };
          return;
        }
        if (!FILE_ENTRY_PATTERN.test(entry.name)) {
          throw fail(`has the unexpected entry ${shown}; a bundle holds only manifest.json and files/NNNN-<name>`);
        }
        if (files.has(entry.name)) throw fail(`has the entry ${shown} twice`);
        if (files.size >= limits.files) throw fail(`has more than ${limits.files} files`);
        if (entry.size > limits.fileBytes) {
          throw fail(
            `has the entry ${shown} of ${entry.size} bytes, over the ${formatBytes(limits.fileBytes)} cap for one file`,
          );
        }
        contentTotal += entry.size;
        if (contentTotal > limits.contentBytes)
          throw fail(`holds files adding up to more than ${formatBytes(limits.contentBytes)}, the cap`);
        current = {
          kind: 'file',
          name: entry.name,
          size: entry.size,
          hash: options.manifestOnly === true ? undefined : createHash('sha256'),
        };
        // Recorded at once so that a duplicate is caught even before this entry's data ends.
        files.set(entry.name, { name: entry.name, size: entry.size, sha256: '' });
        await sink?.open(entry.name, entry.size);
      },
      data: async (chunk: Buffer) => {
        if (current.kind === 'manifest') manifestChunks!.push(Buffer.from(chunk));
        else if (current.kind === 'file') {
          current.hash?.update(chunk);
          await sink?.write(chunk);
        }
      },
      entryEnd: async () => {
        if (current.kind === 'manifest') {
          manifest = Buffer.concat(manifestChunks!);
          manifestChunks = undefined;
          if (options.manifestOnly === true) throw new Stop();
        } else if (current.kind === 'file') {
          files.set(current.name, {
            name: current.name,
            size: current.size,
            sha256: current.hash?.digest('hex') ?? '',
          });
          await sink?.close();
        }
        current = { kind: 'none' };
      },
    },
    limits,
    fail,
  );

  const inflater = new RawInflater();
  // Two output buffers alternate: zlib fills one on the threadpool while the other is checked, hashed and parsed.
  // A small bundle gets small ones (transcripts inflate about 4:1; a fuller buffer only means one more step).
  const outputSize = Math.min(INFLATE_CHUNK, Math.max(16 * 1024, size * 8));
  const outputs = [Buffer.allocUnsafe(outputSize), Buffer.allocUnsafe(outputSize)];
  let which = 0;
  let inFlight: Promise<InflateStep> | undefined;
  let crc = 0;
  let uncompressed = 0;
  let consumed = 0;
  /** Inflates one stretch of the deflate stream into the tar; false once the stream has ended before its end. */
  // A step or read runs while other work is awaited: a failure of it must not count as unhandled before it is awaited.
  const watched = <T>(promise: Promise<T>): Promise<T> => {
    promise.catch(() => undefined);
    return promise;
  };
  const inflate = async (input: Buffer, last: boolean): Promise<boolean> => {
    let offset = 0;
    let step = (inFlight = watched(inflater.step(input, 0, outputs[which]!, last)));
    for (;;) {
      const output = outputs[which]!;
      const { produced, consumed: used } = await step;
      inFlight = undefined;
      offset += used;
      consumed += used;
      const full = produced === output.length;
      which ^= 1;
      if (full) step = inFlight = watched(inflater.step(input, offset, outputs[which]!, last));
      if (produced > 0) {
        uncompressed += produced;
        if (uncompressed > limits.tarBytes) {
          throw fail(
            `decompresses to more than ${formatBytes(limits.tarBytes)}; reading stopped (decompression bomb guard)`,
          );
        }
        if (uncompressed > limits.ratioFloorBytes && uncompressed > limits.maxRatio * Math.max(consumed, 1)) {
          throw fail(
            `expands more than ${limits.maxRatio}:1 (${formatBytes(uncompressed)} from ${formatBytes(consumed)}); ` +
              `reading stopped (decompression bomb guard)`,
          );
        }
        const chunk = output.subarray(0, produced);
        crc = zlib.crc32(chunk, crc);
        // The buffer is filled again only after this resolves: the tar reader and the sink are done with the chunk.
        await tar.push(chunk);
      }
      if (!full) return offset === input.length;
    }
  };

  // Two read buffers alternate: the next one is read while the current one is hashed and inflated. No larger than the
  // bundle: most are a few KiB, and the drain and the server's indexer scan them by the thousand.
  const ring = [Buffer.allocUnsafe(Math.min(READ_CHUNK, size)), Buffer.allocUnsafe(Math.min(READ_CHUNK, size))];
  let slot = 0;
  const readInto = (buffer: Buffer, position: number) =>
    watched(handle.read(buffer, 0, Math.min(buffer.length, size - position), position));
  let pending: ReturnType<typeof readInto> | undefined = readInto(ring[0]!, 0);
  try {
    let position = 0;
    while (position < size) {
      const buffer = ring[slot]!;
      const { bytesRead } = await pending!;
      pending = undefined;
      if (bytesRead === 0) throw fail('shrank while being read');
      const next = position + bytesRead;
      slot ^= 1;
      if (next < size) pending = readInto(ring[slot]!, next);
      const chunk = buffer.subarray(0, bytesRead);
      bundleHash.update(chunk);
      if (next > end) {
        const tail = Math.max(position, end);
        chunk.copy(trailer, tail - end, tail - position);
      }
      const from = Math.max(position, start) - position;
      const to = Math.min(next, end) - position;
      if (to > from && !(await inflate(chunk.subarray(from, to), next >= end))) {
        throw fail(`has ${end - start - consumed} bytes of data after the end of the compressed stream`);
      }
      position = next;
    }
  } catch (error) {
    if (error instanceof Stop) return { size, sha256: '', files, manifest };
    if (error instanceof BlueError) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (code === 'Z_BUF_ERROR') throw fail('is truncated: the compressed stream ends early');
    if (code.startsWith('Z_')) throw fail(`has damaged compressed data (${(error as Error).message})`);
    throw error;
  } finally {
    // zlib may still be using the buffers, and a read the file, when reading stops early.
    await inFlight?.catch(() => undefined);
    inflater.close();
    await pending?.catch(() => undefined);
  }

  if (trailer.readUInt32LE(0) !== crc >>> 0 || trailer.readUInt32LE(4) !== uncompressed % 2 ** 32) {
    throw fail('has a gzip checksum that does not match its content: the compressed data is damaged');
  }
  tar.finish();
  return { size, sha256: bundleHash.digest('hex'), files, manifest };
}

async function readFully(handle: FileHandle, buffer: Buffer, position: number): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    const { bytesRead } = await handle.read(buffer, offset, buffer.length - offset, position + offset);
    if (bytesRead === 0) break;
    offset += bytesRead;
  }
}
