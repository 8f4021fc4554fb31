/**
 * Advisory per-file locks between blue-agent processes: an O_EXCL lock file holding the owner's pid. A lock whose
 * owner is gone, or that is older than `staleMs`, is taken over.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BlueError } from '../errors.js';
import { ensurePrivateDir, sha256 } from './fs.js';

export interface LockOptions {
  timeoutMs?: number;
  staleMs?: number;
}

export async function withLock<T>(locksDir: string, key: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const file = path.join(locksDir, `${sha256(key).slice(0, 32)}.lock`);
  const token = `${process.pid}@${hostname()}#${randomBytes(6).toString('hex')}`;
  await acquire(file, token, key, options);
  try {
    return await fn();
  } finally {
    await release(file, token);
  }
}

async function acquire(file: string, token: string, key: string, options: LockOptions): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const staleMs = options.staleMs ?? 120_000;
  const deadline = Date.now() + timeoutMs;
  await ensurePrivateDir(path.dirname(file));
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      await handle.writeFile(JSON.stringify({ token, pid: process.pid, key, created: Date.now() }));
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (await isStale(file, staleMs)) {
      await unlink(file).catch(() => undefined);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new BlueError('LOCK_TIMEOUT', `another blue-agent process holds the lock for ${key}`, {
        hint: `Wait for it to finish, or remove ${file} if no blue-agent is running.`,
      });
    }
    await sleep(Math.min(10 * 2 ** Math.min(attempt, 5), 250) + Math.random() * 10);
  }
}

async function isStale(file: string, staleMs: number): Promise<boolean> {
  let owner: { pid?: number; created?: number; token?: string };
  try {
    owner = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    // Half-written by a process that died between create and write: stale once it is too old to be in flight.
    const info = await stat(file).catch(() => null);
    return info !== null && Date.now() - info.mtimeMs > 2_000;
  }
  if (typeof owner.created === 'number' && Date.now() - owner.created > staleMs) return true;
  const sameHost = typeof owner.token === 'string' && owner.token.includes(`@${hostname()}#`);
  if (sameHost && typeof owner.pid === 'number') {
    try {
      process.kill(owner.pid, 0);
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH';
    }
  }
  return false;
}

async function release(file: string, token: string): Promise<void> {
  try {
    const owner = JSON.parse(await readFile(file, 'utf8')) as { token?: string };
    if (owner.token === token) await unlink(file);
  } catch {
    // Already gone or taken over after we went stale: nothing of ours to remove.
  }
}
