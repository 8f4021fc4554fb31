/**
 * Every file-system effect of a restore goes through RestoreIO, so tests can make the Nth write, link, rename or
 * mkdir fail (ENOSPC, EIO) and check that nothing is left behind. Rollback itself uses only removals and renames of
 * what the restore made, which need no free space.
 */
import { constants } from 'node:fs';
import { copyFile, link, mkdir, rename, utimes, type FileHandle } from 'node:fs/promises';

export interface RestoreIO {
  /** Creates one directory (not recursive). */
  mkdir(dir: string, mode: number): Promise<void>;
  /** Hard link: the placement primitive, which fails with EEXIST instead of replacing anything. */
  link(existing: string, target: string): Promise<void>;
  /** Atomic replace (index files, the journal). */
  rename(from: string, to: string): Promise<void>;
  /** Writes the whole content of a freshly created temp file. */
  write(handle: FileHandle, data: Uint8Array): Promise<void>;
  /** Copies to a new file (COPYFILE_EXCL), when the staging folder is on another filesystem than a target. */
  copyFile(from: string, to: string): Promise<void>;
  /** Sets a file's times (restored files get a fresh mtime). */
  utimes(file: string, atime: Date, mtime: Date): Promise<void>;
}

export const realRestoreIO: RestoreIO = {
  mkdir: async (dir, mode) => {
    await mkdir(dir, { mode });
  },
  link: (existing, target) => link(existing, target),
  rename: (from, to) => rename(from, to),
  write: (handle, data) => handle.writeFile(data),
  copyFile: (from, to) => copyFile(from, to, constants.COPYFILE_EXCL),
  utimes: (file, atime, mtime) => utimes(file, atime, mtime),
};
