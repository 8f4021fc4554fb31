/**
 * Typed errors. Every failure the agent reports carries a stable `code` (for scripts and logs), a message that says
 * what went wrong and where, a `hint` a person can act on, and the process exit code it maps to.
 */

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

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
  | 'AUTH_FAILED'
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
  | 'UPLOAD_FAILED'
  | 'CONTROL_API_UNREACHABLE'
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
  | 'DEMO_STEP_FAILED'
  | 'NODE_UNSUPPORTED'
  | 'INTERNAL';

export interface BlueErrorOptions {
  hint?: string;
  /** Where the problem is: a file, optionally with a 1-based line and column. */
  file?: string;
  line?: number;
  column?: number;
  /** A JSON path (`/harnesses/claude/version_requirement`) for schema errors. */
  path?: string;
  exitCode?: number;
  cause?: unknown;
}

export class BlueError extends Error {
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

export function usageError(message: string, hint: string): BlueError {
  return new BlueError('USAGE', message, { hint });
}

/** Wraps anything thrown into a BlueError so reports always have a code. */
export function toBlueError(error: unknown): BlueError {
  if (error instanceof BlueError) return error;
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
export function errorAt(code: ErrorCode, file: string, at: { line: number; column: number } | undefined, what: string, hint: string): BlueError {
  return new BlueError(code, `${fileAt(file, at)}: ${what}`, {
    file,
    ...(at === undefined ? {} : { line: at.line, column: at.column }),
    hint,
  });
}
