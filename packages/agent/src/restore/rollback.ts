/** Undoing what the journal says a restore may have done, keeping any file someone changed since. */
import { lstat, rename, rmdir, unlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { fsyncDir } from '@blue-agent/contract/util/fs.js';
import { sha256Checked } from '@blue-agent/contract/util/safe-read.js';
import type { JournalIndex, JournalTarget, RestoreJournal } from './journal.js';
import { removeImported } from './harness-import.js';
import { sameInode } from './place.js';
import { MAX_INDEX_BYTES, errnoOf, unlinkIfExists, removeStaging } from './files.js';

/**
 * Undoes what the journal says this restore may have done, newest first. Safe to run twice. Returns why each file it
 * kept was kept (a placed file that changed since, or one that is not the inode placed).
 */
export async function rollBack(ctx: Context, journal: RestoreJournal): Promise<string[]> {
  const kept: string[] = [];
  if (journal.import !== undefined) await removeImported(ctx, journal.import);
  for (const index of [...journal.indexes].reverse()) await undoIndex(index);
  for (const target of [...journal.targets].reverse()) {
    const state = await ownership(target);
    if (state === 'ours') await unlinkIfExists(target.path);
    else if (state === 'changed')
      kept.push(`${target.path} was kept: it changed after the restore placed it (someone kept working in it)`);
    else if (state === 'foreign') kept.push(`${target.path} was kept: it is not the file the restore placed`);
    else if (state === 'linked')
      kept.push(`${target.path} was kept: it has another hard link now, so it is not only the restore's`);
    // The temp (copy fallback) goes only after the target's identity was checked against it.
    await unlink(target.temp).catch(() => undefined);
  }
  for (const dir of [...journal.dirs].reverse()) {
    try {
      await rmdir(dir);
    } catch (error) {
      // Not empty (someone's files), gone, or no longer a folder (a link now): not this restore's to remove.
      if (
        errnoOf(error) !== 'ENOENT' &&
        errnoOf(error) !== 'ENOTEMPTY' &&
        errnoOf(error) !== 'EEXIST' &&
        errnoOf(error) !== 'ENOTDIR'
      )
        throw error;
    }
  }
  for (const dir of new Set([
    ...journal.targets.map((t) => path.dirname(t.path)),
    ...journal.dirs.map((d) => path.dirname(d)),
  ]))
    await fsyncDir(dir);
  await removeStaging(journal.staging);
  return kept;
}
async function undoIndex(index: JournalIndex): Promise<void> {
  await unlinkIfExists(index.temp);
  const current = await lstat(index.file).catch(() => undefined);
  const backup = await lstat(index.backup).catch(() => undefined);
  if (index.existed) {
    if (backup === undefined) return; // The backup link comes first: without it the index was never touched.
    if (current !== undefined && current.ino === backup.ino && current.dev === backup.dev) {
      await unlinkIfExists(index.backup);
    } else if (
      current !== undefined &&
      current.isFile() &&
      (await indexDigest(index.file, current)) === index.sha256_after
    ) {
      await rename(index.backup, index.file);
    } else {
      // Someone rewrote the index after the merge: theirs is newer than both; keep it.
      await unlinkIfExists(index.backup);
    }
  } else if (
    current !== undefined &&
    current.isFile() &&
    (await indexDigest(index.file, current)) === index.sha256_after
  ) {
    await unlinkIfExists(index.file);
  }
  await fsyncDir(path.dirname(index.file));
}

/** The digest of an index this restore wrote (one name, the inode lstat saw); a hard link is refused and the journal
 * stays. */
function indexDigest(file: string, info: Stats): Promise<string | undefined> {
  return sha256Checked(file, {
    code: 'RESTORE_UNSAFE',
    maxBytes: MAX_INDEX_BYTES,
    expect: { dev: info.dev, ino: info.ino },
    optional: true,
  });
}

/**
 * Whether a target is the file this restore placed: the same inode as its staged file or its copy-fallback temp
 * (`foreign` otherwise, `absent` when nothing is there), and still the journal's size and SHA-256 (`changed`
 * otherwise: the harness appended to it in place after a crash).
 */
export async function ownership(target: JournalTarget): Promise<'ours' | 'changed' | 'foreign' | 'linked' | 'absent'> {
  const info = await lstat(target.path).catch(() => undefined);
  if (info === undefined) return 'absent';
  if (!info.isFile()) return 'foreign';
  const sources = await Promise.all([
    lstat(target.staged).catch(() => undefined),
    lstat(target.temp).catch(() => undefined),
  ]);
  if (!sources.some((s) => s !== undefined && s.isFile() && sameInode(s, info))) return 'foreign';
  if (info.size !== target.size) return 'changed';
  // Placed by a hard link, so two names: the target and the staged file (or the copy's temp). A third name is not ours.
  let digest: string | undefined;
  try {
    digest = await sha256Checked(target.path, {
      code: 'RESTORE_UNSAFE',
      maxBytes: target.size,
      links: 2,
      expect: { dev: info.dev, ino: info.ino },
      optional: true,
    });
  } catch (error) {
    if (error instanceof BlueError) return 'linked';
    throw error;
  }
  if (digest === undefined) return 'absent';
  return digest === target.sha256 ? 'ours' : 'changed';
}
