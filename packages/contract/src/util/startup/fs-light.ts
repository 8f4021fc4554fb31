/**
 * The file primitives the capture hook's path needs (the spool, the document cache it may fill): private folders,
 * directory fsync, and atomic state-file writes by temp file and rename. Node built-ins only — no node:crypto, no
 * write-file-atomic — so that loading them costs the hook nothing it can avoid. Hashing, lossless text and the safe
 * native-file writes are in util/fs.ts.
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { chown, mkdir, open, realpath, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fromSystemError, isSystemError } from '../../errors.js';

export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/** Flushes a directory entry (the rename that just happened) to disk. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Writes in progress per file in this process: they land one after the other, in call order. */
const writing = new Map<string, Promise<void>>();

/**
 * Writes agent state (ledger, caches, last-known-good policy) atomically, private to the user: a temp file beside the
 * target (through a link, the link's target), written, fsynced, renamed over it, the folder fsynced. An existing file
 * keeps its owner where this process may keep it (running as root).
 */
export async function writeStateFile(file: string, content: string | Buffer, mode = 0o600): Promise<void> {
  const key = path.resolve(file);
  const mine = (writing.get(key) ?? Promise.resolve()).catch(() => undefined).then(() => writeNow(file, content, mode));
  writing.set(key, mine);
  try {
    await mine;
  } finally {
    if (writing.get(key) === mine) writing.delete(key);
  }
}

async function writeNow(file: string, content: string | Buffer, mode: number): Promise<void> {
  let dir = path.dirname(file);
  try {
    await ensurePrivateDir(dir);
    const target = await realpath(file).catch(() => file);
    dir = path.dirname(target);
    const before = await stat(target).catch(() => undefined);
    const temp = `${target}.${process.pid}.${randomHex(8)}.tmp`;
    const handle = await open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      mode,
    );
    try {
      try {
        await handle.writeFile(content);
        await handle.chmod(mode);
        await handle.sync();
      } finally {
        await handle.close();
      }
      if (before !== undefined && (before.uid !== process.getuid?.() || before.gid !== process.getgid?.())) {
        await chown(temp, before.uid, before.gid).catch(() => undefined);
      }
      await rename(temp, target);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
    }
  } catch (error) {
    throw isSystemError(error) ? fromSystemError(error, { action: "write blue-agent's state file", file }) : error;
  }
  await fsyncDir(dir);
}

/**
 * Random hex digits for temp names. Math.random, not node:crypto (which costs the hook more to load than it does): they
 * only need to differ, and temp files are opened exclusively.
 */
export function randomHex(digits: number): string {
  let out = '';
  while (out.length < digits)
    out += Math.floor(Math.random() * 0x100000000)
      .toString(16)
      .padStart(8, '0');
  return out.slice(0, digits);
}

/**
 * A random (version 4) UUID from the kernel's entropy: node:crypto would stay loaded, and resident, in the
 * long-running agent that needs one UUID in its life. Where `source` cannot be read (no /dev/urandom), node:crypto's.
 */
export function randomUuid(source = '/dev/urandom'): string {
  const bytes = Buffer.alloc(16);
  try {
    const fd = openSync(source, 'r');
    try {
      for (let at = 0; at < bytes.length; ) {
        const n = readSync(fd, bytes, at, bytes.length - at, null);
        if (n === 0) throw new Error(`${source} ended`);
        at += n;
      }
    } finally {
      closeSync(fd);
    }
  } catch {
    return process.getBuiltinModule('node:crypto').randomUUID();
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
