/**
 * The embedded database: SQLite (`<data>/control.db`, `node:sqlite`), for one machine or a small team. WAL lets the
 * admin commands write while `serve` runs; writes that read before they write take the database's write lock first
 * (BEGIN IMMEDIATE), so concurrent writers (serve and the admin commands) serialise cleanly. Statements are prepared
 * once per connection, and compiled once (planOnce). Bearer tokens are never stored: only their SHA-256.
 */
import { randomUUID } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { BlueError } from '@blue-agent/contract/errors.js';
import { migrateSqlite, SQLITE_MIGRATIONS, schemaTooNew, sqliteSchemaVersion } from './sqlite-migrations.js';
import { SqliteIdentity } from './sqlite-identity.js';
import { auditEventOf, auditRow, policyPublished, roleChanged, userAdded } from './audit.js';
import { newRevision, toPolicyRevision } from './revisions.js';
import { planRoleChange } from './roles.js';
import { mayView } from './sharing.js';
import { planComplete, planPresign, type PresignFacts } from './uploads.js';
import type {
  Artifact,
  ArtifactStatus,
  AuditActor,
  PublishOptions,
  AuditEvent,
  AuditQuery,
  CapturedSession,
  ClientStatusQuery,
  ClientStatusRecord,
  ControlStore,
  NewArtifact,
  NewAuditEvent,
  PolicyRevision,
  PresignResult,
  RoleChange,
  SearchIndexed,
  SessionQuery,
  SnippetMarks,
  SharingMode,
  User,
} from './types.js';
import {
  API_SCOPES,
  BRACKETS,
  FIRST_ADMIN_TOKEN_LABEL,
  USERS_ADD_TOKEN_LABEL,
  MAX_MACHINES_PER_USER,
  MAX_SEARCH_TOTAL,
  MEMBER_SCOPES,
  searchPlace,
  searchWords,
} from './types.js';

type Row = Record<string, unknown>;
type Value = string | number | bigint | null;

const SESSION_SELECT = `SELECT s.*, us.email AS owner_email,
    CASE s.sharing_mode
      WHEN 'workspace' THEN (SELECT COUNT(*) FROM users o WHERE o.id <> s.owner_id)
      WHEN 'selected' THEN (SELECT COUNT(*) FROM session_grants g WHERE g.session_id = s.id)
      ELSE 0 END AS share_recipient_count
  FROM sessions s JOIN users us ON us.id = s.owner_id`;

/** Who may see a session in listings: the owner, sessions shared with the whole workspace, or by name (the viewer
 * twice). */
const VISIBLE = `(s.owner_id = ? OR s.sharing_mode = 'workspace' OR EXISTS
  (SELECT 1 FROM session_grants g WHERE g.session_id = s.id AND g.user_id = ?))`;

export class SqliteStore implements ControlStore {
  readonly backend = 'sqlite' as const;
  readonly identity: SqliteIdentity;
  private readonly statements = new Map<string, StatementSync>();

  private constructor(
    readonly location: string,
    private readonly db: DatabaseSync,
  ) {
    this.identity = new SqliteIdentity({
      get: (sql, ...args) => this.get(sql, ...args),
      all: (sql, ...args) => this.all(sql, ...args),
      run: (sql, ...args) => this.run(sql, ...args),
      transaction: (fn) => this.transaction(fn),
      toUser,
      audit: (event, now) => this.insertAudit(event, now),
    });
  }

  /**
   * Opens `<dataDir>/control.db`. With `create` (the default; `serve` and `users add`) a missing directory (0700) and
   * database are made; without it, a directory that does not exist or holds no control.db is refused, so a mistyped
   * --data never starts a new, empty Control API. A new database and its -wal/-shm files are 0600 whatever the umask.
   */
  static open(dataDir: string, options: { create?: boolean } = {}): SqliteStore {
    const file = path.join(dataDir, 'control.db');
    if (options.create === false) {
      requireDataDir(dataDir);
    } else {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      createPrivate(file);
    }
    const db = new DatabaseSync(file);
    try {
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA busy_timeout = 5000');
      db.exec('PRAGMA foreign_keys = ON');
      db.exec('PRAGMA synchronous = NORMAL');
      migrateSqlite(db, file);
    } catch (error) {
      db.close();
      throw error;
    }
    // SQLite gives -wal and -shm the database file's mode; make sure anyway (they may predate this release).
    for (const extra of [`${file}-wal`, `${file}-shm`]) tightenIfLoose(extra);
    return new SqliteStore(file, db);
  }

  async close(): Promise<void> {
    if (this.db.isOpen) this.db.close();
  }

  async check(): Promise<void> {
    const version = sqliteSchemaVersion(this.db);
    if (version > SQLITE_MIGRATIONS.length) throw schemaTooNew(this.location, version, SQLITE_MIGRATIONS.length);
    this.db.prepare('SELECT 1').get();
  }

  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.db.prepare(planOnce(sql));
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private get(sql: string, ...args: Value[]): Row | undefined {
    return this.prepare(sql).get(...args) as Row | undefined;
  }

  private all(sql: string, ...args: Value[]): Row[] {
    return this.prepare(sql).all(...args) as Row[];
  }

  /** Rows changed. */
  private run(sql: string, ...args: Value[]): number {
    return Number(this.prepare(sql).run(...args).changes);
  }

  /** Runs `fn` in one IMMEDIATE transaction (the write lock taken before anything is read). */
  private transaction<T>(fn: () => T): T {
    this.prepare('BEGIN IMMEDIATE').run();
    try {
      const result = fn();
      this.prepare('COMMIT').run();
      return result;
    } catch (error) {
      // SQLite has rolled some failures back itself (a full disk, for one): a ROLLBACK then would hide the error.
      if (this.db.isTransaction) this.prepare('ROLLBACK').run();
      throw error;
    }
  }

  async organizationId(): Promise<string> {
    return String(this.get(`SELECT value FROM settings WHERE key = 'organization_id'`)!.value);
  }

  // Users

  async addUser(
    email: string,
    isAdmin: boolean,
    now: number,
    { by, tokenLabel = USERS_ADD_TOKEN_LABEL }: { by?: AuditActor | undefined; tokenLabel?: string } = {},
  ): Promise<{ user: User; token: string }> {
    return this.transaction(() => this.insertUser(email, isAdmin, now, tokenLabel, by));
  }

  /** A user and a personal token (and, with `by`, both in the audit log); inside the caller's transaction. */
  private insertUser(
    email: string,
    isAdmin: boolean,
    now: number,
    tokenLabel: string,
    by: AuditActor | undefined,
  ): { user: User; token: string } {
    const user = this.insertBareUser(email, isAdmin, now, by);
    const { token } = this.identity.insertPersonalToken(
      user.id,
      isAdmin ? API_SCOPES : MEMBER_SCOPES,
      tokenLabel,
      now,
      by,
    );
    return { user, token };
  }

  private insertBareUser(email: string, isAdmin: boolean, now: number, by: AuditActor | undefined): User {
    const user: User = { id: randomUUID(), email, is_admin: isAdmin, created_at: now };
    // token_hash is unread since version 7; it holds no token (see sqlite-migrations.ts).
    this.run(
      'INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES (?, ?, ?, ?, ?)',
      user.id,
      email,
      isAdmin ? 1 : 0,
      `none:${user.id}`,
      now,
    );
    if (by !== undefined) this.insertAudit(userAdded(by, user), now);
    return user;
  }

  async addFirstAdmin(email: string, now: number, by?: AuditActor): Promise<{ user: User; token: string } | undefined> {
    return this.transaction(() =>
      this.get('SELECT 1 FROM users LIMIT 1') === undefined
        ? this.insertUser(email, true, now, FIRST_ADMIN_TOKEN_LABEL, by)
        : undefined,
    );
  }

  async provisionUser(email: string, now: number, by?: AuditActor): Promise<User> {
    return this.transaction(() => {
      const row = this.get('SELECT * FROM users WHERE email = ?', email);
      return row === undefined ? this.insertBareUser(email, false, now, by) : toUser(row);
    });
  }

  async setAdmin(userId: string, isAdmin: boolean, change?: RoleChange): Promise<boolean> {
    return this.transaction(() => {
      const changer =
        change?.by.kind === 'user' ? this.get('SELECT * FROM users WHERE id = ?', change.by.id) : undefined;
      const row = this.get('SELECT * FROM users WHERE id = ?', userId);
      const target = row === undefined ? undefined : toUser(row);
      const plan = planRoleChange(change, changer === undefined ? undefined : toUser(changer), target, isAdmin);
      if (plan !== 'change') return plan === 'unchanged';
      this.run('UPDATE users SET is_admin = ? WHERE id = ?', isAdmin ? 1 : 0, userId);
      if (change !== undefined) this.insertAudit(roleChanged(change, target!, isAdmin), change.now);
      return true;
    });
  }

  async userById(id: string): Promise<User | undefined> {
    const row = this.get('SELECT * FROM users WHERE id = ?', id);
    return row === undefined ? undefined : toUser(row);
  }

  async userByEmail(email: string): Promise<User | undefined> {
    const row = this.get('SELECT * FROM users WHERE email = ?', email);
    return row === undefined ? undefined : toUser(row);
  }

  async listUsers(): Promise<User[]> {
    return this.all('SELECT * FROM users ORDER BY created_at, email').map(toUser);
  }

  async searchUsers(q: string | undefined, excludeId: string | undefined, limit: number): Promise<User[]> {
    return this.all(
      `SELECT * FROM users WHERE (? IS NULL OR id <> ?) AND (? IS NULL OR lower(email) LIKE ? ESCAPE '\\') ORDER ` +
        `BY lower(email), id LIMIT ?`,
      excludeId ?? null,
      excludeId ?? null,
      q ?? null,
      q === undefined ? null : likePattern(q),
      limit,
    ).map(toUser);
  }

  // Policy

  async publishPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision> {
    return this.transaction(() => this.insertPolicy(body, now, options));
  }

  /** A new revision (and, with `by`, its audit entry: what changed since the current one); in the caller's transaction.
   * */
  private insertPolicy(body: Record<string, unknown>, now: number, { text, by }: PublishOptions): PolicyRevision {
    const previous = by === undefined ? undefined : this.currentPolicySync();
    const { published, served } = newRevision(body, now, text);
    this.run(
      'INSERT INTO policy_revisions (revision, body, etag, created_at, published_text) VALUES (?, ?, ?, ?, ?)',
      published.revision,
      served,
      published.etag,
      now,
      published.text,
    );
    if (by !== undefined) this.insertAudit(policyPublished(by, previous, published), now);
    return published;
  }

  async publishFirstPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return this.transaction(() =>
      this.get('SELECT 1 FROM policy_revisions LIMIT 1') === undefined
        ? this.insertPolicy(body, now, options)
        : undefined,
    );
  }

  async publishPolicyOver(
    body: Record<string, unknown>,
    base: string | undefined,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return this.transaction(() => {
      const current = this.get('SELECT revision FROM policy_revisions ORDER BY seq DESC LIMIT 1');
      return (current === undefined ? undefined : String(current.revision)) === base
        ? this.insertPolicy(body, now, options)
        : undefined;
    });
  }

  async publicUrl(): Promise<string | undefined> {
    const row = this.get(`SELECT value FROM settings WHERE key = 'public_url'`);
    return row === undefined ? undefined : String(row.value);
  }

  async setPublicUrl(url: string): Promise<void> {
    this.run(
      `INSERT INTO settings (key, value) VALUES ('public_url', ?) ON CONFLICT (key) DO UPDATE SET value = ` +
        `excluded.value`,
      url,
    );
  }

  async currentPolicy(): Promise<PolicyRevision | undefined> {
    return this.currentPolicySync();
  }

  private currentPolicySync(): PolicyRevision | undefined {
    const row = this.get('SELECT * FROM policy_revisions ORDER BY seq DESC LIMIT 1');
    return row === undefined ? undefined : toPolicyRevision(row);
  }

  async policyRevision(revision: string): Promise<PolicyRevision | undefined> {
    const row = this.get('SELECT * FROM policy_revisions WHERE revision = ?', revision);
    return row === undefined ? undefined : toPolicyRevision(row);
  }

  // Client status

  async recordClientStatus(userId: string, instanceId: string, report: unknown, now: number): Promise<void> {
    this.transaction(() => {
      this.run(
        `INSERT INTO client_status (user_id, instance_id, report, received_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (user_id, instance_id) DO UPDATE SET report = excluded.report, received_at = excluded.received_at`,
        userId,
        instanceId,
        JSON.stringify(report),
        now,
      );
      // The person's other machines beyond the bound, those that reported least recently.
      this.run(
        `DELETE FROM client_status WHERE user_id = ? AND instance_id IN
           (SELECT instance_id FROM client_status WHERE user_id = ? AND instance_id <> ? ORDER BY received_at DESC, instance_id DESC LIMIT -1 OFFSET ?)`,
        userId,
        userId,
        instanceId,
        MAX_MACHINES_PER_USER - 1,
      );
    });
  }

  async clientStatuses(query: ClientStatusQuery): Promise<{ items: ClientStatusRecord[]; total: number }> {
    const userId = query.user_id ?? null;
    const rows = this.all(
      `SELECT c.*, u.email AS user_email FROM client_status c JOIN users u ON u.id = c.user_id
       WHERE (? IS NULL OR c.user_id = ?) ORDER BY u.email, u.id, c.instance_id LIMIT ? OFFSET ?`,
      userId,
      userId,
      query.limit,
      query.offset,
    );
    const total = Number(
      this.get('SELECT COUNT(*) AS n FROM client_status WHERE (? IS NULL OR user_id = ?)', userId, userId)!.n,
    );
    return { items: rows.map(toClientStatus), total };
  }

  // Sessions and artifacts

  async presign(input: NewArtifact, now: number, retentionMs: number): Promise<PresignResult> {
    return this.transaction(() => {
      const result = this.presignArtifact(input, now, retentionMs);
      if (input.tags !== undefined)
        this.run('UPDATE sessions SET tags = ? WHERE id = ?', JSON.stringify(input.tags), result.artifact.session_id);
      return result;
    });
  }

  /** Inside the caller's transaction: the facts planPresign decides on, and what it decides. */
  private presignArtifact(input: NewArtifact, now: number, retentionMs: number): PresignResult {
    const sessionRow = this.get(
      'SELECT id, current_artifact_id FROM sessions WHERE owner_id = ? AND harness = ? AND native_session_id = ?',
      input.owner_id,
      input.harness,
      input.native_session_id,
    );
    const sessionId = sessionRow === undefined ? randomUUID() : String(sessionRow.id);
    const plan = planPresign(
      sessionRow === undefined ? undefined : this.presignFacts(sessionId, sessionRow, input),
      input,
      now,
      retentionMs,
    );
    if (plan.outcome === 'complete') return { artifact: plan.artifact, outcome: 'complete' };
    if (sessionRow === undefined) {
      this.run(
        `INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, 'private', NULL, ?, ?)`,
        sessionId,
        input.owner_id,
        input.harness,
        input.native_session_id,
        now,
        now,
      );
    } else {
      this.run('UPDATE sessions SET updated_at = ? WHERE id = ?', now, sessionId);
    }
    if (plan.outcome === 'created')
      return { artifact: this.insertArtifact(sessionId, plan.revision, input, now, plan.deadline), outcome: 'created' };
    this.run(
      `UPDATE artifacts SET status = 'pending', failure = NULL, content_type = ?, compatibility_profile = ?, artifact_format = ?,
         resumable = ?, cwd = ?, title = ?, summary = ?, captured_at_unix_ms = ?, repository_root = ?,
         repository_remote = ?,
         updated_at = ?, retention_deadline = ? WHERE id = ?`,
      ...describe(input),
      now,
      plan.deadline,
      plan.artifactId,
    );
    return { artifact: this.artifactSync(plan.artifactId)!, outcome: 'reused' };
  }

  private presignFacts(sessionId: string, sessionRow: Row, input: NewArtifact): PresignFacts {
    const same = this.get(
      'SELECT * FROM artifacts WHERE session_id = ? AND sha256 = ? AND size_bytes = ? ORDER BY revision DESC LIMIT 1',
      sessionId,
      input.sha256,
      input.size_bytes,
    );
    const last = this.get('SELECT MAX(revision) AS r FROM artifacts WHERE session_id = ?', sessionId)!;
    return {
      current:
        sessionRow.current_artifact_id === null ? undefined : this.artifactSync(String(sessionRow.current_artifact_id)),
      sameBytes: same === undefined ? undefined : toArtifact(same),
      lastRevision: Number(last.r ?? 0),
    };
  }

  private insertArtifact(
    sessionId: string,
    revision: number,
    input: NewArtifact,
    now: number,
    deadline: number,
  ): Artifact {
    const id = randomUUID();
    this.run(
      `INSERT INTO artifacts (id, session_id, revision, status, size_bytes, sha256, content_type, compatibility_profile,
         artifact_format, resumable, cwd, title, summary, captured_at_unix_ms, repository_root, repository_remote,
         blob_key,
         created_at, updated_at, retention_deadline)
       VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      id,
      sessionId,
      revision,
      input.size_bytes,
      input.sha256,
      ...describe(input),
      `sessions/${id}.tar.gz`,
      now,
      now,
      deadline,
    );
    return this.artifactSync(id)!;
  }

  async artifact(id: string): Promise<{ artifact: Artifact; session: CapturedSession } | undefined> {
    const artifact = this.artifactSync(id);
    if (artifact === undefined) return undefined;
    return { artifact, session: this.sessionSync(artifact.session_id)! };
  }

  async uploadWanted(blobKey: string, now: number): Promise<boolean> {
    return (
      this.get(
        `SELECT 1 FROM artifacts WHERE blob_key = ? AND status IN ('pending', 'complete', 'superseded') AND ` +
          `blob_deleted = 0 AND retention_deadline > ?`,
        blobKey,
        now,
      ) !== undefined
    );
  }

  private artifactSync(id: string): Artifact | undefined {
    const row = this.get('SELECT * FROM artifacts WHERE id = ?', id);
    return row === undefined ? undefined : toArtifact(row);
  }

  async markFailed(artifactId: string, reason: string, now: number): Promise<void> {
    this.run(
      `UPDATE artifacts SET status = 'failed', failure = ?, updated_at = ? WHERE id = ? AND status = 'pending'`,
      reason,
      now,
      artifactId,
    );
  }

  async complete(artifactId: string, now: number, retentionMs: number): Promise<Artifact | undefined> {
    return this.transaction(() => {
      const artifact = this.artifactSync(artifactId);
      if (artifact === undefined) return undefined;
      const current = this.get(
        'SELECT c.revision FROM sessions s JOIN artifacts c ON c.id = s.current_artifact_id WHERE s.id = ?',
        artifact.session_id,
      );
      const plan = planComplete(
        artifact,
        current === undefined ? undefined : Number(current.revision),
        now,
        retentionMs,
      );
      if (plan === undefined) return artifact;
      this.run(
        `UPDATE artifacts SET status = ?, failure = NULL, completed_at = ?, updated_at = ?, retention_deadline = ? ` +
          `WHERE id = ?`,
        plan.status,
        now,
        now,
        plan.deadline,
        artifactId,
      );
      if (plan.current) {
        this.run(
          `UPDATE artifacts SET status = 'superseded', updated_at = ? WHERE session_id = ? AND status = 'complete' ` +
            `AND id <> ?`,
          now,
          artifact.session_id,
          artifactId,
        );
        this.run(
          'UPDATE sessions SET current_artifact_id = ?, updated_at = ? WHERE id = ?',
          artifactId,
          now,
          artifact.session_id,
        );
        // The search entry follows the current artifact, in the same transaction: its title, summary and place at once.
        const previous = plan.readable
          ? this.get(
              'SELECT x.body FROM session_search x JOIN session_search_ids i ON i.rowid = x.rowid WHERE ' +
                'i.session_id = ?',
              artifact.session_id,
            )
          : undefined;
        this.writeSearch(artifact.session_id, artifact, typeof previous?.body === 'string' ? previous.body : '');
        if (plan.readable) {
          this.run(
            `INSERT INTO search_queue (session_id, artifact_id, queued_at, claimed_until) VALUES (?, ?, ?, 0)
             ON CONFLICT (session_id) DO UPDATE SET artifact_id = excluded.artifact_id, queued_at = excluded.queued_at, claimed_until = 0`,
            artifact.session_id,
            artifactId,
            now,
          );
        }
      }
      return this.artifactSync(artifactId)!;
    });
  }

  async claimSearchWork(
    now: number,
    leaseMs: number,
    limit: number,
  ): Promise<{ session_id: string; artifact: Artifact }[]> {
    return this.transaction(() => {
      const rows = this.all(
        `SELECT q.session_id, a.* FROM search_queue q JOIN artifacts a ON a.id = q.artifact_id
         WHERE q.claimed_until <= ? AND a.blob_deleted = 0 AND a.retention_deadline > ? ORDER BY q.queued_at, q.session_id LIMIT ?`,
        now,
        now,
        limit,
      );
      for (const row of rows)
        this.run(
          'UPDATE search_queue SET claimed_until = ? WHERE session_id = ?',
          now + leaseMs,
          String(row.session_id),
        );
      return rows.map((row) => ({ session_id: String(row.session_id), artifact: toArtifact(row) }));
    });
  }

  async searchWorkDone(sessionId: string, artifactId: string): Promise<void> {
    this.run('DELETE FROM search_queue WHERE session_id = ? AND artifact_id = ?', sessionId, artifactId);
  }

  async indexable(afterId: string, limit: number): Promise<{ session_id: string; artifact: Artifact }[]> {
    return this.all(
      'SELECT a.* FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id WHERE s.id > ? ORDER BY s.id ' +
        'LIMIT ?',
      afterId,
      limit,
    ).map((row) => {
      const artifact = toArtifact(row);
      return { session_id: artifact.session_id, artifact };
    });
  }

  async countIndexable(): Promise<number> {
    return Number(this.get('SELECT COUNT(*) AS n FROM sessions WHERE current_artifact_id IS NOT NULL')!.n);
  }

  async setSearchText(sessionId: string, artifactId: string, text: string, now: number): Promise<boolean> {
    return this.transaction(() => this.setSearchTextSync(sessionId, artifactId, text, now));
  }

  async searchIndexed(done: readonly SearchIndexed[], now: number): Promise<void> {
    if (done.length === 0) return;
    // One transaction for the batch: one commit, and one new full-text segment rather than one per session.
    this.transaction(() => {
      for (const d of done) {
        this.setSearchTextSync(d.session_id, d.artifact_id, d.text, now);
        this.run('DELETE FROM search_queue WHERE session_id = ? AND artifact_id = ?', d.session_id, d.artifact_id);
      }
    });
  }

  private setSearchTextSync(sessionId: string, artifactId: string, text: string, now: number): boolean {
    const current = this.get(
      'SELECT a.* FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id WHERE s.id = ? AND a.id = ? AND ' +
        'a.blob_deleted = 0 AND a.retention_deadline > ?',
      sessionId,
      artifactId,
      now,
    );
    if (current === undefined) return false;
    this.writeSearch(sessionId, toArtifact(current), text);
    return true;
  }

  async reindexCursor(): Promise<string | undefined> {
    const row = this.get(`SELECT value FROM settings WHERE key = 'reindex_after'`);
    return row === undefined ? undefined : String(row.value);
  }

  async setReindexCursor(after: string | undefined): Promise<void> {
    if (after === undefined) this.run(`DELETE FROM settings WHERE key = 'reindex_after'`);
    else
      this.run(
        `INSERT INTO settings (key, value) VALUES ('reindex_after', ?) ON CONFLICT (key) DO UPDATE SET value = ` +
          `excluded.value`,
        after,
      );
  }

  /** The session's search entry: its current artifact's title and summary, `text`, and its place; in the caller's
   * transaction. */
  private writeSearch(
    sessionId: string,
    artifact: Pick<Artifact, 'title' | 'summary' | 'cwd' | 'repository_root' | 'repository_remote'>,
    text: string,
  ): void {
    const native = String(
      this.get('SELECT native_session_id FROM sessions WHERE id = ?', sessionId)!.native_session_id,
    );
    this.run('INSERT OR IGNORE INTO session_search_ids (session_id) VALUES (?)', sessionId);
    const rowid = Number(this.get('SELECT rowid FROM session_search_ids WHERE session_id = ?', sessionId)!.rowid);
    this.run('DELETE FROM session_search WHERE rowid = ?', rowid);
    this.run(
      'INSERT INTO session_search (rowid, title, summary, body, place) VALUES (?, ?, ?, ?, ?)',
      rowid,
      artifact.title ?? '',
      artifact.summary ?? '',
      text,
      searchPlace(artifact, native),
    );
  }

  async snippets(
    sessionIds: readonly string[],
    q: string,
    now: number,
    marks: SnippetMarks = BRACKETS,
  ): Promise<Map<string, string>> {
    const match = ftsMatch(q);
    const out = new Map<string, string>();
    if (match === undefined) return out;
    for (const id of sessionIds) {
      const entry = this.get(
        `SELECT i.rowid FROM session_search_ids i JOIN sessions s ON s.id = i.session_id JOIN artifacts a ON a.id = s.current_artifact_id
         WHERE i.session_id = ? AND a.blob_deleted = 0 AND a.retention_deadline > ?`,
        id,
        now,
      );
      if (entry === undefined) continue;
      // Beside MATCH, FTS5 keeps to a rowid only when it is given as an INTEGER: a REAL (what a JS number binds as) or
      // a NULL matches every row, and the snippet would be another session's.
      const row = this.get(
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

  async session(id: string): Promise<CapturedSession | undefined> {
    return this.sessionSync(id);
  }

  private sessionSync(id: string): CapturedSession | undefined {
    const row = this.get(`${SESSION_SELECT} WHERE s.id = ?`, id);
    if (row === undefined) return undefined;
    return this.withCurrent(row);
  }

  private withCurrent(row: Row): CapturedSession {
    const currentId = row.current_artifact_id === null ? undefined : String(row.current_artifact_id);
    return toSession(row, currentId === undefined ? undefined : this.artifactSync(currentId));
  }

  async artifactsOf(sessionId: string): Promise<Artifact[]> {
    return this.all('SELECT * FROM artifacts WHERE session_id = ? ORDER BY revision DESC', sessionId).map(toArtifact);
  }

  async canView(session: CapturedSession, viewer: User): Promise<boolean> {
    const may = mayView(session, viewer);
    return may === 'if-granted'
      ? this.get('SELECT 1 FROM session_grants WHERE session_id = ? AND user_id = ?', session.id, viewer.id) !==
          undefined
      : may;
  }

  async grants(sessionId: string): Promise<string[]> {
    return this.all('SELECT user_id FROM session_grants WHERE session_id = ? ORDER BY user_id', sessionId).map((r) =>
      String(r.user_id),
    );
  }

  async recipients(session: CapturedSession): Promise<User[]> {
    if (session.sharing_mode === 'workspace')
      return this.all('SELECT * FROM users WHERE id <> ? ORDER BY lower(email), id', session.owner_id).map(toUser);
    if (session.sharing_mode === 'selected') {
      return this.all(
        'SELECT u.* FROM session_grants g JOIN users u ON u.id = g.user_id WHERE g.session_id = ? ORDER BY ' +
          'lower(u.email), u.id',
        session.id,
      ).map(toUser);
    }
    return [];
  }

  async setSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Promise<void> {
    // Not a change of content: updated_at, and so the order of listings, stays as it was.
    this.transaction(() => {
      this.run('UPDATE sessions SET sharing_mode = ? WHERE id = ?', mode, sessionId);
      this.run('DELETE FROM session_grants WHERE session_id = ?', sessionId);
      if (mode === 'selected')
        for (const userId of userIds)
          this.run('INSERT OR IGNORE INTO session_grants (session_id, user_id) VALUES (?, ?)', sessionId, userId);
    });
  }

  /** The sessions `query` selects for `viewer`: the joins and conditions every listing and count shares. */
  private filter(
    viewer: User,
    query: Omit<SessionQuery, 'sort' | 'limit'>,
    now: number,
  ): { matches: string; match: string | undefined; where: string[]; args: Value[] } {
    const where = ['s.current_artifact_id IS NOT NULL'];
    const args: Value[] = [];
    if (query.resumable === true || !viewer.is_admin) {
      where.push(VISIBLE);
      args.push(viewer.id, viewer.id);
    }
    if (query.resumable === true) {
      where.push(`a.resumable = 1 AND a.status = 'complete' AND a.blob_deleted = 0 AND a.retention_deadline > ?`);
      args.push(now);
    }
    // q: the words of the full-text index (title, summary, what the session says, its folder and native id); a q
    // without a word (punctuation only) is a piece of an id, folder, title or summary, as before. An expired session
    // holds nothing to find any more.
    if (query.q !== undefined) {
      where.push('a.blob_deleted = 0 AND a.retention_deadline > ?');
      args.push(now);
    }
    const match = query.q === undefined ? undefined : ftsMatch(query.q);
    if (query.q !== undefined && match === undefined) {
      const like = likePattern(query.q);
      where.push(`(lower(s.native_session_id) LIKE ? ESCAPE '\\' OR lower(COALESCE(a.cwd, '')) LIKE ? ESCAPE '\\'
        OR lower(COALESCE(a.title, '')) LIKE ? ESCAPE '\\' OR lower(COALESCE(a.summary, '')) LIKE ? ESCAPE '\\')`);
      args.push(like, like, like, like);
    }
    if (query.id_prefix !== undefined) {
      where.push('substr(s.id, 1, ?) = ?');
      args.push(query.id_prefix.length, query.id_prefix);
    }
    if (query.harness !== undefined) {
      where.push('s.harness = ?');
      args.push(query.harness);
    }
    if (query.harnesses !== undefined) {
      where.push(`s.harness IN (${query.harnesses.map(() => '?').join(', ') || 'NULL'})`);
      args.push(...query.harnesses);
    }
    if (query.tag !== undefined) {
      where.push('EXISTS (SELECT 1 FROM json_each(s.tags) WHERE value = ?)');
      args.push(query.tag);
    }
    if (query.owner_id !== undefined) {
      where.push('s.owner_id = ?');
      args.push(query.owner_id);
    }
    if (query.status !== undefined) {
      where.push('a.status = ?');
      args.push(query.status);
    }
    if (query.updated_from !== undefined) {
      where.push('s.updated_at >= ?');
      args.push(query.updated_from);
    }
    if (query.updated_before !== undefined) {
      where.push('s.updated_at < ?');
      args.push(query.updated_before);
    }
    // The matches of the index, with their rank (bm25: lower is better; title weighs most, then summary).
    const matches =
      match === undefined
        ? ''
        : `JOIN (SELECT i.session_id, bm25(session_search, 10.0, 4.0, 2.0, 1.0) AS rank FROM session_search
             JOIN session_search_ids i ON i.rowid = session_search.rowid WHERE session_search MATCH ?) m ON m.session_id = s.id`;
    if (match !== undefined) args.unshift(match);
    return { matches, match, where, args };
  }

  async countByHarness(
    viewer: User,
    query: Omit<SessionQuery, 'sort' | 'limit'>,
    now: number,
  ): Promise<Record<string, number>> {
    const { matches, where, args } = this.filter(viewer, query, now);
    const cap = query.q === undefined ? '' : ` LIMIT ${MAX_SEARCH_TOTAL}`;
    const rows = this.all(
      `SELECT h, COUNT(*) AS n FROM (SELECT s.harness AS h FROM sessions s JOIN artifacts a ON a.id = ` +
        `s.current_artifact_id ${matches} WHERE ${where.join(' AND ')}${cap}) GROUP BY h ORDER BY h`,
      ...args,
    );
    return Object.fromEntries(rows.map((r) => [String(r.h), Number(r.n)]));
  }

  async listSessions(
    viewer: User,
    query: SessionQuery,
    now: number,
  ): Promise<{ sessions: CapturedSession[]; total?: number }> {
    const { matches, match, where, args } = this.filter(viewer, query, now);
    const filtered =
      `FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id ${matches} WHERE ` + `${where.join(' AND ')}`;
    // A search counts at most MAX_SEARCH_TOTAL matches; with no more than that it is ranked, else newest first.
    const searchCount =
      match !== undefined && (query.count === true || query.sort === 'relevance')
        ? Number(this.get(`SELECT COUNT(*) AS n FROM (SELECT 1 ${filtered} LIMIT ${MAX_SEARCH_TOTAL})`, ...args)!.n)
        : undefined;
    let total: number | undefined;
    if (query.count === true) total = searchCount ?? Number(this.get(`SELECT COUNT(*) AS n ${filtered}`, ...args)!.n);
    const page = [...where];
    const pageArgs = [...args];
    if (query.after_id !== undefined) {
      // An unknown cursor matches nothing, as in Blue's server.
      page.push(
        '(s.updated_at < (SELECT updated_at FROM sessions WHERE id = ?) OR (s.updated_at = (SELECT updated_at FROM ' +
          'sessions WHERE id = ?) AND s.id < ?))',
      );
      pageArgs.push(query.after_id, query.after_id, query.after_id);
    }
    const order =
      query.sort === 'updated_asc'
        ? 's.updated_at ASC, s.id ASC'
        : query.sort === 'relevance' && searchCount !== undefined && searchCount < MAX_SEARCH_TOTAL
          ? 'm.rank, s.updated_at DESC, s.id DESC'
          : 's.updated_at DESC, s.id DESC';
    const rows = this.all(
      `${SESSION_SELECT} JOIN artifacts a ON a.id = s.current_artifact_id ${matches} WHERE ${page.join(' AND ')} ` +
        `ORDER BY ${order} LIMIT ? OFFSET ?`,
      ...pageArgs,
      query.limit,
      query.offset ?? 0,
    );
    return { sessions: rows.map((row) => this.withCurrent(row)), ...(total === undefined ? {} : { total }) };
  }

  async facets(
    viewer: User,
    userQ: string | undefined,
    selectedUserId: string | undefined,
  ): Promise<{ users: User[]; harnesses: string[] }> {
    const visible = viewer.is_admin ? '1 = 1' : VISIBLE;
    const visibleArgs: Value[] = viewer.is_admin ? [] : [viewer.id, viewer.id];
    const users = this.all(
      `SELECT DISTINCT u.* FROM sessions s JOIN users u ON u.id = s.owner_id
       WHERE s.current_artifact_id IS NOT NULL AND ${visible} AND (? IS NULL OR lower(u.email) LIKE ? ESCAPE '\\')
       ORDER BY (u.id = ?) DESC, lower(u.email), u.id LIMIT 10`,
      ...visibleArgs,
      userQ ?? null,
      userQ === undefined ? null : likePattern(userQ),
      selectedUserId ?? '',
    ).map(toUser);
    const harnesses = this.all(
      `SELECT DISTINCT s.harness FROM sessions s WHERE s.current_artifact_id IS NOT NULL AND ${visible} ORDER BY ` +
        `s.harness`,
      ...visibleArgs,
    ).map((r) => String(r.harness));
    return { users, harnesses };
  }

  async expiredArtifacts(now: number, limit: number): Promise<Artifact[]> {
    return this.all(
      'SELECT * FROM artifacts WHERE retention_deadline < ? AND blob_deleted = 0 ORDER BY retention_deadline LIMIT ?',
      now,
      limit,
    ).map(toArtifact);
  }

  async markBlobDeleted(artifactId: string): Promise<void> {
    this.run('UPDATE artifacts SET blob_deleted = 1 WHERE id = ?', artifactId);
  }

  async dropExpiredSearch(now: number): Promise<number> {
    return this.transaction(() => {
      const expired = this.all(
        `SELECT i.rowid, i.session_id FROM session_search_ids i JOIN sessions s ON s.id = i.session_id
         JOIN artifacts a ON a.id = s.current_artifact_id WHERE a.blob_deleted = 1 OR a.retention_deadline <= ?`,
        now,
      );
      for (const row of expired) {
        this.run('DELETE FROM session_search WHERE rowid = ?', Number(row.rowid));
        this.run('DELETE FROM session_search_ids WHERE rowid = ?', Number(row.rowid));
      }
      this.run(
        'DELETE FROM search_queue WHERE EXISTS (SELECT 1 FROM artifacts a WHERE a.id = search_queue.artifact_id ' +
          'AND (a.blob_deleted = 1 OR a.retention_deadline <= ?))',
        now,
      );
      return expired.length;
    });
  }

  async deleteSession(
    sessionId: string,
    audit: NewAuditEvent,
    now: number,
    pendingUntil: number,
  ): Promise<string[] | undefined> {
    return this.transaction(() => {
      if (this.get('SELECT 1 FROM sessions WHERE id = ?', sessionId) === undefined) return undefined;
      const stored = this.all('SELECT blob_key FROM artifacts WHERE session_id = ?', sessionId);
      for (const row of stored) {
        this.run(
          `INSERT INTO blob_deletions (blob_key, not_before, keep_until) VALUES (?, ?, ?)
           ON CONFLICT (blob_key) DO UPDATE SET not_before = MIN(not_before, excluded.not_before), keep_until = MAX(keep_until, excluded.keep_until)`,
          String(row.blob_key),
          now,
          pendingUntil,
        );
      }
      this.run('UPDATE sessions SET current_artifact_id = NULL WHERE id = ?', sessionId);
      this.run('DELETE FROM session_grants WHERE session_id = ?', sessionId);
      this.run(
        'DELETE FROM session_search WHERE rowid = (SELECT rowid FROM session_search_ids WHERE session_id = ?)',
        sessionId,
      );
      this.run('DELETE FROM session_search_ids WHERE session_id = ?', sessionId);
      this.run('DELETE FROM search_queue WHERE session_id = ?', sessionId);
      this.run('DELETE FROM artifacts WHERE session_id = ?', sessionId);
      this.run('DELETE FROM sessions WHERE id = ?', sessionId);
      this.insertAudit(audit, now);
      return stored.map((row) => String(row.blob_key));
    });
  }

  async blobDeletionsDue(now: number, limit: number): Promise<string[]> {
    return this.all(
      'SELECT blob_key FROM blob_deletions WHERE not_before <= ? ORDER BY not_before, blob_key LIMIT ?',
      now,
      limit,
    ).map((r) => String(r.blob_key));
  }

  async blobDeleted(key: string, now: number): Promise<void> {
    this.transaction(() => {
      this.run('DELETE FROM blob_deletions WHERE blob_key = ? AND not_before <= ? AND keep_until <= ?', key, now, now);
      this.run(
        'UPDATE blob_deletions SET not_before = keep_until WHERE blob_key = ? AND not_before <= ? AND keep_until > ?',
        key,
        now,
        now,
      );
    });
  }

  async appendAudit(event: NewAuditEvent, now: number): Promise<void> {
    this.insertAudit(event, now);
  }

  async appendAudits(events: readonly NewAuditEvent[], now: number): Promise<void> {
    this.transaction(() => {
      for (const event of events) this.insertAudit(event, now);
    });
  }

  async auditEvents(query: AuditQuery): Promise<AuditEvent[]> {
    const where = ['seq > ?'];
    const args: Value[] = [query.after ?? 0];
    if (query.action !== undefined) {
      where.push('action = ?');
      args.push(query.action);
    }
    if (query.actor_id !== undefined) {
      where.push('actor_id = ?');
      args.push(query.actor_id);
    }
    if (query.session_id !== undefined) {
      where.push('session_id = ?');
      args.push(query.session_id);
    }
    return this.all(
      `SELECT * FROM audit_events WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`,
      ...args,
      query.limit,
    ).map(auditEventOf);
  }

  private insertAudit(event: NewAuditEvent, now: number): void {
    this.run(
      'INSERT INTO audit_events (at, actor_kind, actor_id, actor_email, action, session_id, owner_id, details) ' +
        'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      now,
      ...auditRow(event),
    );
  }
}

export function toClientStatus(row: Record<string, unknown>): ClientStatusRecord {
  return {
    user_id: String(row.user_id),
    user_email: String(row.user_email),
    instance_id: String(row.instance_id),
    report: JSON.parse(String(row.report)) as unknown,
    received_at: Number(row.received_at),
  };
}

/** The artifact's described columns, in the order presign writes them. */
function describe(input: NewArtifact): Value[] {
  return [
    input.content_type,
    input.compatibility_profile,
    input.artifact_format,
    input.resumable ? 1 : 0,
    input.cwd,
    input.title,
    input.summary,
    input.captured_at_unix_ms,
    input.repository_root,
    input.repository_remote,
  ];
}

/** A case-insensitive literal substring, for LIKE ... ESCAPE '\'. */
export function likePattern(q: string): string {
  return `%${q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Creates `file` empty with mode 0600 (umask-independent) unless it exists. */
function createPrivate(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

function tightenIfLoose(file: string): void {
  try {
    const info = lstatSync(file);
    if (info.isFile() && (info.mode & 0o077) !== 0) chmodSync(file, info.mode & 0o600);
  } catch {
    // Absent (not created yet) or not ours to change: nothing to do.
  }
}

/** An existing Control API data directory: the folder and its control.db must be there. */
export function requireDataDir(dataDir: string): void {
  const hint =
    'Check --data (or BLUE_CONTROL_DATA). `blue-agent control-plane users add EMAIL --admin` or `serve` creates a ' +
    'new data directory.';
  let info;
  try {
    info = statSync(dataDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BlueError(
      'USAGE',
      `the Control API data directory ${dataDir} does not exist` +
        `${code === 'ENOENT' ? '' : ` (${code ?? 'unreadable'})`}`,
      { hint, file: dataDir },
    );
  }
  if (!info.isDirectory())
    throw new BlueError('USAGE', `the Control API data directory ${dataDir} is not a directory`, {
      hint,
      file: dataDir,
    });
  const file = path.join(dataDir, 'control.db');
  if (!existsSync(file)) {
    throw new BlueError('USAGE', `${dataDir} is not a Control API data directory: it holds no control.db`, {
      hint,
      file,
    });
  }
}

function toUser(row: Row): User {
  return {
    id: String(row.id),
    email: String(row.email),
    is_admin: Number(row.is_admin) === 1,
    created_at: Number(row.created_at),
  };
}

const str = (value: unknown): string | null => (value === null || value === undefined ? null : String(value));
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

export function toArtifact(row: Row): Artifact {
  return {
    id: String(row.id),
    session_id: String(row.session_id),
    revision: Number(row.revision),
    status: String(row.status) as ArtifactStatus,
    size_bytes: Number(row.size_bytes),
    sha256: String(row.sha256),
    content_type: String(row.content_type),
    compatibility_profile: String(row.compatibility_profile),
    artifact_format: String(row.artifact_format),
    resumable: Number(row.resumable) === 1 || row.resumable === true,
    cwd: str(row.cwd),
    title: str(row.title),
    summary: str(row.summary),
    captured_at_unix_ms: num(row.captured_at_unix_ms),
    repository_root: str(row.repository_root),
    repository_remote: str(row.repository_remote),
    blob_key: String(row.blob_key),
    failure: str(row.failure),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    completed_at: num(row.completed_at),
    retention_deadline: Number(row.retention_deadline),
    blob_deleted: Number(row.blob_deleted) === 1 || row.blob_deleted === true,
  };
}

export function toSession(row: Row, current: Artifact | undefined): CapturedSession {
  return {
    id: String(row.id),
    owner_id: String(row.owner_id),
    owner_email: String(row.owner_email),
    harness: String(row.harness),
    native_session_id: String(row.native_session_id),
    sharing_mode: String(row.sharing_mode) as SharingMode,
    current_artifact_id: str(row.current_artifact_id),
    created_at: Number(row.created_at),
    updated_at: Number(row.updated_at),
    share_recipient_count: Number(row.share_recipient_count),
    tags: tagsOf(row.tags),
    current,
  };
}

/** The tags column (a JSON array of strings; absent before the column existed). */
function tagsOf(value: unknown): string[] {
  if (typeof value !== 'string') return [];
  try {
    const tags = JSON.parse(value) as unknown;
    return Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [];
  } catch {
    return [];
  }
}

/** FTS5's query for `q`: every word, quoted (no operator of the user's reaches the parser), the last one as a prefix.
 * */
function ftsMatch(q: string): string | undefined {
  const words = searchWords(q);
  if (words.length === 0) return undefined;
  return words.map((w, i) => `"${w}"${i === words.length - 1 ? '*' : ''}`).join(' ');
}

/**
 * `sql` with each bound value written `+?` (outside quoted text): the same value to SQLite (a unary plus changes
 * neither it, its affinity nor its collation), but one its planner leaves alone. SQLite 3.54 lets the value of a bare
 * `?` steer the plan of many statements (a join, an ORDER BY: 25 of this store's) and compiles such a statement again
 * whenever that binding changes, which node:sqlite does on every call: a parse and a plan each time (the token lookup
 * behind every request took several times as long). No plan here depends on a value. SQL here has no comments and no
 * quoted identifiers, so single quotes are the only quoting to skip.
 */
export function planOnce(sql: string): string {
  let out = '';
  let quoted = false;
  for (const char of sql) {
    if (char === "'") quoted = !quoted;
    out += char === '?' && !quoted ? '+?' : char;
  }
  return out;
}
