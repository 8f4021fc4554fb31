/**
 * The shared database: PostgreSQL (`--database-url`), for any number of stateless replicas of the Control API. It
 * mirrors the embedded backend (sqlite.ts) statement by statement, and an upload's presign and complete decide by the
 * same rules (uploads.ts); what SQLite gets from its single writer, this gets from row and advisory locks:
 * - presign and complete lock the captured session's row (SELECT ... FOR UPDATE) before reading it, so concurrent
 *   calls for one session, from any replica, run one after the other: one session, one artifact per revision, one
 *   current artifact;
 * - the first administrator and the first policy are made under an advisory transaction lock that ordinary additions
 *   take shared, so "only when there is none" holds across replicas;
 * - transactions run at READ COMMITTED (each statement sees what committed before it, the locks order the rest) and
 *   are retried once on a deadlock or serialization failure.
 * A bounded pool per process; bigint columns (times, sizes) are read as numbers by this pool only. The URL's password
 * never appears in `location`, a message or a hint. Bearer tokens are never stored: only their SHA-256.
 */
import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import { BlueError } from '@blue-agent/contract/errors.js';
import { LOCK_NAMESPACE, LOCKS, searchDocument, migratePostgres, POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import { schemaTooNew } from './sqlite-migrations.js';
import { likePattern, toArtifact, toClientStatus, toSession } from './sqlite.js';
import { auditEventOf, auditRow, policyPublished, roleChanged, tokenCreated, userAdded } from './audit.js';
import { insertPersonalToken, PostgresIdentity } from './postgres-identity.js';
import { newRevision, toPolicyRevision } from './revisions.js';
import { planRoleChange } from './roles.js';
import { mayView } from './sharing.js';
import { firstPresign, planComplete, planPresign, type PresignFacts } from './uploads.js';
import {
  API_SCOPES,
  BRACKETS,
  FIRST_ADMIN_TOKEN_LABEL,
  USERS_ADD_TOKEN_LABEL,
  MAX_MACHINES_PER_USER,
  MAX_SEARCH_TOTAL,
  MEMBER_SCOPES,
  searchWords,
} from './types.js';
import type {
  Artifact,
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

type Row = Record<string, unknown>;
type Value = string | number | boolean | null | readonly string[];

const POOL_MAX = 20;
const CONNECT_TIMEOUT_MS = 10_000;
const IDLE_TIMEOUT_MS = 30_000;
const APPLICATION_NAME = 'blue-control';
/** serialization_failure, deadlock_detected: the transaction may simply be run again. */
const RETRYABLE = new Set(['40001', '40P01']);
/**
 * feature_not_supported, as "cached plan must not change result type": a statement this connection prepared no longer
 * fits a table a newer release migrated. The connection is dropped (its prepared statements with it) and the work run
 * once more on another.
 */
const STALE_STATEMENT = '0A000';

/** int8 (bigint, COUNT(*)) as a number rather than pg's default string; every such value here is a safe integer. */
const INT8_OID = 20;
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value))
    throw new Error(`a bigint column holds ${text}, beyond what a number represents exactly`);
  return value;
}
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** The artifact columns, read alongside a session as `a_<column>` (its current artifact, one query for both). */
const ARTIFACT_COLUMNS = [
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

const SESSION_SELECT = `SELECT s.*, us.email AS owner_email,
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
const visible = (viewer: string): string => `(s.owner_id = ${viewer} OR s.sharing_mode = 'workspace' OR EXISTS
  (SELECT 1 FROM session_grants g WHERE g.session_id = s.id AND g.user_id = ${viewer}))`;

/**
 * Rows of parameterised statements, on a pooled connection or in a transaction. Every statement is a named prepared
 * one (its name from its text): each connection parses and plans it once, which halves the database's work per
 * upload.
 */
class Db {
  constructor(private readonly target: pg.Pool | pg.PoolClient) {}

  async all(sql: string, ...args: Value[]): Promise<Row[]> {
    return (await this.query(sql, args)).rows;
  }

  async get(sql: string, ...args: Value[]): Promise<Row | undefined> {
    return (await this.all(sql, ...args))[0];
  }

  async run(sql: string, ...args: Value[]): Promise<number> {
    return (await this.query(sql, args)).rowCount ?? 0;
  }

  private async query(sql: string, values: Value[]): Promise<pg.QueryResult<Row>> {
    const statement = { name: statementName(sql), text: sql, values };
    if (!(this.target instanceof pg.Pool)) return this.target.query<Row>(statement);
    for (let attempt = 1; ; attempt++) {
      const client = await this.target.connect();
      // The pool listens for errors of idle connections only: a connection cut while this statement runs fails the
      // statement, and must not end the process.
      client.on('error', ignore);
      let discard: Error | undefined;
      try {
        return await client.query<Row>(statement);
      } catch (error) {
        // A statement that failed on a broken or stale connection: the connection goes, not back to the pool.
        if (sqlState(error) === STALE_STATEMENT || !(error instanceof pg.DatabaseError))
          discard = error instanceof Error ? error : new Error(String(error));
        if (attempt === 1 && sqlState(error) === STALE_STATEMENT) continue;
        throw error;
      } finally {
        client.off('error', ignore);
        client.release(discard);
      }
    }
  }
}

/** Statement names by text: a hash, so the same text has the same name in every process. */
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `blue_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
    statementNames.set(sql, name);
  }
  return name;
}

/** Numbered placeholders for a statement built from optional parts: `add(v)` is `$n` for the n-th value. */
class Params {
  readonly values: Value[] = [];

  add(value: Value): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

export class PostgresStore implements ControlStore {
  readonly backend = 'postgres' as const;
  readonly identity: PostgresIdentity;
  private readonly db: Db;
  private closing: Promise<void> | undefined;
  private organization: string | undefined;

  private constructor(
    readonly location: string,
    private readonly pool: pg.Pool,
  ) {
    this.db = new Db(pool);
    this.identity = new PostgresIdentity({
      db: this.db,
      transaction: (fn) => this.transaction(fn),
      toUser,
      storable,
      audit: (db, event, now) => insertAudit(db, event, now),
    });
  }

  /** Connects (a bounded pool), brings the schema up to date, and refuses a database of a newer release. */
  static async open(url: string): Promise<PostgresStore> {
    const secrets = secretsOf(url);
    const location = withoutPassword(url);
    const pool = new pg.Pool({
      connectionString: url,
      max: POOL_MAX,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      idleTimeoutMillis: IDLE_TIMEOUT_MS,
      application_name: APPLICATION_NAME,
      keepAlive: true,
      types: TYPES,
    });
    // An idle connection the server closes (a restart, an administrator) is dropped by the pool; the next query
    // opens another. Without a listener the error would end the process.
    pool.on('error', ignore);
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw connectError(error, location, secrets);
    }
    client.on('error', ignore);
    try {
      await migratePostgres(client, location);
      client.off('error', ignore);
      client.release();
    } catch (error) {
      // The connection may be broken or hold a lock: discard it rather than return it to the pool.
      client.off('error', ignore);
      client.release(error instanceof Error ? error : true);
      await pool.end().catch(() => undefined);
      throw error instanceof BlueError ? error : connectError(error, location, secrets);
    }
    return new PostgresStore(location, pool);
  }

  async close(): Promise<void> {
    this.closing ??= this.pool.end();
    await this.closing;
  }

  poolStats(): { total: number; idle: number; waiting: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  async check(): Promise<void> {
    // SELECT 1 and the schema's version in one round trip.
    const row = await this.db.get('SELECT 1 AS ok, (SELECT MAX(version) FROM schema_version) AS v');
    const version = Number(row?.v ?? 0);
    if (version > POSTGRES_MIGRATIONS.length) throw schemaTooNew(this.location, version, POSTGRES_MIGRATIONS.length);
  }

  /**
   * Runs `fn` in one transaction on one pooled connection: committed, or rolled back on any error; run once more after
   * a deadlock or serialization failure. The connection always goes back (discarded when it broke).
   */
  private async transaction<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      let broken: Error | undefined;
      // The pool listens for errors of idle connections only: a connection cut between two statements of this
      // transaction fails the next statement, and must not end the process.
      client.on('error', ignore);
      try {
        await client.query('BEGIN');
        const result = await fn(new Db(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: unknown) => {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        });
        if (sqlState(error) === STALE_STATEMENT) broken = error as Error;
        if (attempt === 1 && (RETRYABLE.has(sqlState(error) ?? '') || sqlState(error) === STALE_STATEMENT)) continue;
        throw error;
      } finally {
        client.off('error', ignore);
        client.release(broken);
      }
    }
  }

  async organizationId(): Promise<string> {
    // Made once by the first migration; it never changes.
    this.organization ??= String(
      (await this.db.get(`SELECT value FROM settings WHERE key = 'organization_id'`))!.value,
    );
    return this.organization;
  }

  // Users

  async addUser(
    email: string,
    isAdmin: boolean,
    now: number,
    { by, tokenLabel = USERS_ADD_TOKEN_LABEL }: { by?: AuditActor | undefined; tokenLabel?: string } = {},
  ): Promise<{ user: User; token: string }> {
    return this.transaction(async (db) => {
      // Shared: any number of additions at once, but never while a first start is deciding whether there are users.
      await db.run('SELECT pg_advisory_xact_lock_shared($1, $2)', LOCK_NAMESPACE, LOCKS.users);
      return insertUser(db, email, isAdmin, now, tokenLabel, by);
    });
  }

  async addFirstAdmin(email: string, now: number, by?: AuditActor): Promise<{ user: User; token: string } | undefined> {
    return this.transaction(async (db) => {
      await db.run('SELECT pg_advisory_xact_lock($1, $2)', LOCK_NAMESPACE, LOCKS.users);
      return (await db.get('SELECT 1 FROM users LIMIT 1')) === undefined
        ? insertUser(db, email, true, now, FIRST_ADMIN_TOKEN_LABEL, by)
        : undefined;
    });
  }

  async provisionUser(email: string, now: number, by?: AuditActor): Promise<User> {
    return this.transaction(async (db) => {
      await db.run('SELECT pg_advisory_xact_lock_shared($1, $2)', LOCK_NAMESPACE, LOCKS.users);
      // Two first sign-ins at once: one inserts, the other finds it.
      const user: User = { id: randomUUID(), email, is_admin: false, created_at: now };
      const made = await db.run(
        'INSERT INTO users (id, email, is_admin, created_at) VALUES ($1, $2, false, $3) ON CONFLICT ' +
          '((lower(email))) DO NOTHING',
        user.id,
        email,
        now,
      );
      if (made > 0 && by !== undefined) await insertAudit(db, userAdded(by, user), now);
      return toUser((await db.get('SELECT * FROM users WHERE lower(email) = lower($1)', email))!);
    });
  }

  async setAdmin(userId: string, isAdmin: boolean, change?: RoleChange): Promise<boolean> {
    const by = change?.by.kind === 'user' ? change.by.id : undefined;
    if (!storable(userId) || (by !== undefined && !storable(by))) return false;
    return this.transaction(async (db) => {
      // Both people's rows locked, in one order: two administrators who change each other's role at once, on any
      // replicas, run one after the other, and the second is no longer an administrator.
      const rows = (
        await db.all('SELECT * FROM users WHERE id IN ($1, $2) ORDER BY id FOR UPDATE', userId, by ?? userId)
      ).map(toUser);
      const target = rows.find((u) => u.id === userId);
      const plan = planRoleChange(
        change,
        rows.find((u) => u.id === by),
        target,
        isAdmin,
      );
      if (plan !== 'change') return plan === 'unchanged';
      await db.run('UPDATE users SET is_admin = $1 WHERE id = $2', isAdmin, userId);
      if (change !== undefined) await insertAudit(db, roleChanged(change, target!, isAdmin), change.now);
      return true;
    });
  }

  async userById(id: string): Promise<User | undefined> {
    if (!storable(id)) return undefined;
    const row = await this.db.get('SELECT * FROM users WHERE id = $1', id);
    return row === undefined ? undefined : toUser(row);
  }

  async userByEmail(email: string): Promise<User | undefined> {
    if (!storable(email)) return undefined;
    // Case-insensitive, as SQLite's NOCASE column; lower(email) is the unique index.
    const row = await this.db.get('SELECT * FROM users WHERE lower(email) = lower($1)', email);
    return row === undefined ? undefined : toUser(row);
  }

  async listUsers(): Promise<User[]> {
    return (await this.db.all('SELECT * FROM users ORDER BY created_at, lower(email)')).map(toUser);
  }

  async searchUsers(q: string | undefined, excludeId: string | undefined, limit: number): Promise<User[]> {
    if (q !== undefined && !storable(q)) return [];
    const rows = await this.db.all(
      `SELECT * FROM users WHERE ($1::text IS NULL OR id <> $1) AND ($2::text IS NULL OR lower(email) LIKE $2 ESCAPE '\\')
       ORDER BY lower(email), id LIMIT $3`,
      excludeId ?? null,
      q === undefined ? null : likePattern(q),
      limit,
    );
    return rows.map(toUser);
  }

  // Policy

  async publishPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision> {
    return this.transaction(async (db) => {
      // Exclusive once its audit entry names the revision it follows: publishes run one after the other.
      await db.run(
        options.by === undefined
          ? 'SELECT pg_advisory_xact_lock_shared($1, $2)'
          : 'SELECT pg_advisory_xact_lock($1, $2)',
        LOCK_NAMESPACE,
        LOCKS.policy,
      );
      return insertPolicy(db, body, now, options);
    });
  }

  async publishFirstPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return this.transaction(async (db) => {
      await db.run('SELECT pg_advisory_xact_lock($1, $2)', LOCK_NAMESPACE, LOCKS.policy);
      return (await db.get('SELECT 1 FROM policy_revisions LIMIT 1')) === undefined
        ? insertPolicy(db, body, now, options)
        : undefined;
    });
  }

  async publishPolicyOver(
    body: Record<string, unknown>,
    base: string | undefined,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return this.transaction(async (db) => {
      // Exclusive: every other publish waits, so the revision read here is still the current one when this one is
      // added.
      await db.run('SELECT pg_advisory_xact_lock($1, $2)', LOCK_NAMESPACE, LOCKS.policy);
      const current = await db.get('SELECT revision FROM policy_revisions ORDER BY seq DESC LIMIT 1');
      return (current === undefined ? undefined : String(current.revision)) === base
        ? insertPolicy(db, body, now, options)
        : undefined;
    });
  }

  async publicUrl(): Promise<string | undefined> {
    const row = await this.db.get(`SELECT value FROM settings WHERE key = 'public_url'`);
    return row === undefined ? undefined : String(row.value);
  }

  async setPublicUrl(url: string): Promise<void> {
    await this.db.run(
      `INSERT INTO settings (key, value) VALUES ('public_url', $1) ON CONFLICT (key) DO UPDATE SET value = ` +
        `excluded.value`,
      url,
    );
  }

  async currentPolicy(): Promise<PolicyRevision | undefined> {
    return currentPolicyIn(this.db);
  }

  async policyRevision(revision: string): Promise<PolicyRevision | undefined> {
    if (!storable(revision)) return undefined;
    const row = await this.db.get('SELECT * FROM policy_revisions WHERE revision = $1', revision);
    return row === undefined ? undefined : toPolicyRevision(row);
  }

  // Client status

  async recordClientStatus(userId: string, instanceId: string, report: unknown, now: number): Promise<void> {
    await this.transaction(async (db) => {
      // One person's reports one after the other (the person's row locked, from any replica): concurrent reports of
      // new machines never leave more than the bound.
      await db.get('SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE', userId);
      await db.run(
        `INSERT INTO client_status (user_id, instance_id, report, received_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (user_id, instance_id) DO UPDATE SET report = excluded.report, received_at = excluded.received_at`,
        userId,
        instanceId,
        JSON.stringify(report),
        now,
      );
      // The person's other machines beyond the bound, those that reported least recently.
      await db.run(
        `DELETE FROM client_status WHERE user_id = $1 AND instance_id IN
           (SELECT instance_id FROM client_status WHERE user_id = $1 AND instance_id <> $2 ORDER BY received_at DESC, instance_id COLLATE "C" DESC OFFSET $3)`,
        userId,
        instanceId,
        MAX_MACHINES_PER_USER - 1,
      );
    });
  }

  async clientStatuses(query: ClientStatusQuery): Promise<{ items: ClientStatusRecord[]; total: number }> {
    if (query.user_id !== undefined && !storable(query.user_id)) return { items: [], total: 0 };
    const userId = query.user_id ?? null;
    const [rows, count] = await Promise.all([
      this.db.all(
        `SELECT c.*, u.email AS user_email FROM client_status c JOIN users u ON u.id = c.user_id
         WHERE ($1::text IS NULL OR c.user_id = $1) ORDER BY lower(u.email), u.id, c.instance_id COLLATE "C" LIMIT $2 OFFSET $3`,
        userId,
        query.limit,
        query.offset,
      ),
      this.db.get('SELECT COUNT(*) AS n FROM client_status WHERE ($1::text IS NULL OR user_id = $1)', userId),
    ]);
    return { items: rows.map(toClientStatus), total: Number(count!.n) };
  }

  // Sessions and artifacts

  async presign(input: NewArtifact, now: number, retentionMs: number): Promise<PresignResult> {
    // The common case, a session seen for the first time: the session (with its tags) and its first artifact in one
    // statement (one round trip, its own transaction). When the session exists already, the statement inserts nothing
    // and the general path below runs.
    const first = firstPresign(now, retentionMs);
    const id = randomUUID();
    const made = await this.db.get(
      `WITH made AS (
         INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at,
         updated_at, tags)
         VALUES ($1, $2, $3, $4, 'private', NULL, $5, $5, COALESCE($22::text, '[]')) ON CONFLICT (owner_id, harness,
         native_session_id) DO NOTHING RETURNING id
       )
       INSERT INTO artifacts (id, session_id, revision, status, size_bytes, sha256, content_type, compatibility_profile,
         artifact_format, resumable, cwd, title, summary, captured_at_unix_ms, repository_root, repository_remote,
         blob_key,
         created_at, updated_at, retention_deadline)
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
      ...describe(input),
      `sessions/${id}.tar.gz`,
      first.deadline,
      first.revision,
      tagsOf(input),
    );
    if (made !== undefined) return { artifact: toArtifact(made), outcome: 'created' };
    return this.transaction((db) => presignIn(db, input, now, retentionMs));
  }

  async artifact(id: string): Promise<{ artifact: Artifact; session: CapturedSession } | undefined> {
    if (!storable(id)) return undefined;
    // One statement: the artifact (its columns as t_…) joined to its session as SESSION_SELECT reads it.
    const row = await this.db.get(ARTIFACT_WITH_SESSION, id);
    if (row === undefined) return undefined;
    const artifact: Row = {};
    for (const column of ARTIFACT_COLUMNS) artifact[column] = row[`t_${column}`];
    return { artifact: toArtifact(artifact), session: sessionOf(row) };
  }

  async uploadWanted(blobKey: string, now: number): Promise<boolean> {
    return (
      (await this.db.get(
        `SELECT 1 FROM artifacts WHERE blob_key = $1 AND status IN ('pending', 'complete', 'superseded') AND NOT ` +
          `blob_deleted AND retention_deadline > $2`,
        blobKey,
        now,
      )) !== undefined
    );
  }

  async markFailed(artifactId: string, reason: string, now: number): Promise<void> {
    await this.db.run(
      `UPDATE artifacts SET status = 'failed', failure = $1, updated_at = $2 WHERE id = $3 AND status = 'pending'`,
      reason,
      now,
      artifactId,
    );
  }

  async complete(artifactId: string, now: number, retentionMs: number): Promise<Artifact | undefined> {
    return this.transaction(async (db) => {
      // The artifact, read with its session locked: completes (and presigns) of one session run one after the other.
      const row = await db.get(
        'SELECT a.* FROM artifacts a JOIN sessions s ON s.id = a.session_id WHERE a.id = $1 FOR UPDATE OF s',
        artifactId,
      );
      if (row === undefined) return undefined;
      const artifact = toArtifact(row);
      // Read after the lock (a statement of its own, so with a snapshot taken after it): what an earlier complete of
      // this session wrote is seen.
      const current = await db.get(
        'SELECT c.revision FROM sessions s JOIN artifacts c ON c.id = s.current_artifact_id WHERE s.id = $1',
        artifact.session_id,
      );
      const plan = planComplete(
        artifact,
        current === undefined ? undefined : Number(current.revision),
        now,
        retentionMs,
      );
      if (plan === undefined) return artifact;
      // One statement writes what the plan says (its parts see the same snapshot, taken under the session's lock).
      const done = (await db.get(
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
        artifactId,
        plan.current,
        plan.readable,
      ))!;
      return toArtifact(done);
    });
  }

  async claimSearchWork(
    now: number,
    leaseMs: number,
    limit: number,
  ): Promise<{ session_id: string; artifact: Artifact }[]> {
    // SKIP LOCKED: replicas claiming at the same time take different sessions.
    const rows = await this.db.all(
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

  async searchWorkDone(sessionId: string, artifactId: string): Promise<void> {
    await this.db.run('DELETE FROM search_queue WHERE session_id = $1 AND artifact_id = $2', sessionId, artifactId);
  }

  async indexable(afterId: string, limit: number): Promise<{ session_id: string; artifact: Artifact }[]> {
    const rows = await this.db.all(
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

  async countIndexable(): Promise<number> {
    return Number((await this.db.get('SELECT COUNT(*) AS n FROM sessions WHERE current_artifact_id IS NOT NULL'))!.n);
  }

  async setSearchText(sessionId: string, artifactId: string, text: string, now: number): Promise<boolean> {
    return writeSearchText(this.db, sessionId, artifactId, text, now);
  }

  async searchIndexed(done: readonly SearchIndexed[], now: number): Promise<void> {
    if (done.length === 0) return;
    await this.transaction(async (db) => {
      for (const d of done) {
        await writeSearchText(db, d.session_id, d.artifact_id, d.text, now);
        await db.run(
          'DELETE FROM search_queue WHERE session_id = $1 AND artifact_id = $2',
          d.session_id,
          d.artifact_id,
        );
      }
    });
  }

  async reindexCursor(): Promise<string | undefined> {
    const row = await this.db.get(`SELECT value FROM settings WHERE key = 'reindex_after'`);
    return row === undefined ? undefined : String(row.value);
  }

  async setReindexCursor(after: string | undefined): Promise<void> {
    if (after === undefined) await this.db.run(`DELETE FROM settings WHERE key = 'reindex_after'`);
    else
      await this.db.run(
        `INSERT INTO settings (key, value) VALUES ('reindex_after', $1) ON CONFLICT (key) DO UPDATE SET value = ` +
          `excluded.value`,
        after,
      );
  }

  async snippets(
    sessionIds: readonly string[],
    q: string,
    now: number,
    marks: SnippetMarks = BRACKETS,
  ): Promise<Map<string, string>> {
    const query = tsQuery(q);
    const out = new Map<string, string>();
    if (query === undefined || sessionIds.length === 0) return out;
    // Only the page's sessions: ts_headline reads the whole text.
    const rows = await this.db.all(
      `SELECT x.session_id, ts_headline('simple', COALESCE(NULLIF(x.body, ''), a.title, ''), to_tsquery('simple', $1), $4) AS snippet
       FROM session_search x JOIN sessions s ON s.id = x.session_id JOIN artifacts a ON a.id = s.current_artifact_id
       WHERE x.session_id = ANY($2::text[]) AND x.document @@ to_tsquery('simple', $1) AND NOT a.blob_deleted AND a.retention_deadline > $3`,
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

  async session(id: string): Promise<CapturedSession | undefined> {
    return sessionIn(this.db, id);
  }

  async artifactsOf(sessionId: string): Promise<Artifact[]> {
    return (await this.db.all('SELECT * FROM artifacts WHERE session_id = $1 ORDER BY revision DESC', sessionId)).map(
      toArtifact,
    );
  }

  async canView(session: CapturedSession, viewer: User): Promise<boolean> {
    const may = mayView(session, viewer);
    return may === 'if-granted'
      ? (await this.db.get(
          'SELECT 1 FROM session_grants WHERE session_id = $1 AND user_id = $2',
          session.id,
          viewer.id,
        )) !== undefined
      : may;
  }

  async grants(sessionId: string): Promise<string[]> {
    return (
      await this.db.all('SELECT user_id FROM session_grants WHERE session_id = $1 ORDER BY user_id', sessionId)
    ).map((r) => String(r.user_id));
  }

  async recipients(session: CapturedSession): Promise<User[]> {
    if (session.sharing_mode === 'workspace')
      return (await this.db.all('SELECT * FROM users WHERE id <> $1 ORDER BY lower(email), id', session.owner_id)).map(
        toUser,
      );
    if (session.sharing_mode === 'selected') {
      return (
        await this.db.all(
          'SELECT u.* FROM session_grants g JOIN users u ON u.id = g.user_id WHERE g.session_id = $1 ORDER BY ' +
            'lower(u.email), u.id',
          session.id,
        )
      ).map(toUser);
    }
    return [];
  }

  async setSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Promise<void> {
    // Not a change of content: updated_at, and so the order of listings, stays as it was.
    await this.transaction(async (db) => {
      await db.run('UPDATE sessions SET sharing_mode = $1 WHERE id = $2', mode, sessionId);
      await db.run('DELETE FROM session_grants WHERE session_id = $1', sessionId);
      if (mode === 'selected' && userIds.length > 0) {
        await db.run(
          'INSERT INTO session_grants (session_id, user_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING',
          sessionId,
          userIds,
        );
      }
    });
  }

  /** The sessions `query` selects for `viewer`: the joins and conditions every listing and count shares (in `p`). */
  private filter(
    p: Params,
    viewer: User,
    query: Omit<SessionQuery, 'sort' | 'limit'>,
    now: number,
  ): { matches: string; matched: string | undefined; tsquery: string | undefined; where: string[] } {
    const where = ['s.current_artifact_id IS NOT NULL'];
    if (query.resumable === true || !viewer.is_admin) where.push(visible(p.add(viewer.id)));
    if (query.resumable === true)
      where.push(
        `a.resumable AND a.status = 'complete' AND NOT a.blob_deleted AND a.retention_deadline > ${p.add(now)}`,
      );
    // q: the words of the full-text index (title, summary, what the session says, its folder and native id), through
    // its GIN index; a q without a word (punctuation only) is a piece of an id, folder, title or summary, as before. An
    // expired session holds nothing to find any more.
    if (query.q !== undefined) where.push(`NOT a.blob_deleted AND a.retention_deadline > ${p.add(now)}`);
    const tsquery = query.q === undefined ? undefined : tsQuery(query.q);
    const matched = tsquery === undefined ? undefined : p.add(tsquery);
    const matches =
      matched === undefined
        ? ''
        : `JOIN (SELECT x.session_id, x.document FROM session_search x WHERE x.document @@ to_tsquery('simple', ` +
          `${matched})) m ON m.session_id = s.id`;
    if (query.q !== undefined && matched === undefined) {
      const like = p.add(likePattern(query.q));
      where.push(`(lower(s.native_session_id) LIKE ${like} ESCAPE '\\' OR lower(COALESCE(a.cwd, '')) LIKE ${like} ESCAPE '\\'
        OR lower(COALESCE(a.title, '')) LIKE ${like} ESCAPE '\\' OR lower(COALESCE(a.summary, '')) LIKE ${like} ESCAPE '\\')`);
    }
    if (query.id_prefix !== undefined)
      where.push(`substr(s.id, 1, ${p.add(query.id_prefix.length)}::integer) = ${p.add(query.id_prefix)}`);
    if (query.harness !== undefined) where.push(`s.harness = ${p.add(query.harness)}`);
    if (query.harnesses !== undefined) where.push(`s.harness = ANY(${p.add([...query.harnesses])}::text[])`);
    if (query.tag !== undefined) where.push(`s.tags::jsonb ? ${p.add(query.tag)}`);
    if (query.owner_id !== undefined) where.push(`s.owner_id = ${p.add(query.owner_id)}`);
    if (query.status !== undefined) where.push(`a.status = ${p.add(query.status)}`);
    if (query.updated_from !== undefined) where.push(`s.updated_at >= ${p.add(query.updated_from)}`);
    if (query.updated_before !== undefined) where.push(`s.updated_at < ${p.add(query.updated_before)}`);
    return { matches, matched, tsquery, where };
  }

  /** Whether any text of `query` cannot be held by PostgreSQL (a NUL): it matches nothing. */
  private unmatchable(query: Omit<SessionQuery, 'sort' | 'limit'>): boolean {
    return [query.q, query.harness, query.owner_id, query.id_prefix, query.after_id].some(
      (text) => text !== undefined && !storable(text),
    );
  }

  async countByHarness(
    viewer: User,
    query: Omit<SessionQuery, 'sort' | 'limit'>,
    now: number,
  ): Promise<Record<string, number>> {
    if (this.unmatchable(query)) return {};
    const p = new Params();
    const { matches, where } = this.filter(p, viewer, query, now);
    const cap = query.q === undefined ? '' : ` LIMIT ${MAX_SEARCH_TOTAL}`;
    const rows = await this.db.all(
      `SELECT h, COUNT(*) AS n FROM (SELECT s.harness AS h FROM sessions s JOIN artifacts a ON a.id = ` +
        `s.current_artifact_id ${matches} WHERE ${where.join(' AND ')}${cap}) c GROUP BY h ORDER BY h`,
      ...p.values,
    );
    return Object.fromEntries(rows.map((r) => [String(r.h), Number(r.n)]));
  }

  async listSessions(
    viewer: User,
    query: SessionQuery,
    now: number,
  ): Promise<{ sessions: CapturedSession[]; total?: number }> {
    if (this.unmatchable(query)) return { sessions: [], ...(query.count === true ? { total: 0 } : {}) };
    const p = new Params();
    const { matches, matched, tsquery, where } = this.filter(p, viewer, query, now);
    const filterArgs = [...p.values];
    const page = [...where];
    if (query.after_id !== undefined) {
      // An unknown cursor matches nothing, as in Blue's server.
      const after = p.add(query.after_id);
      page.push(
        `(s.updated_at < (SELECT updated_at FROM sessions WHERE id = ${after}) OR (s.updated_at = (SELECT ` +
          `updated_at FROM sessions WHERE id = ${after}) AND s.id < ${after}))`,
      );
    }
    // A search counts at most MAX_SEARCH_TOTAL matches; with no more than that it is ranked (title A, summary B, text
    // C, place D), else newest first.
    // Whether to rank is told by the index alone (its matches, whoever may see them), so that the page and the count
    // can then run at once.
    const candidates =
      matched !== undefined && query.sort === 'relevance'
        ? Number(
            (await this.db.get(
              `SELECT COUNT(*) AS n FROM (SELECT 1 FROM session_search WHERE document @@ to_tsquery('simple', $1) ` +
                `LIMIT ${MAX_SEARCH_TOTAL}) c`,
              tsquery!,
            ))!.n,
          )
        : undefined;
    const ranked = candidates !== undefined && candidates < MAX_SEARCH_TOTAL;
    const cap = matched === undefined ? '' : ` LIMIT ${MAX_SEARCH_TOTAL}`;
    const countSql =
      `SELECT COUNT(*) AS n FROM (SELECT 1 FROM sessions s JOIN artifacts a ON a.id = ` +
      `s.current_artifact_id ${matches} WHERE ${where.join(' AND ')}${cap}) c`;
    const order =
      query.sort === 'updated_asc'
        ? 's.updated_at ASC, s.id ASC'
        : ranked
          ? `ts_rank(m.document, to_tsquery('simple', ${matched!})) DESC, s.updated_at DESC, s.id DESC`
          : 's.updated_at DESC, s.id DESC';
    // The current artifact comes in the same row (SESSION_SELECT's join): one query for the page, another for the
    // count.
    const [rows, counted] = await Promise.all([
      this.db.all(
        `${SESSION_SELECT} ${matches} WHERE ${page.join(' AND ')} ORDER BY ${order} LIMIT ${p.add(query.limit)} ` +
          `OFFSET ${p.add(query.offset ?? 0)}`,
        ...p.values,
      ),
      query.count === true ? this.db.get(countSql, ...filterArgs) : undefined,
    ]);
    const total = counted === undefined ? undefined : Number(counted.n);
    return { sessions: rows.map(sessionOf), ...(total === undefined ? {} : { total }) };
  }

  async facets(
    viewer: User,
    userQ: string | undefined,
    selectedUserId: string | undefined,
  ): Promise<{ users: User[]; harnesses: string[] }> {
    const p = new Params();
    const shown = viewer.is_admin ? 'TRUE' : visible(p.add(viewer.id));
    const harnessArgs = [...p.values];
    const selected = selectedUserId !== undefined && storable(selectedUserId) ? selectedUserId : '';
    // SQLite's SELECT DISTINCT u.* ... ORDER BY lower(u.email) as an EXISTS (PostgreSQL orders DISTINCT rows only by
    // what they select): the same users, in the same order.
    const users =
      userQ !== undefined && !storable(userQ)
        ? []
        : await this.db.all(
            `SELECT u.* FROM users u
             WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.owner_id = u.id AND s.current_artifact_id IS NOT NULL AND
             ${shown})
               AND (${p.add(userQ ?? null)}::text IS NULL OR lower(u.email) LIKE
               ${p.add(userQ === undefined ? null : likePattern(userQ))} ESCAPE '\\')
             ORDER BY (u.id = ${p.add(selected)}) DESC, lower(u.email), u.id LIMIT 10`,
            ...p.values,
          );
    const harnesses = await this.db.all(
      `SELECT DISTINCT s.harness FROM sessions s WHERE s.current_artifact_id IS NOT NULL AND ${shown} ORDER BY ` +
        `s.harness`,
      ...harnessArgs,
    );
    return { users: users.map(toUser), harnesses: harnesses.map((r) => String(r.harness)) };
  }

  async expiredArtifacts(now: number, limit: number): Promise<Artifact[]> {
    return (
      await this.db.all(
        'SELECT * FROM artifacts WHERE retention_deadline < $1 AND NOT blob_deleted ORDER BY retention_deadline ' +
          'LIMIT $2',
        now,
        limit,
      )
    ).map(toArtifact);
  }

  async markBlobDeleted(artifactId: string): Promise<void> {
    await this.db.run('UPDATE artifacts SET blob_deleted = TRUE WHERE id = $1', artifactId);
  }

  async dropExpiredSearch(now: number): Promise<number> {
    return this.transaction(async (db) => {
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
  async deleteSession(
    sessionId: string,
    audit: NewAuditEvent,
    now: number,
    pendingUntil: number,
  ): Promise<string[] | undefined> {
    return this.transaction(async (db) => {
      // Locked as presign and complete lock it: an upload of this session in flight waits, then finds it gone.
      if ((await db.get('SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE', sessionId)) === undefined) return undefined;
      const stored = await db.all('SELECT blob_key FROM artifacts WHERE session_id = $1', sessionId);
      for (const row of stored) {
        await db.run(
          `INSERT INTO blob_deletions (blob_key, not_before, keep_until) VALUES ($1, $2, $3)
           ON CONFLICT (blob_key) DO UPDATE SET not_before = LEAST(blob_deletions.not_before, excluded.not_before),
             keep_until = GREATEST(blob_deletions.keep_until, excluded.keep_until)`,
          String(row.blob_key),
          now,
          pendingUntil,
        );
      }
      await db.run('UPDATE sessions SET current_artifact_id = NULL WHERE id = $1', sessionId);
      await db.run('DELETE FROM session_grants WHERE session_id = $1', sessionId);
      await db.run('DELETE FROM session_search WHERE session_id = $1', sessionId);
      await db.run('DELETE FROM search_queue WHERE session_id = $1', sessionId);
      await db.run('DELETE FROM artifacts WHERE session_id = $1', sessionId);
      await db.run('DELETE FROM sessions WHERE id = $1', sessionId);
      await insertAudit(db, audit, now);
      return stored.map((row) => String(row.blob_key));
    });
  }

  async blobDeletionsDue(now: number, limit: number): Promise<string[]> {
    return (
      await this.db.all(
        'SELECT blob_key FROM blob_deletions WHERE not_before <= $1 ORDER BY not_before, blob_key LIMIT $2',
        now,
        limit,
      )
    ).map((r) => String(r.blob_key));
  }

  async blobDeleted(key: string, now: number): Promise<void> {
    // One statement: gone for good, or due again at keep_until.
    await this.db.run(
      `WITH done AS (DELETE FROM blob_deletions WHERE blob_key = $1 AND not_before <= $2 AND keep_until <= $2)
       UPDATE blob_deletions SET not_before = keep_until WHERE blob_key = $1 AND not_before <= $2 AND keep_until > $2`,
      key,
      now,
    );
  }

  async appendAudit(event: NewAuditEvent, now: number): Promise<void> {
    await insertAudit(this.db, event, now);
  }

  async appendAudits(events: readonly NewAuditEvent[], now: number): Promise<void> {
    await this.transaction(async (db) => {
      for (const event of events) await insertAudit(db, event, now);
    });
  }

  async auditEvents(query: AuditQuery): Promise<AuditEvent[]> {
    const p = new Params();
    const where = [`seq > ${p.add(query.after ?? 0)}`];
    if (query.action !== undefined) where.push(`action = ${p.add(query.action)}`);
    if (query.actor_id !== undefined) where.push(`actor_id = ${p.add(query.actor_id)}`);
    if (query.session_id !== undefined) where.push(`session_id = ${p.add(query.session_id)}`);
    const rows = await this.db.all(
      `SELECT * FROM audit_events WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ${p.add(query.limit)}`,
      ...p.values,
    );
    return rows.map(auditEventOf);
  }
}

/** A user and a personal token (and, with `by`, both in the audit log), in `db` (the caller's transaction). */
async function insertUser(
  db: Db,
  email: string,
  isAdmin: boolean,
  now: number,
  tokenLabel: string,
  by: AuditActor | undefined,
): Promise<{ user: User; token: string }> {
  const user: User = { id: randomUUID(), email, is_admin: isAdmin, created_at: now };
  await db.run(
    'INSERT INTO users (id, email, is_admin, created_at) VALUES ($1, $2, $3, $4)',
    user.id,
    email,
    isAdmin,
    now,
  );
  if (by !== undefined) await insertAudit(db, userAdded(by, user), now);
  const { token, grant } = await insertPersonalToken(
    db,
    user.id,
    isAdmin ? API_SCOPES : MEMBER_SCOPES,
    tokenLabel,
    now,
  );
  if (by !== undefined) await insertAudit(db, tokenCreated(by, grant), now);
  return { user, token };
}

/**
 * A presign of a session that may exist, in `db` (its transaction): the session's row is made or locked first
 * (SELECT ... FOR UPDATE), so every other presign or complete of it, from any replica, waits until this transaction
 * ends; the facts planPresign decides on are read after the lock, and the tags are written with the artifact.
 */
async function presignIn(db: Db, input: NewArtifact, now: number, retentionMs: number): Promise<PresignResult> {
  // Made here when a concurrent presign's session was deleted meanwhile; a row this statement made is ours until
  // commit (a concurrent insert of the same key waits on the unique index).
  const made = await db.get(
    `INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at, updated_at, tags)
     VALUES ($1, $2, $3, $4, 'private', NULL, $5, $5, COALESCE($6::text, '[]')) ON CONFLICT (owner_id, harness, native_session_id) DO NOTHING RETURNING id`,
    randomUUID(),
    input.owner_id,
    input.harness,
    input.native_session_id,
    now,
    tagsOf(input),
  );
  let sessionId: string;
  let facts: PresignFacts | undefined;
  if (made !== undefined) {
    sessionId = String(made.id);
  } else {
    const locked = (await db.get(
      'SELECT id, current_artifact_id FROM sessions WHERE owner_id = $1 AND harness = $2 AND native_session_id = ' +
        '$3 FOR UPDATE',
      input.owner_id,
      input.harness,
      input.native_session_id,
    ))!;
    sessionId = String(locked.id);
    // Read after the lock (statements of their own, so with a snapshot taken after it): a concurrent presign of this
    // session that committed meanwhile is seen.
    const same = (await db.get(
      `SELECT m.last_revision, a.* FROM (SELECT MAX(revision) AS last_revision FROM artifacts WHERE session_id = $1) m
       LEFT JOIN LATERAL (SELECT * FROM artifacts WHERE session_id = $1 AND sha256 = $2 AND size_bytes = $3 ORDER BY revision DESC LIMIT 1) a ON TRUE`,
      sessionId,
      input.sha256,
      input.size_bytes,
    ))!;
    facts = {
      current:
        locked.current_artifact_id === null ? undefined : await artifactIn(db, String(locked.current_artifact_id)),
      sameBytes: same.id === null ? undefined : toArtifact(same),
      lastRevision: Number(same.last_revision ?? 0),
    };
  }
  const plan = planPresign(facts, input, now, retentionMs);
  if (plan.outcome === 'complete') {
    if (input.tags !== undefined) await db.run('UPDATE sessions SET tags = $1 WHERE id = $2', tagsOf(input), sessionId);
    return { artifact: plan.artifact, outcome: 'complete' };
  }
  if (made === undefined) {
    await db.run(
      `UPDATE sessions SET updated_at = $1, tags = COALESCE($2::text, tags) WHERE id = $3`,
      now,
      tagsOf(input),
      sessionId,
    );
  }
  if (plan.outcome === 'reused') {
    const reused = (await db.get(
      `UPDATE artifacts SET status = 'pending', failure = NULL, content_type = $1, compatibility_profile = $2, artifact_format = $3,
         resumable = $4, cwd = $5, title = $6, summary = $7, captured_at_unix_ms = $8, repository_root = $9,
         repository_remote = $10,
         updated_at = $11, retention_deadline = $12
       WHERE id = $13 RETURNING *`,
      ...describe(input),
      now,
      plan.deadline,
      plan.artifactId,
    ))!;
    return { artifact: toArtifact(reused), outcome: 'reused' };
  }
  const id = randomUUID();
  const inserted = (await db.get(
    `INSERT INTO artifacts (id, session_id, revision, status, size_bytes, sha256, content_type, compatibility_profile,
       artifact_format, resumable, cwd, title, summary, captured_at_unix_ms, repository_root, repository_remote,
       blob_key,
       created_at, updated_at, retention_deadline)
     VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
     RETURNING *`,
    id,
    sessionId,
    plan.revision,
    input.size_bytes,
    input.sha256,
    ...describe(input),
    `sessions/${id}.tar.gz`,
    now,
    now,
    plan.deadline,
  ))!;
  return { artifact: toArtifact(inserted), outcome: 'created' };
}

/** The tags a presign replaces the session's with, as the column holds them; null: the session's stay. */
function tagsOf(input: NewArtifact): string | null {
  return input.tags === undefined ? null : JSON.stringify(input.tags);
}

async function currentPolicyIn(db: Db): Promise<PolicyRevision | undefined> {
  const row = await db.get('SELECT * FROM policy_revisions ORDER BY seq DESC LIMIT 1');
  return row === undefined ? undefined : toPolicyRevision(row);
}

/** A new revision (and, with `by`, its audit entry: what changed since the current one), in the caller's transaction.
 * */
async function insertPolicy(
  db: Db,
  body: Record<string, unknown>,
  now: number,
  { text, by }: PublishOptions,
): Promise<PolicyRevision> {
  const previous = by === undefined ? undefined : await currentPolicyIn(db);
  const { published, served } = newRevision(body, now, text);
  await db.run(
    'INSERT INTO policy_revisions (revision, body, etag, created_at, published_text) VALUES ($1, $2, $3, $4, $5)',
    published.revision,
    served,
    published.etag,
    now,
    published.text,
  );
  if (by !== undefined) await insertAudit(db, policyPublished(by, previous, published), now);
  return published;
}

async function insertAudit(db: Pick<Db, 'run'>, event: NewAuditEvent, now: number): Promise<void> {
  await db.run(
    'INSERT INTO audit_events (at, actor_kind, actor_id, actor_email, action, session_id, owner_id, details) ' +
      'VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    now,
    ...auditRow(event),
  );
}

/**
 * Writes a session's search entry, only while `artifactId` is its current artifact and not expired at `now` (one
 * statement); whether it did. The session's row is locked as it is read: a delete or a complete of the session under
 * way elsewhere is waited for, and the row is read again after it (a deleted session gets no entry, and the rest of
 * the indexer's batch is written).
 */
async function writeSearchText(
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

async function artifactIn(db: Db, id: string): Promise<Artifact | undefined> {
  const row = await db.get('SELECT * FROM artifacts WHERE id = $1', id);
  return row === undefined ? undefined : toArtifact(row);
}

async function sessionIn(db: Db, id: string): Promise<CapturedSession | undefined> {
  const row = await db.get(`${SESSION_SELECT} WHERE s.id = $1`, id);
  return row === undefined ? undefined : sessionOf(row);
}

/** A row of SESSION_SELECT: the session, and its current artifact from the `a_` columns. */
function sessionOf(row: Row): CapturedSession {
  if (row.a_id === null || row.a_id === undefined) return toSession(row, undefined);
  const artifact: Row = {};
  for (const column of ARTIFACT_COLUMNS) artifact[column] = row[`a_${column}`];
  return toSession(row, toArtifact(artifact));
}

/** The artifact's described columns, in the order presign writes them. */
function describe(input: NewArtifact): Value[] {
  return [
    input.content_type,
    input.compatibility_profile,
    input.artifact_format,
    input.resumable,
    input.cwd,
    input.title,
    input.summary,
    input.captured_at_unix_ms,
    input.repository_root,
    input.repository_remote,
  ];
}

function toUser(row: Row): User {
  return {
    id: String(row.id),
    email: String(row.email),
    is_admin: row.is_admin === true,
    created_at: Number(row.created_at),
  };
}

/**
 * Whether PostgreSQL can hold `text`: its text type refuses NUL. No stored value contains one, so a lookup by such a
 * value finds nothing here rather than failing the request (as SQLite, which has no such value either, answers).
 */
function storable(text: string): boolean {
  return !text.includes('\u0000');
}

function ignore(): void {
  // An error event whose consequence (a failed query) is reported where the query was made.
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** `url` without its password (in the authority or as a `password` parameter), for `location` and messages. */
function withoutPassword(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not shown: it may hold a password where a URL parser does not expect one.
    return 'postgres://(an unparsable database URL)';
  }
  parsed.password = '';
  for (const key of ['password', 'sslpassword']) parsed.searchParams.delete(key);
  return parsed.toString();
}

/** Every form of the password the URL carries, to be kept out of any text shown. */
function secretsOf(url: string): string[] {
  const found: string[] = [];
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') found.push(parsed.password);
    for (const key of ['password', 'sslpassword'])
      for (const value of parsed.searchParams.getAll(key)) found.push(encodeURIComponent(value));
  } catch {
    // Unparsable: nothing of it is shown.
  }
  const forms = found.flatMap((s) => {
    let decoded = s;
    try {
      decoded = decodeURIComponent(s);
    } catch {
      // Not percent-encoded validly: as it is.
    }
    return [s, decoded];
  });
  return [...new Set(forms.filter((s) => s !== ''))];
}

function redact(text: string, secrets: readonly string[]): string {
  return secrets.reduce((t, secret) => t.split(secret).join('***'), text);
}

/** Why the database could not be opened, in a person's terms, with what to check; never the password. */
function connectError(error: unknown, location: string, secrets: readonly string[]): BlueError {
  const code = sqlState(error);
  const said = redact(error instanceof Error ? error.message : String(error), secrets);
  const urlHint = 'the database URL (--database-url or BLUE_CONTROL_DATABASE_URL)';
  const fail = (errorCode: 'CONFIG_INVALID' | 'IO_ERROR', message: string, hint: string) =>
    new BlueError(errorCode, redact(message, secrets), { hint: redact(hint, secrets) });
  if (code === '28P01' || code === '28000' || /SASL|password/i.test(said)) {
    return fail(
      'CONFIG_INVALID',
      `PostgreSQL refused the sign-in to ${location}: ${said}`,
      `Check the user name and password in ${urlHint}; percent-encode special characters in the password (@ : / ? ` +
        `# %).`,
    );
  }
  if (code === '3D000') {
    return fail(
      'CONFIG_INVALID',
      `the PostgreSQL database of ${location} does not exist: ${said}`,
      `Create it (createdb, or CREATE DATABASE), or fix its name in ${urlHint}.`,
    );
  }
  if (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === '57P03'
  ) {
    return fail(
      'IO_ERROR',
      `cannot reach the PostgreSQL server of ${location}: ${said}`,
      `Check that the server runs and accepts connections there, and the host and port in ${urlHint}.`,
    );
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return fail(
      'IO_ERROR',
      `cannot resolve the host of the PostgreSQL server of ${location}: ${said}`,
      `Check the host name in ${urlHint}, and this machine's DNS.`,
    );
  }
  if (/timeout|timed out/i.test(said)) {
    return fail(
      'IO_ERROR',
      `timed out connecting to the PostgreSQL server of ${location}: ${said}`,
      `Check that the server runs and is reachable from here (firewall, network), and the host and port in ${urlHint}.`,
    );
  }
  return fail(
    'IO_ERROR',
    `cannot open the PostgreSQL database ${location}: ${said}`,
    `Check ${urlHint}, that the server runs, and that its user may connect and create tables in the database.`,
  );
}

/** PostgreSQL's tsquery for `q`: every word (letters and digits only: no operator reaches the parser), the last as a
 * prefix. */
function tsQuery(q: string): string | undefined {
  const words = searchWords(q);
  return words.length === 0 ? undefined : words.map((w, i) => (i === words.length - 1 ? `${w}:*` : w)).join(' & ');
}
