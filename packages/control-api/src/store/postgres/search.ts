/** Search on PostgreSQL: the full-text entries (one per session), the indexer's queue, and snippets. */
import { toArtifact } from '../rows.js';
import { type Artifact, BRACKETS, type SearchIndexed, type SnippetMarks, searchWords } from '../types.js';
import type { Db, Pg } from './db.js';
import { searchDocument } from './migrations.js';

export async function claimSearchWork(
  pg: Pg,
  now: number,
  leaseMs: number,
  limit: number,
): Promise<{ session_id: string; artifact: Artifact }[]> {
  // SKIP LOCKED: replicas claiming at the same time take different sessions.
  const rows = await pg.db.all(
    `WITH claimed AS (
       UPDATE search_queue SET claimed_until = $2
       WHERE session_id IN (SELECT q.session_id FROM search_queue q JOIN artifacts a ON a.id = q.artifact_id
                            WHERE q.claimed_until <= $1 AND NOT a.blob_deleted AND a.retention_deadline > $1
                            ORDER BY q.queued_at, q.session_id LIMIT $3 FOR UPDATE OF q SKIP LOCKED)
       RETURNING session_id, artifact_id
     )
     SELECT c.session_id AS q_session_id, a.* FROM claimed c JOIN artifacts a ON a.id = c.artifact_id`,
    now,
    now + leaseMs,
    limit,
  );
  return rows.map((row) => ({ session_id: String(row.q_session_id), artifact: toArtifact(row) }));
}

export async function searchWorkDone(pg: Pg, sessionId: string, artifactId: string): Promise<void> {
  await pg.db.run('DELETE FROM search_queue WHERE session_id = $1 AND artifact_id = $2', sessionId, artifactId);
}

export async function indexable(
  pg: Pg,
  afterId: string,
  limit: number,
): Promise<{ session_id: string; artifact: Artifact }[]> {
  const rows = await pg.db.all(
    'SELECT a.* FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id WHERE s.id > $1 ORDER BY s.id ' +
      'LIMIT $2',
    afterId,
    limit,
  );
  return rows.map((row) => {
    const artifact = toArtifact(row);
    return { session_id: artifact.session_id, artifact };
  });
}

export async function countIndexable(pg: Pg): Promise<number> {
  return Number((await pg.db.get('SELECT COUNT(*) AS n FROM sessions WHERE current_artifact_id IS NOT NULL'))!.n);
}

export async function setSearchText(
  pg: Pg,
  sessionId: string,
  artifactId: string,
  text: string,
  now: number,
): Promise<boolean> {
  return writeSearchText(pg.db, sessionId, artifactId, text, now);
}

export async function searchIndexed(pg: Pg, done: readonly SearchIndexed[], now: number): Promise<void> {
  if (done.length === 0) return;
  await pg.transaction(async (db) => {
    for (const d of done) {
      await writeSearchText(db, d.session_id, d.artifact_id, d.text, now);
      await db.run('DELETE FROM search_queue WHERE session_id = $1 AND artifact_id = $2', d.session_id, d.artifact_id);
    }
  });
}

export async function snippets(
  pg: Pg,
  sessionIds: readonly string[],
  q: string,
  now: number,
  marks: SnippetMarks = BRACKETS,
): Promise<Map<string, string>> {
  const query = tsQuery(q);
  const out = new Map<string, string>();
  if (query === undefined || sessionIds.length === 0) return out;
  // Only the page's sessions: ts_headline reads the whole text.
  const rows = await pg.db.all(
    `SELECT x.session_id, ts_headline('simple', COALESCE(NULLIF(x.body, ''), a.title, ''),
         to_tsquery('simple', $1), $4) AS snippet
     FROM session_search x JOIN sessions s ON s.id = x.session_id JOIN artifacts a ON a.id = s.current_artifact_id
     WHERE x.session_id = ANY($2::text[]) AND x.document @@ to_tsquery('simple', $1)
        AND NOT a.blob_deleted AND a.retention_deadline > $3`,
    query,
    [...sessionIds],
    now,
    `StartSel=${marks.start}, StopSel=${marks.stop}, MaxWords=24, MinWords=8, MaxFragments=1, ` +
      `FragmentDelimiter=" … "`,
  );
  for (const row of rows)
    if (typeof row.snippet === 'string' && row.snippet !== '') out.set(String(row.session_id), row.snippet);
  return out;
}

export async function dropExpiredSearch(pg: Pg, now: number): Promise<number> {
  return pg.transaction(async (db) => {
    const dropped = await db.run(
      `DELETE FROM session_search x USING sessions s, artifacts a
       WHERE s.id = x.session_id AND a.id = s.current_artifact_id AND (a.blob_deleted OR a.retention_deadline <= $1)`,
      now,
    );
    await db.run(
      'DELETE FROM search_queue q USING artifacts a WHERE a.id = q.artifact_id AND (a.blob_deleted OR ' +
        'a.retention_deadline <= $1)',
      now,
    );
    return dropped;
  });
}

/**
 * Writes a session's search entry, only while `artifactId` is its current artifact and not expired at `now` (one
 * statement); whether it did. The session's row is locked as it is read: a delete or a complete of the session under
 * way elsewhere is waited for, and the row is read again after it (a deleted session gets no entry, and the rest of
 * the indexer's batch is written).
 */
export async function writeSearchText(
  db: Db,
  sessionId: string,
  artifactId: string,
  text: string,
  now: number,
): Promise<boolean> {
  const written = await db.run(
    `INSERT INTO session_search (session_id, body, document)
     SELECT s.id, $3::text, ${searchDocument('$3::text')}
     FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id
     WHERE s.id = $1 AND a.id = $2 AND NOT a.blob_deleted AND a.retention_deadline > $4
     FOR KEY SHARE OF s
     ON CONFLICT (session_id) DO UPDATE SET body = excluded.body, document = excluded.document`,
    sessionId,
    artifactId,
    text,
    now,
  );
  return written > 0;
}

/** PostgreSQL's tsquery for `q`: every word (letters and digits only: no operator reaches the parser), the last as a
 * prefix. */
export function tsQuery(q: string): string | undefined {
  const words = searchWords(q);
  return words.length === 0 ? undefined : words.map((w, i) => (i === words.length - 1 ? `${w}:*` : w)).join(' & ');
}
