/** The local blob store's URL secret: made once, kept in `<dir>/.secret` (0600). */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import { fsyncDir } from '@blue-agent/contract/util/fs.js';

export async function loadOrCreateSecret(dir: string): Promise<Buffer> {
  const file = path.join(dir, '.secret');
  try {
    const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(randomBytes(32).toString('hex'), 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsyncDir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const text = (await readFile(file, 'utf8')).trim();
  // A concurrent first start may read the file before the other process has written it.
  if (!/^[0-9a-f]{64}$/.test(text)) {
    throw new BlueError('CONFIG_INVALID', `${file} does not hold a blob URL secret`, {
      file,
      hint: 'Delete the file and restart the server; outstanding blob URLs stop working.',
    });
  }
  return Buffer.from(text, 'hex');
}
