/**
 * How a Control API or storage request failed, and so what a caller can do about it:
 *
 *   transient  the network or the server had a bad moment (connection errors, timeouts, 5xx, 408, 429): try again later
 *   expired    the signed upload URL is no longer accepted: ask the Control API for a fresh one
 *   record     the server refused this bundle for good (4xx other than auth and routing): the record should fail with
 *              the server's reason
 *   service    the agent cannot talk to the Control API as configured (bad token, wrong URL): keep the record, stop
 */
import { BlueError, type BlueErrorOptions, type ErrorCode } from '@blue-agent/contract/errors.js';

export type FailureKind = 'transient' | 'expired' | 'record' | 'service';

/** A failed request: a BlueError that also says what to do about it. Messages never carry tokens or signed URLs. */
export class UploadError extends BlueError {
  readonly kind: FailureKind;
  /** The HTTP status, when the failure was an answer. */
  readonly status: number | undefined;
  /** What the server asked for (Retry-After), in milliseconds. */
  readonly retryAfterMs: number | undefined;
  /** The server's stable error code (`code` beside `error`, or the older `error.code`), when it sent one; Blue's server
   * sends none. */
  readonly serverCode: string | undefined;

  constructor(
    kind: FailureKind,
    code: ErrorCode,
    message: string,
    options: BlueErrorOptions & { status?: number; retryAfterMs?: number; serverCode?: string } = {},
  ) {
    super(code, message, options);
    this.name = 'UploadError';
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.serverCode = options.serverCode;
  }
}

export function isUploadError(error: unknown): error is UploadError {
  return error instanceof UploadError;
}
