/**
 * What the Control API keeps, whatever the database: users, governance revisions, client status reports, and captured
 * sessions with their artifacts and sharing (the records: records.ts). One interface, one store over either backend
 * (store.ts; sqlite.ts, the embedded default; postgres.ts, for any number of stateless replicas): the routes never
 * see SQL. Times are milliseconds since the epoch.
 *
 * A captured session is one harness session of one owner (owner, harness, native session id); each upload of it is an
 * artifact. The newest presigned artifact that completed is the session's current one (`current_artifact_id`): an
 * artifact that completes after a newer one had is superseded at once, so a retried upload never rolls a session back
 * (these rules, once for both backends: uploads.ts).
 */
import type {
  Artifact,
  AttemptLimit,
  AuditActor,
  AuditEvent,
  AuditQuery,
  BrowserSession,
  CapturedSession,
  ClientStatusQuery,
  ClientStatusRecord,
  DeviceCode,
  DevicePoll,
  Grant,
  IssuedTokens,
  NewArtifact,
  NewAuditEvent,
  NewDeviceCode,
  OidcLogin,
  PolicyRevision,
  PresignResult,
  PublishOptions,
  RoleChange,
  SearchIndexed,
  SessionQuery,
  SharingMode,
  SnippetMarks,
  TokenCaller,
  TokenLifetimes,
  User,
} from './records.js';

export * from './records.js';

export interface ControlStore {
  readonly backend: 'sqlite' | 'postgres';
  /** Where the data lives, for messages (a file, or a database URL without its password). */
  readonly location: string;
  close(): Promise<void>;
  /** Throws when the database cannot be used now (for `GET /ready`). */
  check(): Promise<void>;
  /** The connection pool's state, for metrics (PostgreSQL; SQLite has one connection and no pool). */
  poolStats?(): { total: number; idle: number; waiting: number };
  /** The organisation this server is (made once, at the first start). */
  organizationId(): Promise<string>;

  /**
   * A user with a personal token (every scope; an administrator's includes `admin`), its label saying who made it
   * (`control-plane users add` unless `tokenLabel` says otherwise). With `by`, the audit log records who added them
   * and the token, in the same transaction (so do the other changes below that take `by`).
   */
  addUser(
    email: string,
    isAdmin: boolean,
    now: number,
    options?: { by?: AuditActor | undefined; tokenLabel?: string },
  ): Promise<{ user: User; token: string }>;
  /** An administrator, only when there is no user at all (the first start); undefined otherwise. Its token is labelled
   * so. */
  addFirstAdmin(email: string, now: number, by?: AuditActor): Promise<{ user: User; token: string } | undefined>;
  /** The user of `email`, made (a member, without a token) when there is none: a first sign-in. */
  provisionUser(email: string, now: number, by?: AuditActor): Promise<User>;
  /**
   * Makes `userId` an administrator or a member. Asked by a person (`change.by` a user), only while they still are an
   * administrator (false otherwise): checked and changed in one transaction, so two administrators who demote each
   * other at once leave one. A role that changed is in the audit log, by `change.by` at `change.now`.
   */
  setAdmin(userId: string, isAdmin: boolean, change?: RoleChange): Promise<boolean>;
  userById(id: string): Promise<User | undefined>;
  userByEmail(email: string): Promise<User | undefined>;
  listUsers(): Promise<User[]>;
  /** Sign-ins and their tokens, device codes, browser sessions and sign-in links. */
  readonly identity: IdentityStore;
  /** At most `limit` users but `excludeId` whose e-mail contains `q` (case-insensitive), by e-mail. */
  searchUsers(q: string | undefined, excludeId: string | undefined, limit: number): Promise<User[]>;

  /**
   * Publishes `body` as a new revision with a fresh id; `text` is the document it was read from, kept as published.
   * With `by`, the audit log records it with what changed since the revision it follows (publishes run one after the
   * other, so that one is exact).
   */
  publishPolicy(body: Record<string, unknown>, now: number, options?: PublishOptions): Promise<PolicyRevision>;
  /** Publishes `body` only when no revision exists yet (a first start, however many replicas start at once). */
  publishFirstPolicy(
    body: Record<string, unknown>,
    now: number,
    options?: PublishOptions,
  ): Promise<PolicyRevision | undefined>;
  /**
   * Publishes `body` only while `base` is the current revision (undefined: none yet), checked and published in one
   * transaction; undefined when another revision was published since `base` (from any replica).
   */
  publishPolicyOver(
    body: Record<string, unknown>,
    base: string | undefined,
    now: number,
    options?: PublishOptions,
  ): Promise<PolicyRevision | undefined>;
  /** Where agents reach the servers (every `serve` records it; `policy publish` checks presign URLs against it). */
  publicUrl(): Promise<string | undefined>;
  setPublicUrl(url: string): Promise<void>;
  currentPolicy(): Promise<PolicyRevision | undefined>;
  /** The revision with this id, current or not. */
  policyRevision(revision: string): Promise<PolicyRevision | undefined>;

  /** Keeps `report` as the latest of the machine; the person's other machines beyond MAX_MACHINES_PER_USER go, least
   * recent first. */
  recordClientStatus(userId: string, instanceId: string, report: unknown, now: number): Promise<void>;
  /** A page of the machines' latest reports, and how many there are in all. */
  clientStatuses(query: ClientStatusQuery): Promise<{ items: ClientStatusRecord[]; total: number }>;

  presign(input: NewArtifact, now: number, retentionMs: number): Promise<PresignResult>;
  artifact(id: string): Promise<{ artifact: Artifact; session: CapturedSession } | undefined>;
  /**
   * Whether bytes PUT to `blobKey` may be kept: it is the key of an artifact that exists (so its session does), is
   * pending or verified (a verified one's URL can only carry the same bytes again), and is before its retention
   * deadline with its object not collected. A signed URL outlives what it was signed for (a deleted session, an expired
   * or failed upload); the stores that answer their own URLs ask this before they write.
   */
  uploadWanted(blobKey: string, now: number): Promise<boolean>;
  markFailed(artifactId: string, reason: string, now: number): Promise<void>;
  /**
   * Marks the artifact verified: current when no newer artifact of its session completed, else superseded. When it
   * becomes current, the session's search entry takes its title, summary and place in the same transaction, so a search
   * finds it by them as soon as complete answers; what a session bundle says is read later (it is queued for the
   * indexer), and until then the entry keeps the text of the upload before (none for a first upload, and none for an
   * upload that is no session bundle). Undefined when there is no such artifact (its session deleted meanwhile).
   */
  complete(artifactId: string, now: number, retentionMs: number): Promise<Artifact | undefined>;
  /**
   * Queued sessions whose bundle is to be read for search, each claimed until `now + leaseMs` (not handed out again
   * meanwhile); an expired artifact is never handed out (gc removes its queue entry).
   */
  claimSearchWork(now: number, leaseMs: number, limit: number): Promise<{ session_id: string; artifact: Artifact }[]>;
  /** The session's text from `artifactId` is indexed (or cannot be): its queue entry goes, unless a newer upload queued
   * it again. */
  searchWorkDone(sessionId: string, artifactId: string): Promise<void>;
  /**
   * The indexer's results for claimed sessions, in one transaction: each text written as setSearchText writes it (only
   * while its artifact is still current and not expired at `now`), and each queue entry gone as searchWorkDone takes
   * it.
   */
  searchIndexed(done: readonly SearchIndexed[], now: number): Promise<void>;
  /**
   * A short passage of each session's search entry around what `q` matches (`marks` around each match: `[` and `]`
   * unless given), by id; none for a session whose current artifact is expired at `now`.
   */
  snippets(sessionIds: readonly string[], q: string, now: number, marks?: SnippetMarks): Promise<Map<string, string>>;
  /** Sessions with a current artifact, by id after `afterId`, for `reindex`; and how many there are in all. */
  indexable(afterId: string, limit: number): Promise<{ session_id: string; artifact: Artifact }[]>;
  countIndexable(): Promise<number>;
  /**
   * Replaces a session's search entry with `text` and its current artifact's title and summary, when `artifactId` is
   * still current and not expired at `now`; false otherwise.
   */
  setSearchText(sessionId: string, artifactId: string, text: string, now: number): Promise<boolean>;
  /**
   * Removes the search entry (what its bundle says, and the title, summary and place indexed with it) and the indexer's
   * queue entry of every session whose current artifact is expired at `now`; how many entries went. A search already
   * leaves such sessions out from their deadline on; this is gc's, so that their text is not kept either.
   */
  dropExpiredSearch(now: number): Promise<number>;
  /** Where an interrupted `reindex` goes on from (a session id); undefined: from the start. */
  reindexCursor(): Promise<string | undefined>;
  setReindexCursor(after: string | undefined): Promise<void>;
  session(id: string): Promise<CapturedSession | undefined>;
  /** Every artifact of the session, newest first. */
  artifactsOf(sessionId: string): Promise<Artifact[]>;
  /** Whether `viewer` may see the session: owner, administrator, or, once it has a verified artifact, workspace sharing
   * or a grant. */
  canView(session: CapturedSession, viewer: User): Promise<boolean>;
  /** The user ids the session is shared with by name. */
  grants(sessionId: string): Promise<string[]>;
  /** Who the session reaches: every member but the owner (workspace), its grants (selected), nobody (private). */
  recipients(session: CapturedSession): Promise<User[]>;
  setSharing(sessionId: string, mode: SharingMode, userIds: readonly string[]): Promise<void>;
  /** Sessions with a completed artifact `viewer` may see (administrators: all; picker mode: owned or shared). */
  listSessions(
    viewer: User,
    query: SessionQuery,
    now: number,
  ): Promise<{ sessions: CapturedSession[]; total?: number }>;
  facets(
    viewer: User,
    userQ: string | undefined,
    selectedUserId: string | undefined,
  ): Promise<{ users: User[]; harnesses: string[] }>;
  /** How many sessions `query` selects for `viewer`, by harness (a search counts at most MAX_SEARCH_TOTAL). */
  countByHarness(
    viewer: User,
    query: Omit<SessionQuery, 'sort' | 'limit'>,
    now: number,
  ): Promise<Record<string, number>>;

  /** Artifacts past their retention deadline whose object is still stored. */
  expiredArtifacts(now: number, limit: number): Promise<Artifact[]>;
  markBlobDeleted(artifactId: string): Promise<void>;

  /**
   * Deletes a captured session with every artifact, grant and (later) index entry, and records `audit` with it, in
   * one transaction. The objects are not the database's: their keys go into a queue of objects to delete, and are
   * answered for the caller to delete now (`blobDeleted` each). Every key is due at once and once more at
   * `pendingUntil` (when no upload URL signed for it can deliver bytes any more), whatever its artifact's status: a URL
   * signed for an upload that completed or failed still writes to an S3 bucket, so bytes that land after the delete are
   * deleted too. Undefined when there is no such session (deleted meanwhile).
   */
  deleteSession(
    sessionId: string,
    audit: NewAuditEvent,
    now: number,
    pendingUntil: number,
  ): Promise<string[] | undefined>;
  /** Queued object keys whose deletion is due (gc). */
  blobDeletionsDue(now: number, limit: number): Promise<string[]>;
  /** The due object is gone: its queue entry goes too, or is due again at its `pendingUntil` when that is still to
   * come. */
  blobDeleted(key: string, now: number): Promise<void>;

  /** Appends to the audit log (append-only: the database refuses to change or remove an entry). */
  appendAudit(event: NewAuditEvent, now: number): Promise<void>;
  /** Appends entries in this order, all or none. */
  appendAudits(events: readonly NewAuditEvent[], now: number): Promise<void>;
  /** Audit entries in the order they were written, after `query.after`. */
  auditEvents(query: AuditQuery): Promise<AuditEvent[]>;
}

export interface IdentityStore {
  /** The caller of an access or personal token; `expired` for an access token past its time; undefined otherwise. */
  authenticate(token: string, now: number): Promise<TokenCaller | 'expired' | undefined>;
  /** A new personal token for `userId` (never expires; revocable). */
  addPersonalToken(
    userId: string,
    scopes: readonly string[],
    label: string,
    now: number,
    by?: AuditActor,
  ): Promise<{ token: string; grant: Grant }>;
  /** Sign-ins of one user (or everyone's), newest first; revoked ones too. */
  grants(userId: string | undefined): Promise<Grant[]>;
  grant(id: string): Promise<Grant | undefined>;
  /** Revokes a sign-in: every token of it fails from now on. Undefined when there is no such grant. */
  revokeGrant(id: string, now: number, by?: AuditActor): Promise<Grant | undefined>;
  /** Revokes the sign-in a token (access, refresh or personal) belongs to; false when no sign-in has it. */
  revokeToken(token: string, now: number): Promise<boolean>;

  /** False when its user code is taken (the caller makes another). */
  createDeviceCode(code: NewDeviceCode): Promise<boolean>;
  /** The device code a person typed (normalised), while it is pending and not expired. */
  pendingDeviceCode(userCode: string, now: number): Promise<DeviceCode | undefined>;
  /** Approves (for `userId`) or denies a pending code; false when it is not pending any more. */
  decideDeviceCode(userCode: string, userId: string | undefined, now: number): Promise<boolean>;
  /**
   * A poll of the token endpoint: its answer, and the tokens (once: the code goes with them) when approved; `admin`
   * among the scopes asked for is granted only when the person who approved is an administrator.
   */
  pollDeviceCode(
    deviceHash: string,
    clientId: string,
    now: number,
    lifetimes: TokenLifetimes,
    slowDownMs: number,
  ): Promise<DevicePoll>;
  /** New tokens for a refresh token (which is spent); a spent one used again revokes its whole sign-in. */
  refresh(
    refreshToken: string,
    clientId: string,
    now: number,
    lifetimes: TokenLifetimes,
  ): Promise<IssuedTokens | undefined>;

  /**
   * Takes one of the attempts `key` has left in its window (a new window starts once the last is over): the window's
   * end when one was left, undefined when none was. One statement checks and counts, so however many requests and
   * replicas ask at once, no more than `limit.allowed` are taken in a window.
   */
  takeAttempt(key: string, limit: AttemptLimit, now: number): Promise<number | undefined>;
  /** Gives back an attempt taken in the window ending `windowEnd` (it succeeded, and only failures count); none once
   * that window is over. */
  returnAttempt(key: string, windowEnd: number): Promise<void>;

  createBrowserSession(userId: string, now: number, ttlMs: number): Promise<{ token: string; csrf: string }>;
  browserSession(token: string, now: number): Promise<BrowserSession | undefined>;
  endBrowserSession(token: string): Promise<void>;
  /** A one-time sign-in link's secret for `userId`, good until `now + ttlMs`. */
  createSignInLink(userId: string, now: number, ttlMs: number, by?: AuditActor): Promise<string>;
  /** The user a sign-in link names, once: the link is spent. */
  useSignInLink(token: string, now: number): Promise<User | undefined>;

  /** The user an identity provider's subject signed in as before. */
  oidcUser(issuer: string, subject: string): Promise<User | undefined>;
  /** Binds a provider's subject to a user; false when that user is bound to another subject of the provider. */
  bindOidcSubject(issuer: string, subject: string, userId: string): Promise<boolean>;
  /** A browser sign-in at the identity provider under way: what its callback needs, kept by the hash of its state. */
  createOidcLogin(state: string, login: OidcLogin, now: number, ttlMs: number): Promise<void>;
  /** The sign-in of `state`, once: it is deleted as it is read; undefined when unknown or expired. */
  takeOidcLogin(state: string, now: number): Promise<OidcLogin | undefined>;

  /** Deletes expired device codes, sessions, links and tokens, and sign-ins lapsed or revoked long ago; how many rows.
   * */
  purgeExpired(now: number): Promise<number>;
}
