/**
 * What the Control API keeps, whatever the database: users, governance revisions, client status reports, and captured
 * sessions with their artifacts and sharing. One interface, two backends (sqlite.ts, the embedded default; postgres.ts,
 * for any number of stateless replicas): the routes never see SQL. Times are milliseconds since the epoch.
 *
 * A captured session is one harness session of one owner (owner, harness, native session id); each upload of it is an
 * artifact. The newest presigned artifact that completed is the session's current one (`current_artifact_id`): an
 * artifact that completes after a newer one had is superseded at once, so a retried upload never rolls a session back
 * (these rules, once for both backends: uploads.ts).
 */
import { ARTIFACT_FORMAT } from '@blue-agent/contract/bundle/limits.js';
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';

export const ARTIFACT_STATUSES = ['pending', 'complete', 'superseded', 'failed'] as const;
export type ArtifactStatus = (typeof ARTIFACT_STATUSES)[number];
export const SHARING_MODES = ['private', 'workspace', 'selected'] as const;
export type SharingMode = (typeof SHARING_MODES)[number];
/** The profile a presign without one is recorded under (as Blue's server does). */
export const LEGACY_PROFILE = 'legacy';
export const LEGACY_FORMAT = 'legacy-raw';

export interface User {
  id: string;
  email: string;
  is_admin: boolean;
  created_at: number;
}

export interface PolicyRevision {
  /** The revision id (a UUID string; revisions published before ids were strings keep their number as text). */
  revision: string;
  /** The document `GET /governance-config` serves. */
  body: Record<string, unknown>;
  /** The text as it was published (YAML or JSON, comments kept); null for revisions published before texts were kept.
   * */
  text: string | null;
  etag: string;
  created_at: number;
}

/** How a revision is published: the text it was read from (kept as published), and who published it (audited). */
export interface PublishOptions {
  text?: string | undefined;
  by?: AuditActor | undefined;
}

/** An upload of a session: its bytes, how it was captured, and where it is in its life. */
export interface Artifact {
  id: string;
  session_id: string;
  /** Order of presigns within the session (1, 2, ...). */
  revision: number;
  status: ArtifactStatus;
  size_bytes: number;
  sha256: string;
  content_type: string;
  compatibility_profile: string;
  artifact_format: string;
  resumable: boolean;
  cwd: string | null;
  title: string | null;
  summary: string | null;
  captured_at_unix_ms: number | null;
  repository_root: string | null;
  repository_remote: string | null;
  blob_key: string;
  failure: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
  retention_deadline: number;
  blob_deleted: boolean;
}

/** A captured session with its owner, and its current artifact when it has one. */
export interface CapturedSession {
  id: string;
  owner_id: string;
  owner_email: string;
  harness: string;
  native_session_id: string;
  sharing_mode: SharingMode;
  current_artifact_id: string | null;
  created_at: number;
  updated_at: number;
  /** How many people it reaches: every other member (workspace), its grants (selected), none (private). */
  share_recipient_count: number;
  /** Words people gave a record they stored or import { ARTIFACT_FORMAT } from '../../bundle/limits.js';
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
imported (none for captured sessions). */
  tags: string[];
  current: Artifact | undefined;
}

/** Artifact formats whose stored object the indexer reads for what the session says: bundles and session records. */
export const READABLE_FORMATS: ReadonlySet<string> = new Set([ARTIFACT_FORMAT, RECORD_FORMAT]);

/** What a presign asks for: whose session, and the artifact's bytes and description. */
export interface NewArtifact
  extends Pick<
    Artifact,
    | 'sha256'
    | 'size_bytes'
    | 'content_type'
    | 'compatibility_profile'
    | 'artifact_format'
    | 'resumable'
    | 'cwd'
    | 'title'
    | 'summary'
    | 'captured_at_unix_ms'
    | 'repository_root'
    | 'repository_remote'
  > {
  owner_id: string;
  harness: string;
  native_session_id: string;
  /** Replaces the session's tags when given. */
  tags?: string[] | undefined;
}

export interface PresignResult {
  /** The artifact presigned (its `session_id` is the captured session's). */
  artifact: Artifact;
  /** created: a new artifact; reused: a pending or failed one of the same bytes, given a fresh URL; complete: nothing
   * to upload. */
  outcome: 'created' | 'reused' | 'complete';
}

/** What a snippet puts before and after each match: no space, comma, quote or `=` (PostgreSQL reads them in an option
 * list). */
export interface SnippetMarks {
  start: string;
  stop: string;
}

export interface SessionQuery {
  /** Picker mode: owned or shared sessions only (administrators included), resumable current artifacts not expired. */
  resumable?: boolean | undefined;
  /** Words (or a piece of an id, folder, title or summary) to search for: sessions whose current artifact is expired
   * never match. */
  q?: string | undefined;
  /** Session ids that start with this (lower-case hex and dashes). */
  id_prefix?: string | undefined;
  harness?: string | undefined;
  /** Sessions of any of these harnesses or providers. */
  harnesses?: readonly string[] | undefined;
  /** Sessions carrying this tag. */
  tag?: string | undefined;
  /** Sessions this user owns. */
  owner_id?: string | undefined;
  status?: ArtifactStatus | undefined;
  /** Inclusive lower bound of `updated_at`. */
  updated_from?: number | undefined;
  /** Exclusive upper bound of `updated_at`. */
  updated_before?: number | undefined;
  /** `relevance`: best full-text matches of `q` first (numbered mode), then newest. */
  sort: 'updated_desc' | 'updated_asc' | 'relevance';
  /** Cursor mode: after this session (newest first). */
  after_id?: string | undefined;
  offset?: number | undefined;
  limit: number;
  /** Numbered mode: also count every match. */
  count?: boolean | undefined;
}

export interface ClientStatusRecord {
  user_id: string;
  user_email: string;
  instance_id: string;
  report: unknown;
  received_at: number;
}

/**
 * The machines whose reports are kept per person: a report from one more replaces the report of the machine that
 * reported least recently. A person who reinstalls (a new instance id) is never refused, and a member who invents
 * machines only pushes out their own.
 */
export const MAX_MACHINES_PER_USER = 20;

/** One page of the machines' reports, by e-mail address, person and instance id (an order new reports keep). */
export interface ClientStatusQuery {
  user_id?: string | undefined;
  limit: number;
  offset: number;
}

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

/**
 * What a bearer token may do (its scopes): read the policy, read and write sessions, report client status, and
 * administer (users and their tokens, the audit log, every machine's status). OpenID's own scopes are accepted in a
 * request and carry no right here.
 */
export const API_SCOPES = ['governance:read', 'session:read', 'session:write', 'client-status:write', 'admin'] as const;
export type ApiScope = (typeof API_SCOPES)[number];
/** The scopes of a sign-in a person did not narrow: everything but `admin`, which an administrator asks for. */
export const MEMBER_SCOPES: readonly ApiScope[] = API_SCOPES.filter((s) => s !== 'admin');

/** A sign-in that holds tokens: a personal token (`users add`, `tokens add`), or a device-flow sign-in. */
export interface Grant {
  id: string;
  user_id: string;
  user_email: string;
  kind: 'personal' | 'device';
  scopes: string[];
  /** What it is: who made it and for what (a device sign-in's client). */
  label: string;
  created_at: number;
  last_used_at: number | null;
  /** When its refresh token lapses (a device sign-in); null: never (a personal token). */
  expires_at: number | null;
  revoked_at: number | null;
}

/** The caller a bearer token names: the user and what the token may do. */
export interface TokenCaller {
  user: User;
  grant_id: string;
  scopes: readonly string[];
}

/** Tokens issued to a device-flow sign-in (or by a refresh): the access token expires, the refresh token replaces it.
 * */
export interface IssuedTokens {
  access_token: string;
  refresh_token: string;
  access_expires_at: number;
  scopes: string[];
  grant_id: string;
}

export interface TokenLifetimes {
  accessMs: number;
  /** A sign-in lapses when it is not refreshed for this long. */
  refreshMs: number;
}

export interface NewDeviceCode {
  /** SHA-256 of the device code (the code itself is never stored). */
  device_hash: string;
  /** Normalised: upper-case letters, no dash. */
  user_code: string;
  client_id: string;
  scopes: string[];
  /** What asked, for the approval page and the sign-in's label (bounded, printable). */
  client_label: string;
  created_at: number;
  expires_at: number;
  interval_ms: number;
}

export interface DeviceCode extends Omit<NewDeviceCode, 'device_hash'> {
  status: 'pending' | 'approved' | 'denied';
  user_id: string | null;
}

export type DevicePoll =
  | { outcome: 'unknown' | 'pending' | 'slow_down' | 'expired' | 'denied' }
  | { outcome: 'approved'; tokens: IssuedTokens };

export interface BrowserSession {
  user: User;
  /** The session's CSRF token, sent back with every form. */
  csrf: string;
  expires_at: number;
}

/** What the identity provider's callback needs: the PKCE verifier, the nonce, and where the person was going. */
export interface OidcLogin {
  code_verifier: string;
  nonce: string;
  next: string;
}

/** A limit on attempts: at most `allowed` in a window of `windowMs`, which starts with its first attempt. */
export interface AttemptLimit {
  allowed: number;
  windowMs: number;
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

export const SESSION_AUDIT_ACTIONS = ['session.read', 'session.download', 'session.share', 'session.delete'] as const;
/** What administering the server does: policies, users and their roles, tokens, sign-in links. */
export const ADMIN_AUDIT_ACTIONS = [
  'policy.publish',
  'user.add',
  'user.role',
  'token.create',
  'token.revoke',
  'sign_in_link.create',
] as const;
export const AUDIT_ACTIONS = [...SESSION_AUDIT_ACTIONS, ...ADMIN_AUDIT_ACTIONS] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * Who did what the audit log records: a signed-in person; the local operator, running an administration command
 * (`blue-agent control-plane …`, `serve`'s first start) on the server's machine, named by their OS user; or the
 * organisation's identity provider (a first sign-in provisions a person, its group makes them an administrator).
 */
export type AuditActor =
  | { kind: 'user'; id: string; email: string }
  | { kind: 'cli'; name: string }
  | { kind: 'identity_provider'; issuer: string };

/** Who changes a role, and when; `group`: the identity provider's group that made the person an administrator. */
export interface RoleChange {
  by: AuditActor;
  now: number;
  group?: string;
}

/**
 * Who did what, and what it involved: to a session (a sharing's mode and recipients, an artifact's id, what of it an
 * administrator read: `page`, `detail`, `sharing`, `search`), or to the server's administration (store/audit.ts).
 */
export interface NewAuditEvent {
  actor: AuditActor;
  action: AuditAction;
  /** The session it concerns: session actions only. */
  session_id?: string;
  /** The session's owner then: it stays readable after the session and even the user are gone. */
  owner_id?: string;
  details: Record<string, unknown>;
}

export interface AuditEvent {
  /** Its place in the log: strictly increasing. */
  seq: number;
  at: number;
  actor_kind: AuditActor['kind'];
  /** A person's user id, the operator's OS user, or the identity provider's issuer. */
  actor_id: string;
  /** A person's e-mail address (null for the others). */
  actor_email: string | null;
  action: AuditAction;
  session_id: string | null;
  owner_id: string | null;
  details: Record<string, unknown>;
}

export interface AuditQuery {
  /** Entries after this `seq` (cursor paging). */
  after?: number | undefined;
  limit: number;
  action?: AuditAction | undefined;
  actor_id?: string | undefined;
  session_id?: string | undefined;
}

/**
 * An artifact past its retention deadline, or whose object gc has deleted, is expired — even while its object is
 * still stored: it can no longer be downloaded (410) and is never resumable.
 */
export function isExpired(artifact: Pick<Artifact, 'blob_deleted' | 'retention_deadline'>, now: number): boolean {
  return artifact.blob_deleted || now >= artifact.retention_deadline;
}

/**
 * The words of a search, as both full-text indexes take them: runs of letters and digits, lower-cased, at most 16 of
 * at most 64 characters each; every word must match, the last also as a prefix (what is typed so far).
 */
export function searchWords(q: string): string[] {
  return (q.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).slice(0, 16).map((w) => w.slice(0, 64));
}

/**
 * A search counts its matches up to this many: `total` says at most this, and a search that matches more is in
 * newest-first order, not ranked (ranking every session that holds a common word costs more than it tells).
 */
export const MAX_SEARCH_TOTAL = 1_000;

/** The label of the token a user is made with: what made it, as the token lists show it. */
export const USERS_ADD_TOKEN_LABEL = 'token from users add';
export const FIRST_ADMIN_TOKEN_LABEL = 'token made by serve for the first administrator';

/** A snippet's marks for people who read it as text (the API, the CLI): the matched words between `[` and `]`. */
export const BRACKETS: SnippetMarks = { start: '[', stop: ']' };

/**
 * The words of where a session ran, its native id and its repository, for search: path components, id parts, the
 * repository's root and remote.
 */
export function searchPlace(
  artifact: Pick<Artifact, 'cwd' | 'repository_root' | 'repository_remote'>,
  nativeSessionId: string,
): string {
  return [artifact.cwd, nativeSessionId, artifact.repository_root, artifact.repository_remote]
    .map((part) => part ?? '')
    .join(' ')
    .replace(/[\p{P}\p{S}]+/gu, ' ')
    .trim();
}

/** What the indexer read of one claimed session: the text of its queued artifact ('' when the bundle cannot be read).
 * */
export interface SearchIndexed {
  session_id: string;
  artifact_id: string;
  text: string;
}
