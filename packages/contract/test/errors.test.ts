/**
 * Failed system calls become typed errors: every errno class an ordinary machine produces has its own code, a message
 * naming the path and a hint for it; only a call blue-agent made wrongly is INTERNAL.
 */
import { mkdir, mkdtemp, readFile, rename, rm, rmdir, symlink, writeFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BlueError,
  fromSystemError,
  isSystemError,
  SYSTEM_ERROR_CLASSES,
  toBlueError,
  type ErrorCode,
  type SystemError,
} from '../src/errors.js';

/** A system error built the way Node builds one for a failed fs call. */
function systemError(code: string, syscall: string, file?: string, dest?: string): SystemError {
  const errno = (constants.errno as Record<string, number | undefined>)[code] ?? 1;
  const where = file === undefined ? '' : ` '${file}'${dest === undefined ? '' : ` -> '${dest}'`}`;
  return Object.assign(new Error(`${code}: failure, ${syscall}${where}`), {
    code,
    errno: -errno,
    syscall,
    ...(file === undefined ? {} : { path: file }),
    ...(dest === undefined ? {} : { dest }),
  });
}

/** Every class, with the code it must get and a word its hint must hold (a command to run, or what to change). */
const CLASSES: [errno: string, code: ErrorCode, hintHolds: string][] = [
  ['ENOENT', 'PATH_NOT_FOUND', 'must exist'],
  ['ELOOP', 'UNSAFE_PATH', 'symbolic link'],
  ['ENAMETOOLONG', 'PATH_INVALID', 'shorter path'],
  ['EACCES', 'PERMISSION_DENIED', 'ls -ld'],
  ['EPERM', 'PERMISSION_DENIED', 'lsattr'],
  ['EROFS', 'PERMISSION_DENIED', 'read-only'],
  ['ENOSPC', 'NO_SPACE', 'df -h'],
  ['EDQUOT', 'NO_SPACE', 'quota'],
  ['EFBIG', 'NO_SPACE', 'ulimit -f'],
  ['EISDIR', 'NOT_A_FILE', 'not of a directory'],
  ['ENXIO', 'NOT_A_FILE', 'regular file'],
  ['ENODEV', 'NOT_A_FILE', 'regular file'],
  ['ENOTDIR', 'NOT_A_DIRECTORY', 'is a file'],
  ['EEXIST', 'PATH_EXISTS', 'move it away'],
  ['ENOTEMPTY', 'PATH_EXISTS', 'move it away'],
  ['EBUSY', 'FILE_BUSY', 'fuser'],
  ['ETXTBSY', 'FILE_BUSY', 'fuser'],
  ['EAGAIN', 'RESOURCE_LIMIT', 'again'],
  ['EMFILE', 'RESOURCE_LIMIT', 'ulimit -n'],
  ['ENFILE', 'RESOURCE_LIMIT', 'file-max'],
  ['ENOMEM', 'RESOURCE_LIMIT', 'memory'],
  ['ENOBUFS', 'RESOURCE_LIMIT', 'memory'],
  ['EMLINK', 'RESOURCE_LIMIT', 'links'],
  ['EIO', 'IO_ERROR', 'dmesg'],
  ['ESTALE', 'IO_ERROR', 'remount'],
  ['EXDEV', 'IO_ERROR', 'mount'],
  ['ENOTSUP', 'IO_ERROR', 'local filesystem'],
  ['EOPNOTSUPP', 'IO_ERROR', 'local filesystem'],
];

/** The classes whose hint names the file or its folder (the others are about the whole system, not a path). */
const SYSTEM_WIDE = new Set(['ENAMETOOLONG', 'EAGAIN', 'EMFILE', 'ENFILE', 'ENOMEM', 'ENOBUFS']);

describe('fromSystemError: every errno class', () => {
  it('the table here and the one in src/errors.ts list the same errnos', () => {
    expect(CLASSES.map(([errno]) => errno).sort()).toEqual(Object.keys(SYSTEM_ERROR_CLASSES).sort());
  });

  it.each(CLASSES)('%s is %s, names the path, and has a hint', (errno, code, hintHolds) => {
    const file = '/home/dev/.claude/settings.json';
    const error = fromSystemError(systemError(errno, 'open', file));
    expect(error).toBeInstanceOf(BlueError);
    expect(error.code).toBe(code);
    expect(error.code).not.toBe('INTERNAL');
    expect(error.exitCode).toBe(1);
    expect(error.file).toBe(file);
    expect(error.message).toContain(file);
    expect(error.message).toContain(`(${errno}: open)`);
    expect(error.hint).toContain(hintHolds);
    expect(error.hint).not.toContain('bug');
    if (!SYSTEM_WIDE.has(errno)) expect(error.hint).toMatch(/\/home\/dev\/\.claude/);
  });

  it.each(CLASSES)('%s through toBlueError, as the command line reports it', (errno, code) => {
    expect(toBlueError(systemError(errno, 'mkdir', '/var/state')).code).toBe(code);
  });
});

describe('fromSystemError: what the message says', () => {
  it("leads with the action and the person's path, and names the temporary the call failed on after it", () => {
    const error = fromSystemError(systemError('ENOENT', 'open', '/no/such/dir/.x.1a2b.partial'), {
      action: 'write the bundle to',
      file: '/no/such/dir/x',
    });
    expect(error.code).toBe('PATH_NOT_FOUND');
    expect(error.message).toBe(
      'cannot write the bundle to /no/such/dir/x: no such file or directory (ENOENT: open ' +
        '/no/such/dir/.x.1a2b.partial)',
    );
    expect(error.file).toBe('/no/such/dir/x');
    // The hint is about the person's path and its folder, not about the temporary.
    expect(error.hint).toBe(
      'Check the path: /no/such/dir/x (or, for a new file, its folder /no/such/dir) must exist (ls -ld /no/such/dir).',
    );
  });

  it('for a rename onto a directory, the destination is what is in the way', () => {
    const error = fromSystemError(systemError('EISDIR', 'rename', '/work/.out.1a2b.partial', '/work/out'));
    expect(error.code).toBe('NOT_A_FILE');
    expect(error.file).toBe('/work/out');
    expect(error.message).toBe('/work/out: is a directory, not a file (EISDIR: rename)');
  });

  it('the state directory: the hint says which folder to look at, with the command', () => {
    const error = fromSystemError(systemError('EACCES', 'open', '/home/dev/.local/state/blue-agent/ledger.json.123'), {
      action: "write blue-agent's state file",
      file: '/home/dev/.local/state/blue-agent/ledger.json',
    });
    expect(error.code).toBe('PERMISSION_DENIED');
    expect(error.message).toMatch(
      /^cannot write blue-agent's state file \/home\/dev\/\.local\/state\/blue-agent\/ledger\.json: permission denied/,
    );
    expect(error.hint).toContain(
      'ls -ld /home/dev/.local/state/blue-agent /home/dev/.local/state/blue-agent/ledger.json',
    );
  });

  it('a folder that could not be created: the hint names the folder above it, where the permission is missing', () => {
    const error = fromSystemError(systemError('EACCES', 'mkdir', '/srv/state/cache'), {
      action: "write blue-agent's state file",
      file: '/srv/state/cache/versions.json',
    });
    expect(error.message).toBe(
      "cannot write blue-agent's state file /srv/state/cache/versions.json: permission denied (EACCES: mkdir " +
        '/srv/state/cache)',
    );
    expect(error.hint).toBe(
      'Check the owner and permissions of /srv/state and /srv/state/cache/versions.json (ls -ld /srv/state ' +
        '/srv/state/cache/versions.json): the user blue-agent runs as must be allowed to do this.',
    );
  });

  it('ENOSPC names the filesystem to free space on', () => {
    const error = fromSystemError(systemError('ENOSPC', 'write'), {
      action: 'write the export to',
      file: '/data/out.md',
    });
    expect(error.message).toBe('cannot write the export to /data/out.md: no space left on the device (ENOSPC: write)');
    expect(error.hint).toContain('df -h /data');
  });

  it('keeps control characters of a path out of the message, and quotes a path for the shell in the hint', () => {
    const file = "/tmp/it's \u001b[31mred\u001b[0m/x";
    const error = fromSystemError(systemError('EACCES', 'open', file));
    expect(error.message).not.toMatch(/\u001b/);
    expect(error.hint).not.toMatch(/\u001b/);
    expect(error.hint).toContain(`'/tmp/it'\\''s  [31mred [0m'`);
  });

  it('a call that names no path still says what failed', () => {
    const error = fromSystemError(systemError('EMFILE', 'spawn'));
    expect(error.code).toBe('RESOURCE_LIMIT');
    expect(error.message).toBe('spawn failed: too many open files in this process (EMFILE)');
    expect(error.file).toBeUndefined();
  });
});

describe('what stays INTERNAL', () => {
  it('an errno that means blue-agent called the system wrongly', () => {
    for (const errno of ['EINVAL', 'EBADF', 'EFAULT']) {
      const error = toBlueError(systemError(errno, 'read', '/x'));
      expect(error.code).toBe('INTERNAL');
      expect(error.message).toContain(errno);
      expect(error.hint).toContain('bug');
    }
  });

  it('a programming error, and anything that is not a system error', () => {
    const typeError = Object.assign(new TypeError('The "path" argument must be of type string'), {
      code: 'ERR_INVALID_ARG_TYPE',
    });
    expect(isSystemError(typeError)).toBe(false);
    expect(toBlueError(typeError).code).toBe('INTERNAL');
    expect(toBlueError(new Error('x')).code).toBe('INTERNAL');
    expect(toBlueError('x').code).toBe('INTERNAL');
    expect(isSystemError({ code: 'ENOENT', syscall: 'open' })).toBe(false);
  });

  it('a BlueError passes through unchanged', () => {
    const blue = new BlueError('UNSAFE_PATH', 'x');
    expect(toBlueError(blue, { action: 'update', file: '/y' })).toBe(blue);
  });
});

describe('real failures from the filesystem', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'blue-agent-errors-'));
  });
  afterEach(async () => rm(root, { recursive: true, force: true }));

  async function failure(work: () => Promise<unknown>): Promise<BlueError> {
    try {
      await work();
    } catch (error) {
      expect(isSystemError(error)).toBe(true);
      return toBlueError(error);
    }
    throw new Error('expected the call to fail');
  }

  it('are recognised and classed as their errno says', async () => {
    const file = path.join(root, 'file');
    const dir = path.join(root, 'dir');
    const loop = path.join(root, 'loop');
    await writeFile(file, 'x');
    await mkdir(path.join(dir, 'child'), { recursive: true });
    await symlink('loop', loop);
    expect((await failure(() => readFile(path.join(root, 'missing')))).code).toBe('PATH_NOT_FOUND');
    expect((await failure(() => readFile(loop))).code).toBe('UNSAFE_PATH');
    expect((await failure(() => readFile(dir))).code).toBe('NOT_A_FILE');
    expect((await failure(() => writeFile(path.join(file, 'x'), 'x'))).code).toBe('NOT_A_DIRECTORY');
    expect((await failure(() => mkdir(file))).code).toBe('PATH_EXISTS');
    expect((await failure(() => rmdir(dir))).code).toBe('PATH_EXISTS');
    expect((await failure(() => rename(file, dir))).code).toBe('NOT_A_FILE');
    // Node's own wrapper of an errno (ERR_FS_EISDIR) is classed by the errno it carries.
    const wrapped = await failure(() => rm(dir));
    expect(wrapped.code).toBe('NOT_A_FILE');
    expect(wrapped.message).toBe(`${dir}: is a directory, not a file (EISDIR: rm)`);
  });
});

describe('BlueError across copies of this module', () => {
  // The agent's bundle and the Control API's each carry a copy of errors.ts; the agent judges the server's errors.
  const otherCopy = async (): Promise<typeof import('../src/errors.js')> => {
    const specifier = '../src/errors.ts?another-copy';
    return (await import(/* @vite-ignore */ specifier)) as typeof import('../src/errors.js');
  };

  it('is a BlueError to the other copy, and keeps its code and exit code through toBlueError', async () => {
    const other = await otherCopy();
    expect(other.BlueError).not.toBe(BlueError);
    const made = new other.BlueError('PROFILE_UNKNOWN', 'no such profile', { hint: 'list them', exitCode: 3 });
    expect(made instanceof BlueError).toBe(true);
    expect(toBlueError(made)).toBe(made);
    expect(toBlueError(made)).toMatchObject({ code: 'PROFILE_UNKNOWN', exitCode: 3, hint: 'list them' });
  });

  it('is not claimed for other errors, and a subclass still checks its own chain', async () => {
    const other = await otherCopy();
    class Narrower extends BlueError {}
    expect(new Error('plain') instanceof BlueError).toBe(false);
    expect({ code: 'USAGE', message: 'looks like one' } instanceof BlueError).toBe(false);
    expect(new other.BlueError('USAGE', 'x') instanceof Narrower).toBe(false);
    expect(new Narrower('USAGE', 'x') instanceof Narrower).toBe(true);
    expect(new Narrower('USAGE', 'x') instanceof other.BlueError).toBe(true);
  });
});
