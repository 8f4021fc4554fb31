/** The ownership and mode check every spool folder and the state directory pass before the spool is used. */
import { lstat, stat } from 'node:fs/promises';
import { BlueError } from '@blue-agent/contract/errors.js';

/**
 * Refuses a folder another user owns or that group or others may write to: they could plant or swap records and
 * bundles that this user then uploads. Spool folders must also be real folders, not links.
 */
export async function checkPrivateDir(
  dir: string,
  what: string,
  followLinks: boolean,
  uid: number | undefined,
): Promise<void> {
  let info;
  try {
    info = followLinks ? await stat(dir) : await lstat(dir);
  } catch (error) {
    throw new BlueError('SPOOL_UNSAFE', `the ${what} ${dir} cannot be read: ${(error as Error).message}`, {
      file: dir,
      hint: `Check that ${dir} exists and belongs to you.`,
    });
  }
  if (!info.isDirectory()) {
    throw new BlueError(
      'SPOOL_UNSAFE',
      `the ${what} ${dir} is not a directory${info.isSymbolicLink() ? ' (it is a symbolic link)' : ''}`,
      {
        file: dir,
        hint: `Remove ${dir}; blue-agent recreates it.`,
      },
    );
  }
  if (uid !== undefined && info.uid !== uid) {
    throw new BlueError('SPOOL_UNSAFE', `the ${what} ${dir} is owned by uid ${info.uid}, not by you (uid ${uid})`, {
      file: dir,
      hint:
        `Another user could read or plant captured sessions there. Remove ${dir} or give it to your user ` +
        `(chown), then capture again.`,
    });
  }
  if ((info.mode & 0o022) !== 0) {
    const who = (info.mode & 0o022) === 0o022 ? 'group and others' : info.mode & 0o020 ? 'its group' : 'others';
    throw new BlueError(
      'SPOOL_UNSAFE',
      `the ${what} ${dir} is writable by ${who} (mode ${(info.mode & 0o7777).toString(8).padStart(4, '0')})`,
      {
        file: dir,
        hint: `Other users could plant or swap captured sessions there. Run: chmod 700 '${dir}'`,
      },
    );
  }
}
