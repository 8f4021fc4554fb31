/**
 * The local blob store's answers to a blob URL it refuses, and which failures are its own (503) rather than the
 * request's.
 */
import type { ServerResponse } from 'node:http';
import { BlueError, isSystemError } from '@blue-agent/contract/errors.js';
import type { UploadGate } from './types.js';

/** File-system calls of an upload: an error from one of them is the store's, not the request's. */
const STORAGE_CALLS = new Set(['open', 'mkdir', 'write', 'fsync', 'fdatasync', 'close', 'rename', 'stat']);

/** The error code when `error` is the store's own failure (not the client's body or connection). */
export function storageFailure(error: unknown): string | undefined {
  if (error instanceof BlueError) return error.code === 'IO_ERROR' ? error.code : undefined;
  return isSystemError(error) && error.syscall !== undefined && STORAGE_CALLS.has(error.syscall)
    ? error.code
    : undefined;
}

/**
 * The store's own failure (a full or broken disk) is not the body's: answered 503, which the client tries again
 * later, with the error code and no server path.
 */
export function unavailable(response: ServerResponse, code: string): void {
  sendError(
    response,
    503,
    'STORAGE_UNAVAILABLE',
    `the blob store could not keep the upload (${code}); try again later`,
  );
}

/**
 * Whether the Control API still wants bytes at `key`; when not, the upload is answered: 410 for a validly signed URL
 * whose session was deleted (or whose upload expired or failed), 503 when the database cannot tell now.
 */
export async function admitted(response: ServerResponse, uploads: UploadGate, key: string): Promise<boolean> {
  let wanted: boolean;
  try {
    wanted = await uploads.wanted(key);
  } catch {
    sendError(
      response,
      503,
      'STORAGE_UNAVAILABLE',
      'the Control API cannot tell now whether this upload is still wanted; try again later',
    );
    return false;
  }
  if (!wanted)
    sendError(
      response,
      410,
      'UPLOAD_GONE',
      'this upload URL takes no bytes any more: the session it was signed for was deleted, or its upload expired ' +
        'or failed',
    );
  return wanted;
}

export function sendError(response: ServerResponse, status: number, code: string, message: string): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const body = JSON.stringify({ error: message, code });
  // The request body may be unread; closing the connection keeps it from being parsed as the next request.
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  response.end(body);
}
