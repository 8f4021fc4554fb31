/** Placing one staged file at its target: a hard link that never replaces anything, checked where it landed. */
import { constants } from 'node:fs';
import { lstat, open, realpath } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import { isInside } from './inspect.js';
import type { RestoreIO } from './io.js';
import type { JournalTarget } from './journal.js';
import { errnoOf } from './files.js';

/** Right before a placement: no folder between the root and the target became a link since the preflight. */
export async function checkParents(root: string, target: string): Promise<void> {
  let current = path.dirname(target);
  while (current !== root && isInside(root, current)) {
    const info = await lstat(current);
    if (info.isSymbolicLink() || !info.isDirectory()) {
      throw new BlueError('RESTORE_UNSAFE', `${current}: became a link or a file while restoring`, {
        file: current,
        hint: 'Something changed the harness folders during the restore; check them, then restore again.',
      });
    }
    current = path.dirname(current);
  }
}

function raced(file: string, why: string): BlueError {
  return new BlueError('RESTORE_UNSAFE', `${file}: ${why} while restoring`, {
    file,
    hint: 'Something changed the harness folders during the restore; check them, then restore again.',
  });
}

/** The folder `file` is in still resolves (links followed) to the session root as inspected, or below it. */
async function checkResolved(realRoot: string, file: string): Promise<void> {
  const real = await realpath(path.dirname(file));
  if (real !== realRoot && !isInside(realRoot, real))
    throw raced(file, `its folder now resolves to ${real}, outside the session root ${realRoot}`);
}

export function sameInode(a: Stats, b: Stats): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}

/**
 * Hard link from staging (same filesystem), else a copy into a temp file in the (verified) target folder, hard-linked
 * into place; the temp stays until the commit so that the placed file keeps an identity by inode. Never replaces.
 * Afterwards the folder must still resolve inside the root and the target must be the inode placed.
 */
export async function place(io: RestoreIO, realRoot: string, target: JournalTarget, now: Date): Promise<void> {
  await checkResolved(realRoot, target.path);
  let source = target.staged;
  try {
    await io.link(target.staged, target.path);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'EEXIST') throw conflictAppeared(target.path);
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK')
      throw error;
    source = target.temp;
    await io.copyFile(target.staged, target.temp);
    await checkResolved(realRoot, target.temp);
    const handle = await open(target.temp, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await io.utimes(target.temp, now, now);
    try {
      await io.link(target.temp, target.path);
    } catch (linkError) {
      if (errnoOf(linkError) === 'EEXIST') throw conflictAppeared(target.path);
      throw linkError;
    }
  }
  await checkResolved(realRoot, target.path);
  const [placed, from] = await Promise.all([
    lstat(target.path).catch(() => undefined),
    lstat(source).catch(() => undefined),
  ]);
  if (placed === undefined || from === undefined || !sameInode(placed, from))
    throw raced(target.path, 'another file took the place of the one restored');
}

function conflictAppeared(target: string): BlueError {
  return new BlueError('RESTORE_CONFLICT', `${target}: a file appeared there while restoring`, {
    file: target,
    hint: 'The harness may be running this session right now; close it, then restore again.',
  });
}
