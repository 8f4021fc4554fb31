/** Merging a native index: backed up by a hard link of the original, then replaced by a fsynced temp file. */
import { constants } from 'node:fs';
import { lstat, open, unlink } from 'node:fs/promises';
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import { fsyncDir } from '@blue-agent/contract/util/fs.js';
import type { RestoreIO } from './io.js';
import type { JournalIndex } from './journal.js';
import { sameInode } from './place.js';
import { errnoOf, readIfExists } from './files.js';

export async function mergeIndex(
  io: RestoreIO,
  index: JournalIndex,
  before: Buffer | null,
  after: Buffer,
  mode: number,
): Promise<void> {
  const dir = path.dirname(index.file);
  if (index.existed) await io.link(index.file, index.backup);
  const handle = await open(
    index.temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    await io.write(handle, after);
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (index.existed) {
    // Last check: the harness may have rewritten its index since the merge was computed. Still the file backed up
    // (so it has exactly two names: its own and the backup), still the same bytes.
    const [now, backup] = await Promise.all([lstat(index.file).catch(() => undefined), lstat(index.backup)]);
    const current = now !== undefined && sameInode(now, backup) ? await readIfExists(index.file, 2) : null;
    if (current === null || before === null || !current.equals(before)) {
      throw new BlueError('CONCURRENT_MODIFICATION', `${index.file} changed while blue-agent was restoring into it`, {
        file: index.file,
        hint: 'Run the restore again; the merge will be made from the new content.',
      });
    }
    await io.rename(index.temp, index.file);
  } else {
    try {
      await io.link(index.temp, index.file);
    } catch (error) {
      if (errnoOf(error) === 'EEXIST')
        throw new BlueError('CONCURRENT_MODIFICATION', `${index.file} appeared while blue-agent was restoring`, {
          file: index.file,
          hint: 'Run the restore again.',
        });
      throw error;
    }
    await unlink(index.temp);
  }
  await fsyncDir(dir);
}
