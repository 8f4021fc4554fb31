/**
 * The Control API's routes. Each handler gets the authenticated user and answers JSON; access rules live here:
 * owners do everything with their uploads, administrators see and download everything, recipients of a share may
 * view, download and resume but never edit or re-share. What a caller may not see is answered 404, not 403, so ids
 * of other people's sessions cannot be probed.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyReply } from 'fastify';
import * as validators from '../schema/generated/validators.js';
import type { ClientStatusReport } from '../schema/generated/control-client-status.js';
import type { CompleteRequest } from '../schema/generated/control-complete.js';
import { HARNESSES } from '../schema/generated/harness-names.js';
import type { PresignRequest } from '../schema/generated/control-presign.js';
import type { SessionUploadDetail } from '../schema/generated/control-session-upload.js';
import type { SessionUploadList } from '../schema/generated/control-session-uploads.js';
import type { SharingRequest } from '../schema/generated/control-sharing.js';
import type { BlobStore } from './blobs/types.js';
import { badRequest, forbidden, HttpError, notFound, readJsonBody, sendEmpty, sendJson, validateBody, type Validate } from './http.js';
import { isExpired, UPLOAD_STATUSES, type ControlStore, type Upload, type UploadQuery, type UploadStatus, type User } from './store.js';

export const BUNDLE_CONTENT_TYPE = 'application/vnd.blue.session-bundle+tar+gzip';
/** The harness names the schemas accept (schemas/harness-name.schema.json). */
const HARNESS_NAMES: readonly string[] = HARNESSES;
export const MAX_QUERY_LENGTH = 256;
export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;

export interface RouteContext {
  store: ControlStore;
  blobs: BlobStore;
  now(): number;
  publicUrl(): string;
  uploadUrlTtlMs: number;
  downloadUrlTtlMs: number;
  retentionMs: number;
  maxBodyBytes: number;
  /** How long a JSON body may take to arrive (then 408). */
  bodyTimeoutMs: number;
  /** `GET /harness-metadata`: the compatibility profiles this server vouches for, with their ETag. */
  harnessMetadata?: { body: unknown; etag: string } | undefined;
}

export interface Request {
  raw: IncomingMessage;
  reply: FastifyReply;
  url: URL;
  user: User;
  params: string[];
}

type Handler = (rc: RouteContext, req: Request) => Promise<void>;

interface Route {
  /** The route as Fastify matches it (`:id` with its pattern). */
  path: string;
  /** The same, for telling 405 from 404. */
  pattern: RegExp;
  methods: Partial<Record<string, Handler>>;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const ID = `:id(^${UUID}$)`;

const route = (path: string, methods: Route['methods']): Route => ({
  path,
  pattern: new RegExp(`^${path.replace(ID, UUID)}$`),
  methods,
});

export const ROUTES: readonly Route[] = [
  route('/governance-config', { GET: governanceConfig }),
  route('/harness-metadata', { GET: harnessMetadata }),
  route('/client-status', { POST: clientStatus, GET: listClientStatus }),
  route('/session-uploads/presign', { POST: presign }),
  route('/session-uploads', { GET: listUploads }),
  route(`/session-uploads/${ID}`, { GET: getUpload }),
  route(`/session-uploads/${ID}/complete`, { POST: complete }),
  route(`/session-uploads/${ID}/download`, { POST: download }),
  route(`/session-uploads/${ID}/sharing`, { GET: getSharing, PUT: putSharing }),
];

async function governanceConfig(rc: RouteContext, req: Request): Promise<void> {
  const policy = rc.store.currentPolicy();
  if (policy === undefined) throw new HttpError(404, 'no_policy', 'no governance policy has been published yet');
  const headers = { etag: policy.etag, 'cache-control': 'no-cache' };
  if (etagMatches(req.raw.headers['if-none-match'], policy.etag)) {
    sendEmpty(req.reply, 304, headers);
    return;
  }
  sendJson(req.reply, 200, policy.body, headers);
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

async function harnessMetadata(rc: RouteContext, req: Request): Promise<void> {
  const metadata = rc.harnessMetadata;
  if (metadata === undefined) throw new HttpError(404, 'no_metadata', 'this server was started without compatibility profiles');
  const headers = { etag: metadata.etag, 'cache-control': 'no-cache' };
  if (etagMatches(req.raw.headers['if-none-match'], metadata.etag)) {
    sendEmpty(req.reply, 304, headers);
    return;
  }
  sendJson(req.reply, 200, metadata.body, headers);
}

/** `GET /client-status`: the latest report of every machine, for administrators (optionally one user's). */
async function listClientStatus(rc: RouteContext, req: Request): Promise<void> {
  if (!req.user.is_admin) throw forbidden('only administrators may read client status reports');
  for (const key of req.url.searchParams.keys()) {
    if (key !== 'user_id') throw badRequest(`unknown query parameter "${key.slice(0, 100)}"; use user_id`);
  }
  const userId = req.url.searchParams.get('user_id');
  const reports = rc.store.clientStatuses().filter((r) => userId === null || r.user_id === userId);
  sendJson(req.reply, 200, {
    items: reports.map((r) => ({ user_id: r.user_id, instance_id: r.instance_id, received_at: iso(r.received_at), report: r.report })),
  });
}

async function clientStatus(rc: RouteContext, req: Request): Promise<void> {
  const body = validateBody<ClientStatusReport>(
    validators.validateClientStatusReport as Validate,
    await readJsonBody(req.raw, rc.maxBodyBytes, false, rc.bodyTimeoutMs),
    'client status',
  );
  const now = rc.now();
  rc.store.recordClientStatus(req.user.id, body.instance_id, body, now);
  sendJson(req.reply, 200, { instance_id: body.instance_id, received_at: iso(now) });
}

async function presign(rc: RouteContext, req: Request): Promise<void> {
  const body = validateBody<PresignRequest>(validators.validatePresignRequest as Validate, await readJsonBody(req.raw, rc.maxBodyBytes, false, rc.bodyTimeoutMs), 'presign request');
  const now = rc.now();
  const { upload, created } = rc.store.presign({ ...body, owner_id: req.user.id }, now, rc.retentionMs);
  // `status: complete` tells the client these bytes are already the current revision; the URLs are still given so a
  // client that uploads anyway only rewrites identical bytes.
  const signed = await rc.blobs.presignUpload(upload.blob_key, { size: upload.size_bytes, sha256: upload.sha256 }, now + rc.uploadUrlTtlMs);
  sendJson(req.reply, created ? 201 : 200, {
    upload_id: upload.id,
    status: upload.status,
    revision: upload.revision,
    upload_url: signed.url,
    method: signed.method,
    headers: signed.headers,
    expires_at: iso(signed.expiresAtUnixMs),
    complete_url: `${rc.publicUrl()}/session-uploads/${upload.id}/complete`,
  });
}

/** The upload when `user` may see it; otherwise 404, whether or not it exists. */
function visibleUpload(rc: RouteContext, req: Request): Upload {
  const upload = rc.store.upload(req.params[0]!);
  if (upload === undefined || !rc.store.canView(upload, req.user)) throw notFound(`no session upload ${req.params[0]!}`);
  return upload;
}

function ownedUpload(rc: RouteContext, req: Request, action: string): Upload {
  const upload = visibleUpload(rc, req);
  if (upload.owner_id !== req.user.id) throw forbidden(`only the owner of session upload ${upload.id} may ${action}`);
  return upload;
}

async function complete(rc: RouteContext, req: Request): Promise<void> {
  const upload = ownedUpload(rc, req, 'complete it');
  const body = validateBody<CompleteRequest>(validators.validateCompleteRequest as Validate, await readJsonBody(req.raw, rc.maxBodyBytes, true, rc.bodyTimeoutMs), 'complete request');
  if ((body.sha256 !== undefined && body.sha256 !== upload.sha256) || (body.size_bytes !== undefined && body.size_bytes !== upload.size_bytes)) {
    throw badRequest(`the size or SHA-256 given does not match what was presigned for upload ${upload.id}`, 'digest_mismatch');
  }
  if (upload.status === 'complete' || upload.status === 'superseded') {
    // Completing again is a retry of a request whose answer was lost: answer the same.
    sendJson(req.reply, 200, uploadView(rc, upload, req.user));
    return;
  }
  if (upload.status === 'failed') {
    throw new HttpError(409, 'upload_failed', `upload ${upload.id} failed its check (${upload.failure ?? 'unknown'}); presign and upload again`);
  }
  const stored = await rc.blobs.stat(upload.blob_key);
  if (stored === undefined) {
    throw new HttpError(409, 'object_missing', `nothing has been uploaded for ${upload.id} yet; PUT the bundle to the upload_url first`);
  }
  if (stored.size !== upload.size_bytes || stored.sha256 !== upload.sha256) {
    const reason = `stored object has ${stored.size} bytes and SHA-256 ${stored.sha256}; presigned ${upload.size_bytes} bytes and ${upload.sha256}`;
    rc.store.markFailed(upload.id, reason, rc.now());
    // Bytes nobody vouched for are not kept; a failed delete is left for gc.
    await rc.blobs.delete(upload.blob_key).catch(() => undefined);
    throw badRequest(`upload ${upload.id} does not match its presign: ${reason}`, 'digest_mismatch');
  }
  sendJson(req.reply, 200, uploadView(rc, rc.store.complete(upload.id, rc.now(), rc.retentionMs), req.user));
}

async function getUpload(rc: RouteContext, req: Request): Promise<void> {
  sendJson(req.reply, 200, uploadView(rc, visibleUpload(rc, req), req.user));
}

async function download(rc: RouteContext, req: Request): Promise<void> {
  const upload = visibleUpload(rc, req);
  await readJsonBody(req.raw, rc.maxBodyBytes, true, rc.bodyTimeoutMs);
  const now = rc.now();
  if (upload.status !== 'complete' && upload.status !== 'superseded') {
    throw new HttpError(409, 'not_downloadable', `upload ${upload.id} is ${upload.status}; only verified uploads can be downloaded`);
  }
  if (isExpired(upload, now)) {
    throw new HttpError(410, 'expired', `upload ${upload.id} passed its retention deadline (${iso(upload.retention_deadline)}) and is gone`);
  }
  const signed = await rc.blobs.presignDownload(upload.blob_key, now + rc.downloadUrlTtlMs);
  sendJson(req.reply, 200, {
    upload_id: upload.id,
    download_url: signed.url,
    method: signed.method,
    headers: signed.headers,
    expires_at: iso(signed.expiresAtUnixMs),
    size_bytes: upload.size_bytes,
    sha256: upload.sha256,
    content_type: upload.content_type,
  });
}

async function getSharing(rc: RouteContext, req: Request): Promise<void> {
  const upload = visibleUpload(rc, req);
  if (upload.owner_id !== req.user.id && !req.user.is_admin) throw forbidden(`only the owner of session upload ${upload.id} may see its sharing`);
  sendJson(req.reply, 200, sharingView(rc, upload));
}

async function putSharing(rc: RouteContext, req: Request): Promise<void> {
  const upload = ownedUpload(rc, req, 'change its sharing');
  const body = validateBody<SharingRequest>(validators.validateSharingRequest as Validate, await readJsonBody(req.raw, rc.maxBodyBytes, false, rc.bodyTimeoutMs), 'sharing request');
  const named = (body.user_ids?.length ?? 0) + (body.emails?.length ?? 0);
  if (body.mode !== 'selected' && named > 0) throw badRequest(`recipients are only given with mode "selected", not "${body.mode}"`);
  if (body.mode === 'selected' && named === 0) throw badRequest('mode "selected" needs user_ids or emails naming at least one recipient');
  const ids = new Set<string>();
  for (const id of body.user_ids ?? []) {
    // People name colleagues by e-mail more often than by id: accept either here.
    const user = rc.store.userById(id) ?? (id.includes('@') ? rc.store.userByEmail(id) : undefined);
    if (user === undefined) throw badRequest(`/user_ids names an unknown user "${id}"`, 'unknown_user');
    ids.add(user.id);
  }
  for (const email of body.emails ?? []) {
    const user = rc.store.userByEmail(email);
    if (user === undefined) throw badRequest(`/emails names an unknown user "${email}"`, 'unknown_user');
    ids.add(user.id);
  }
  ids.delete(req.user.id);
  rc.store.setSharing(upload.id, body.mode, [...ids], rc.now());
  sendJson(req.reply, 200, sharingView(rc, rc.store.upload(upload.id)!));
}

function sharingView(rc: RouteContext, upload: Upload): unknown {
  const recipients = upload.sharing_mode === 'selected' ? rc.store.recipients(upload.id) : [];
  return {
    upload_id: upload.id,
    mode: upload.sharing_mode,
    user_ids: recipients.map((u) => u.id),
    recipients: recipients.map((u) => ({ user_id: u.id, email: u.email })),
  };
}

const LIST_PARAMS = new Set(['q', 'id_prefix', 'harness', 'user_id', 'status', 'resumable', 'updated_from', 'updated_to', 'cursor', 'limit']);

async function listUploads(rc: RouteContext, req: Request): Promise<void> {
  const params = req.url.searchParams;
  for (const key of params.keys()) {
    if (!LIST_PARAMS.has(key)) throw badRequest(`unknown query parameter "${key.slice(0, 100)}"; use ${[...LIST_PARAMS].join(', ')}`);
  }
  const one = (name: string): string | undefined => {
    const values = params.getAll(name);
    if (values.length > 1) throw badRequest(`query parameter "${name}" is given more than once`);
    return values[0];
  };
  const query: UploadQuery = { limit: DEFAULT_PAGE };
  const q = one('q');
  if (q !== undefined) {
    if (q.length > MAX_QUERY_LENGTH) throw badRequest(`q is ${q.length} characters long; at most ${MAX_QUERY_LENGTH} are allowed`);
    query.q = q;
  }
  // Resolves the short ids people type (`resume 3f2a91c0`): lower-case hex and dashes, a prefix of an upload id.
  const idPrefix = one('id_prefix');
  if (idPrefix !== undefined) {
    if (!/^[0-9a-f-]{1,36}$/.test(idPrefix)) throw badRequest('id_prefix must be 1 to 36 lower-case hexadecimal digits and dashes');
    query.id_prefix = idPrefix;
  }
  const harness = one('harness');
  if (harness !== undefined) {
    if (!HARNESS_NAMES.includes(harness)) throw badRequest(`harness must be one of ${HARNESS_NAMES.join(', ')}`);
    query.harness = harness;
  }
  const userId = one('user_id');
  if (userId !== undefined) {
    if (userId.length > 64) throw badRequest('user_id is not a user id');
    query.user_id = userId;
  }
  const status = one('status');
  if (status !== undefined) {
    if (!(UPLOAD_STATUSES as readonly string[]).includes(status)) throw badRequest(`status must be one of ${UPLOAD_STATUSES.join(', ')}`);
    query.status = status as UploadStatus;
  }
  const resumable = one('resumable');
  if (resumable !== undefined) {
    if (resumable !== 'true' && resumable !== 'false') throw badRequest('resumable must be true or false');
    query.resumable = resumable === 'true';
  }
  query.updated_from = timeParam('updated_from', one('updated_from'));
  query.updated_to = timeParam('updated_to', one('updated_to'));
  const limit = one('limit');
  if (limit !== undefined) {
    if (!/^\d{1,4}$/.test(limit) || Number(limit) < 1 || Number(limit) > MAX_PAGE) throw badRequest(`limit must be an integer from 1 to ${MAX_PAGE}`);
    query.limit = Number(limit);
  }
  const cursor = one('cursor');
  if (cursor !== undefined) query.after = decodeCursor(cursor);
  // One row more than asked tells whether another page exists.
  const rows = rc.store.listUploads(req.user, { ...query, limit: query.limit + 1 }, rc.now());
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  const body: SessionUploadList = {
    items: page.map((u) => uploadView(rc, u, req.user)),
    next_cursor: rows.length > query.limit && last !== undefined ? encodeCursor(last) : null,
  };
  sendJson(req.reply, 200, body);
}

function timeParam(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d{1,16}$/.test(value) ? Number(value) : value.length <= 64 ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw badRequest(`${name} must be an ISO 8601 time or milliseconds since the epoch`);
  return ms;
}

function encodeCursor(upload: Upload): string {
  return Buffer.from(JSON.stringify([upload.updated_at, upload.id])).toString('base64url');
}

function decodeCursor(cursor: string): { updated_at: number; id: string } {
  const invalid = badRequest('cursor is not one this server handed out; start again without it', 'invalid_cursor');
  if (cursor.length > 256 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw invalid;
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string' && value[1].length <= 64) {
      return { updated_at: value[0] as number, id: value[1] };
    }
  } catch {
    // Falls through to the same answer as any other foreign cursor.
  }
  throw invalid;
}

/** An upload as `viewer` sees it: GET /session-uploads/{id}, an item of GET /session-uploads (schemas/control-session-upload.schema.json). */
export function uploadView(rc: RouteContext, upload: Upload, viewer: User): SessionUploadDetail {
  const owned = upload.owner_id === viewer.id;
  return {
    upload_id: upload.id,
    user_id: upload.owner_id,
    owner_email: upload.owner_email,
    owned,
    // Stored only from a validated presign request.
    harness: upload.harness as SessionUploadDetail['harness'],
    session_id: upload.session_id,
    revision: upload.revision,
    status: upload.status,
    size_bytes: upload.size_bytes,
    sha256: upload.sha256,
    content_type: upload.content_type,
    compatibility_profile: upload.compatibility_profile,
    cwd: upload.cwd,
    artifact_format: upload.artifact_format,
    resumable: upload.resumable,
    title: upload.title,
    summary: upload.summary,
    captured_at_unix_ms: upload.captured_at_unix_ms,
    repository_root: upload.repository_root,
    repository_remote: upload.repository_remote,
    sharing: owned || viewer.is_admin ? upload.sharing_mode : 'shared',
    created_at: iso(upload.created_at),
    updated_at: iso(upload.updated_at),
    completed_at: upload.completed_at === null ? null : iso(upload.completed_at),
    retention_deadline: iso(upload.retention_deadline),
    expired: isExpired(upload, rc.now()),
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
