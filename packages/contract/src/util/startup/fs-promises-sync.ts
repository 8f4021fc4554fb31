/**
 * node:fs/promises for the one-shot reconcile (dist/reconcile.cjs, scripts/build.mjs): the same calls, made
 * synchronously and returned as settled promises. A process that does one thing has nothing to run while a call is on
 * libuv's thread pool; the hand-offs there and back, and loading node:fs/promises, were a large share of a
 * no-change reconcile (src/util/startup/README.md). The long-running agent and every other command keep
 * node:fs/promises.
 *
 * Only what the code imports from node:fs/promises is here (the build fails on a name that is missing); file handles
 * have the methods the code calls. Calls that could block stay as safe as they were: native files are opened with
 * O_NONBLOCK (util/safe-read.ts, util/fs.ts), so a FIFO never holds an open or a read.
 */
import {
  accessSync,
  chmodSync,
  chownSync,
  closeSync,
  copyFileSync,
  fchmodSync,
  fchownSync,
  fdatasyncSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
  type Mode,
  type OpenMode,
  type PathLike,
  type StatOptions,
  type Stats,
  type WriteFileOptions,
} from 'node:fs';
import type * as fsp from 'node:fs/promises';
import type { Readable } from 'node:stream';

/** A FileHandle over a descriptor, for the methods the code calls on one. */
export class FileHandle {
  #closed = false;
  /** -1 once closed, as node:fs/promises says: the number may be another file's by then. */
  fd: number;
  constructor(fd: number) {
    this.fd = fd;
  }

  /** The descriptor, or the EBADF a closed handle answers with (never a number another file may have by now). */
  #open(): number {
    if (this.#closed)
      throw Object.assign(new Error('EBADF: bad file descriptor, the file handle is closed'), {
        code: 'EBADF',
        errno: -9,
      });
    return this.fd;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const fd = this.fd;
    this.fd = -1;
    closeSync(fd);
  }

  async stat(options?: StatOptions): Promise<Stats> {
    return fstatSync(this.#open(), options) as Stats;
  }

  /** read(buffer, offset?, length?, position?), read(buffer, { offset, length, position }) or read({ buffer, ... }). */
  async read(
    first?:
      | NodeJS.ArrayBufferView
      | { buffer?: NodeJS.ArrayBufferView; offset?: number; length?: number; position?: number | bigint | null },
    offset?: number | { offset?: number; length?: number; position?: number | bigint | null } | null,
    length?: number | null,
    position?: number | bigint | null,
  ): Promise<{ bytesRead: number; buffer: NodeJS.ArrayBufferView }> {
    let options: {
      buffer?: NodeJS.ArrayBufferView;
      offset?: number;
      length?: number;
      position?: number | bigint | null;
    };
    if (first === undefined || !ArrayBuffer.isView(first)) options = first ?? {};
    else if (offset !== null && typeof offset === 'object') options = { buffer: first, ...offset };
    else options = { buffer: first, offset: offset ?? 0, length: length ?? undefined, position };
    const buffer = options.buffer ?? Buffer.alloc(16384);
    const at = options.offset ?? 0;
    const bytesRead = readSync(
      this.#open(),
      buffer,
      at,
      options.length ?? buffer.byteLength - at,
      options.position ?? null,
    );
    return { bytesRead, buffer };
  }

  async readFile(options?: BufferEncoding | { encoding?: BufferEncoding | null } | null): Promise<string | Buffer> {
    return readWhole(this.#open(), options);
  }

  /** write(buffer, offset?, length?, position?) or write(string, position?, encoding?). */
  async write(
    data: NodeJS.ArrayBufferView | string,
    ...rest: unknown[]
  ): Promise<{ bytesWritten: number; buffer: NodeJS.ArrayBufferView | string }> {
    const bytesWritten =
      typeof data === 'string'
        ? writeSync(this.#open(), data, rest[0] as number | null | undefined, rest[1] as BufferEncoding | undefined)
        : writeSync(
            this.#open(),
            data,
            rest[0] as number | undefined,
            rest[1] as number | undefined,
            rest[2] as number | null | undefined,
          );
    return { bytesWritten, buffer: data };
  }

  async writeFile(data: string | NodeJS.ArrayBufferView, options?: WriteFileOptions): Promise<void> {
    writeFileSync(this.#open(), data, options);
  }

  async sync(): Promise<void> {
    fsyncSync(this.#open());
  }

  async datasync(): Promise<void> {
    fdatasyncSync(this.#open());
  }

  async chmod(mode: Mode): Promise<void> {
    fchmodSync(this.#open(), mode);
  }

  async chown(uid: number, gid: number): Promise<void> {
    fchownSync(this.#open(), uid, gid);
  }

  async truncate(length?: number): Promise<void> {
    ftruncateSync(this.#open(), length);
  }

  /**
   * A stream of the file from `start` (the descriptor's position when not given) to `end` (inclusive), read
   * synchronously like everything else here. It never closes the descriptor, and nothing of it is in flight when
   * close() does.
   */
  createReadStream(options: { start?: number; end?: number; highWaterMark?: number } = {}): Readable {
    let position: number | null = options.start ?? null;
    let left = options.end === undefined ? Infinity : options.end + 1 - (options.start ?? 0);
    const { Readable } = process.getBuiltinModule('node:stream');
    const stream: Readable = new Readable({
      highWaterMark: options.highWaterMark ?? 64 * 1024,
      read: (size) => {
        const want = Math.max(0, Math.min(size, left));
        const buffer = Buffer.allocUnsafe(want);
        let got: number;
        try {
          got = want > 0 ? readSync(this.#open(), buffer, 0, want, position) : 0;
        } catch (error) {
          return void stream.destroy(error as Error);
        }
        if (position !== null) position += got;
        left -= got;
        stream.push(got === 0 ? null : buffer.subarray(0, got));
      },
    });
    return stream;
  }
}

// readFileSync's overloads cannot take an options value whose encoding is only known at run time.
const readWhole = readFileSync as (file: PathLike | number, options?: unknown) => string | Buffer;

function settled<A extends unknown[], R>(call: (...args: A) => R): (...args: A) => Promise<R> {
  return async (...args) => call(...args);
}

export const open = (async (file: PathLike, flags?: OpenMode, mode?: Mode) =>
  new FileHandle(openSync(file, flags ?? 'r', mode))) as unknown as typeof fsp.open;
export const readFile = (async (file: PathLike | FileHandle, options?: Parameters<typeof readFileSync>[1]) =>
  readWhole(file instanceof FileHandle ? file.fd : file, options)) as unknown as typeof fsp.readFile;
export const writeFile = (async (
  file: PathLike | FileHandle,
  data: string | NodeJS.ArrayBufferView,
  options?: WriteFileOptions,
) => writeFileSync(file instanceof FileHandle ? file.fd : file, data, options)) as unknown as typeof fsp.writeFile;
export const stat = settled(statSync) as unknown as typeof fsp.stat;
export const lstat = settled(lstatSync) as unknown as typeof fsp.lstat;
export const readdir = settled(readdirSync) as unknown as typeof fsp.readdir;
// The system's realpath(3), as node:fs/promises calls it (realpathSync walks the path with lstat, and words errors
// otherwise).
export const realpath = settled(realpathSync.native) as unknown as typeof fsp.realpath;
export const readlink = settled(readlinkSync) as unknown as typeof fsp.readlink;
export const access = settled(accessSync) as unknown as typeof fsp.access;
export const mkdir = settled(mkdirSync) as unknown as typeof fsp.mkdir;
export const mkdtemp = settled(mkdtempSync) as unknown as typeof fsp.mkdtemp;
export const rename = settled(renameSync) as unknown as typeof fsp.rename;
export const link = settled(linkSync) as unknown as typeof fsp.link;
export const unlink = settled(unlinkSync) as unknown as typeof fsp.unlink;
export const rm = settled(rmSync) as unknown as typeof fsp.rm;
export const rmdir = settled(rmdirSync) as unknown as typeof fsp.rmdir;
export const chmod = settled(chmodSync) as unknown as typeof fsp.chmod;
export const chown = settled(chownSync) as unknown as typeof fsp.chown;
export const utimes = settled(utimesSync) as unknown as typeof fsp.utimes;
export const copyFile = settled(copyFileSync) as unknown as typeof fsp.copyFile;
