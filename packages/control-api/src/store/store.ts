/**
 * The ControlStore, once for both databases: what each operation does, over a Backend that sqlite.ts and postgres.ts
 * assemble from their repositories. An operation that reads facts, applies a rule and writes is a flow (uploads.ts,
 * users.ts, revisions.ts, sessions.ts) run in one transaction of the backend's; every other one is a single statement
 * or a transaction of the backend's own (`statements`), which holds no rule.
 */
import type { Step, Transactions } from './flow.js';
import { publish, type PolicyRepository } from './revisions.js';
import { canView, deleteSession, type SessionRepository, setSharing } from './sessions.js';
import type {
  Artifact,
  AuditActor,
  CapturedSession,
  ControlStore,
  IdentityStore,
  NewArtifact,
  NewAuditEvent,
  PolicyRevision,
  PresignResult,
  PublishOptions,
  RoleChange,
  SharingMode,
  User,
} from './types.js';
import { FIRST_ADMIN_TOKEN_LABEL, USERS_ADD_TOKEN_LABEL } from './types.js';
import { complete, presign, type UploadBackend } from './uploads.js';
import { addFirstAdmin, addUser, provisionUser, setAdmin, type UserRepository } from './users.js';

/** The operations a backend answers itself: one statement, or a transaction that decides nothing. */
type Plain = Exclude<
  keyof ControlStore,
  | 'backend'
  | 'location'
  | 'identity'
  | 'close'
  | 'check'
  | 'poolStats'
  | 'presign'
  | 'complete'
  | 'addUser'
  | 'addFirstAdmin'
  | 'provisionUser'
  | 'setAdmin'
  | 'publishPolicy'
  | 'publishFirstPolicy'
  | 'publishPolicyOver'
  | 'canView'
  | 'setSharing'
  | 'deleteSession'
>;

/** A plain operation as a backend answers it: at once (SQLite) or with a promise (PostgreSQL). */
export type Statements = {
  [K in Plain]: ControlStore[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => Step<R> : never;
};

export interface Backend {
  readonly backend: ControlStore['backend'];
  readonly location: string;
  readonly identity: IdentityStore;
  close(): Promise<void>;
  check(): Promise<void>;
  poolStats?(): { total: number; idle: number; waiting: number };
  readonly uploads: UploadBackend;
  readonly users: Transactions<UserRepository>;
  readonly policies: Transactions<PolicyRepository>;
  readonly sessions: Transactions<SessionRepository>;
  /** Whether the session is shared with the user by name, outside any transaction. */
  granted(sessionId: string, userId: string): Step<boolean>;
  readonly statements: Statements;
}

export class Store implements ControlStore {
  readonly backend: ControlStore['backend'];
  readonly identity: IdentityStore;
  readonly poolStats?: () => { total: number; idle: number; waiting: number };
  private readonly s: Statements;

  constructor(private readonly b: Backend) {
    this.backend = b.backend;
    this.identity = b.identity;
    this.s = b.statements;
    if (b.poolStats !== undefined) this.poolStats = b.poolStats.bind(b);
  }

  get location(): string {
    return this.b.location;
  }

  close(): Promise<void> {
    return this.b.close();
  }

  check(): Promise<void> {
    return this.b.check();
  }

  // What a rule decides

  async presign(input: NewArtifact, now: number, retentionMs: number): Promise<PresignResult> {
    return presign(this.b.uploads, input, now, retentionMs);
  }

  async complete(artifactId: string, now: number, retentionMs: number): Promise<Artifact | undefined> {
    return complete(this.b.uploads, artifactId, now, retentionMs);
  }

  async addUser(
    email: string,
    isAdmin: boolean,
    now: number,
    { by, tokenLabel = USERS_ADD_TOKEN_LABEL }: { by?: AuditActor | undefined; tokenLabel?: string } = {},
  ): Promise<{ user: User; token: string }> {
    return addUser(this.b.users, email, isAdmin, now, tokenLabel, by);
  }

  async addFirstAdmin(email: string, now: number, by?: AuditActor): Promise<{ user: User; token: string } | undefined> {
    return addFirstAdmin(this.b.users, email, now, FIRST_ADMIN_TOKEN_LABEL, by);
  }

  async provisionUser(email: string, now: number, by?: AuditActor): Promise<User> {
    return provisionUser(this.b.users, email, now, by);
  }

  async setAdmin(userId: string, isAdmin: boolean, change?: RoleChange): Promise<boolean> {
    return setAdmin(this.b.users, userId, isAdmin, change);
  }

  async publishPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision> {
    return (await publish(this.b.policies, 'always', body, now, options))!;
  }

  async publishFirstPolicy(
    body: Record<string, unknown>,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return publish(this.b.policies, 'first', body, now, options);
  }

  async publishPolicyOver(
    body: Record<string, unknown>,
    base: string | undefined,
    now: number,
    options: PublishOptions = {},
  ): Promise<PolicyRevision | undefined> {
    return publish(this.b.policies, { over: base }, body, now, options);
  }

  async canView(session: CapturedSession, viewer: User): Promise<boolean> {
    return canView(this.b, session, viewer);
  }

  async setSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Promise<void> {
    await setSharing(this.b.sessions, sessionId, mode, userIds);
  }

  async deleteSession(
    sessionId: string,
    event: NewAuditEvent,
    now: number,
    pendingUntil: number,
  ): Promise<string[] | undefined> {
    return deleteSession(this.b.sessions, sessionId, event, now, pendingUntil);
  }

  // What the backend answers itself

  async organizationId(
    ...args: Parameters<Statements['organizationId']>
  ): Promise<Awaited<ReturnType<Statements['organizationId']>>> {
    return this.s.organizationId(...args);
  }

  async userById(...args: Parameters<Statements['userById']>): Promise<Awaited<ReturnType<Statements['userById']>>> {
    return this.s.userById(...args);
  }

  async userByEmail(
    ...args: Parameters<Statements['userByEmail']>
  ): Promise<Awaited<ReturnType<Statements['userByEmail']>>> {
    return this.s.userByEmail(...args);
  }

  async listUsers(...args: Parameters<Statements['listUsers']>): Promise<Awaited<ReturnType<Statements['listUsers']>>> {
    return this.s.listUsers(...args);
  }

  async searchUsers(
    ...args: Parameters<Statements['searchUsers']>
  ): Promise<Awaited<ReturnType<Statements['searchUsers']>>> {
    return this.s.searchUsers(...args);
  }

  async publicUrl(...args: Parameters<Statements['publicUrl']>): Promise<Awaited<ReturnType<Statements['publicUrl']>>> {
    return this.s.publicUrl(...args);
  }

  async setPublicUrl(
    ...args: Parameters<Statements['setPublicUrl']>
  ): Promise<Awaited<ReturnType<Statements['setPublicUrl']>>> {
    return this.s.setPublicUrl(...args);
  }

  async currentPolicy(
    ...args: Parameters<Statements['currentPolicy']>
  ): Promise<Awaited<ReturnType<Statements['currentPolicy']>>> {
    return this.s.currentPolicy(...args);
  }

  async policyRevision(
    ...args: Parameters<Statements['policyRevision']>
  ): Promise<Awaited<ReturnType<Statements['policyRevision']>>> {
    return this.s.policyRevision(...args);
  }

  async recordClientStatus(
    ...args: Parameters<Statements['recordClientStatus']>
  ): Promise<Awaited<ReturnType<Statements['recordClientStatus']>>> {
    return this.s.recordClientStatus(...args);
  }

  async clientStatuses(
    ...args: Parameters<Statements['clientStatuses']>
  ): Promise<Awaited<ReturnType<Statements['clientStatuses']>>> {
    return this.s.clientStatuses(...args);
  }

  async artifact(...args: Parameters<Statements['artifact']>): Promise<Awaited<ReturnType<Statements['artifact']>>> {
    return this.s.artifact(...args);
  }

  async uploadWanted(
    ...args: Parameters<Statements['uploadWanted']>
  ): Promise<Awaited<ReturnType<Statements['uploadWanted']>>> {
    return this.s.uploadWanted(...args);
  }

  async markFailed(
    ...args: Parameters<Statements['markFailed']>
  ): Promise<Awaited<ReturnType<Statements['markFailed']>>> {
    return this.s.markFailed(...args);
  }

  async claimSearchWork(
    ...args: Parameters<Statements['claimSearchWork']>
  ): Promise<Awaited<ReturnType<Statements['claimSearchWork']>>> {
    return this.s.claimSearchWork(...args);
  }

  async searchWorkDone(
    ...args: Parameters<Statements['searchWorkDone']>
  ): Promise<Awaited<ReturnType<Statements['searchWorkDone']>>> {
    return this.s.searchWorkDone(...args);
  }

  async searchIndexed(
    ...args: Parameters<Statements['searchIndexed']>
  ): Promise<Awaited<ReturnType<Statements['searchIndexed']>>> {
    return this.s.searchIndexed(...args);
  }

  async snippets(...args: Parameters<Statements['snippets']>): Promise<Awaited<ReturnType<Statements['snippets']>>> {
    return this.s.snippets(...args);
  }

  async indexable(...args: Parameters<Statements['indexable']>): Promise<Awaited<ReturnType<Statements['indexable']>>> {
    return this.s.indexable(...args);
  }

  async countIndexable(
    ...args: Parameters<Statements['countIndexable']>
  ): Promise<Awaited<ReturnType<Statements['countIndexable']>>> {
    return this.s.countIndexable(...args);
  }

  async setSearchText(
    ...args: Parameters<Statements['setSearchText']>
  ): Promise<Awaited<ReturnType<Statements['setSearchText']>>> {
    return this.s.setSearchText(...args);
  }

  async dropExpiredSearch(
    ...args: Parameters<Statements['dropExpiredSearch']>
  ): Promise<Awaited<ReturnType<Statements['dropExpiredSearch']>>> {
    return this.s.dropExpiredSearch(...args);
  }

  async reindexCursor(
    ...args: Parameters<Statements['reindexCursor']>
  ): Promise<Awaited<ReturnType<Statements['reindexCursor']>>> {
    return this.s.reindexCursor(...args);
  }

  async setReindexCursor(
    ...args: Parameters<Statements['setReindexCursor']>
  ): Promise<Awaited<ReturnType<Statements['setReindexCursor']>>> {
    return this.s.setReindexCursor(...args);
  }

  async session(...args: Parameters<Statements['session']>): Promise<Awaited<ReturnType<Statements['session']>>> {
    return this.s.session(...args);
  }

  async artifactsOf(
    ...args: Parameters<Statements['artifactsOf']>
  ): Promise<Awaited<ReturnType<Statements['artifactsOf']>>> {
    return this.s.artifactsOf(...args);
  }

  async grants(...args: Parameters<Statements['grants']>): Promise<Awaited<ReturnType<Statements['grants']>>> {
    return this.s.grants(...args);
  }

  async recipients(
    ...args: Parameters<Statements['recipients']>
  ): Promise<Awaited<ReturnType<Statements['recipients']>>> {
    return this.s.recipients(...args);
  }

  async listSessions(
    ...args: Parameters<Statements['listSessions']>
  ): Promise<Awaited<ReturnType<Statements['listSessions']>>> {
    return this.s.listSessions(...args);
  }

  async facets(...args: Parameters<Statements['facets']>): Promise<Awaited<ReturnType<Statements['facets']>>> {
    return this.s.facets(...args);
  }

  async countByHarness(
    ...args: Parameters<Statements['countByHarness']>
  ): Promise<Awaited<ReturnType<Statements['countByHarness']>>> {
    return this.s.countByHarness(...args);
  }

  async expiredArtifacts(
    ...args: Parameters<Statements['expiredArtifacts']>
  ): Promise<Awaited<ReturnType<Statements['expiredArtifacts']>>> {
    return this.s.expiredArtifacts(...args);
  }

  async markBlobDeleted(
    ...args: Parameters<Statements['markBlobDeleted']>
  ): Promise<Awaited<ReturnType<Statements['markBlobDeleted']>>> {
    return this.s.markBlobDeleted(...args);
  }

  async blobDeletionsDue(
    ...args: Parameters<Statements['blobDeletionsDue']>
  ): Promise<Awaited<ReturnType<Statements['blobDeletionsDue']>>> {
    return this.s.blobDeletionsDue(...args);
  }

  async blobDeleted(
    ...args: Parameters<Statements['blobDeleted']>
  ): Promise<Awaited<ReturnType<Statements['blobDeleted']>>> {
    return this.s.blobDeleted(...args);
  }

  async appendAudit(
    ...args: Parameters<Statements['appendAudit']>
  ): Promise<Awaited<ReturnType<Statements['appendAudit']>>> {
    return this.s.appendAudit(...args);
  }

  async appendAudits(
    ...args: Parameters<Statements['appendAudits']>
  ): Promise<Awaited<ReturnType<Statements['appendAudits']>>> {
    return this.s.appendAudits(...args);
  }

  async auditEvents(
    ...args: Parameters<Statements['auditEvents']>
  ): Promise<Awaited<ReturnType<Statements['auditEvents']>>> {
    return this.s.auditEvents(...args);
  }
}
