/** The spool's own file system helpers: folder fsyncs shared by concurrent changes, ENOENT-tolerant calls, identities.
 * */
import { closeSync, constants, type BigIntStats } from 'node:fs';
import { lstat, open, readdir, unlink } from 'node:fs/promises';
import { fsyncDir } from '@blue-agent/contract/util/startup/fs-light.js';

/**
 * Folder fsyncs per folder: the one running, and the one that starts after it, which every state change made meanwhile
 * joins. A change made while an fsync runs may have missed it, so it waits for the next one, never a running one.
 */
const dirSyncs = new Map<string, { running?: Promise<void>; next?: Promise<void> }>();

export function syncDir(dir: string): Promise<void> {
  let sync = dirSyncs.get(dir);
  if (sync === undefined) dirSyncs.set(dir, (sync = {}));
  const entry = sync;
  if (entry.next !== undefined) return entry.next;
  const start = (): Promise<void> => {
    const run = fsyncDir(dir).finally(() => {
      if (entry.running === run) entry.running = undefined;
      if (entry.running === undefined && entry.next === undefined && dirSyncs.get(dir) === entry) dirSyncs.delete(dir);
    });
    entry.running = run;
    return run;
  };
  if (entry.running === undefined) return start();
  entry.next = entry.running.then(() => {
    entry.next = undefined;
    return start();
  });
  return entry.next;
}

export async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch (error) {
    if (errno(error) === 'ENOENT') return false;
    throw error;
  }
}

export async function listDir(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errno(error) === 'ENOENT') return [];
    throw error;
  }
}

/** Runs a synchronous call on a file: false when the file is gone (ENOENT); any other error (ENOTDIR too) is thrown. */
export function existed(call: () => unknown): boolean {
  try {
    call();
    return true;
  } catch (error) {
    if (errno(error) === 'ENOENT') return false;
    throw error;
  }
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Read only: nothing is lost.
  }
}

export async function unlinkIfExists(file: string): Promise<boolean> {
  try {
    await unlink(file);
    return true;
  } catch (error) {
    if (errno(error) === 'ENOENT') return false;
    throw error;
  }
}

/** Flushes a file written by someone else (the bundle writer) to disk; its size and identity (`bundleIdentity`). */
export async function syncFile(file: string): Promise<{ size: number; id: string }> {
  const handle = await open(file, constants.O_RDWR | (constants.O_NOFOLLOW ?? 0));
  try {
    await handle.chmod(0o600);
    await handle.sync();
    const info = await handle.stat({ bigint: true });
    return { size: Number(info.size), id: bundleIdentity(info) };
  } finally {
    await handle.close();
  }
}

/** A file's identity: what a rename keeps and a rewrite changes (device, inode, size, mtime in ns). */
export function bundleIdentity(info: BigIntStats): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}`;
}

/** Inode, size and mtime (ns): an inode freed and reused for a new record file is told apart by its write time. */
export function fileIdentity(info: BigIntStats): string {
  return `${info.ino}:${info.size}:${info.mtimeNs}`;
}

export function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}
