/**
 * File primitives that never leave a half-written file behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, chown, lstat, mkdir, open, readFile, realpath, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { BlueError, fromSystemError, isSystemError } from '../errors.js';

export function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The file's text, or null when it does not exist. */
export async function readTextIfExists(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/** Flushes a directory entry (the rename that just happened) to disk. */
export async function fsyncDir(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    await handle.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  } finally {
    await handle?.close();
  }
}

/** Writes agent state (ledger, caches, last-known-good policy) atomically, private to the user. */
export async function writeStateFile(file: string, content: string, mode = 0o600): Promise<void> {
  try {
    await ensurePrivateDir(path.dirname(file));
    await writeFileAtomic(file, content, { mode, fsync: true });
  } catch (error) {
    throw isSystemError(error) ? fromSystemError(error, { action: "write blue-agent's state file", file }) : error;
  }
  await fsyncDir(path.dirname(file));
}

/**
 * Where a write to `file` should land: symlinks are followed so the link stays a link and its target is updated.
 * A dangling link resolves to its (absolute) target path.
 */
export async function resolveWriteTarget(file: string): Promise<string> {
  try {
    return await realpath(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  let current = file;
  for (let hops = 0; hops < 32; hops++) {
    let info;
    try {
      info = await lstat(current);
    } catch {
      // Does not exist: resolve the parent (it may itself be a link) and keep the name.
      const parent = await realpath(path.dirname(current)).catch(() => path.dirname(current));
      return path.join(parent, path.basename(current));
    }
    if (!info.isSymbolicLink()) return current;
    const { readlink } = await import('node:fs/promises');
    current = path.resolve(path.dirname(current), await readlink(current));
  }
  throw new BlueError('UNSAFE_PATH', `${file}: too many levels of symbolic links`, { file });
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
 * Replaces `target` (already resolved through symlinks) with `content`: temp file in the same directory with the same
 * mode and owner, fsync, a last comparison with what the plan was made from, rename, fsync the directory, read back.
 * Throws CONCURRENT_MODIFICATION when the file changed since it was read.
 */
export async function replaceFileAtomically(target: string, content: string, options: ReplaceOptions): Promise<void> {
  const dir = path.dirname(target);
  const before = await stat(target).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (before === null) await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, `.${path.basename(target)}.blue-agent-${randomBytes(6).toString('hex')}.tmp`);
  const mode = before === null ? (options.newFileMode ?? 0o600) : before.mode & 0o7777;
  const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
  try {
    try {
      await handle.writeFile(content, 'utf8');
      await handle.chmod(mode);
      if (before !== null && (before.uid !== process.getuid?.() || before.gid !== process.getgid?.())) {
        await chown(temp, before.uid, before.gid).catch(() => undefined);
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    const current = await readTextIfExists(target);
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
  const written = await readFile(target, 'utf8');
  if (written !== content) {
    throw new BlueError('WRITE_VERIFY_FAILED', `${target} does not hold what was written (read back ${written.length} characters)`, {
      file: target,
      hint: 'Another program rewrote the file at the same moment; run the command again.',
    });
  }
  options.verify?.(written);
  if (before !== null) await chmod(target, before.mode & 0o7777).catch(() => undefined);
}

/** Deletes a file the agent owns entirely, after checking it still holds what the plan expected. */
export async function removeFileIfUnchanged(target: string, expected: string): Promise<void> {
  const current = await readTextIfExists(target);
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
