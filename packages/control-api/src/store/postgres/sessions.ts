/** Captured sessions and their artifacts on PostgreSQL: reads, sharing, and a session's deletion. */
import { toArtifact, toSession, toUser } from '../rows.js';
import type { SessionRepository } from '../sessions.js';
import type { Artifact, CapturedSession, NewAuditEvent, SharingMode, User } from '../types.js';
import { insertAudit } from './audit.js';
import { type Db, type Pg, type Row, storable } from './db.js';

/** The artifact columns, read alongside a session as `a_<column>` (its current artifact, one query for both). */
export const ARTIFACT_COLUMNS = [
  'id',
  'session_id',
  'revision',
  'status',
  'size_bytes',
  'sha256',
  'content_type',
  'compatibility_profile',
  'artifact_format',
  'resumable',
  'cwd',
  'title',
  'summary',
  'captured_at_unix_ms',
  'repository_root',
  'repository_remote',
  'blob_key',
  'failure',
  'created_at',
  'updated_at',
  'completed_at',
  'retention_deadline',
  'blob_deleted',
] as const;

export const SESSION_SELECT = `SELECT s.*, us.email AS owner_email,
    CASE s.sharing_mode
      WHEN 'workspace' THEN (SELECT COUNT(*) FROM users o WHERE o.id <> s.owner_id)
      WHEN 'selected' THEN (SELECT COUNT(*) FROM session_grants g WHERE g.session_id = s.id)
      ELSE 0 END AS share_recipient_count,
    ${ARTIFACT_COLUMNS.map((c) => `a.${c} AS a_${c}`).join(', ')}
  FROM sessions s JOIN users us ON us.id = s.owner_id LEFT JOIN artifacts a ON a.id = s.current_artifact_id`;

/** An artifact (its columns as `t_<column>`) with its session as SESSION_SELECT reads it, by the artifact's id. */
const ARTIFACT_WITH_SESSION = `${SESSION_SELECT.replace(
  /^SELECT /,
  `SELECT ` + `${ARTIFACT_COLUMNS.map((c) => `t.${c} AS t_${c}`).join(', ')}, `,
)}
  JOIN artifacts t ON t.session_id = s.id WHERE t.id = $1`;

/** Who may see a session in listings: the owner, sessions shared with the whole workspace, or by name. */
export const visible = (viewer: string): string => `(s.owner_id = ${viewer} OR s.sharing_mode = 'workspace' OR EXISTS
  (SELECT 1 FROM session_grants g WHERE g.session_id = s.id AND g.user_id = ${viewer}))`;

export async function artifact(
  pg: Pg,
  id: string,
): Promise<{ artifact: Artifact; session: CapturedSession } | undefined> {
  if (!storable(id)) return undefined;
  // One statement: the artifact (its columns as t_…) joined to its session as SESSION_SELECT reads it.
  const row = await pg.db.get(ARTIFACT_WITH_SESSION, id);
  if (row === undefined) return undefined;
  const artifact: Row = {};
  for (const column of ARTIFACT_COLUMNS) artifact[column] = row[`t_${column}`];
  return { artifact: toArtifact(artifact), session: sessionOf(row) };
}

export async function session(pg: Pg, id: string): Promise<CapturedSession | undefined> {
  return sessionIn(pg.db, id);
}

export async function artifactsOf(pg: Pg, sessionId: string): Promise<Artifact[]> {
  return (await pg.db.all('SELECT * FROM artifacts WHERE session_id = $1 ORDER BY revision DESC', sessionId)).map(
    toArtifact,
  );
}

export async function grants(pg: Pg, sessionId: string): Promise<string[]> {
  return (await pg.db.all('SELECT user_id FROM session_grants WHERE session_id = $1 ORDER BY user_id', sessionId)).map(
    (r) => String(r.user_id),
  );
}

export async function recipients(pg: Pg, session: CapturedSession): Promise<User[]> {
  if (session.sharing_mode === 'workspace')
    return (await pg.db.all('SELECT * FROM users WHERE id <> $1 ORDER BY lower(email), id', session.owner_id)).map(
      toUser,
    );
  if (session.sharing_mode === 'selected') {
    return (
      await pg.db.all(
        'SELECT u.* FROM session_grants g JOIN users u ON u.id = g.user_id WHERE g.session_id = $1 ORDER BY ' +
          'lower(u.email), u.id',
        session.id,
      )
    ).map(toUser);
  }
  return [];
}

export async function expiredArtifacts(pg: Pg, now: number, limit: number): Promise<Artifact[]> {
  return (
    await pg.db.all(
      'SELECT * FROM artifacts WHERE retention_deadline < $1 AND NOT blob_deleted ORDER BY retention_deadline ' +
        'LIMIT $2',
      now,
      limit,
    )
  ).map(toArtifact);
}

export async function markBlobDeleted(pg: Pg, artifactId: string): Promise<void> {
  await pg.db.run('UPDATE artifacts SET blob_deleted = TRUE WHERE id = $1', artifactId);
}

export async function blobDeletionsDue(pg: Pg, now: number, limit: number): Promise<string[]> {
  return (
    await pg.db.all(
      'SELECT blob_key FROM blob_deletions WHERE not_before <= $1 ORDER BY not_before, blob_key LIMIT $2',
      now,
      limit,
    )
  ).map((r) => String(r.blob_key));
}

export async function blobDeleted(pg: Pg, key: string, now: number): Promise<void> {
  // One statement: gone for good, or due again at keep_until.
  await pg.db.run(
    `WITH done AS (DELETE FROM blob_deletions WHERE blob_key = $1 AND not_before <= $2 AND keep_until <= $2)
     UPDATE blob_deletions SET not_before = keep_until WHERE blob_key = $1 AND not_before <= $2 AND keep_until > $2`,
    key,
    now,
  );
}

export async function artifactIn(db: Db, id: string): Promise<Artifact | undefined> {
  const row = await db.get('SELECT * FROM artifacts WHERE id = $1', id);
  return row === undefined ? undefined : toArtifact(row);
}

export async function sessionIn(db: Db, id: string): Promise<CapturedSession | undefined> {
  const row = await db.get(`${SESSION_SELECT} WHERE s.id = $1`, id);
  return row === undefined ? undefined : sessionOf(row);
}

/** A row of SESSION_SELECT: the session, and its current artifact from the `a_` columns. */
export function sessionOf(row: Row): CapturedSession {
  if (row.a_id === null || row.a_id === undefined) return toSession(row, undefined);
  const artifact: Row = {};
  for (const column of ARTIFACT_COLUMNS) artifact[column] = row[`a_${column}`];
  return toSession(row, toArtifact(artifact));
}

/** On one transaction's client, or (`granted`) on the pool. */
export class PgSessions implements SessionRepository {
  constructor(private readonly db: Db) {}

  async lockSession(sessionId: string): Promise<boolean> {
    return (await this.db.get('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', sessionId)) !== undefined;
  }

  async blobKeys(sessionId: string): Promise<string[]> {
    const rows = await this.db.all('SELECT blob_key FROM artifacts WHERE session_id = $1', sessionId);
    return rows.map((row) => String(row.blob_key));
  }

  async scheduleBlobDeletion(key: string, notBefore: number, keepUntil: number): Promise<void> {
    await this.db.run(
      `INSERT INTO blob_deletions (blob_key, not_before, keep_until) VALUES ($1, $2, $3)
       ON CONFLICT (blob_key) DO UPDATE SET not_before = LEAST(blob_deletions.not_before, excluded.not_before),
         keep_until = GREATEST(blob_deletions.keep_until, excluded.keep_until)`,
      key,
      notBefore,
      keepUntil,
    );
  }

  async deleteSessionRows(sessionId: string): Promise<void> {
    await this.db.run('UPDATE sessions SET current_artifact_id = NULL WHERE id = $1', sessionId);
    await this.db.run('DELETE FROM session_grants WHERE session_id = $1', sessionId);
    await this.db.run('DELETE FROM session_search WHERE session_id = $1', sessionId);
    await this.db.run('DELETE FROM search_queue WHERE session_id = $1', sessionId);
    await this.db.run('DELETE FROM artifacts WHERE session_id = $1', sessionId);
    await this.db.run('DELETE FROM sessions WHERE id = $1', sessionId);
  }

  async replaceSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Promise<void> {
    await this.db.run('UPDATE sessions SET sharing_mode = $1 WHERE id = $2', mode, sessionId);
    await this.db.run('DELETE FROM session_grants WHERE session_id = $1', sessionId);
    if (mode === 'selected' && userIds.length > 0) {
      await this.db.run(
        'INSERT INTO session_grants (session_id, user_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING',
        sessionId,
        userIds,
      );
    }
  }

  async granted(sessionId: string, userId: string): Promise<boolean> {
    return (
      (await this.db.get('SELECT 1 FROM session_grants WHERE session_id = $1 AND user_id = $2', sessionId, userId)) !==
      undefined
    );
  }

  async audit(event: NewAuditEvent, now: number): Promise<void> {
    await insertAudit(this.db, event, now);
  }
}
