/** An upload's statements on SQLite: the repository of the upload flows (uploads.ts), and the reads around them. */
import { randomUUID } from 'node:crypto';
import { runSync, type Flow } from '../flow.js';
import { describe, toArtifact } from '../rows.js';
import type { CompletePlan, PresignFacts, UploadBackend, UploadRepository } from '../uploads.js';
import type { Artifact, CapturedSession, NewArtifact } from '../types.js';
import type { SqliteDb } from './db.js';
import { writeSearch } from './search.js';
import { artifactById, sessionById } from './sessions.js';

const bit = (value: boolean): number => (value ? 1 : 0);

/** The flows run in one IMMEDIATE transaction: the write lock is the session's lock. */
export class SqliteUploads implements UploadBackend, UploadRepository {
  constructor(private readonly db: SqliteDb) {}

  async run<T>(flow: (repo: UploadRepository) => Flow<T>): Promise<T> {
    return this.db.transaction(() => runSync(flow(this)));
  }

  lockSession(input: NewArtifact, now: number): { id: string; made: boolean; currentArtifactId: string | null } {
    const row = this.db.get(
      'SELECT id, current_artifact_id FROM sessions WHERE owner_id = ? AND harness = ? AND native_session_id = ?',
      input.owner_id,
      input.harness,
      input.native_session_id,
    );
    if (row !== undefined)
      return { id: String(row.id), made: false, currentArtifactId: row.current_artifact_id as string | null };
    const id = randomUUID();
    this.db.run(
      `INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at,
         updated_at, tags)
       VALUES (?, ?, ?, ?, 'private', NULL, ?, ?, ?)`,
      id,
      input.owner_id,
      input.harness,
      input.native_session_id,
      now,
      now,
      JSON.stringify(input.tags ?? []),
    );
    return { id, made: true, currentArtifactId: null };
  }

  presignFacts(sessionId: string, currentArtifactId: string | null, input: NewArtifact): PresignFacts {
    const same = this.db.get(
      'SELECT * FROM artifacts WHERE session_id = ? AND sha256 = ? AND size_bytes = ? ORDER BY revision DESC LIMIT 1',
      sessionId,
      input.sha256,
      input.size_bytes,
    );
    const last = this.db.get('SELECT MAX(revision) AS r FROM artifacts WHERE session_id = ?', sessionId)!;
    return {
      current: currentArtifactId === null ? undefined : artifactById(this.db, currentArtifactId),
      sameBytes: same === undefined ? undefined : toArtifact(same),
      lastRevision: Number(last.r ?? 0),
    };
  }

  touchSession(sessionId: string, tags: readonly string[] | undefined, now: number | undefined): void {
    if (tags !== undefined) this.db.run('UPDATE sessions SET tags = ? WHERE id = ?', JSON.stringify(tags), sessionId);
    if (now !== undefined) this.db.run('UPDATE sessions SET updated_at = ? WHERE id = ?', now, sessionId);
  }

  reuseArtifact(artifactId: string, input: NewArtifact, now: number, deadline: number): Artifact {
    this.db.run(
      `UPDATE artifacts SET status = 'pending', failure = NULL, content_type = ?, compatibility_profile = ?,
         artifact_format = ?, resumable = ?, cwd = ?, title = ?, summary = ?, captured_at_unix_ms = ?,
         repository_root = ?, repository_remote = ?, updated_at = ?, retention_deadline = ?
       WHERE id = ?`,
      ...describe(input, bit),
      now,
      deadline,
      artifactId,
    );
    return artifactById(this.db, artifactId)!;
  }

  insertArtifact(sessionId: string, revision: number, input: NewArtifact, now: number, deadline: number): Artifact {
    const id = randomUUID();
    this.db.run(
      `INSERT INTO artifacts (id, session_id, revision, status, size_bytes, sha256, content_type, compatibility_profile,
         artifact_format, resumable, cwd, title, summary, captured_at_unix_ms, repository_root, repository_remote,
         blob_key, created_at, updated_at, retention_deadline)
       VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      id,
      sessionId,
      revision,
      input.size_bytes,
      input.sha256,
      ...describe(input, bit),
      `sessions/${id}.tar.gz`,
      now,
      now,
      deadline,
    );
    return artifactById(this.db, id)!;
  }

  lockArtifact(artifactId: string): Artifact | undefined {
    return artifactById(this.db, artifactId);
  }

  currentRevision(sessionId: string): number | undefined {
    const current = this.db.get(
      'SELECT c.revision FROM sessions s JOIN artifacts c ON c.id = s.current_artifact_id WHERE s.id = ?',
      sessionId,
    );
    return current === undefined ? undefined : Number(current.revision);
  }

  writeComplete(artifact: Artifact, plan: CompletePlan, now: number): Artifact {
    this.db.run(
      'UPDATE artifacts SET status = ?, failure = NULL, completed_at = ?, updated_at = ?, retention_deadline = ? ' +
        'WHERE id = ?',
      plan.status,
      now,
      now,
      plan.deadline,
      artifact.id,
    );
    if (plan.current) {
      this.db.run(
        `UPDATE artifacts SET status = 'superseded', updated_at = ? WHERE session_id = ? AND status = 'complete' ` +
          `AND id <> ?`,
        now,
        artifact.session_id,
        artifact.id,
      );
      this.db.run(
        'UPDATE sessions SET current_artifact_id = ?, updated_at = ? WHERE id = ?',
        artifact.id,
        now,
        artifact.session_id,
      );
      // The search entry follows the current artifact, in the same transaction: its title, summary and place at once;
      // what a readable upload says is the indexer's to write, and until then the previous upload's text stays.
      const previous = plan.readable
        ? this.db.get(
            'SELECT x.body FROM session_search x JOIN session_search_ids i ON i.rowid = x.rowid WHERE i.session_id = ?',
            artifact.session_id,
          )
        : undefined;
      writeSearch(this.db, artifact.session_id, artifact, typeof previous?.body === 'string' ? previous.body : '');
      if (plan.readable) {
        this.db.run(
          `INSERT INTO search_queue (session_id, artifact_id, queued_at, claimed_until) VALUES (?, ?, ?, 0)
           ON CONFLICT (session_id) DO UPDATE SET artifact_id = excluded.artifact_id, queued_at = excluded.queued_at,
             claimed_until = 0`,
          artifact.session_id,
          artifact.id,
          now,
        );
      }
    }
    return artifactById(this.db, artifact.id)!;
  }

  artifactWithSession(id: string): { artifact: Artifact; session: CapturedSession } | undefined {
    const artifact = artifactById(this.db, id);
    if (artifact === undefined) return undefined;
    return { artifact, session: sessionById(this.db, artifact.session_id)! };
  }

  uploadWanted(blobKey: string, now: number): boolean {
    return (
      this.db.get(
        `SELECT 1 FROM artifacts WHERE blob_key = ? AND status IN ('pending', 'complete', 'superseded') AND ` +
          `blob_deleted = 0 AND retention_deadline > ?`,
        blobKey,
        now,
      ) !== undefined
    );
  }

  markFailed(artifactId: string, reason: string, now: number): void {
    this.db.run(
      `UPDATE artifacts SET status = 'failed', failure = ?, updated_at = ? WHERE id = ? AND status = 'pending'`,
      reason,
      now,
      artifactId,
    );
  }
}
