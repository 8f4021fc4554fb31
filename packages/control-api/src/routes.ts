/**
 * The Control API's routes, as Blue's service contract names them (docs/contract.md). Each handler gets the caller
 * (public routes: none) and answers JSON described by schemas/control-*.schema.json. Access rules live here: owners do
 * everything with their sessions, administrators see and download everything, people a session is shared with may
 * view, download and resume it but never change its sharing. A session the caller may not see is answered 404, not
 * 403, so ids of other people's sessions cannot be probed.
 */
import type { IncomingMessage } from 'node:http';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import type { AuditEventPage } from '@blue-agent/contract/schema/generated/control-audit-events.js';
import type { CapturedSession as CapturedSessionView } from '@blue-agent/contract/schema/generated/control-captured-session.js';
import type { CapturedSessionList } from '@blue-agent/contract/schema/generated/control-captured-sessions.js';
import type { ClientStatusReport } from '@blue-agent/contract/schema/generated/control-client-status.js';
import type { ClientStatusList } from '@blue-agent/contract/schema/generated/control-client-statuses.js';
import { MAX_CLIENT_STATUS_BYTES } from '@blue-agent/contract/schema/limits.js';
import type { CompleteRequest } from '@blue-agent/contract/schema/generated/control-complete.js';
import { HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';
import type { PresignRequest } from '@blue-agent/contract/schema/generated/control-presign.js';
import type { SessionDetail } from '@blue-agent/contract/schema/generated/control-session-detail.js';
import type { SharingRequest } from '@blue-agent/contract/schema/generated/control-sharing.js';
import {
  auditAdminRead,
  changeSharing,
  downloadLink,
  removeSession,
  searchSnippets,
  snippetText,
  visibleSession,
  type Snippet,
} from './session-actions.js';
import { deviceAuthorization, revocationEndpoint, tokenEndpoint } from './identity/oauth.js';
import { listUsers, listUserTokens, revokeUserToken } from './identity/users.js';
import { accountPage, revokeOwnToken } from './web/account.js';
import { adminAudit, adminClients, adminHome, adminRevokeToken, adminSetRole, adminUsers } from './web/admin.js';
import { adminPolicy, adminPolicyPreview, adminPolicyPublish } from './web/policy.js';
import { serveAsset } from './web/assets.js';
import { sessionDelete, sessionDownload, sessionPage, sessionSharing, sessionsPage } from './web/sessions.js';
import { redirect as redirectPage } from './web/http.js';
import { deviceDecision, devicePage, signInLinkPage, signInPage, signInWithLink, signOut } from './web/sign-in.js';
import {
  CLIENT_CAPABILITIES_HEADER,
  CONTRACT_VERSION_HEADER,
  REQUIRED_CLIENT_VERSION_HEADER,
  requiredClientVersion,
  unmetContract,
} from './governance.js';
import { caller, type ProviderSignIn, type Request, type RouteContext } from './route-context.js';
import {
  badRequest,
  forbidden,
  HttpError,
  notFound,
  readJsonBody,
  sendEmpty,
  sendJson,
  sendText,
  validateBody,
  type Validate,
} from './http.js';
import {
  ARTIFACT_STATUSES,
  AUDIT_ACTIONS,
  auditSummary,
  isExpired,
  LEGACY_FORMAT,
  LEGACY_PROFILE,
  type Artifact,
  type ArtifactStatus,
  API_SCOPES,
  type ApiScope,
  type AuditAction,
  type CapturedSession,
  type SessionQuery,
} from './store/index.js';

/** The harness names the schemas accept (schemas/harness-name.schema.json). */
const HARNESS_NAMES: readonly string[] = HARNESSES;
export const MAX_QUERY_LENGTH = 200;
export const DEFAULT_CURSOR_PAGE = 50;
export const DEFAULT_NUMBERED_PAGE = 25;
export const MAX_PAGE = 100;
export const DEFAULT_AUDIT_PAGE = 100;
/** The scopes discovery names: OpenID's (accepted, no right of their own) and the API's (store/types.ts). */
export const SCOPES = ['openid', 'profile', 'email', 'offline_access', ...API_SCOPES];

type Handler = (rc: RouteContext, req: Request) => Promise<void>;

export interface Route {
  /** The route as Fastify matches it (`:id` with its pattern). */
  path: string;
  /** The same, for telling 405 from 404. */
  pattern: RegExp;
  /** Answered without a bearer token. */
  public: boolean;
  /** The path as people read it (`/session-uploads/{id}`): the route's label in metrics. */
  template: string;
  methods: Partial<Record<string, Handler>>;
  /** The scope a token needs, per method (`any`: any valid token); public routes have none. */
  scopes: Partial<Record<string, ApiScope | 'any'>>;
  /** A browser page (its own session cookie, forms with CSRF): errors are answered as pages. */
  page: boolean;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const ID = `:id(^${UUID}$)`;
/** A session as a page's address names it: its id, or the start of it as the CLI takes it (the page resolves it). */
const SESSION_REF = ':id(^[0-9A-Fa-f-]{1,36}$)';
/** A route's parameters as a pattern (405 or 404) and as people read them (metrics). */
const PARAM = /:id\(\^(.+?)\$\)/g;

/** The path as a regular expression: its text as it is, each parameter as its own pattern. */
function pathPattern(path: string): RegExp {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  let source = '';
  let last = 0;
  for (const match of path.matchAll(PARAM)) {
    source += `${literal(path.slice(last, match.index))}(?:${match[1]})`;
    last = match.index + match[0].length;
  }
  return new RegExp(`^${source}${literal(path.slice(last))}$`);
}

/** A route; each method of one that is not public names the scope it needs (`[handler, scope]`). */
function route(
  path: string,
  methods: Partial<Record<string, Handler | [Handler, ApiScope | 'any']>>,
  options: { public?: boolean; page?: boolean } = {},
): Route {
  const handlers: Route['methods'] = {};
  const scopes: Route['scopes'] = {};
  for (const [method, entry] of Object.entries(methods)) {
    if (entry === undefined) continue;
    if (Array.isArray(entry)) [handlers[method], scopes[method]] = entry;
    else if (options.public === true || options.page === true) handlers[method] = entry;
    else throw new Error(`${method} ${path} names no scope`);
  }
  return {
    path,
    pattern: pathPattern(path),
    public: options.public === true || options.page === true,
    template: path.replace(PARAM, '{id}'),
    methods: handlers,
    scopes,
    page: options.page === true,
  };
}

export const ROUTES: readonly Route[] = [
  route('/.well-known/metaharness', { GET: discovery }, { public: true }),
  route('/health', { GET: health }, { public: true }),
  route('/ready', { GET: ready }, { public: true }),
  route('/metrics', { GET: metricsText }, { public: true }),
  route('/api/auth/device/code', { POST: deviceAuthorization }, { public: true }),
  route('/api/auth/oauth2/token', { POST: tokenEndpoint }, { public: true }),
  route('/api/auth/oauth2/revoke', { POST: revocationEndpoint }, { public: true }),
  route('/users', { GET: [listUsers, 'admin'] }),
  // A token that may only report status or read the policy cannot see or end its person's other sign-ins.
  route(`/users/${ID}/tokens`, { GET: [listUserTokens, 'session:read'] }),
  route(`/tokens/${ID}`, { DELETE: [revokeUserToken, 'session:write'] }),
  route('/auth/me', { GET: [authMe, 'any'] }),
  route('/governance-config', { GET: [governanceConfig, 'governance:read'] }),
  route('/governance-config/events', { GET: [governanceEvents, 'governance:read'] }),
  route('/harness-metadata', { GET: [harnessMetadata, 'governance:read'] }),
  route('/client-status', { POST: [clientStatus, 'client-status:write'], GET: [listClientStatus, 'admin'] }),
  route('/session-uploads/presign', { POST: [presign, 'session:write'] }),
  route('/session-uploads/facets', { GET: [facets, 'session:read'] }),
  route('/session-uploads/members', { GET: [members, 'session:read'] }),
  route('/session-uploads', { GET: [listSessions, 'session:read'] }),
  route(`/session-uploads/${ID}`, { GET: [getSession, 'session:read'], DELETE: [deleteSession, 'session:write'] }),
  route(`/session-uploads/${ID}/complete`, { POST: [complete, 'session:write'] }),
  route(`/session-uploads/${ID}/download`, { POST: [download, 'session:read'] }),
  route(`/session-uploads/${ID}/sharing`, { GET: [getSharing, 'session:read'], PUT: [putSharing, 'session:write'] }),
  route('/audit-events', { GET: [auditEvents, 'admin'] }),
  // Browser pages: signed in by their own session cookie (web/http.ts), never by a bearer token.
  route('/', { GET: home }, { page: true }),
  route('/assets/:name', { GET: serveAsset }, { page: true }),
  route('/sign-in', { GET: signInPage }, { page: true }),
  route('/sign-out', { POST: signOut }, { page: true }),
  route('/auth/link', { GET: signInLinkPage, POST: signInWithLink }, { page: true }),
  route('/auth/oidc/start', { GET: (rc, req) => withOidc(rc).start(rc, req) }, { page: true }),
  route('/auth/oidc/callback', { GET: (rc, req) => withOidc(rc).callback(rc, req) }, { page: true }),
  route('/device', { GET: devicePage, POST: deviceDecision }, { page: true }),
  route('/account', { GET: accountPage }, { page: true }),
  route('/sessions', { GET: sessionsPage }, { page: true }),
  route(`/sessions/${SESSION_REF}`, { GET: sessionPage }, { page: true }),
  route(`/sessions/${ID}/sharing`, { POST: sessionSharing }, { page: true }),
  route(`/sessions/${ID}/delete`, { POST: sessionDelete }, { page: true }),
  route(`/sessions/${ID}/download`, { GET: sessionDownload }, { page: true }),
  route('/admin', { GET: adminHome }, { page: true }),
  route('/admin/clients', { GET: adminClients }, { page: true }),
  route('/admin/users', { GET: adminUsers }, { page: true }),
  route(`/admin/users/${ID}/role`, { POST: adminSetRole }, { page: true }),
  route(`/admin/tokens/${ID}/revoke`, { POST: adminRevokeToken }, { page: true }),
  route('/admin/audit', { GET: adminAudit }, { page: true }),
  route('/admin/policy', { GET: adminPolicy }, { page: true }),
  route('/admin/policy/preview', { POST: adminPolicyPreview }, { page: true }),
  route('/admin/policy/publish', { POST: adminPolicyPublish }, { page: true }),
  route(`/account/tokens/${ID}/revoke`, { POST: revokeOwnToken }, { page: true }),
];

function withOidc(rc: RouteContext): ProviderSignIn {
  if (rc.oidc === undefined)
    throw new HttpError(
      404,
      'not_found',
      'this server signs people in with sign-in links only: it has no identity provider configured',
    );
  return rc.oidc;
}

/** GET /: the sessions. */
async function home(_rc: RouteContext, req: Request): Promise<void> {
  redirectPage(req.reply, '/sessions');
}

// System

async function discovery(rc: RouteContext, req: Request): Promise<void> {
  const base = rc.publicUrl();
  sendJson(
    req.reply,
    200,
    {
      version: 1,
      control_api_url: base,
      oauth: { issuer: `${base}/api/auth`, client_id: 'blue-agent', scopes: SCOPES },
    },
    { 'cache-control': 'no-cache' },
  );
}

async function health(_rc: RouteContext, req: Request): Promise<void> {
  sendText(req.reply, 200, 'ok');
}

/** Ready: the database answers with a schema this server knows, and the blob store is usable. */
/** `GET /metrics`: Prometheus' text format, public as in Blue's contract (counts and latencies, nothing of a user's).
 * */
async function metricsText(rc: RouteContext, req: Request): Promise<void> {
  req.reply
    .code(200)
    .header('cache-control', 'no-store')
    .type(rc.metrics.contentType)
    .send(await rc.metrics.render());
}

async function ready(rc: RouteContext, req: Request): Promise<void> {
  try {
    await rc.store.check();
  } catch (error) {
    sendText(
      req.reply,
      503,
      `not ready: ` +
        `${error instanceof Error && /schema version/.test(error.message) ? 'the database schema is newer than this server' : 'the database is unavailable'}`,
    );
    return;
  }
  try {
    await rc.blobs.check?.();
  } catch {
    sendText(req.reply, 503, 'not ready: the blob store is unavailable');
    return;
  }
  sendText(req.reply, 200, 'ready');
}

async function authMe(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const policy = await rc.store.currentPolicy();
  sendJson(req.reply, 200, {
    id: user.id,
    sub: user.id,
    email: user.email,
    org_id: await rc.store.organizationId(),
    role: user.is_admin ? 'admin' : 'member',
    expires_at: null,
    current_revision: policy?.revision ?? null,
  });
}

// Governance

async function governanceConfig(rc: RouteContext, req: Request): Promise<void> {
  caller(req);
  const policy = await rc.store.currentPolicy();
  if (policy === undefined) throw new HttpError(404, 'no_policy', 'no governance policy has been published yet');
  const pin = requiredClientVersion(policy.body);
  const pinHeader: Record<string, string> = pin === undefined ? {} : { [REQUIRED_CLIENT_VERSION_HEADER]: pin };
  const unmet = unmetContract(
    policy.body,
    header(req.raw, CONTRACT_VERSION_HEADER),
    header(req.raw, CLIENT_CAPABILITIES_HEADER),
  );
  if (unmet !== undefined) throw new HttpError(426, 'client_upgrade_required', unmet, pinHeader);
  const headers = { etag: policy.etag, 'cache-control': 'no-cache', ...pinHeader };
  if (etagMatches(header(req.raw, 'if-none-match'), policy.etag)) {
    sendEmpty(req.reply, 304, headers);
    return;
  }
  sendJson(req.reply, 200, policy.body, headers);
}

/**
 * Server-sent events: the current revision at once, then each new one, as Blue's server sends them
 * (`event: revision`, `id: <revision>`, `data: {"revision":"<revision>"}`), with a keepalive comment between. Clients
 * fetch the document itself from `GET /governance-config`.
 */
async function governanceEvents(rc: RouteContext, req: Request): Promise<void> {
  caller(req);
  const limits = rc.eventStreams;
  if (rc.revisions.listeners >= limits.maxStreams) {
    throw new HttpError(
      503,
      'too_many_streams',
      'this server holds as many event streams as it may; retry later or poll GET /governance-config',
      { 'retry-after': '30' },
    );
  }
  const response = req.reply.raw;
  req.reply.hijack();
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    // Proxies that buffer responses (nginx) must pass each event on as it is written.
    'x-accel-buffering': 'no',
  });
  response.flushHeaders();
  await new Promise<void>((resolve) => {
    const write = (text: string) => {
      if (!response.destroyed) response.write(text);
    };
    const unsubscribe = rc.revisions.subscribe((revision) =>
      write(`event: revision\nid: ${revision}\ndata: ${JSON.stringify({ revision })}\n\n`),
    );
    const keepalive = setInterval(() => write(': keepalive\n\n'), limits.keepaliveMs);
    const lifetime = setTimeout(() => response.end(), Math.round(limits.maxLifetimeMs * (0.9 + Math.random() * 0.2)));
    response.once('close', () => {
      unsubscribe();
      clearInterval(keepalive);
      clearTimeout(lifetime);
      resolve();
    });
  });
}

function header(raw: IncomingMessage, name: string): string | undefined {
  const value = raw.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

async function harnessMetadata(rc: RouteContext, req: Request): Promise<void> {
  caller(req);
  const metadata = rc.harnessMetadata;
  if (metadata === undefined)
    throw new HttpError(404, 'no_metadata', 'this server was started without compatibility profiles');
  const headers = { etag: metadata.etag, 'cache-control': 'no-cache' };
  if (etagMatches(header(req.raw, 'if-none-match'), metadata.etag)) {
    sendEmpty(req.reply, 304, headers);
    return;
  }
  sendJson(req.reply, 200, metadata.body, headers);
}

/**
 * `GET /client-status` (an extension): the latest report of every machine, for administrators (optionally one user's),
 * a page at a time: `page` and `per_page`, in an order new reports do not change.
 */
async function listClientStatus(rc: RouteContext, req: Request): Promise<void> {
  if (!caller(req).is_admin) throw forbidden('only administrators may read client status reports');
  const params = queryParams(req, ['user_id', 'page', 'per_page']);
  const userId = params.one('user_id');
  if (userId !== undefined && !new RegExp(`^${UUID}$`).test(userId))
    throw badRequest('user_id must be a user id (a UUID)');
  const perPage = intParam('per_page', params.one('per_page'), 1, MAX_PAGE) ?? MAX_PAGE;
  const page = intParam('page', params.one('page'), 1, Number.MAX_SAFE_INTEGER) ?? 1;
  const found = await rc.store.clientStatuses({ user_id: userId, limit: perPage, offset: (page - 1) * perPage });
  const body: ClientStatusList = {
    items: found.items.map((r) => ({
      user_id: r.user_id,
      user_email: r.user_email,
      instance_id: r.instance_id,
      received_at: iso(r.received_at),
      report: r.report as object,
    })),
    page,
    per_page: perPage,
    total: found.total,
    total_pages: Math.ceil(found.total / perPage),
  };
  sendJson(req.reply, 200, body);
}

/** `POST /client-status`: a machine's report, kept as its latest (store: at most MAX_MACHINES_PER_USER per person). */
async function clientStatus(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const raw = await readJsonBody(req.raw, Math.min(rc.maxBodyBytes, MAX_CLIENT_STATUS_BYTES), false, rc.bodyTimeoutMs);
  const body = validateBody<ClientStatusReport>(
    validators.validateClientStatusReport as Validate,
    raw,
    'client status',
  );
  if (body.instance_id.trim() === '' || body.client_version.trim() === '')
    throw badRequest('instance_id and client_version must not be blank');
  await rc.store.recordClientStatus(user.id, body.instance_id, body, rc.now());
  sendEmpty(req.reply, 204);
}

// Uploads

async function presign(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const body = validateBody<PresignRequest>(
    validators.validatePresignRequest as Validate,
    await readJsonBody(req.raw, rc.maxBodyBytes, false, rc.bodyTimeoutMs),
    'presign request',
  );
  const profile = body.compatibility_profile ?? LEGACY_PROFILE;
  const format = body.artifact_format ?? LEGACY_FORMAT;
  // A harness's session names its harness; a record a person stored or imported names any provider.
  if (format !== RECORD_FORMAT && !HARNESS_NAMES.includes(body.harness))
    throw badRequest(
      `/harness must be one of ${HARNESS_NAMES.join(', ')} (a session record, artifact_format ${RECORD_FORMAT}, ` +
        `may name any provider)`,
    );
  if (format === RECORD_FORMAT && body.resumable === true)
    throw badRequest('a session record is never resumable; presign it with resumable false', 'not_resumable');
  const known = rc.profiles?.get(body.harness);
  const described = profile === LEGACY_PROFILE ? undefined : known?.get(profile);
  if (profile !== LEGACY_PROFILE && known !== undefined && described === undefined) {
    throw badRequest(
      `/compatibility_profile ${JSON.stringify(profile).slice(0, 80)} is not a profile of ${body.harness}; give ` +
        `one of ${[...known.keys()].join(', ')}, or none`,
      'unknown_profile',
    );
  }
  if (body.resumable === true) {
    if (format !== 'blue-session-bundle-v1' || profile === LEGACY_PROFILE) {
      throw badRequest(
        'resumable uploads need artifact_format blue-session-bundle-v1 and a compatibility_profile',
        'not_resumable',
      );
    }
    if (described !== undefined && !described.resumes)
      throw badRequest(`profile ${profile} does not resume sessions; presign it with resumable false`, 'not_resumable');
  }
  const now = rc.now();
  const { artifact, outcome } = await rc.store.presign(
    {
      owner_id: user.id,
      harness: body.harness,
      native_session_id: body.session_id,
      sha256: body.sha256.toLowerCase(),
      size_bytes: body.size_bytes,
      content_type: body.content_type,
      compatibility_profile: profile,
      artifact_format: format,
      resumable: body.resumable === true,
      cwd: body.cwd ?? null,
      title: body.title ?? null,
      summary: body.summary ?? null,
      captured_at_unix_ms:
        body.captured_at_unix_ms === undefined || body.captured_at_unix_ms === 0 ? null : body.captured_at_unix_ms,
      repository_root: body.repository_root ?? null,
      repository_remote: body.repository_remote ?? null,
      ...(body.tags === undefined ? {} : { tags: body.tags }),
    },
    now,
    rc.retentionMs,
  );
  if (outcome === 'complete') {
    // These bytes are already the session's current artifact: nothing to upload.
    sendJson(req.reply, 200, {
      upload_id: artifact.id,
      status: 'complete',
      upload_url: null,
      method: null,
      headers: {},
      complete_url: null,
      session_id: artifact.session_id,
      expires_at: null,
    });
    return;
  }
  const signed = await rc.blobs.presignUpload(
    artifact.blob_key,
    { size: artifact.size_bytes, sha256: artifact.sha256 },
    now + rc.uploadUrlTtlMs,
  );
  sendJson(req.reply, 200, {
    upload_id: artifact.id,
    status: 'pending',
    upload_url: signed.url,
    method: signed.method,
    headers: signed.headers,
    complete_url: `${rc.publicUrl()}/session-uploads/${artifact.id}/complete`,
    session_id: artifact.session_id,
    expires_at: iso(signed.expiresAtUnixMs),
  });
}

async function complete(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const found = await rc.store.artifact(req.params[0]!);
  if (found === undefined || !(await rc.store.canView(found.session, user)))
    throw notFound(`no session upload ${req.params[0]!}`);
  const { artifact, session } = found;
  if (session.owner_id !== user.id && !user.is_admin)
    throw forbidden(`only the owner of upload ${artifact.id} may complete it`);
  const body = validateBody<CompleteRequest>(
    validators.validateCompleteRequest as Validate,
    await readJsonBody(req.raw, rc.maxBodyBytes, true, rc.bodyTimeoutMs),
    'complete request',
  );
  if (
    (body.sha256 !== undefined && body.sha256.toLowerCase() !== artifact.sha256) ||
    (body.size_bytes !== undefined && body.size_bytes !== artifact.size_bytes)
  ) {
    throw badRequest(
      `the size or SHA-256 given does not match what was presigned for upload ${artifact.id}`,
      'digest_mismatch',
    );
  }
  if (artifact.status === 'complete' || artifact.status === 'superseded') {
    // Completing again is a retry of a request whose answer was lost: answer the same.
    sendJson(req.reply, 200, completedView(artifact));
    return;
  }
  if (artifact.status === 'failed') {
    throw badRequest(
      `upload ${artifact.id} failed its check (${artifact.failure ?? 'unknown'}); presign and upload again`,
      'upload_failed',
    );
  }
  const stored = await rc.blobs.stat(artifact.blob_key);
  if (stored === undefined)
    throw badRequest(
      `nothing has been uploaded for ${artifact.id} yet; PUT the bundle to the upload_url first`,
      'object_missing',
    );
  if (stored.size !== artifact.size_bytes || stored.sha256 !== artifact.sha256) {
    const reason =
      `stored object has ${stored.size} bytes and SHA-256 ${stored.sha256}; presigned ` +
      `${artifact.size_bytes} bytes and ${artifact.sha256}`;
    await rc.store.markFailed(artifact.id, reason, rc.now());
    // Bytes nobody vouched for are not kept; a failed delete is left for gc.
    await rc.blobs.delete(artifact.blob_key).catch(() => undefined);
    throw badRequest(`upload ${artifact.id} does not match its presign: ${reason}`, 'digest_mismatch');
  }
  const completed = await rc.store.complete(artifact.id, rc.now(), rc.retentionMs);
  // Its session was deleted while the bytes were checked (their object goes with it).
  if (completed === undefined) throw notFound(`no session upload ${artifact.id}`);
  rc.metrics.uploaded(completed.size_bytes);
  // What the session says is read off the request path (search-indexer.ts).
  rc.indexer?.kick();
  sendJson(req.reply, 200, completedView(completed));
}

function completedView(artifact: Artifact): unknown {
  return { id: artifact.id, status: artifact.status, session_id: artifact.session_id };
}

// Sessions

async function getSession(rc: RouteContext, req: Request): Promise<void> {
  const session = await visibleSession(rc, caller(req), req.params[0]!);
  await auditAdminRead(rc, caller(req), session, 'detail');
  const artifacts = await rc.store.artifactsOf(session.id);
  const now = rc.now();
  const body: SessionDetail = {
    session: sessionView(session, now, artifacts[0]),
    sharing: { user_ids: await rc.store.grants(session.id) },
    artifacts: artifacts.map((a) => ({
      id: a.id,
      sha256: a.sha256,
      size_bytes: a.size_bytes,
      content_type: a.content_type,
      status: a.status,
      created_at: iso(a.created_at),
      completed_at: a.completed_at === null ? null : iso(a.completed_at),
      retention_expires_at: a.completed_at === null ? null : iso(a.retention_deadline),
      compatibility_profile: a.compatibility_profile,
      artifact_format: a.artifact_format,
      resumable: a.resumable,
      expired: isExpired(a, now),
    })),
  };
  sendJson(req.reply, 200, body);
}

async function download(rc: RouteContext, req: Request): Promise<void> {
  const session = await visibleSession(rc, caller(req), req.params[0]!);
  await readJsonBody(req.raw, rc.maxBodyBytes, true, rc.bodyTimeoutMs);
  const now = rc.now();
  const { artifact, url, method, headers, expiresAt } = await downloadLink(rc, caller(req), session);
  sendJson(req.reply, 200, {
    download_url: url,
    expires_in_seconds: Math.max(0, Math.floor((expiresAt - now) / 1000)),
    method,
    headers,
    artifact_id: artifact.id,
    size_bytes: artifact.size_bytes,
    sha256: artifact.sha256,
    content_type: artifact.content_type,
  });
}

async function getSharing(rc: RouteContext, req: Request): Promise<void> {
  const session = await visibleSession(rc, caller(req), req.params[0]!);
  await auditAdminRead(rc, caller(req), session, 'sharing');
  const recipients = await rc.store.recipients(session);
  sendJson(req.reply, 200, {
    mode: session.sharing_mode,
    can_edit: session.owner_id === caller(req).id,
    recipient_count: recipients.length,
    recipients: recipients.map((u) => ({ id: u.id, email: u.email })),
  });
}

async function putSharing(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const session = await visibleSession(rc, user, req.params[0]!);
  if (session.owner_id !== user.id) throw forbidden(`only the owner of session ${session.id} may change its sharing`);
  const body = validateBody<SharingRequest>(
    validators.validateSharingRequest as Validate,
    await readJsonBody(req.raw, rc.maxBodyBytes, false, rc.bodyTimeoutMs),
    'sharing request',
  );
  const ids = await changeSharing(rc, user, session, body.mode, [...(body.user_ids ?? []), ...(body.emails ?? [])]);
  sendJson(req.reply, 200, { id: session.id, mode: body.mode, user_ids: ids });
}

/**
 * `DELETE /session-uploads/{id}` (an extension): the owner or an administrator deletes a captured session, every
 * revision of it — metadata, sharing, objects — and the deletion is in the audit log. The database forgets it first
 * (in one transaction with the audit entry, the objects' keys queued); the objects go next, and what cannot be
 * deleted now stays queued for `gc`.
 */
async function deleteSession(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  await removeSession(rc, user, await visibleSession(rc, user, req.params[0]!));
  sendEmpty(req.reply, 204);
}

/** `GET /audit-events` (an extension, administrators): the audit log, oldest first, `after` a `seq` for the next page.
 * */
async function auditEvents(rc: RouteContext, req: Request): Promise<void> {
  if (!caller(req).is_admin) throw forbidden('only administrators may read the audit log');
  const params = queryParams(req, ['after', 'limit', 'action', 'actor_id', 'session_id']);
  const after = intParam('after', params.one('after'), 0, Number.MAX_SAFE_INTEGER);
  const limit = intParam('limit', params.one('limit'), 1, MAX_PAGE) ?? DEFAULT_AUDIT_PAGE;
  const action = params.one('action');
  if (action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(action))
    throw badRequest(`action must be one of ${AUDIT_ACTIONS.join(', ')}`);
  const page = await rc.store.auditEvents({
    after,
    limit: limit + 1,
    action: action as AuditAction | undefined,
    // An entry of no session keeps '' as its session: an empty filter is none, not "entries of no session".
    actor_id: boundedText(params.one('actor_id'), 'actor_id') || undefined,
    session_id: boundedText(params.one('session_id'), 'session_id') || undefined,
  });
  const items = page.slice(0, limit);
  const body: AuditEventPage = {
    items: items.map((e) => ({
      seq: e.seq,
      at: iso(e.at),
      actor: { kind: e.actor_kind, id: e.actor_id, email: e.actor_email },
      action: e.action,
      session_id: e.session_id,
      owner_id: e.owner_id,
      details: e.details,
      summary: auditSummary(e),
    })),
    next_after: page.length > limit ? items.at(-1)!.seq : null,
  };
  sendJson(req.reply, 200, body);
}

async function members(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const params = queryParams(req, ['q']);
  const q = boundedText(params.one('q'), 'q');
  const found = await rc.store.searchUsers(q, user.id, 10);
  sendJson(req.reply, 200, { items: found.map((u) => ({ id: u.id, email: u.email })) });
}

async function facets(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const params = queryParams(req, ['user_q', 'selected_user_id']);
  const userQ = boundedText(params.one('user_q'), 'user_q');
  const selected = params.one('selected_user_id');
  if (selected !== undefined && !new RegExp(`^${UUID}$`).test(selected))
    throw badRequest('selected_user_id must be a user id (a UUID)');
  const found = await rc.store.facets(user, userQ, selected);
  sendJson(req.reply, 200, {
    users: found.users.map((u) => ({ id: u.id, email: u.email })),
    harnesses: found.harnesses,
  });
}

const CURSOR_PARAMS = ['cursor', 'limit'];
const NUMBERED_PARAMS = ['page', 'per_page', 'offset', 'q', 'updated_from', 'updated_to', 'sort'];
const LIST_PARAMS = [
  ...CURSOR_PARAMS,
  ...NUMBERED_PARAMS,
  'harness',
  'tag',
  'user_id',
  'status',
  'resumable',
  'id_prefix',
];
/** The schema's provider and tag rules (schemas/session-record.schema.json), for query parameters. */
const PROVIDER = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
const TAG = /^[^\s\u0000-\u001f\u007f,]{1,64}$/;

/**
 * Two ways of paging, as Blue's server: numbered (`page`, `per_page`, `q`, `sort` or `updated_*` given: total and
 * total_pages) and cursor. `resumable=true` is the resume picker's listing in either: owned or shared sessions,
 * `shared` on each (numbered when it searches as the person types).
 */
async function listSessions(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const params = queryParams(req, LIST_PARAMS);
  const numbered = NUMBERED_PARAMS.some((name) => params.has(name));
  const picker = params.one('resumable') === 'true';
  if (numbered && CURSOR_PARAMS.some((name) => params.has(name))) {
    throw badRequest(
      `page, per_page, q, sort and updated_from/updated_to cannot be combined with cursor or limit; use one way of ` +
        `paging`,
    );
  }
  const query: SessionQuery = { sort: 'updated_desc', limit: DEFAULT_CURSOR_PAGE };
  const q = boundedText(params.one('q'), 'q');
  if (q !== undefined && q.trim() !== '') query.q = q.trim();
  const idPrefix = params.one('id_prefix');
  if (idPrefix !== undefined) {
    // Resolves the short ids people type (`resume 3f2a91c0`): lower-case hex and dashes, a prefix of a session id.
    if (!/^[0-9a-f-]{1,36}$/.test(idPrefix))
      throw badRequest('id_prefix must be 1 to 36 lower-case hexadecimal digits and dashes');
    query.id_prefix = idPrefix;
  }
  const harness = params.one('harness');
  if (harness !== undefined) {
    // One name, or several separated by commas (extension): sessions of any of them.
    const names = [...new Set(harness.split(','))];
    if (names.length > 32 || names.some((n) => !PROVIDER.test(n)))
      throw badRequest(
        'harness must be harness or provider names (lower-case letters, digits, _, . and -), separated by commas',
      );
    if (names.length === 1) query.harness = names[0];
    else query.harnesses = names;
  }
  const tag = params.one('tag');
  if (tag !== undefined) {
    if (!TAG.test(tag))
      throw badRequest('tag must be 1 to 64 characters without white space, commas or control characters');
    query.tag = tag;
  }
  const userId = params.one('user_id');
  if (userId !== undefined) {
    if (!new RegExp(`^${UUID}$`).test(userId)) throw badRequest('user_id must be a user id (a UUID)');
    query.owner_id = userId;
  }
  const status = params.one('status');
  if (status !== undefined) {
    if (!(ARTIFACT_STATUSES as readonly string[]).includes(status))
      throw badRequest(`status must be one of ${ARTIFACT_STATUSES.join(', ')}`);
    query.status = status as ArtifactStatus;
  }
  const resumable = params.one('resumable');
  if (resumable !== undefined && resumable !== 'true' && resumable !== 'false')
    throw badRequest('resumable must be true or false');
  if (picker) query.resumable = true;
  const from = dayParam('updated_from', params.one('updated_from'));
  const to = dayParam('updated_to', params.one('updated_to'));
  if (from !== undefined && to !== undefined && from > to)
    throw badRequest('updated_from must be on or before updated_to');
  if (from !== undefined) query.updated_from = from;
  if (to !== undefined) query.updated_before = to + 86_400_000;
  const sort = params.one('sort');
  if (sort !== undefined) {
    if (sort !== 'updated_desc' && sort !== 'updated_asc' && sort !== 'relevance')
      throw badRequest('sort must be updated_desc, updated_asc or relevance');
    query.sort = sort;
  } else if (query.q !== undefined) {
    // A search is ranked: the best matches of what sessions say first.
    query.sort = 'relevance';
  }
  const now = rc.now();
  let snippets = new Map<string, Snippet>();
  const view = (s: CapturedSession) => {
    const snippet = snippets.get(s.id);
    return {
      ...sessionView(s, now),
      ...(picker ? { shared: s.owner_id !== user.id } : {}),
      ...(query.q === undefined ? {} : { snippet: snippet === undefined ? null : snippetText(snippet) }),
    };
  };
  const withSnippets = async (sessions: CapturedSession[]) => {
    if (query.q !== undefined) snippets = await searchSnippets(rc, user, sessions, query.q);
    return sessions;
  };
  if (numbered) {
    const perPage = intParam('per_page', params.one('per_page'), 1, MAX_PAGE) ?? DEFAULT_NUMBERED_PAGE;
    // Extension: `offset` instead of `page`, for callers that page by items (`sessions list --offset`).
    const offset = intParam('offset', params.one('offset'), 0, Number.MAX_SAFE_INTEGER);
    if (offset !== undefined && params.has('page')) throw badRequest('page and offset cannot be combined; use one');
    const page =
      offset === undefined
        ? (intParam('page', params.one('page'), 1, Number.MAX_SAFE_INTEGER) ?? 1)
        : Math.floor(offset / perPage) + 1;
    const found = await rc.store.listSessions(
      user,
      { ...query, limit: perPage, offset: offset ?? (page - 1) * perPage, count: true },
      now,
    );
    const total = found.total ?? 0;
    const body: CapturedSessionList = {
      items: (await withSnippets(found.sessions)).map(view),
      page,
      per_page: perPage,
      total,
      total_pages: total === 0 ? 0 : Math.ceil(total / perPage),
    };
    sendJson(req.reply, 200, body);
    return;
  }
  const limit = intParam('limit', params.one('limit'), 1, MAX_PAGE) ?? DEFAULT_CURSOR_PAGE;
  const cursor = params.one('cursor');
  if (cursor !== undefined) {
    if (!new RegExp(`^${UUID}$`).test(cursor))
      throw badRequest(
        'cursor is not one this server handed out (a session id); start again without it',
        'invalid_cursor',
      );
    query.after_id = cursor;
  }
  // One row more than asked tells whether another page exists.
  const found = await rc.store.listSessions(user, { ...query, sort: 'updated_desc', limit: limit + 1 }, now);
  const page = await withSnippets(found.sessions.slice(0, limit));
  const body: CapturedSessionList = {
    items: page.map(view),
    next_cursor: found.sessions.length > limit ? page.at(-1)!.id : null,
  };
  sendJson(req.reply, 200, body);
}

/** The query string: only `allowed` names, each at most once. */
function queryParams(
  req: Request,
  allowed: readonly string[],
): { one(name: string): string | undefined; has(name: string): boolean } {
  const params = req.url.searchParams;
  for (const key of params.keys()) {
    if (!allowed.includes(key))
      throw badRequest(`unknown query parameter "${key.slice(0, 100)}"; use ${allowed.join(', ')}`);
  }
  return {
    has: (name) => params.has(name),
    one: (name) => {
      const values = params.getAll(name);
      if (values.length > 1) throw badRequest(`query parameter "${name}" is given more than once`);
      return values[0];
    },
  };
}

function boundedText(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (value.length > MAX_QUERY_LENGTH)
    throw badRequest(`${name} is ${value.length} characters long; at most ${MAX_QUERY_LENGTH} are allowed`);
  return value;
}

function intParam(name: string, value: string | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,15}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw badRequest(`${name} must be an integer from ${min}${max === Number.MAX_SAFE_INTEGER ? ' up' : ` to ${max}`}`);
  }
  return Number(value);
}

/** A `YYYY-MM-DD` day, as the start of that UTC day. */
function dayParam(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const ms = match === null ? Number.NaN : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 10) !== value)
    throw badRequest(`${name} must be a day, YYYY-MM-DD (UTC)`);
  return ms;
}

/**
 * A captured session as the contract describes it (schemas/control-captured-session.schema.json): its artifact fields
 * are its current artifact's, else (a session not completed yet, seen by its owner) its newest artifact's.
 */
export function sessionView(session: CapturedSession, now: number, newest?: Artifact): CapturedSessionView {
  const current = session.current;
  const described = current ?? newest;
  return {
    id: session.id,
    user_id: session.owner_id,
    user_email: session.owner_email,
    harness: session.harness,
    compatibility_profile: described?.compatibility_profile ?? LEGACY_PROFILE,
    native_session_id: session.native_session_id,
    cwd: described?.cwd ?? null,
    artifact_format: described?.artifact_format ?? LEGACY_FORMAT,
    resumable: current !== undefined && current.resumable && current.status === 'complete' && !isExpired(current, now),
    title: described?.title ?? null,
    summary: described?.summary ?? null,
    source_captured_at: described?.captured_at_unix_ms == null ? null : iso(described.captured_at_unix_ms),
    repository: { root: described?.repository_root ?? null, remote: described?.repository_remote ?? null },
    sharing_mode: session.sharing_mode,
    share_recipient_count: session.share_recipient_count,
    tags: session.tags,
    updated_at: iso(session.updated_at),
    status: current?.status ?? null,
    size_bytes: current?.size_bytes ?? null,
    content_type: current?.content_type ?? null,
    retention_expires_at: current === undefined ? null : iso(current.retention_deadline),
    sha256: current?.sha256 ?? null,
    artifact_id: current?.id ?? null,
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
