/**
 * An upload's statements on PostgreSQL: the repository of the upload flows (uploads.ts), and the reads around them.
 * The flows run on one transaction's client; the captured session's row is locked (FOR UPDATE) before anything of it
 * is read, so concurrent presigns and completes of one session, from any replica, run one after the other: one
 * session, one artifact per revision, one current artifact.
 */
import { randomUUID } from 'node:crypto';
import { runAsync, type Flow } from '../flow.js';
import { describe, toArtifact } from '../rows.js';
import type { Artifact, NewArtifact } from '../types.js';
import type { CompletePlan, firstPresign, PresignFacts, UploadBackend, UploadRepository } from '../uploads.js';
import type { Db, Pg } from './db.js';
import { searchDocument } from './migrations.js';
import { artifactIn } from './sessions.js';

const same = (value: boolean): boolean => value;

/** The tags a presign replaces the session's with, as the column holds them; null: the session's stay. */
function tagsOf(tags: readonly string[] | undefined): string | null {
  return tags === undefined ? null : JSON.stringify(tags);
}

const INSERT_ARTIFACT = `INSERT INTO artifacts (id, session_id, revision, status, size_bytes, sha256, content_type,
    compatibility_profile, artifact_format, resumable, cwd, title, summary, captured_at_unix_ms, repository_root,
    repository_remote, blob_key, created_at, updated_at, retention_deadline)`;

export class PgUploadBackend implements UploadBackend {
  constructor(private readonly pg: Pg) {}

  async run<T>(flow: (repo: UploadRepository) => Flow<T>): Promise<T> {
    return this.pg.transaction((db) => runAsync(flow(new PgUploads(db))));
  }

  /** The common case, a session seen for the first time: the session (with its tags) and its first artifact in one
   * statement (one round trip, its own transaction); nothing when the session exists. */
  async presignFirst(
    input: NewArtifact,
    now: number,
    plan: ReturnType<typeof firstPresign>,
  ): Promise<Artifact | undefined> {
    const id = randomUUID();
    const made = await this.pg.db.get(
      `WITH made AS (
         INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at,
         updated_at, tags)
         VALUES ($1, $2, $3, $4, 'private', NULL, $5, $5, COALESCE($22::text, '[]')) ON CONFLICT (owner_id, harness,
         native_session_id) DO NOTHING RETURNING id
       )
       ${INSERT_ARTIFACT}
       SELECT $6, made.id, $21, 'pending', $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $5, $5, $20
       FROM made
       RETURNING *`,
      randomUUID(),
      input.owner_id,
      input.harness,
      input.native_session_id,
      now,
      id,
      input.size_bytes,
      input.sha256,
      ...describe(input, same),
      `sessions/${id}.tar.gz`,
      plan.deadline,
      plan.revision,
      tagsOf(input.tags),
    );
    return made === undefined ? undefined : toArtifact(made);
  }

  async uploadWanted(blobKey: string, now: number): Promise<boolean> {
    return (
      (await this.pg.db.get(
        `SELECT 1 FROM artifacts WHERE blob_key = $1 AND status IN ('pending', 'complete', 'superseded') AND NOT ` +
          `blob_deleted AND retention_deadline > $2`,
        blobKey,
        now,
      )) !== undefined
    );
  }

  async markFailed(artifactId: string, reason: string, now: number): Promise<void> {
    await this.pg.db.run(
      `UPDATE artifacts SET status = 'failed', failure = $1, updated_at = $2 WHERE id = $3 AND status = 'pending'`,
      reason,
      now,
      artifactId,
    );
  }
}

/** The repository on one transaction's client. */
class PgUploads implements UploadRepository {
  constructor(private readonly db: Db) {}

  async lockSession(
    input: NewArtifact,
    now: number,
  ): Promise<{ id: string; made: boolean; currentArtifactId: string | null }> {
    // Made here when a concurrent presign's session was deleted meanwhile; a row this statement made is ours until
    // commit (a concurrent insert of the same key waits on the unique index).
    const made = await this.db.get(
      `INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at,
         updated_at, tags)
       VALUES ($1, $2, $3, $4, 'private', NULL, $5, $5, COALESCE($6::text, '[]'))
       ON CONFLICT (owner_id, harness, native_session_id) DO NOTHING RETURNING id`,
      randomUUID(),
      input.owner_id,
      input.harness,
      input.native_session_id,
      now,
      tagsOf(input.tags),
    );
    if (made !== undefined) return { id: String(made.id), made: true, currentArtifactId: null };
    const locked = (await this.db.get(
      'SELECT id, current_artifact_id FROM sessions WHERE owner_id = $1 AND harness = $2 AND native_session_id = ' +
        '$3 FOR UPDATE',
      input.owner_id,
      input.harness,
      input.native_session_id,
    ))!;
    return { id: String(locked.id), made: false, currentArtifactId: locked.current_artifact_id as string | null };
  }

  async presignFacts(sessionId: string, currentArtifactId: string | null, input: NewArtifact): Promise<PresignFacts> {
    // Read after the lock (statements of their own, so with a snapshot taken after it): a concurrent presign of this
    // session that committed meanwhile is seen.
    const same = (await this.db.get(
      `SELECT m.last_revision, a.* FROM (SELECT MAX(revision) AS last_revision FROM artifacts WHERE session_id = $1) m
       LEFT JOIN LATERAL (SELECT * FROM artifacts WHERE session_id = $1 AND sha256 = $2 AND size_bytes = $3
         ORDER BY revision DESC LIMIT 1) a ON TRUE`,
      sessionId,
      input.sha256,
      input.size_bytes,
    ))!;
    return {
      current: currentArtifactId === null ? undefined : await artifactIn(this.db, currentArtifactId),
      sameBytes: same.id === null ? undefined : toArtifact(same),
      lastRevision: Number(same.last_revision ?? 0),
    };
  }

  async touchSession(sessionId: string, tags: readonly string[] | undefined, now: number | undefined): Promise<void> {
    await this.db.run(
      'UPDATE sessions SET updated_at = COALESCE($1, updated_at), tags = COALESCE($2::text, tags) WHERE id = $3',
      now ?? null,
      tagsOf(tags),
      sessionId,
    );
  }

  async reuseArtifact(artifactId: string, input: NewArtifact, now: number, deadline: number): Promise<Artifact> {
    const reused = (await this.db.get(
      `UPDATE artifacts SET status = 'pending', failure = NULL, content_type = $1, compatibility_profile = $2,
         artifact_format = $3, resumable = $4, cwd = $5, title = $6, summary = $7, captured_at_unix_ms = $8,
         repository_root = $9, repository_remote = $10, updated_at = $11, retention_deadline = $12
       WHERE id = $13 RETURNING *`,
      ...describe(input, same),
      now,
      deadline,
      artifactId,
    ))!;
    return toArtifact(reused);
  }

  async insertArtifact(
    sessionId: string,
    revision: number,
    input: NewArtifact,
    now: number,
    deadline: number,
  ): Promise<Artifact> {
    const id = randomUUID();
    const inserted = (await this.db.get(
      `${INSERT_ARTIFACT}
       VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
       RETURNING *`,
      id,
      sessionId,
      revision,
      input.size_bytes,
      input.sha256,
      ...describe(input, same),
      `sessions/${id}.tar.gz`,
      now,
      now,
      deadline,
    ))!;
    return toArtifact(inserted);
  }

  async lockArtifact(artifactId: string): Promise<Artifact | undefined> {
    const row = await this.db.get(
      'SELECT a.* FROM artifacts a JOIN sessions s ON s.id = a.session_id WHERE a.id = $1 FOR UPDATE OF s',
      artifactId,
    );
    return row === undefined ? undefined : toArtifact(row);
  }

  async currentRevision(sessionId: string): Promise<number | undefined> {
    // Read after the lock (a statement of its own, so with a snapshot taken after it): what an earlier complete of
    // this session wrote is seen.
    const current = await this.db.get(
      'SELECT c.revision FROM sessions s JOIN artifacts c ON c.id = s.current_artifact_id WHERE s.id = $1',
      sessionId,
    );
    return current === undefined ? undefined : Number(current.revision);
  }

  async writeComplete(artifact: Artifact, plan: CompletePlan, now: number): Promise<Artifact> {
    // One statement writes what the plan says (its parts see the same snapshot, taken under the session's lock).
    const done = (await this.db.get(
      `WITH done AS (
         UPDATE artifacts SET status = $2, failure = NULL, completed_at = $3, updated_at = $3, retention_deadline = $4
         WHERE id = $5 RETURNING *
       ), older AS (
         UPDATE artifacts SET status = 'superseded', updated_at = $3
         WHERE session_id = $1 AND status = 'complete' AND id <> $5 AND $6::boolean
       ), now_current AS (
         UPDATE sessions SET current_artifact_id = $5, updated_at = $3 WHERE id = $1 AND $6::boolean
       ), kept AS (
         -- What a session bundle says is the indexer's to write (shortly): until then the previous upload's text stays.
         SELECT COALESCE((SELECT body FROM session_search WHERE session_id = $1 AND $7::boolean), '') AS body
       ), search AS (
         -- The entry takes the new upload's title, summary and place now, in this transaction.
         INSERT INTO session_search (session_id, body, document)
         SELECT s.id, k.body, ${searchDocument('k.body')}
         FROM sessions s JOIN artifacts a ON a.id = $5 CROSS JOIN kept k WHERE s.id = $1 AND $6::boolean
         ON CONFLICT (session_id) DO UPDATE SET body = excluded.body, document = excluded.document
       ), queued AS (
         INSERT INTO search_queue (session_id, artifact_id, queued_at, claimed_until)
         SELECT $1, $5, $3, 0 WHERE $7::boolean
         ON CONFLICT (session_id) DO UPDATE SET artifact_id = excluded.artifact_id, queued_at = excluded.queued_at,
         claimed_until = 0
       )
       SELECT * FROM done`,
      artifact.session_id,
      plan.status,
      now,
      plan.deadline,
      artifact.id,
      plan.current,
      plan.readable,
    ))!;
    return toArtifact(done);
  }
}
