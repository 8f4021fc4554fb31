/**
 * File primitives that never leave a half-written file behind.
 */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import {
  chmod,
  chown,
  lstat,
  mkdir,
  open,
  readlink,
  realpath,
  rename,
  rmdir,
  stat,
  unlink,
  type FileHandle,
} from 'node:fs/promises';
import path from 'node:path';
import { BlueError, fromSystemError, isSystemError } from '../errors.js';
import { fsyncDir, randomHex } from './startup/fs-light.js';
import { decodeLossless, encodeLossless } from './lossless.js';

// The primitives the capture hook also needs live in startup/fs-light.ts (no crypto there; startup/README.md); every
// other module takes them here.
export { ensurePrivateDir, fsyncDir, writeStateFile } from './startup/fs-light.js';

/** SHA-256 (hex) of a text or a file's bytes, without node:crypto (./sha256.ts says why). */
export { sha256Hex as sha256 } from './startup/sha256.js';

/**
 * Writes every byte of `buffers` at the handle's position, in order: one writev, then plain writes for whatever a short
 * writev left (a file system may take fewer bytes than asked, e.g. when interrupted).
 */
export async function writeBuffers(
  handle: Pick<FileHandle, 'write' | 'writev'>,
  buffers: readonly Buffer[],
): Promise<void> {
  if (buffers.length === 0) return;
  let { bytesWritten: skip } = await handle.writev(buffers as Buffer[]);
  for (const buffer of buffers) {
    if (skip >= buffer.length) {
      skip -= buffer.length;
      continue;
    }
    for (let offset = skip; offset < buffer.length; ) {
      const { bytesWritten } = await handle.write(buffer, offset, buffer.length - offset);
      if (bytesWritten === 0) throw new BlueError('IO_ERROR', 'the file system took no bytes of a write');
      offset += bytesWritten;
    }
    skip = 0;
  }
}

/**
 * The largest file the agent reads as a whole: harness configs and its own state are a few KiB, so anything this large
 * is refused before it is read (README "How files are written"). Planning keeps a parse tree of the file and of the
 * planned text (its self-check), which cost many times the file's size: 2 MiB keeps a reconcile of the largest
 * allowed file within a laptop's means (bench/reconcile-large.mjs).
 */
export const MAX_FILE_BYTES = 2 * 1024 * 1024;

const KINDS: ReadonlyArray<[(s: Stats) => boolean, string]> = [
  [(s) => s.isDirectory(), 'a directory'],
  [(s) => s.isFIFO(), 'a FIFO (named pipe)'],
  [(s) => s.isSocket(), 'a socket'],
  [(s) => s.isCharacterDevice(), 'a character device'],
  [(s) => s.isBlockDevice(), 'a block device'],
  [(s) => s.isFile(), 'a regular file'],
];

function kindOf(info: Stats): string {
  return KINDS.find(([test]) => test(info))?.[1] ?? 'not a regular file';
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function notRegular(file: string, info: Stats, through?: boolean): BlueError {
  const what = through === undefined ? `is ${kindOf(info)}` : `is a symbolic link to ${kindOf(info)}`;
  return new BlueError('UNSAFE_PATH', `${file} ${what}, not a regular file`, {
    file,
    hint:
      'blue-agent reads and writes only regular files (or links to them) there; move that entry away or ' +
      'replace it with a regular file, then run the command again.',
  });
}

/** A link loop is refused as every ELOOP is (one rule, in errors.ts), named by the file blue-agent was given. */
function linkLoop(file: string, cause: unknown): BlueError {
  if (isSystemError(cause)) return fromSystemError(cause, { file });
  return new BlueError('UNSAFE_PATH', `${file}: too many levels of symbolic links`, { file, cause });
}

/**
 * The bytes of a regular file (through links), or null when nothing is there (a dangling link reads as nothing; writes
 * refuse it, see resolveWriteTarget). Never blocks on a FIFO or device: the entry is checked with lstat, opened with
 * O_NONBLOCK and checked again on the descriptor. Refuses, before reading, a file larger than `limit`.
 */
export async function readBytesIfExists(file: string, limit = MAX_FILE_BYTES): Promise<Buffer | null> {
  let info: Stats;
  let through: boolean | undefined;
  try {
    info = await lstat(file);
    if (info.isSymbolicLink()) {
      through = true;
      info = await stat(file);
    }
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw linkLoop(file, error);
    throw error;
  }
  if (!info.isFile()) throw notRegular(file, info, through);
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw linkLoop(file, error);
    throw error;
  }
  try {
    const opened = await handle.stat();
    if (!opened.isFile()) throw notRegular(file, opened, through);
    if (opened.size > limit) throw tooLarge(file, opened.size, limit);
    // Read at most one byte past the limit: a file that grows while it is read is refused, not read without bound.
    const buffer = Buffer.allocUnsafe(Math.min(limit + 1, Math.max(opened.size, 0) + 1));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > limit) throw tooLarge(file, total, limit);
      chunks.push(Buffer.from(buffer.subarray(0, bytesRead)));
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } finally {
    await handle.close();
  }
}

/** readBytesIfExists for the few synchronous callers, with the same checks: no blocking, no special files, the limit.
 * */
export function readBytesIfExistsSync(file: string, limit = MAX_FILE_BYTES): Buffer | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw linkLoop(file, error);
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw notRegular(file, info);
    if (info.size > limit) throw tooLarge(file, info.size, limit);
    const buffer = Buffer.allocUnsafe(Math.min(limit + 1, info.size + 1));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      total += read;
      if (total > limit) throw tooLarge(file, total, limit);
      chunks.push(Buffer.from(buffer.subarray(0, read)));
    }
    return Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

function tooLarge(file: string, size: number, limit: number): BlueError {
  const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  return new BlueError(
    'FILE_TOO_LARGE',
    `${file} is ${size > limit + 1 ? mib(size) : `over ${mib(limit)}`}, larger than the ${mib(limit)} blue-agent reads`,
    {
      file,
      hint:
        `A configuration file this large is most likely damaged or not what it seems; shrink it below ` +
        `${mib(limit)} (or move it away), then run the command again.`,
    },
  );
}

/** The file's text (UTF-8, invalid bytes replaced), or null when it does not exist. For the agent's own files. */
export async function readTextIfExists(file: string): Promise<string | null> {
  const bytes = await readBytesIfExists(file);
  return bytes === null ? null : bytes.toString('utf8');
}

/**
 * A harness's native file as lossless text (see util/lossless.ts): every byte, valid UTF-8 or not, comes back when the
 * text is written again. Null when it does not exist.
 */
export async function readNativeText(file: string): Promise<string | null> {
  const bytes = await readBytesIfExists(file);
  return bytes === null ? null : decodeLossless(bytes);
}

/**
 * Where a write to `file` should land: symlinks are followed so the link stays a link and its target is updated. When
 * the file (or folders above it) is missing, the nearest existing folder is resolved and the missing names are kept.
 * Refused with UNSAFE_PATH: a dangling link on the way (writing would create its target, wherever it points), a link
 * loop, or a parent that is not a folder.
 */
export async function resolveWriteTarget(file: string): Promise<string> {
  const absolute = path.resolve(file);
  try {
    return await realpath(absolute);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'ELOOP') throw linkLoop(absolute, error);
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  }
  const missing: string[] = [];
  let current = absolute;
  // Bounded by the number of components in the path.
  for (;;) {
    let info: Stats;
    try {
      info = await lstat(current);
    } catch (error) {
      const code = errnoOf(error);
      if (code === 'ELOOP') throw linkLoop(current, error);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
      const parent = path.dirname(current);
      if (parent === current) throw error;
      missing.unshift(path.basename(current));
      current = parent;
      continue;
    }
    if (info.isSymbolicLink()) {
      // A link to an existing folder is fine (the missing names go inside its target); a dangling one is not.
      const resolved = await stat(current).catch((error: unknown) => {
        if (errnoOf(error) === 'ELOOP') throw linkLoop(current, error);
        return null;
      });
      if (resolved !== null) {
        if (missing.length > 0 && !resolved.isDirectory()) throw notFolder(absolute, current, resolved);
        return path.join(await realpath(current), ...missing);
      }
      const to = await readlink(current).catch(() => '?');
      const self = current === absolute;
      const message = self
        ? `${absolute} is a symbolic link to ${to}, which does not exist`
        : `${absolute} lies under ${current}, a symbolic link to ${to}, which does not exist`;
      throw new BlueError('UNSAFE_PATH', message, {
        file: absolute,
        hint:
          `blue-agent never creates files or folders at the target of a dangling link: point ${current} at an ` +
          `existing ${self ? 'file' : 'folder'}, or remove the link, then run the command again.`,
      });
    }
    if (missing.length === 0) return realpath(current);
    if (!info.isDirectory()) throw notFolder(absolute, current, info);
    return path.join(await realpath(current), ...missing);
  }
}

function notFolder(file: string, parent: string, info: Stats): BlueError {
  return new BlueError('UNSAFE_PATH', `${file}: ${parent} is ${kindOf(info)}, not a folder`, {
    file,
    hint: `Move ${parent} away (or fix the path), then run the command again.`,
  });
}

/** The folders above `target` that do not exist yet (outermost first): what writing `target` would create. */
export async function missingParents(target: string): Promise<string[]> {
  const out: string[] = [];
  let dir = path.dirname(target);
  for (;;) {
    try {
      await lstat(dir);
      return out;
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT') return out;
    }
    out.unshift(dir);
    const parent = path.dirname(dir);
    if (parent === dir) return out;
    dir = parent;
  }
}

/** Removes the given folders, innermost first, each only when it is empty; anything else keeps them. */
export async function removeEmptyDirs(dirs: readonly string[]): Promise<void> {
  for (const dir of [...dirs].sort((a, b) => b.length - a.length)) {
    await rmdir(dir).catch(() => undefined);
  }
}

export interface ReplaceOptions {
  /** The content the plan was made from; null when the plan expected no file. */
  expected: string | null;
  /** Mode for a new file (an existing file keeps its mode and owner). */
  newFileMode?: number;
  /** Parses the written text back; throws when it does not hold what was intended. */
  verify?: (text: string) => void;
}

/**
 * Replaces `target` (already resolved through symlinks) with `content` (lossless text, see util/lossless.ts): temp file
 * in the same directory with the same mode and owner, fsync, a last comparison with what the plan was made from,
 * rename, fsync the directory, read back. Throws CONCURRENT_MODIFICATION when the file changed since it was read.
 */
export async function replaceFileAtomically(target: string, content: string, options: ReplaceOptions): Promise<void> {
  const dir = path.dirname(target);
  const before = await lstat(target).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (before !== null && !before.isFile()) throw notRegular(target, before);
  const bytes = encodeLossless(content);
  if (before === null) await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, `.${path.basename(target)}.blue-agent-${randomHex(12)}.tmp`);
  const mode = before === null ? (options.newFileMode ?? 0o600) : before.mode & 0o7777;
  const handle = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    try {
      await handle.writeFile(bytes);
      await handle.chmod(mode);
      if (before !== null && (before.uid !== process.getuid?.() || before.gid !== process.getgid?.())) {
        await chown(temp, before.uid, before.gid).catch(() => undefined);
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    const current = await readNativeText(target);
    if (current !== options.expected) {
      throw new BlueError('CONCURRENT_MODIFICATION', `${target} changed while blue-agent was updating it`, {
        file: target,
        hint: 'Run the command again; the plan will be made from the new content.',
      });
    }
    await rename(temp, target);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await fsyncDir(dir);
  const written = await readBytesIfExists(target);
  if (written === null || !written.equals(bytes)) {
    throw new BlueError(
      'WRITE_VERIFY_FAILED',
      `${target} does not hold what was written (read back ${written?.length ?? 0} bytes)`,
      {
        file: target,
        hint: 'Another program rewrote the file at the same moment; run the command again.',
      },
    );
  }
  options.verify?.(content);
  if (before !== null) await chmod(target, before.mode & 0o7777).catch(() => undefined);
}

/** Deletes a file the agent owns entirely, after checking it still holds what the plan expected. */
export async function removeFileIfUnchanged(target: string, expected: string): Promise<void> {
  const current = await readNativeText(target);
  if (current === null) return;
  if (current !== expected) {
    throw new BlueError('CONCURRENT_MODIFICATION', `${target} changed while blue-agent was removing it`, {
      file: target,
      hint: 'Run the command again; the plan will be made from the new content.',
    });
  }
  await unlink(target);
  await fsyncDir(path.dirname(target));
}
