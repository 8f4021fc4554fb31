/** The errors the session routes answer with, read from what the Control API said. */
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { MIN_SESSION_PREFIX } from '@blue-agent/contract/util/session-ref.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { UploadError } from './errors.js';
import type { CapturedSession, SessionQuery } from './captured-session.js';

/**
 * A network error, a timeout, a 5xx/408/429 or an answer that is not JSON: the Control API is not there (or not
 * itself) right now. Not an upload failure: these are read paths.
 */
export function unreachable(error: UploadError): BlueError {
  return new BlueError('CONTROL_API_UNREACHABLE', `cannot reach the Control API: ${error.message}`, {
    hint: 'check control_url / BLUE_AGENT_CONTROL_URL; run `blue-agent doctor`',
    cause: error,
  });
}

export function recipientsUnknown(who: readonly string[], why: string): BlueError {
  return new BlueError(
    'SHARE_RECIPIENT_UNKNOWN',
    `unknown recipient${who.length === 1 ? '' : 's'} ${who.map((w) => printable(w).slice(0, 320)).join(', ')}: ${why}`,
    {
      hint:
        'Name people by the e-mail address they use on the Control API (or their user id); its administrator ' +
        'adds members.',
    },
  );
}

export function tooLarge(id: string, size: number): BlueError {
  return new BlueError(
    'DOWNLOAD_FAILED',
    `session ${id} records a bundle of ${size} bytes, more than the ${LIMITS.bundleBytes} bytes a bundle may have`,
    {
      hint:
        'Nothing was downloaded. The Control API holds a bundle this blue-agent cannot read; tell its ' +
        'administrator.',
    },
  );
}

export function malformedId(idOrPrefix: string): BlueError {
  return new BlueError('SESSION_ID_MALFORMED', `"${printable(idOrPrefix)}" is not a session id`, {
    hint:
      `Give the full id or its first ${MIN_SESSION_PREFIX} or more characters (hexadecimal digits and dashes), as ` +
      `\`blue-agent sessions list\` shows them.`,
    exitCode: 2,
  });
}

export function ambiguous(id: string, found: { items: CapturedSession[]; more: boolean }): BlueError {
  const ids = found.items.slice(0, 5).map((s) => `${s.id} (${s.title ?? s.native_session_id})`);
  return new BlueError(
    'SESSION_AMBIGUOUS',
    `"${id}" names ${found.more || found.items.length > 5 ? 'more than 5' : found.items.length} sessions: ` +
      `${ids.join(', ')}`,
    {
      hint: 'Give more characters of the id.',
      exitCode: 2,
    },
  );
}

export function notResumable(session: CapturedSession, why: string): BlueError {
  return new BlueError(
    'SESSION_NOT_RESUMABLE',
    `session ${session.id} (${session.title ?? session.native_session_id}) cannot be resumed: ${why}`,
    {
      hint: 'It may still be downloaded or exported; `blue-agent resume` without an id lists what can be resumed.',
    },
  );
}

export function notFound(id: string, query: Pick<SessionQuery, 'resumable'>): BlueError {
  return new BlueError(
    'SESSION_NOT_FOUND',
    `no session ${printable(id)}` +
      `${query.resumable === true ? ' that you own or that was shared with you and can be resumed' : ''}`,
    {
      hint: 'List what you can see with `blue-agent sessions list --all`.',
    },
  );
}

/**
 * Turns the Control API's "not there" answers into the session errors people see, and outages into
 * CONTROL_API_UNREACHABLE. A session the caller may not see is "not found" whether the server says 404 (ours) or
 * 403 (Blue's): the two must read the same. On an owner-only route a 403 means "not yours" and is left to the caller.
 */
export function readError(error: unknown, id: string | undefined, options: { ownerOnly?: boolean }): unknown {
  if (error instanceof UploadError && error.kind === 'transient') return unreachable(error);
  if (error instanceof UploadError && id !== undefined) {
    if (error.status === 404) return notFound(id, {});
    if (error.status === 403 && options.ownerOnly !== true) return notFound(id, {});
    if (error.status === 410) {
      return new BlueError('SESSION_EXPIRED', `session ${id} passed its retention deadline; its bundle is gone`, {
        hint: 'Nothing can be restored from it.',
      });
    }
    if (error.status === 409 && error.serverCode === 'not_downloadable') {
      return new BlueError('SESSION_NOT_RESUMABLE', error.message, {
        hint: 'Only completed uploads can be downloaded.',
      });
    }
  }
  return error;
}

/** What DELETE /session-uploads/{id} failing means: not the owner's to delete, or a server that deletes nothing. */
export function deleteError(error: unknown, id: string): unknown {
  if (error instanceof UploadError && error.status === 403) {
    return new BlueError('SESSION_NOT_OWNED', `only the owner of session ${id} or an administrator may delete it`, {
      hint: 'Ask the owner; `blue-agent sessions show` names them.',
    });
  }
  if (error instanceof UploadError && error.status === 405) {
    return new BlueError(
      'UPLOAD_REJECTED',
      `this Control API does not delete sessions (DELETE /session-uploads/${id} answered 405)`,
      {
        hint: "Ask the Control API's administrators to delete it, or let its retention run out.",
      },
    );
  }
  return error;
}

/** What PUT /session-uploads/{id}/sharing failing means. */
export function sharingError(error: unknown, id: string, userIds: readonly string[]): unknown {
  if (error instanceof BlueError && error.code === 'SESSION_NOT_FOUND') return error;
  // 403 to anyone but the owner; 400 for a recipient that is not an active member (ours says unknown_user).
  if (error instanceof UploadError && error.status === 403) {
    return new BlueError('SESSION_NOT_OWNED', `only the owner of session ${id} may change its sharing`, {
      hint: 'Ask the owner to share it; `blue-agent sessions show` names them.',
    });
  }
  if (
    error instanceof UploadError &&
    error.status === 400 &&
    (error.serverCode === 'unknown_user' || /recipients must be active/i.test(error.message))
  ) {
    return recipientsUnknown(userIds, 'no such member on the Control API');
  }
  return error;
}

/** A stored or imported record: read, never resumed. */
export function aRecord(marked: CapturedSession): BlueError {
  return new BlueError(
    'SESSION_WRONG_KIND',
    `session ${marked.id} (${marked.title ?? marked.native_session_id}) is a record stored from ` +
      `${marked.harness}, not a session a harness captured: there is nothing to resume`,
    {
      hint: `Read it with \`blue-agent sessions export ${marked.id.slice(0, 8)} --format markdown\`.`,
    },
  );
}

export function expiredSession(session: CapturedSession): BlueError {
  return new BlueError(
    'SESSION_EXPIRED',
    `session ${session.id} passed its retention deadline (${session.retention_expires_at}); its bundle is gone`,
    { hint: 'Nothing can be restored from it.' },
  );
}
