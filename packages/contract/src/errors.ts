import path from 'node:path';
import { printable } from './util/terminal-text.js';

/**
 * Typed errors. Every failure the agent reports carries a stable `code` (for scripts and logs), a message that says
 * what went wrong and where, a `hint` a person can act on, and the process exit code it maps to.
 */

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/**
 * Nothing failed, but the work is not done yet: run it again later (sysexits' EX_TEMPFAIL). `drain`: records another
 * drain holds, whose outcome that drain reports.
 */
export const EXIT_TEMPFAIL = 75;

/** The exit code of a command a signal stopped, as shells report one: 128 and the signal's number. */
export function signalExitCode(signal: 'SIGINT' | 'SIGTERM'): number {
  return signal === 'SIGINT' ? 130 : 143;
}

export type ErrorCode =
  | 'USAGE'
  | 'CONFIG_INVALID'
  | 'CONFIG_PARSE'
  | 'PROFILE_INVALID'
  | 'PROFILE_UNKNOWN'
  | 'POLICY_INVALID'
  | 'POLICY_MISSING'
  | 'POLICY_UNREACHABLE'
  | 'POLICY_STALE'
  | 'POLICY_FOREIGN_ORIGIN'
  | 'POLICY_INCOMPATIBLE'
  | 'POLICY_CONFIRMATION_REQUIRED'
  | 'CLIENT_VERSION_MISMATCH'
  | 'AUTH_FAILED'
  | 'LOGIN_DENIED'
  | 'LOGIN_EXPIRED'
  | 'NOT_LOGGED_IN'
  | 'INTERRUPTED'
  | 'CONTROL_URL_WRONG'
  | 'VERSION_UNRECOGNISED'
  | 'VERSION_DETECT_FAILED'
  | 'NATIVE_CONFIG_PARSE'
  | 'NATIVE_CONFIG_CONFLICT'
  | 'LOCK_TIMEOUT'
  | 'CONCURRENT_MODIFICATION'
  | 'WRITE_VERIFY_FAILED'
  | 'UNSAFE_PATH'
  | 'FILE_TOO_LARGE'
  | 'LEDGER_WRITE_FAILED'
  | 'CAPTURE_REFUSED'
  | 'ARTIFACT_INVALID'
  | 'BUNDLE_INVALID'
  | 'SPOOL_UNSAFE'
  | 'SPOOL_FULL'
  | 'SESSION_CHANGING'
  | 'UPLOAD_FAILED'
  | 'CONTROL_API_UNREACHABLE'
  | 'CONTROL_API_NOT_INSTALLED'
  | 'UPLOAD_REJECTED'
  | 'UPLOAD_EXPIRED'
  | 'RESTORE_UNSUPPORTED'
  | 'RESTORE_UNSAFE'
  | 'RESTORE_CONFLICT'
  | 'RESTORE_NO_SPACE'
  | 'RESTORE_FAILED'
  | 'SESSION_ID_MALFORMED'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_AMBIGUOUS'
  | 'SESSION_NOT_OWNED'
  | 'SHARE_RECIPIENT_UNKNOWN'
  | 'SESSION_NOT_RESUMABLE'
  | 'SESSION_WRONG_KIND'
  | 'SESSION_EXPIRED'
  | 'DOWNLOAD_FAILED'
  | 'RESUME_CANCELLED'
  | 'NOT_A_TERMINAL'
  | 'DESTINATION_INVALID'
  | 'HARNESS_NOT_INSTALLED'
  | 'VERSION_INELIGIBLE'
  | 'REPOSITORY_MISMATCH'
  | 'SERVICE_FAILED'
  | 'SERVICE_CONFLICT'
  | 'SERVICE_UNSUPPORTED'
  | 'AGENT_RUNNING'
  | 'DEMO_STEP_FAILED'
  | 'ADDRESS_IN_USE'
  | 'NODE_UNSUPPORTED'
  | 'PATH_NOT_FOUND'
  | 'PATH_EXISTS'
  | 'PATH_INVALID'
  | 'NOT_A_FILE'
  | 'NOT_A_DIRECTORY'
  | 'PERMISSION_DENIED'
  | 'NO_SPACE'
  | 'FILE_BUSY'
  | 'RESOURCE_LIMIT'
  | 'IO_ERROR'
  | 'INTERNAL';

export interface BlueErrorOptions {
  hint?: string;
  /** Where the problem is: a file, optionally with a 1-based line and column. */
  file?: string;
  line?: number;
  column?: number;
  /** A JSON path (`/harnesses/<name>/version_requirement`) for schema errors. */
  path?: string;
  exitCode?: number;
  cause?: unknown;
}

/**
 * What marks a BlueError, whichever copy of this module made it: the agent's bundle and the Control API's each carry
 * one, and an error the server's code throws reaches the agent's command line through `control-plane` and `demo`.
 */
const BLUE_ERROR = Symbol.for('blue-agent.BlueError');

export class BlueError extends Error {
  /** `instanceof BlueError` holds for a BlueError of either copy; a subclass checks its own prototype chain. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` asks about, a subclass or BlueError
    if (this !== BlueError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return typeof value === 'object' && value !== null && (value as { [BLUE_ERROR]?: unknown })[BLUE_ERROR] === true;
  }

  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly file: string | undefined;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly path: string | undefined;
  readonly exitCode: number;

  constructor(code: ErrorCode, message: string, options: BlueErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BlueError';
    this.code = code;
    this.hint = options.hint;
    this.file = options.file;
    this.line = options.line;
    this.column = options.column;
    this.path = options.path;
    this.exitCode = options.exitCode ?? (code === 'USAGE' ? EXIT_USAGE : EXIT_FAILURE);
  }

  /** `file:line:column` when known, else the file, else undefined. */
  get location(): string | undefined {
    if (this.file === undefined) return undefined;
    if (this.line === undefined) return this.file;
    return `${this.file}:${this.line}${this.column === undefined ? '' : `:${this.column}`}`;
  }

  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      ...(this.hint === undefined ? {} : { hint: this.hint }),
      ...(this.file === undefined ? {} : { file: this.file }),
      ...(this.line === undefined ? {} : { line: this.line }),
      ...(this.column === undefined ? {} : { column: this.column }),
      ...(this.path === undefined ? {} : { path: this.path }),
    };
  }
}

Object.defineProperty(BlueError.prototype, BLUE_ERROR, { value: true });

export function usageError(message: string, hint: string): BlueError {
  return new BlueError('USAGE', message, { hint });
}

/**
 * Wraps anything thrown into a BlueError so reports always have a code: a failed system call (a file that is missing,
 * not writable, on a full disk, ...) gets the code of its class; anything else is a bug.
 */
export function toBlueError(error: unknown, context: SystemErrorContext = {}): BlueError {
  if (error instanceof BlueError) return error;
  if (isSystemError(error)) return fromSystemError(error, context);
  const message = error instanceof Error ? error.message : String(error);
  return new BlueError('INTERNAL', message, {
    hint: 'This is a bug in blue-agent; please report it with the command you ran.',
    cause: error,
  });
}

/** The 1-based line and column of a character offset in a text. */
export function lineColumnAt(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(Math.max(offset, 0), text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

/** `file:line:column`, or the file alone when the position is unknown: how a located message begins. */
function fileAt(file: string, at?: { line: number; column: number }): string {
  return at === undefined ? file : `${file}:${at.line}:${at.column}`;
}

/** An error about a place in a file: the message leads with `file:line:column` and the position is kept. */
export function errorAt(
  code: ErrorCode,
  file: string,
  at: { line: number; column: number } | undefined,
  what: string,
  hint: string,
): BlueError {
  return new BlueError(code, `${fileAt(file, at)}: ${what}`, {
    file,
    ...(at === undefined ? {} : { line: at.line, column: at.column }),
    hint,
  });
}

/** A failed system call as Node reports it (`fs`, `child_process`, `net`). */
export interface SystemError extends Error {
  code: string;
  errno?: number;
  syscall?: string;
  path?: string;
  dest?: string;
}

/** What a call site knows that the system error does not. */
export interface SystemErrorContext {
  /** What was being done, as a verb phrase that takes the file: `write the bundle to`, `update`. */
  action?: string;
  /** The path the person gave or knows (an `--out` file, a harness's config file) when the call failed on it or beside
   * it. */
  file?: string;
}

export function isSystemError(error: unknown): error is SystemError {
  if (typeof error !== 'object' || error === null || !(error instanceof Error)) return false;
  const { errno, syscall } = error as Partial<SystemError>;
  return errnoName(error) !== undefined && (typeof syscall === 'string' || typeof errno === 'number');
}

/** `EACCES`, ...: the code itself, or for Node's own wrappers (`ERR_FS_EISDIR` from `rm`, `cp`) the one they carry. */
function errnoName(error: Error): string | undefined {
  const { code, info } = error as { code?: unknown; info?: { code?: unknown } };
  for (const name of [code, info?.code]) if (typeof name === 'string' && /^E[A-Z0-9]+$/.test(name)) return name;
  return undefined;
}

interface ErrnoClass {
  code: ErrorCode;
  /** What happened, said of the path the call failed on. */
  what: string;
  /** What to do, given the person's path and the folder the call failed in (both shell-quoted). */
  hint: (file: string, dir: string) => string;
}

const PERMISSIONS = (file: string, dir: string) =>
  `Check the owner and permissions of ${dir} and ${file} (ls -ld ${dir} ${file}): the user blue-agent runs as must ` +
  `be allowed to do this`;
const NOT_EMPTY_OR_EXISTS = (file: string) =>
  `Something is already at ${file} (ls -ld ${file}): move it away or choose another path, then run the command again.`;

/**
 * Every errno an ordinary machine produces for file work, by class. Codes not here (EINVAL, EBADF, EFAULT, ...) mean
 * blue-agent called the system wrongly: those stay INTERNAL.
 */
export const SYSTEM_ERROR_CLASSES: Readonly<Record<string, ErrnoClass>> = {
  ENOENT: {
    code: 'PATH_NOT_FOUND',
    what: 'no such file or directory',
    hint: (file, dir) => `Check the path: ${file} (or, for a new file, its folder ${dir}) must exist (ls -ld ${dir}).`,
  },
  ELOOP: {
    code: 'UNSAFE_PATH',
    what: 'too many levels of symbolic links',
    hint: (file) =>
      `A symbolic link on this path points back to itself or is nested too deep (ls -l ${file}): fix or remove it.`,
  },
  ENAMETOOLONG: {
    code: 'PATH_INVALID',
    what: 'the path, or a name in it, is too long',
    hint: () => 'Use a shorter path.',
  },
  EACCES: { code: 'PERMISSION_DENIED', what: 'permission denied', hint: (file, dir) => `${PERMISSIONS(file, dir)}.` },
  EPERM: {
    code: 'PERMISSION_DENIED',
    what: 'operation not permitted',
    hint: (file, dir) =>
      `${PERMISSIONS(file, dir)}; an immutable or append-only file refuses changes too (lsattr ${file}).`,
  },
  EROFS: {
    code: 'PERMISSION_DENIED',
    what: 'the filesystem is read-only',
    hint: (_file, dir) =>
      `The filesystem holding ${dir} is mounted read-only (findmnt -T ${dir}): remount it read-write or use a path ` +
      `on another one.`,
  },
  ENOSPC: {
    code: 'NO_SPACE',
    what: 'no space left on the device',
    hint: (_file, dir) =>
      `Free space (or inodes) on the filesystem holding ${dir} (df -h ${dir}; df -i ${dir}), then run the command ` +
      `again.`,
  },
  EDQUOT: {
    code: 'NO_SPACE',
    what: 'disk quota exceeded',
    hint: (_file, dir) =>
      `Your quota on the filesystem holding ${dir} is used up (quota -s): free space, then run the command again.`,
  },
  EFBIG: {
    code: 'NO_SPACE',
    what: 'the file is too large',
    hint: (_file, dir) =>
      `The file would pass the largest size allowed (ulimit -f, or the limit of the filesystem holding ${dir}).`,
  },
  EISDIR: {
    code: 'NOT_A_FILE',
    what: 'is a directory, not a file',
    hint: (file) =>
      `Give the path of a file, not of a directory (ls -ld ${file}); move the directory away if a file belongs there.`,
  },
  ENXIO: {
    code: 'NOT_A_FILE',
    what: 'is a socket, device or pipe, not a regular file',
    hint: (file) => `Give the path of a regular file (ls -l ${file}).`,
  },
  ENODEV: {
    code: 'NOT_A_FILE',
    what: 'is a device, not a regular file',
    hint: (file) => `Give the path of a regular file (ls -l ${file}).`,
  },
  ENOTDIR: {
    code: 'NOT_A_DIRECTORY',
    what: 'a part of the path is not a directory',
    hint: (file) =>
      `A folder on the path ${file} is a file (check each part with ls -ld): fix the path or move that file away.`,
  },
  EEXIST: { code: 'PATH_EXISTS', what: 'already exists', hint: NOT_EMPTY_OR_EXISTS },
  ENOTEMPTY: { code: 'PATH_EXISTS', what: 'is a directory that is not empty', hint: NOT_EMPTY_OR_EXISTS },
  EBUSY: {
    code: 'FILE_BUSY',
    what: 'busy (in use by another program, or a mount point)',
    hint: (file) =>
      `Another program holds ${file}, or it is a mount point (fuser -v ${file}; findmnt ${file}): try again once ` +
      `it is free.`,
  },
  ETXTBSY: {
    code: 'FILE_BUSY',
    what: 'is a program that is running',
    hint: (file) => `Stop the program running from ${file} (fuser -v ${file}), then run the command again.`,
  },
  EAGAIN: {
    code: 'RESOURCE_LIMIT',
    what: 'resource temporarily unavailable',
    hint: () =>
      'The system is short of a resource (processes, memory, locks) right now: run the command again in a moment.',
  },
  EMFILE: {
    code: 'RESOURCE_LIMIT',
    what: 'too many open files in this process',
    hint: () => 'Raise the limit of open files (ulimit -n), then run the command again.',
  },
  ENFILE: {
    code: 'RESOURCE_LIMIT',
    what: 'too many open files on this system',
    hint: () => 'Close programs that hold many files (or raise fs.file-max), then run the command again.',
  },
  ENOMEM: {
    code: 'RESOURCE_LIMIT',
    what: 'not enough memory',
    hint: () => 'Free memory (close other programs), then run the command again.',
  },
  ENOBUFS: {
    code: 'RESOURCE_LIMIT',
    what: 'no buffer space available',
    hint: () => 'Free memory (close other programs), then run the command again.',
  },
  EMLINK: {
    code: 'RESOURCE_LIMIT',
    what: 'too many links',
    hint: (_file, dir) =>
      `${dir} holds as many links or folders as its filesystem allows: remove some, then run the command again.`,
  },
  EIO: {
    code: 'IO_ERROR',
    what: 'input/output error',
    hint: (_file, dir) =>
      `The device holding ${dir} reported an error (see dmesg): check the disk or network mount, then run the ` +
      `command again.`,
  },
  ESTALE: {
    code: 'IO_ERROR',
    what: 'stale file handle',
    hint: (_file, dir) =>
      `The network filesystem holding ${dir} lost track of the file: remount it, then run the command again.`,
  },
  EXDEV: {
    code: 'IO_ERROR',
    what: 'cannot move a file across filesystems',
    hint: (file) =>
      `${file} is on another filesystem than its folder (a bind mount?): write it in place by other means, or ` +
      `remove the mount.`,
  },
  ENOTSUP: {
    code: 'IO_ERROR',
    what: 'the filesystem does not support this operation',
    hint: (_file, dir) =>
      `The filesystem holding ${dir} does not support what blue-agent needs (findmnt -T ${dir}): use a path on a ` +
      `local filesystem.`,
  },
  EOPNOTSUPP: {
    code: 'IO_ERROR',
    what: 'the filesystem does not support this operation',
    hint: (_file, dir) =>
      `The filesystem holding ${dir} does not support what blue-agent needs (findmnt -T ${dir}): use a path on a ` +
      `local filesystem.`,
  },
};

/** The errnos about the destination of a two-path call (rename, link, copyfile): what is in the way is there. */
const ABOUT_DEST = new Set(['EISDIR', 'EEXIST', 'ENOTEMPTY', 'EBUSY']);

/**
 * A failed system call as a BlueError: the code of its errno's class, a message naming the path (the person's path
 * from `context` first, the one the call failed on after it) and a hint for that path. Unknown errnos stay INTERNAL.
 */
export function fromSystemError(error: SystemError, context: SystemErrorContext = {}): BlueError {
  const errno = errnoName(error) ?? error.code;
  const failing = error.dest !== undefined && ABOUT_DEST.has(errno) ? error.dest : error.path;
  const shown = context.file ?? failing;
  const known = Object.hasOwn(SYSTEM_ERROR_CLASSES, errno) ? SYSTEM_ERROR_CLASSES[errno] : undefined;
  const lead = [
    context.action === undefined ? undefined : `cannot ${context.action}`,
    shown === undefined ? undefined : printable(shown),
  ]
    .filter((part) => part !== undefined)
    .join(' ');
  const call = [error.syscall, failing !== undefined && failing !== shown ? printable(failing) : undefined]
    .filter((part) => part !== undefined)
    .join(' ');
  let message: string;
  if (known === undefined)
    message = lead === '' ? error.message : `${lead}: ${error.message}`; // a bug: Node's own words
  else if (lead === '') message = `${error.syscall ?? 'a system call'} failed: ${known.what} (${errno})`;
  else message = `${lead}: ${known.what} (${errno}${call === '' ? '' : `: ${call}`})`;
  // The hint speaks of the person's path (a temporary beside it is a detail of how blue-agent writes) and of the folder
  // the call failed in: for a folder it could not create, the one above it.
  const folder = failing ?? shown;
  const hint =
    known === undefined
      ? 'This is a bug in blue-agent; please report it with the command you ran.'
      : known.hint(
          shown === undefined ? 'the file' : shellWord(shown),
          folder === undefined ? 'its folder' : shellWord(path.dirname(folder)),
        );
  return new BlueError(known?.code ?? 'INTERNAL', message, {
    hint,
    ...(shown === undefined ? {} : { file: shown }),
    cause: error,
  });
}

/** A path as one word a person can paste into a shell: quoted when it holds anything but the usual characters. */
function shellWord(text: string): string {
  const shown = printable(text);
  return /^[\w@%+=:,./-]+$/.test(shown) ? shown : `'${shown.replace(/'/g, `'\\''`)}'`;
}
