/**
 * A separate process that restores one bundle, for the SIGKILL test: it prepares, says so on stdout, then applies
 * with every file-system step slowed down a little (so that a kill lands inside the restore), and says when it is done.
 * Arguments: bundle, destination, profiles dir, delay per step in ms.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createContext } from '../../packages/agent/src/context.js';
import { loadProfiles } from '../../packages/contract/src/profiles/index.js';
import { applyRestore, prepareRestore, realRestoreIO, type RestoreIO } from '../../packages/agent/src/restore/index.js';

const [bundleFile, destination, profilesDir, delay] = process.argv.slice(2) as [string, string, string, string];
const ms = Number(delay);
const slow =
  <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
  async (...args: A): Promise<R> => {
    await sleep(ms);
    return fn(...args);
  };
const io: RestoreIO = {
  mkdir: slow(realRestoreIO.mkdir),
  link: slow(realRestoreIO.link),
  rename: slow(realRestoreIO.rename),
  write: slow(realRestoreIO.write),
  copyFile: slow(realRestoreIO.copyFile),
  utimes: slow(realRestoreIO.utimes),
};
const ctx = createContext({ env: process.env, cwd: destination });
const prepared = await prepareRestore(ctx, { bundleFile, destination, profiles: await loadProfiles(profilesDir) });
process.stdout.write('prepared\n');
await applyRestore(ctx, prepared, { io });
await prepared.dispose();
process.stdout.write('done\n');
