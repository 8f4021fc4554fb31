/** Search on SQLite: the FTS5 index (one entry per session), the indexer's queue, and snippets. */
import { toArtifact } from '../rows.js';
import { type Artifact, BRACKETS, type SearchIndexed, type SnippetMarks, searchPlace, searchWords } from '../types.js';
import type { SqliteDb } from './db.js';

/** FTS5's query for `q`: every word, quoted (no operator of the user's reaches the parser), the last one as a prefix.
 * */
export function ftsMatch(q: string): string | undefined {
  const words = searchWords(q);
  if (words.length === 0) return undefined;
  return words.map((w, i) => `"${w}"${i === words.length - 1 ? '*' : ''}`).join(' ');
}

/** The session's search entry: its current artifact's title and summary, `text`, and its place; in the caller's
 * transaction. */
export function writeSearch(
  db: SqliteDb,
  sessionId: string,
  artifact: Pick<Artifact, 'title' | 'summary' | 'cwd' | 'repository_root' | 'repository_remote'>,
  text: string,
): void {
  const native = String(db.get('SELECT native_session_id FROM sessions WHERE id = ?', sessionId)!.native_session_id);
  db.run('INSERT OR IGNORE INTO session_search_ids (session_id) VALUES (?)', sessionId);
  const rowid = Number(db.get('SELECT rowid FROM session_search_ids WHERE session_id = ?', sessionId)!.rowid);
  db.run('DELETE FROM session_search WHERE rowid = ?', rowid);
  db.run(
    'INSERT INTO session_search (rowid, title, summary, body, place) VALUES (?, ?, ?, ?, ?)',
    rowid,
    artifact.title ?? '',
    artifact.summary ?? '',
    text,
    searchPlace(artifact, native),
  );
}

export function claimSearchWork(
  db: SqliteDb,
  now: number,
  leaseMs: number,
  limit: number,
): { session_id: string; artifact: Artifact }[] {
  return db.transaction(() => {
    const rows = db.all(
      `SELECT q.session_id, a.* FROM search_queue q JOIN artifacts a ON a.id = q.artifact_id
       WHERE q.claimed_until <= ? AND a.blob_deleted = 0 AND a.retention_deadline > ?
       ORDER BY q.queued_at, q.session_id LIMIT ?`,
      now,
      now,
      limit,
    );
    for (const row of rows)
      db.run('UPDATE search_queue SET claimed_until = ? WHERE session_id = ?', now + leaseMs, String(row.session_id));
    return rows.map((row) => ({ session_id: String(row.session_id), artifact: toArtifact(row) }));
  });
}

export function searchWorkDone(db: SqliteDb, sessionId: string, artifactId: string): void {
  db.run('DELETE FROM search_queue WHERE session_id = ? AND artifact_id = ?', sessionId, artifactId);
}

export function indexable(db: SqliteDb, afterId: string, limit: number): { session_id: string; artifact: Artifact }[] {
  return db
    .all(
      'SELECT a.* FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id WHERE s.id > ? ORDER BY s.id ' +
        'LIMIT ?',
      afterId,
      limit,
    )
    .map((row) => {
      const artifact = toArtifact(row);
      return { session_id: artifact.session_id, artifact };
    });
}

export function countIndexable(db: SqliteDb): number {
  return Number(db.get('SELECT COUNT(*) AS n FROM sessions WHERE current_artifact_id IS NOT NULL')!.n);
}

/** Writes the session's entry while `artifactId` is its current artifact and not expired; whether it did. */
export function setSearchText(db: SqliteDb, sessionId: string, artifactId: string, text: string, now: number): boolean {
  const current = db.get(
    'SELECT a.* FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id WHERE s.id = ? AND a.id = ? AND ' +
      'a.blob_deleted = 0 AND a.retention_deadline > ?',
    sessionId,
    artifactId,
    now,
  );
  if (current === undefined) return false;
  writeSearch(db, sessionId, toArtifact(current), text);
  return true;
}

export function searchIndexed(db: SqliteDb, done: readonly SearchIndexed[], now: number): void {
  if (done.length === 0) return;
  // One transaction for the batch: one commit, and one new full-text segment rather than one per session.
  db.transaction(() => {
    for (const d of done) {
      setSearchText(db, d.session_id, d.artifact_id, d.text, now);
      searchWorkDone(db, d.session_id, d.artifact_id);
    }
  });
}

export function snippets(
  db: SqliteDb,
  sessionIds: readonly string[],
  q: string,
  now: number,
  marks: SnippetMarks = BRACKETS,
): Map<string, string> {
  const match = ftsMatch(q);
  const out = new Map<string, string>();
  if (match === undefined) return out;
  for (const id of sessionIds) {
    const entry = db.get(
      `SELECT i.rowid FROM session_search_ids i JOIN sessions s ON s.id = i.session_id
       JOIN artifacts a ON a.id = s.current_artifact_id
       WHERE i.session_id = ? AND a.blob_deleted = 0 AND a.retention_deadline > ?`,
      id,
      now,
    );
    if (entry === undefined) continue;
    // Beside MATCH, FTS5 keeps to a rowid only when it is given as an INTEGER: a REAL (what a JS number binds as) or
    // a NULL matches every row, and the snippet would be another session's.
    const row = db.get(
      `SELECT snippet(session_search, -1, ?, ?, '…', 16) AS snippet FROM session_search WHERE session_search ` +
        `MATCH ? AND rowid = ?`,
      marks.start,
      marks.stop,
      match,
      BigInt(Number(entry.rowid)),
    );
    if (row !== undefined && typeof row.snippet === 'string' && row.snippet !== '') out.set(id, row.snippet);
  }
  return out;
}

export function dropExpiredSearch(db: SqliteDb, now: number): number {
  return db.transaction(() => {
    const expired = db.all(
      `SELECT i.rowid, i.session_id FROM session_search_ids i JOIN sessions s ON s.id = i.session_id
       JOIN artifacts a ON a.id = s.current_artifact_id WHERE a.blob_deleted = 1 OR a.retention_deadline <= ?`,
      now,
    );
    for (const row of expired) {
      db.run('DELETE FROM session_search WHERE rowid = ?', Number(row.rowid));
      db.run('DELETE FROM session_search_ids WHERE rowid = ?', Number(row.rowid));
    }
    db.run(
      'DELETE FROM search_queue WHERE EXISTS (SELECT 1 FROM artifacts a WHERE a.id = search_queue.artifact_id ' +
        'AND (a.blob_deleted = 1 OR a.retention_deadline <= ?))',
      now,
    );
    return expired.length;
  });
}
