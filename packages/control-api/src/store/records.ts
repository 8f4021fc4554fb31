/**
 * What the store's records are, whatever the database: users, governance revisions, client status reports, captured
 * sessions with their artifacts, sign-ins and their tokens, audit entries; and the constants and helpers both backends
 * read them by. The interfaces over them are in types.ts.
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
