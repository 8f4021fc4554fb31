/**
 * Reading a file someone else may control (a harness's session files, a native index), by one rule: the file must be
 * a regular file with the expected number of names (one, unless the caller made the other link itself), it is opened
 * without following a link and without blocking (O_NOFOLLOW | O_NONBLOCK: a FIFO swapped in never hangs the open), the
 * open descriptor is checked again with fstat (still the inode lstat saw, still regular, still that link count, within
 * the size cap), and the bytes are read from that descriptor only. A hard link is refused like a symbolic link: a
 * second name for the same inode may be `~/.ssh/id_rsa`, and nothing in the folder being read tells which name is the
 * real one.
 *
 * lstat comes first so that nothing but a regular file is ever opened (opening a device can have effects of its own).
 * Every refusal is a BlueError with the caller's code, naming the file and the reason.
 */
import { constants, type Stats } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { BlueError, type ErrorCode } from '../errors.js';

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const HASH_CHUNK = 256 * 1024;

/** The file-system calls used, replaceable in tests to stage a swap between the check and the open. */
export interface SafeReadIO {
  lstat(file: string): Promise<Stats>;
  open(file: string, flags: number): Promise<FileHandle>;
}

const realIO: SafeReadIO = { lstat: (file) => lstat(file), open: (file, flags) => open(file, flags) };

export interface FileIdentity {
  dev: number;
  ino: number;
}

export interface SafeReadOptions {
  /** The code of a refusal: ARTIFACT_INVALID when capturing, RESTORE_UNSAFE when restoring. */
  code: ErrorCode;
  /** Larger files are refused. */
  maxBytes: number;
  /** The link count the file must have: 1, or 2 for a file the caller hard-linked itself (a restore's placement). */
  links?: number;
  /** The inode the file was when it was checked before: any other file at the path is refused as swapped. */
  expect?: FileIdentity;
  /** A missing file gives undefined instead of a refusal. */
  optional?: boolean;
  /** How messages name the file (default: its path, which the error's `file` always holds). */
  label?: string;
  io?: SafeReadIO;
}

export interface CheckedHandle {
  handle: FileHandle;
  /** fstat of the open descriptor. */
  stat: Stats;
}

function kindOf(info: Stats): string {
  if (info.isSymbolicLink()) return 'a symbolic link';
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

const HINTS = {
  link: 'Only regular files are read here, never through a link; replace the link with the file itself.',
  hardLink:
    'The file has other names (hard links), so it may be another file of this machine; replace it with a copy that ' +
    'has one name (cp, then mv over it), or leave it out.',
  kind: 'Only regular files are read here; move this away.',
  size: 'The file is larger than blue-agent reads here.',
  changed: 'The file was replaced while it was being read; try again once nothing is writing it.',
  unreadable: 'Check the permissions of the file and of its folder.',
} as const;

function refusal(options: SafeReadOptions, file: string, why: string, hint: keyof typeof HINTS): BlueError {
  return new BlueError(options.code, `${options.label ?? file}: ${why}`, { file, hint: HINTS[hint] });
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** What makes `info` (lstat or fstat) unreadable under the rule, or undefined. */
function problem(info: Stats, options: SafeReadOptions): [string, keyof typeof HINTS] | undefined {
  if (info.isSymbolicLink()) return ['is a symbolic link', 'link'];
  if (!info.isFile()) return [`is not a regular file (${kindOf(info)})`, 'kind'];
  const links = options.links ?? 1;
  if (info.nlink !== links) {
    return [
      info.nlink > links
        ? `has ${info.nlink} hard links (${links === 1 ? 'only a file with one name is read' : `${links} expected`})`
        : `has ${info.nlink} links, ${links} expected`,
      'hardLink',
    ];
  }
  if (info.size > options.maxBytes) return [`is ${info.size} bytes, over the ${options.maxBytes}-byte limit`, 'size'];
  if (options.expect !== undefined && (info.dev !== options.expect.dev || info.ino !== options.expect.ino))
    return ['changed while it was being checked (another file is there now)', 'changed'];
  return undefined;
}

/** lstat and the rule, without opening: what a plan checks before anything is read. Undefined when absent and optional.
 * */
export async function checkFile(file: string, options: SafeReadOptions): Promise<Stats | undefined> {
  let info: Stats;
  try {
    info = await (options.io ?? realIO).lstat(file);
  } catch (error) {
    if (options.optional === true && (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR')) return undefined;
    throw refusal(options, file, `cannot be read (${errno(error) ?? String(error)})`, 'unreadable');
  }
  const found = problem(info, options);
  if (found !== undefined) throw refusal(options, file, found[0], found[1]);
  return info;
}

/** Checks, opens and checks the open descriptor again; the caller reads from `handle` and closes it. */
export async function openChecked(file: string, options: SafeReadOptions): Promise<CheckedHandle | undefined> {
  const io = options.io ?? realIO;
  const before = await checkFile(file, options);
  if (before === undefined) return undefined;
  let handle: FileHandle;
  try {
    handle = await io.open(file, READ_FLAGS);
  } catch (error) {
    if (errno(error) === 'ELOOP') throw refusal(options, file, 'is a symbolic link', 'link');
    if (errno(error) === 'ENOENT')
      throw refusal(options, file, 'changed while it was being checked (it is gone)', 'changed');
    throw refusal(options, file, `cannot be opened for reading (${errno(error) ?? String(error)})`, 'unreadable');
  }
  try {
    const stat = await handle.stat();
    const found = problem(stat, { ...options, expect: { dev: before.dev, ino: before.ino } });
    if (found !== undefined) throw refusal(options, file, found[0], found[1]);
    return { handle, stat };
  } catch (error) {
    await handle.close().catch(() => undefined);
    throw error;
  }
}

/** Up to `length` bytes from `position` of an open descriptor (fewer at its end). */
export async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return buffer.subarray(0, filled);
}

/**
 * The first `head` bytes (all of it when `head` is absent), or the last `tail` bytes, of a checked file, read from the
 * checked descriptor. A file larger than `maxBytes` is refused even when only part of it is wanted.
 */
export async function readChecked(
  file: string,
  options: SafeReadOptions & { head?: number; tail?: number },
): Promise<Buffer | undefined> {
  const opened = await openChecked(file, options);
  if (opened === undefined) return undefined;
  const { handle, stat } = opened;
  try {
    if (options.tail !== undefined) {
      const start = Math.max(0, stat.size - options.tail);
      return await readAt(handle, start, stat.size - start);
    }
    // One byte past the size seen: a file that grew past the cap meanwhile is refused, not cut.
    const want = options.head ?? Math.min(stat.size, options.maxBytes) + 1;
    const bytes = await readAt(handle, 0, want);
    if (options.head === undefined && bytes.length > options.maxBytes)
      throw refusal(options, file, `grew past the ${options.maxBytes}-byte limit while it was read`, 'size');
    return bytes;
  } finally {
    await handle.close();
  }
}

/** SHA-256 (hex) of a checked file, read from the checked descriptor; undefined when absent and optional. */
export async function sha256Checked(file: string, options: SafeReadOptions): Promise<string | undefined> {
  const opened = await openChecked(file, options);
  if (opened === undefined) return undefined;
  const { handle } = opened;
  try {
    // node:crypto on first use: most that reads checked files never hashes them.
    const hash = process.getBuiltinModule('node:crypto').createHash('sha256');
    const buffer = Buffer.allocUnsafe(HASH_CHUNK);
    let position = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      if (position > options.maxBytes)
        throw refusal(options, file, `grew past the ${options.maxBytes}-byte limit while it was read`, 'size');
      hash.update(buffer.subarray(0, bytesRead));
    }
    return hash.digest('hex');
  } finally {
    await handle.close();
  }
}
