/** The doctor's check of the spool: owned by this user, closed to others, no links where folders should be. */
import type { SpoolFacts } from './collect.js';
import { type Check, quote } from './verdict.js';

export function checkSpool(spool: SpoolFacts, platform: NodeJS.Platform): Check {
  const id = 'spool';
  if (spool.error !== undefined)
    return { id, status: 'fail', message: spool.error.message, fix: spool.error.hint ?? `check ${spool.stateDir}` };
  if (!spool.stateDirExists)
    return { id, status: 'ok', message: `${spool.stateDir} not created yet (made private on first use)` };
  if (platform === 'win32') return { id, status: 'ok', message: spool.root };
  const foreign = spool.entries.filter((e) => spool.uid !== undefined && e.uid !== spool.uid);
  const linkedDirs = spool.entries.filter(
    (e) => e.kind === 'dir' && e.path !== spool.stateDir && (e.isSymbolicLink || !e.isDirectory),
  );
  const looseDirs = spool.entries.filter((e) => e.kind === 'dir' && e.isDirectory && (e.mode & 0o077) !== 0);
  const looseFiles = spool.entries.filter(
    (e) => e.kind === 'file' && !e.isSymbolicLink && !e.isDirectory && (e.mode & 0o077) !== 0,
  );
  const problems: string[] = [];
  const fixes: string[] = [];
  if (foreign.length > 0) {
    problems.push(
      `${foreign.map((e) => e.path).join(', ')} ${foreign.length === 1 ? 'is' : 'are'} owned by another user`,
    );
    fixes.push(`chown -R "$(id -un)" ${quote(spool.stateDir)}`);
  }
  if (linkedDirs.length > 0) {
    problems.push(
      `${linkedDirs.map((e) => e.path).join(', ')} ` +
        `${linkedDirs.length === 1 ? 'is not a real directory' : 'are not real directories'}`,
    );
    fixes.push(
      `remove ${linkedDirs.map((e) => quote(e.path)).join(' ')} (blue-agent recreates ` +
        `${linkedDirs.length === 1 ? 'it' : 'them'})`,
    );
  }
  if (looseDirs.length > 0) {
    problems.push(`${describeModes(looseDirs)} open to group or others`);
    fixes.push(`chmod 700 ${looseDirs.map((e) => quote(e.path)).join(' ')}`);
  }
  if (looseFiles.length > 0) {
    problems.push(`${looseFiles.length} spool file${looseFiles.length === 1 ? '' : 's'} readable by group or others`);
    fixes.push(
      `chmod 600 ` +
        `${looseFiles.length <= 3 ? looseFiles.map((e) => quote(e.path)).join(' ') : `${quote(spool.root)}/*/*`}`,
    );
  }
  if (problems.length === 0 && spool.unsafe !== undefined) {
    problems.push(spool.unsafe.message);
    fixes.push(spool.unsafe.hint ?? `chmod 700 ${quote(spool.root)}`);
  }
  if (problems.length > 0)
    return {
      id,
      status: 'fail',
      message: `${problems.join('; ')}: captured sessions are not private`,
      fix: fixes.join(' && '),
    };
  return { id, status: 'ok', message: `${spool.root} is private to you` };
}

function describeModes(entries: readonly { path: string; mode: number }[]): string {
  return (
    entries.map((e) => `${e.path} (mode ${e.mode.toString(8).padStart(4, '0')})`).join(', ') +
    (entries.length === 1 ? ' is' : ' are')
  );
}
