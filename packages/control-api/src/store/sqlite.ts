/**
 * The embedded database: SQLite (`<data>/control.db`, `node:sqlite`), for one machine or a small team. This is its
 * ControlStore: the upload flows (uploads.ts) run over its repository; everything else is a statement or a
 * transaction of its topic files in sqlite/. Bearer tokens are never stored: only their SHA-256.
 */
import type { Transactions } from './flow.js';
import { publish, type PolicyRepository } from './revisions.js';
import { SqliteDb, transactions } from './sqlite/db.js';
import { SQLITE_MIGRATIONS, schemaTooNew, sqliteSchemaVersion } from './sqlite/migrations.js';
import { SqliteIdentity } from './sqlite/identity.js';
import { auditEvents, insertAudit } from './sqlite/audit.js';
import { clientStatuses, recordClientStatus } from './sqlite/fleet.js';
import { countByHarness, facets, listSessions } from './sqlite/listing.js';
import { SqlitePolicies } from './sqlite/policy.js';
import * as search from './sqlite/search.js';
import * as sessions from './sqlite/sessions.js';
import { SqliteSessions } from './sqlite/sessions.js';
import { SqliteUploads } from './sqlite/uploads.js';
import { SqliteUsers } from './sqlite/users.js';
import { addFirstAdmin, addUser, provisionUser, setAdmin, type UserRepository } from './users.js';
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

export { requireDataDir } from './sqlite/db.js';

export class SqliteStore implements ControlStore {
  readonly backend = 'sqlite' as const;
  readonly identity: SqliteIdentity;
  private readonly uploads: SqliteUploads;
  private readonly users: SqliteUsers;
  private readonly userFlows: Transactions<UserRepository>;
  private readonly policies: SqlitePolicies;
  private readonly policyFlows: Transactions<PolicyRepository>;
  private readonly sessions: SqliteSessions;
  private readonly sessionFlows: Transactions<SessionRepository>;

  private constructor(private readonly db: SqliteDb) {
    this.identity = new SqliteIdentity(db);
    this.uploads = new SqliteUploads(db);
    this.users = new SqliteUsers(db, this.identity);
    this.userFlows = transactions(db, this.users);
    this.policies = new SqlitePolicies(db);
    this.policyFlows = transactions(db, this.policies);
    this.sessions = new SqliteSessions(db);
    this.sessionFlows = transactions(db, this.sessions);
  }

  /** Opens `<dataDir>/control.db` (see SqliteDb.open: `create` false refuses a missing one), migrated. */
  static open(dataDir: string, options: { create?: boolean | undefined } = {}): SqliteStore {
    return new SqliteStore(SqliteDb.open(dataDir, options));
  }

  get location(): string {
    return this.db.file;
  }

  async close(): Promise<void> {
    this.db.close();
  }

  async check(): Promise<void> {
    const version = sqliteSchemaVersion(this.db.connection);
    if (version > SQLITE_MIGRATIONS.length) throw schemaTooNew(this.location, version, SQLITE_MIGRATIONS.length);
    this.db.connection.prepare('SELECT 1').get();
  }

  async organizationId(): Promise<string> {
    return this.policies.setting('organization_id')!;
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
    return this.users.userById(id);
  }

  async userByEmail(email: string): Promise<User | undefined> {
    return this.users.userByEmail(email);
  }

  async listUsers(): Promise<User[]> {
    return this.users.listUsers();
  }

  async searchUsers(q: string | undefined, excludeId: string | undefined, limit: number): Promise<User[]> {
    return this.users.searchUsers(q, excludeId, limit);
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
    return this.policies.setting('public_url');
  }

  async setPublicUrl(url: string): Promise<void> {
    this.policies.setSetting('public_url', url);
  }

  async currentPolicy(): Promise<PolicyRevision | undefined> {
    return this.policies.currentPolicy();
  }

  async policyRevision(revision: string): Promise<PolicyRevision | undefined> {
    return this.policies.policyRevision(revision);
  }

  // Client status

  async recordClientStatus(userId: string, instanceId: string, report: unknown, now: number): Promise<void> {
    recordClientStatus(this.db, userId, instanceId, report, now);
  }

  async clientStatuses(query: ClientStatusQuery): Promise<{ items: ClientStatusRecord[]; total: number }> {
    return clientStatuses(this.db, query);
  }

  // Uploads

  async presign(input: NewArtifact, now: number, retentionMs: number): Promise<PresignResult> {
    return presign(this.uploads, input, now, retentionMs);
  }

  async complete(artifactId: string, now: number, retentionMs: number): Promise<Artifact | undefined> {
    return complete(this.uploads, artifactId, now, retentionMs);
  }

  async artifact(id: string): Promise<{ artifact: Artifact; session: CapturedSession } | undefined> {
    return this.uploads.artifactWithSession(id);
  }

  async uploadWanted(blobKey: string, now: number): Promise<boolean> {
    return this.uploads.uploadWanted(blobKey, now);
  }

  async markFailed(artifactId: string, reason: string, now: number): Promise<void> {
    this.uploads.markFailed(artifactId, reason, now);
  }

  // Search

  async claimSearchWork(
    now: number,
    leaseMs: number,
    limit: number,
  ): Promise<{ session_id: string; artifact: Artifact }[]> {
    return search.claimSearchWork(this.db, now, leaseMs, limit);
  }

  async searchWorkDone(sessionId: string, artifactId: string): Promise<void> {
    search.searchWorkDone(this.db, sessionId, artifactId);
  }

  async indexable(afterId: string, limit: number): Promise<{ session_id: string; artifact: Artifact }[]> {
    return search.indexable(this.db, afterId, limit);
  }

  async countIndexable(): Promise<number> {
    return search.countIndexable(this.db);
  }

  async setSearchText(sessionId: string, artifactId: string, text: string, now: number): Promise<boolean> {
    return this.db.transaction(() => search.setSearchText(this.db, sessionId, artifactId, text, now));
  }

  async searchIndexed(done: readonly SearchIndexed[], now: number): Promise<void> {
    search.searchIndexed(this.db, done, now);
  }

  async reindexCursor(): Promise<string | undefined> {
    return this.policies.setting('reindex_after');
  }

  async setReindexCursor(after: string | undefined): Promise<void> {
    this.policies.setSetting('reindex_after', after);
  }

  async snippets(
    sessionIds: readonly string[],
    q: string,
    now: number,
    marks?: SnippetMarks,
  ): Promise<Map<string, string>> {
    return search.snippets(this.db, sessionIds, q, now, marks);
  }

  async dropExpiredSearch(now: number): Promise<number> {
    return search.dropExpiredSearch(this.db, now);
  }

  // Sessions

  async session(id: string): Promise<CapturedSession | undefined> {
    return sessions.sessionById(this.db, id);
  }

  async artifactsOf(sessionId: string): Promise<Artifact[]> {
    return sessions.artifactsOf(this.db, sessionId);
  }

  async canView(session: CapturedSession, viewer: User): Promise<boolean> {
    return canView(this.sessions, session, viewer);
  }

  async grants(sessionId: string): Promise<string[]> {
    return sessions.grants(this.db, sessionId);
  }

  async recipients(session: CapturedSession): Promise<User[]> {
    return sessions.recipients(this.db, session);
  }

  async setSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Promise<void> {
    await setSharing(this.sessionFlows, sessionId, mode, userIds);
  }

  async countByHarness(
    viewer: User,
    query: Omit<SessionQuery, 'sort' | 'limit'>,
    now: number,
  ): Promise<Record<string, number>> {
    return countByHarness(this.db, viewer, query, now);
  }

  async listSessions(
    viewer: User,
    query: SessionQuery,
    now: number,
  ): Promise<{ sessions: CapturedSession[]; total?: number }> {
    return listSessions(this.db, viewer, query, now);
  }

  async facets(
    viewer: User,
    userQ: string | undefined,
    selectedUserId: string | undefined,
  ): Promise<{ users: User[]; harnesses: string[] }> {
    return facets(this.db, viewer, userQ, selectedUserId);
  }

  // Retention and deletion

  async expiredArtifacts(now: number, limit: number): Promise<Artifact[]> {
    return sessions.expiredArtifacts(this.db, now, limit);
  }

  async markBlobDeleted(artifactId: string): Promise<void> {
    sessions.markBlobDeleted(this.db, artifactId);
  }

  async deleteSession(
    sessionId: string,
    audit: NewAuditEvent,
    now: number,
    pendingUntil: number,
  ): Promise<string[] | undefined> {
    return deleteSession(this.sessionFlows, sessionId, audit, now, pendingUntil);
  }

  async blobDeletionsDue(now: number, limit: number): Promise<string[]> {
    return sessions.blobDeletionsDue(this.db, now, limit);
  }

  async blobDeleted(key: string, now: number): Promise<void> {
    sessions.blobDeleted(this.db, key, now);
  }

  // Audit

  async appendAudit(event: NewAuditEvent, now: number): Promise<void> {
    insertAudit(this.db, event, now);
  }

  async appendAudits(events: readonly NewAuditEvent[], now: number): Promise<void> {
    this.db.transaction(() => {
      for (const event of events) insertAudit(this.db, event, now);
    });
  }

  async auditEvents(query: AuditQuery): Promise<AuditEvent[]> {
    return auditEvents(this.db, query);
  }
}
