/** Captured sessions and their artifacts on SQLite: reads, sharing, and a session's deletion. */
import type { SqliteDb } from './db.js';
import { toArtifact, toSession, toUser, type Row } from '../rows.js';
import type { SessionRepository } from '../sessions.js';
import type { Artifact, CapturedSession, NewAuditEvent, SharingMode, User } from '../types.js';
import { insertAudit } from './audit.js';

export const SESSION_SELECT = `SELECT s.*, us.email AS owner_email,
    CASE s.sharing_mode
      WHEN 'workspace' THEN (SELECT COUNT(*) FROM users o WHERE o.id <> s.owner_id)
      WHEN 'selected' THEN (SELECT COUNT(*) FROM session_grants g WHERE g.session_id = s.id)
      ELSE 0 END AS share_recipient_count
  FROM sessions s JOIN users us ON us.id = s.owner_id`;

/** Who may see a session in listings: the owner, sessions shared with the whole workspace, or by name (the viewer
 * twice). */
export const VISIBLE = `(s.owner_id = ? OR s.sharing_mode = 'workspace' OR EXISTS
  (SELECT 1 FROM session_grants g WHERE g.session_id = s.id AND g.user_id = ?))`;

export function artifactById(db: SqliteDb, id: string): Artifact | undefined {
  const row = db.get('SELECT * FROM artifacts WHERE id = ?', id);
  return row === undefined ? undefined : toArtifact(row);
}

export function sessionById(db: SqliteDb, id: string): CapturedSession | undefined {
  const row = db.get(`${SESSION_SELECT} WHERE s.id = ?`, id);
  return row === undefined ? undefined : withCurrent(db, row);
}

/** A row of SESSION_SELECT, with its current artifact. */
export function withCurrent(db: SqliteDb, row: Row): CapturedSession {
  const currentId = row.current_artifact_id === null ? undefined : String(row.current_artifact_id);
  return toSession(row, currentId === undefined ? undefined : artifactById(db, currentId));
}

export function artifactsOf(db: SqliteDb, sessionId: string): Artifact[] {
  return db.all('SELECT * FROM artifacts WHERE session_id = ? ORDER BY revision DESC', sessionId).map(toArtifact);
}

export function grants(db: SqliteDb, sessionId: string): string[] {
  return db
    .all('SELECT user_id FROM session_grants WHERE session_id = ? ORDER BY user_id', sessionId)
    .map((r) => String(r.user_id));
}

export function recipients(db: SqliteDb, session: CapturedSession): User[] {
  if (session.sharing_mode === 'workspace')
    return db.all('SELECT * FROM users WHERE id <> ? ORDER BY lower(email), id', session.owner_id).map(toUser);
  if (session.sharing_mode === 'selected') {
    return db
      .all(
        'SELECT u.* FROM session_grants g JOIN users u ON u.id = g.user_id WHERE g.session_id = ? ORDER BY ' +
          'lower(u.email), u.id',
        session.id,
      )
      .map(toUser);
  }
  return [];
}

export function expiredArtifacts(db: SqliteDb, now: number, limit: number): Artifact[] {
  return db
    .all(
      'SELECT * FROM artifacts WHERE retention_deadline < ? AND blob_deleted = 0 ORDER BY retention_deadline LIMIT ?',
      now,
      limit,
    )
    .map(toArtifact);
}

export function markBlobDeleted(db: SqliteDb, artifactId: string): void {
  db.run('UPDATE artifacts SET blob_deleted = 1 WHERE id = ?', artifactId);
}

export function blobDeletionsDue(db: SqliteDb, now: number, limit: number): string[] {
  return db
    .all('SELECT blob_key FROM blob_deletions WHERE not_before <= ? ORDER BY not_before, blob_key LIMIT ?', now, limit)
    .map((r) => String(r.blob_key));
}

export function blobDeleted(db: SqliteDb, key: string, now: number): void {
  db.transaction(() => {
    db.run('DELETE FROM blob_deletions WHERE blob_key = ? AND not_before <= ? AND keep_until <= ?', key, now, now);
    db.run(
      'UPDATE blob_deletions SET not_before = keep_until WHERE blob_key = ? AND not_before <= ? AND keep_until > ?',
      key,
      now,
      now,
    );
  });
}

/** In one IMMEDIATE transaction: the write lock, taken first, is the session's lock. */
export class SqliteSessions implements SessionRepository {
  constructor(private readonly db: SqliteDb) {}

  lockSession(sessionId: string): boolean {
    return this.db.get('SELECT 1 FROM sessions WHERE id = ?', sessionId) !== undefined;
  }

  blobKeys(sessionId: string): string[] {
    return this.db.all('SELECT blob_key FROM artifacts WHERE session_id = ?', sessionId).map((r) => String(r.blob_key));
  }

  scheduleBlobDeletion(key: string, notBefore: number, keepUntil: number): void {
    this.db.run(
      `INSERT INTO blob_deletions (blob_key, not_before, keep_until) VALUES (?, ?, ?)
       ON CONFLICT (blob_key) DO UPDATE SET not_before = MIN(not_before, excluded.not_before),
         keep_until = MAX(keep_until, excluded.keep_until)`,
      key,
      notBefore,
      keepUntil,
    );
  }

  deleteSessionRows(sessionId: string): void {
    this.db.run('UPDATE sessions SET current_artifact_id = NULL WHERE id = ?', sessionId);
    this.db.run('DELETE FROM session_grants WHERE session_id = ?', sessionId);
    this.db.run(
      'DELETE FROM session_search WHERE rowid = (SELECT rowid FROM session_search_ids WHERE session_id = ?)',
      sessionId,
    );
    this.db.run('DELETE FROM session_search_ids WHERE session_id = ?', sessionId);
    this.db.run('DELETE FROM search_queue WHERE session_id = ?', sessionId);
    this.db.run('DELETE FROM artifacts WHERE session_id = ?', sessionId);
    this.db.run('DELETE FROM sessions WHERE id = ?', sessionId);
  }

  replaceSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): void {
    this.db.run('UPDATE sessions SET sharing_mode = ? WHERE id = ?', mode, sessionId);
    this.db.run('DELETE FROM session_grants WHERE session_id = ?', sessionId);
    if (mode === 'selected')
      for (const userId of userIds)
        this.db.run('INSERT OR IGNORE INTO session_grants (session_id, user_id) VALUES (?, ?)', sessionId, userId);
  }

  granted(sessionId: string, userId: string): boolean {
    return (
      this.db.get('SELECT 1 FROM session_grants WHERE session_id = ? AND user_id = ?', sessionId, userId) !== undefined
    );
  }

  audit(event: NewAuditEvent, now: number): void {
    insertAudit(this.db, event, now);
  }
}
