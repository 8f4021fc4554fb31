/**
 * A captured session's sharing and deletion, once for both databases: who may see it (the rule in sharing.ts, a grant
 * looked up only when it decides), and a deletion, in one transaction with the session locked as presign and complete
 * lock it (an upload in flight waits, then finds it gone). Each backend's SessionRepository holds the SQL.
 */
import { step, type Step, type Transactions } from './flow.js';
import { mayView } from './sharing.js';
import type { CapturedSession, NewAuditEvent, SharingMode, User } from './types.js';

export interface SessionRepository {
  /** The session, locked until the transaction ends: whether it exists. */
  lockSession(sessionId: string): Step<boolean>;
  /** The object keys of the session's artifacts. */
  blobKeys(sessionId: string): Step<string[]>;
  /**
   * An object to delete from `notBefore` on, kept until `keepUntil` (an upload presigned until then may still write
   * it); a key scheduled already keeps the earlier start and the later end.
   */
  scheduleBlobDeletion(key: string, notBefore: number, keepUntil: number): Step<void>;
  /** The session and everything of it: its artifacts, grants, search entry and place in the indexer's queue. */
  deleteSessionRows(sessionId: string): Step<void>;
  /** The session's sharing mode, and with `selected` its grants, replaced. */
  replaceSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Step<void>;
  granted(sessionId: string, userId: string): Step<boolean>;
  audit(event: NewAuditEvent, now: number): Step<void>;
}

export async function canView(
  repo: Pick<SessionRepository, 'granted'>,
  session: CapturedSession,
  viewer: User,
): Promise<boolean> {
  const may = mayView(session, viewer);
  return may === 'if-granted' ? repo.granted(session.id, viewer.id) : may;
}

/** Not a change of content: updated_at, and so the order of listings, stays as it was. */
export async function setSharing(
  sessions: Transactions<SessionRepository>,
  sessionId: string,
  mode: SharingMode,
  userIds: readonly string[],
): Promise<void> {
  await sessions.run(function* (repo) {
    yield* step(repo.replaceSharing(sessionId, mode, userIds));
  });
}

/**
 * Deletes a session with its audit entry; its objects are scheduled for deletion (from `now`, kept until
 * `pendingUntil`) and their keys answered. Undefined: no such session.
 */
export async function deleteSession(
  sessions: Transactions<SessionRepository>,
  sessionId: string,
  event: NewAuditEvent,
  now: number,
  pendingUntil: number,
): Promise<string[] | undefined> {
  return sessions.run(function* (repo) {
    if (!(yield* step(repo.lockSession(sessionId)))) return undefined;
    const keys = yield* step(repo.blobKeys(sessionId));
    for (const key of keys) yield* step(repo.scheduleBlobDeletion(key, now, pendingUntil));
    yield* step(repo.deleteSessionRows(sessionId));
    yield* step(repo.audit(event, now));
    return keys;
  });
}
