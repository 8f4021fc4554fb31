/**
 * The shared database: PostgreSQL (`--database-url`), for any number of stateless replicas of the Control API. This is
 * its ControlStore: the upload flows (uploads.ts) run over its repository, as on SQLite; everything else is a
 * statement or a transaction of its topic files in postgres/. What SQLite gets from its single writer, this gets from
 * row and advisory locks:
 * - presign and complete lock the captured session's row (SELECT ... FOR UPDATE) before reading
 *   it (postgres/uploads.ts);
 * - the first administrator and the first policy are made under an advisory transaction lock that ordinary additions
 *   take shared, so "only when there is none" holds across replicas;
 * - transactions run at READ COMMITTED (each statement sees what committed before it, the locks order the rest) and
 *   are retried once on a deadlock or serialization failure (postgres/db.ts).
 * The URL's password never appears in `location`, a message or a hint. Bearer tokens are never stored: only their
 * SHA-256.
 */
import type pg from 'pg';
import { schemaTooNew } from './sqlite/migrations.js';
import * as audit from './postgres/audit.js';
import { openPool } from './postgres/connect.js';
import { Db, type Pg, transaction, transactions } from './postgres/db.js';
import type { Transactions } from './flow.js';
import { publish, type PolicyRepository } from './revisions.js';
import { addFirstAdmin, addUser, provisionUser, setAdmin, type UserRepository } from './users.js';
import * as fleet from './postgres/fleet.js';
import { PostgresIdentity } from './postgres/identity.js';
import * as listing from './postgres/listing.js';
import { POSTGRES_MIGRATIONS } from './postgres/migrations.js';
import * as policy from './postgres/policy.js';
import * as search from './postgres/search.js';
import * as sessions from './postgres/sessions.js';
import { PgUploadBackend } from './postgres/uploads.js';
import * as users from './postgres/users.js';
import { canView, deleteSession, type SessionRepository, setSharing } from './sessions.js';
import { complete, presign } from './uploads.js';
import type {
  Artifact,
  AuditActor,
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
  PublishOptions,
  RoleChange,
  SearchIndexed,
  SessionQuery,
  SharingMode,
  SnippetMarks,
  User,
} from './types.js';
import { FIRST_ADMIN_TOKEN_LABEL, USERS_ADD_TOKEN_LABEL } from './types.js';

export class PostgresStore implements ControlStore {
  readonly backend = 'postgres' as const;
  readonly identity: PostgresIdentity;
  private readonly pg: Pg;
  private readonly uploads: PgUploadBackend;
  private readonly userFlows: Transactions<UserRepository>;
  private readonly policyFlows: Transactions<PolicyRepository>;
  private readonly sessionFlows: Transactions<SessionRepository>;
  private closing: Promise<void> | undefined;
  private organization: string | undefined;

  private constructor(
    readonly location: string,
    private readonly pool: pg.Pool,
  ) {
    this.pg = { db: new Db(pool), transaction: (fn) => transaction(pool, fn) };
    this.identity = new PostgresIdentity(this.pg);
    this.uploads = new PgUploadBackend(this.pg);
    this.userFlows = transactions(this.pg, (db) => new users.PgUsers(db));
    this.policyFlows = transactions(this.pg, (db) => new policy.PgPolicies(db));
    this.sessionFlows = transactions(this.pg, (db) => new sessions.PgSessions(db));
  }

  /** Connects (a bounded pool), brings the schema up to date, and refuses a database of a newer release. */
  static async open(url: string): Promise<PostgresStore> {
    const { pool, location } = await openPool(url);
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
    const row = await this.pg.db.get('SELECT 1 AS ok, (SELECT MAX(version) FROM schema_version) AS v');
    const version = Number(row?.v ?? 0);
    if (version > POSTGRES_MIGRATIONS.length) throw schemaTooNew(this.location, version, POSTGRES_MIGRATIONS.length);
  }

  async organizationId(): Promise<string> {
    // Made once by the first migration; it never changes.
    this.organization ??= String(
      (await this.pg.db.get(`SELECT value FROM settings WHERE key = 'organization_id'`))!.value,
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
    return addUser(this.userFlows, email, isAdmin, now, tokenLabel, by);
  }

  async addFirstAdmin(email: string, now: number, by?: AuditActor): Promise<{ user: User; token: string } | undefined> {
    return addFirstAdmin(this.userFlows, email, now, FIRST_ADMIN_TOKEN_LABEL, by);
  }

  async provisionUser(email: string, now: number, by?: AuditActor): Promise<User> {
    return provisionUser(this.userFlows, email, now, by);
  }

  async setAdmin(userId: string, isAdmin: boolean, change?: RoleChange): Promise<boolean> {
    return setAdmin(this.userFlows, userId, isAdmin, change);
  }

  async userById(id: string): Promise<User | undefined> {
    return users.userById(this.pg, id);
  }

  async userByEmail(email: string): Promise<User | undefined> {
    return users.userByEmail(this.pg.db, email);
  }

  async listUsers(): Promise<User[]> {
    return users.listUsers(this.pg);
  }

  async searchUsers(q: string | undefined, excludeId: string | undefined, limit: number): Promise<User[]> {
    return users.searchUsers(this.pg, q, excludeId, limit);
  }

  // Policy

  async publishPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision> {
    return (await publish(this.policyFlows, 'always', body, now, options))!;
  }

  async publishFirstPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return publish(this.policyFlows, 'first', body, now, options);
  }

  async publishPolicyOver(
    body: Record<string, unknown>,
    base: string | undefined,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return publish(this.policyFlows, { over: base }, body, now, options);
  }

  async publicUrl(): Promise<string | undefined> {
    return policy.publicUrl(this.pg);
  }

  async setPublicUrl(url: string): Promise<void> {
    await policy.setPublicUrl(this.pg, url);
  }

  async currentPolicy(): Promise<PolicyRevision | undefined> {
    return policy.currentPolicy(this.pg);
  }

  async policyRevision(revision: string): Promise<PolicyRevision | undefined> {
    return policy.policyRevision(this.pg, revision);
  }

  // Client status

  async recordClientStatus(userId: string, instanceId: string, report: unknown, now: number): Promise<void> {
    await fleet.recordClientStatus(this.pg, userId, instanceId, report, now);
  }

  async clientStatuses(query: ClientStatusQuery): Promise<{ items: ClientStatusRecord[]; total: number }> {
    return fleet.clientStatuses(this.pg, query);
  }

  // Uploads

  async presign(input: NewArtifact, now: number, retentionMs: number): Promise<PresignResult> {
    return presign(this.uploads, input, now, retentionMs);
  }

  async complete(artifactId: string, now: number, retentionMs: number): Promise<Artifact | undefined> {
    return complete(this.uploads, artifactId, now, retentionMs);
  }

  async artifact(id: string): Promise<{ artifact: Artifact; session: CapturedSession } | undefined> {
    return sessions.artifact(this.pg, id);
  }

  async uploadWanted(blobKey: string, now: number): Promise<boolean> {
    return this.uploads.uploadWanted(blobKey, now);
  }

  async markFailed(artifactId: string, reason: string, now: number): Promise<void> {
    await this.uploads.markFailed(artifactId, reason, now);
  }

  // Search

  async claimSearchWork(
    now: number,
    leaseMs: number,
    limit: number,
  ): Promise<{ session_id: string; artifact: Artifact }[]> {
    return search.claimSearchWork(this.pg, now, leaseMs, limit);
  }

  async searchWorkDone(sessionId: string, artifactId: string): Promise<void> {
    await search.searchWorkDone(this.pg, sessionId, artifactId);
  }

  async indexable(afterId: string, limit: number): Promise<{ session_id: string; artifact: Artifact }[]> {
    return search.indexable(this.pg, afterId, limit);
  }

  async countIndexable(): Promise<number> {
    return search.countIndexable(this.pg);
  }

  async setSearchText(sessionId: string, artifactId: string, text: string, now: number): Promise<boolean> {
    return search.setSearchText(this.pg, sessionId, artifactId, text, now);
  }

  async searchIndexed(done: readonly SearchIndexed[], now: number): Promise<void> {
    await search.searchIndexed(this.pg, done, now);
  }

  async reindexCursor(): Promise<string | undefined> {
    return policy.reindexCursor(this.pg);
  }

  async setReindexCursor(after: string | undefined): Promise<void> {
    await policy.setReindexCursor(this.pg, after);
  }

  async snippets(
    sessionIds: readonly string[],
    q: string,
    now: number,
    marks?: SnippetMarks,
  ): Promise<Map<string, string>> {
    return search.snippets(this.pg, sessionIds, q, now, marks);
  }

  async dropExpiredSearch(now: number): Promise<number> {
    return search.dropExpiredSearch(this.pg, now);
  }

  // Sessions

  async session(id: string): Promise<CapturedSession | undefined> {
    return sessions.session(this.pg, id);
  }

  async artifactsOf(sessionId: string): Promise<Artifact[]> {
    return sessions.artifactsOf(this.pg, sessionId);
  }

  async canView(session: CapturedSession, viewer: User): Promise<boolean> {
    return canView(new sessions.PgSessions(this.pg.db), session, viewer);
  }

  async grants(sessionId: string): Promise<string[]> {
    return sessions.grants(this.pg, sessionId);
  }

  async recipients(session: CapturedSession): Promise<User[]> {
    return sessions.recipients(this.pg, session);
  }

  async setSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Promise<void> {
    await setSharing(this.sessionFlows, sessionId, mode, userIds);
  }

  async countByHarness(
    viewer: User,
    query: Omit<SessionQuery, 'sort' | 'limit'>,
    now: number,
  ): Promise<Record<string, number>> {
    return listing.countByHarness(this.pg, viewer, query, now);
  }

  async listSessions(
    viewer: User,
    query: SessionQuery,
    now: number,
  ): Promise<{ sessions: CapturedSession[]; total?: number }> {
    return listing.listSessions(this.pg, viewer, query, now);
  }

  async facets(
    viewer: User,
    userQ: string | undefined,
    selectedUserId: string | undefined,
  ): Promise<{ users: User[]; harnesses: string[] }> {
    return listing.facets(this.pg, viewer, userQ, selectedUserId);
  }

  // Retention and deletion

  async expiredArtifacts(now: number, limit: number): Promise<Artifact[]> {
    return sessions.expiredArtifacts(this.pg, now, limit);
  }

  async markBlobDeleted(artifactId: string): Promise<void> {
    await sessions.markBlobDeleted(this.pg, artifactId);
  }

  async deleteSession(
    sessionId: string,
    event: NewAuditEvent,
    now: number,
    pendingUntil: number,
  ): Promise<string[] | undefined> {
    return deleteSession(this.sessionFlows, sessionId, event, now, pendingUntil);
  }

  async blobDeletionsDue(now: number, limit: number): Promise<string[]> {
    return sessions.blobDeletionsDue(this.pg, now, limit);
  }

  async blobDeleted(key: string, now: number): Promise<void> {
    await sessions.blobDeleted(this.pg, key, now);
  }

  // Audit

  async appendAudit(event: NewAuditEvent, now: number): Promise<void> {
    await audit.appendAudit(this.pg, event, now);
  }

  async appendAudits(events: readonly NewAuditEvent[], now: number): Promise<void> {
    await audit.appendAudits(this.pg, events, now);
  }

  async auditEvents(query: AuditQuery): Promise<AuditEvent[]> {
    return audit.auditEvents(this.pg, query);
  }
}
