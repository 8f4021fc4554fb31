/** The file primitives a restore and its rollback share: hashes, safe index reads, names beside a file, staging. */
import { createHash } from 'node:crypto';
import { lstat, rm, unlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';

export const STAGING_MARK = '.blue-agent-restore-';
/** The largest native index (a session index, a work-dir list) a restore merges into; it is read whole. */
export const MAX_INDEX_BYTES = 64 * 1024 * 1024;
export function sha256(bytes: Buffer | null): string | null {
  return bytes === null ? null : createHash('sha256').update(bytes).digest('hex');
}

export function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * An index's bytes, exactly as they are (null when there is none); refused past MAX_INDEX_BYTES. Read by the safe-read
 * rule: a hard-linked index (`links` names; 2 once this restore has made its backup link) is refused, never merged.
 */
export async function readIfExists(file: string, links = 1): Promise<Buffer | null> {
  let info: Stats;
  try {
    info = await lstat(file);
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return null;
    throw error;
  }
  if (!info.isFile()) {
    throw new BlueError('RESTORE_CONFLICT', `${file}: is not a regular file, so the session cannot be entered in it`, {
      file,
      hint: 'Move it away (it is yours; blue-agent never replaces it), then restore again.',
    });
  }
  if (info.size > MAX_INDEX_BYTES) {
    throw new BlueError(
      'RESTORE_CONFLICT',
      `${file}: is larger than ${MAX_INDEX_BYTES / (1024 * 1024)} MiB, more than blue-agent merges into`,
      {
        file,
        hint: 'The file is left as it is. Let the harness compact it (or move it away), then restore again.',
      },
    );
  }
  return (
    (await readChecked(file, {
      code: 'RESTORE_UNSAFE',
      maxBytes: MAX_INDEX_BYTES,
      links,
      expect: { dev: info.dev, ino: info.ino },
      optional: true,
    })) ?? null
  );
}

/** Where temp files and backups of a file go: beside it, hidden, named by the restore. */
export function beside(file: string, id: string, kind: string): string {
  return path.join(path.dirname(file), `${STAGING_MARK}${id}.${kind}.${path.basename(file).slice(0, 100)}`);
}
export async function unlinkIfExists(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw error;
  }
}

export async function removeStaging(staging: string): Promise<void> {
  // Only ever a folder this agent named; never whatever a damaged journal points at.
  if (!path.basename(staging).startsWith(STAGING_MARK) || !path.isAbsolute(staging)) return;
  await rm(staging, { recursive: true, force: true });
}
