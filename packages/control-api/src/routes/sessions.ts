/** One captured session: its detail, a download link, its sharing, its deletion; and how a session reads in a list. */
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import type * as Listed from '@blue-agent/contract/schema/generated/control-captured-session.js';
import type { SessionDetail } from '@blue-agent/contract/schema/generated/control-session-detail.js';
import type { SharingRequest } from '@blue-agent/contract/schema/generated/control-sharing.js';
import { auditAdminRead, changeSharing, downloadLink, removeSession, visibleSession } from '../session-actions.js';
import { caller, type Request, type RouteContext } from '../route-context.js';
import { forbidden, readJsonBody, sendEmpty, sendJson, validateBody, type Validate } from '../http.js';
import { isExpired, LEGACY_FORMAT, LEGACY_PROFILE, type Artifact, type CapturedSession } from '../store/index.js';

export async function getSession(rc: RouteContext, req: Request): Promise<void> {
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

export async function download(rc: RouteContext, req: Request): Promise<void> {
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

export async function getSharing(rc: RouteContext, req: Request): Promise<void> {
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

export async function putSharing(rc: RouteContext, req: Request): Promise<void> {
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
export async function deleteSession(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  await removeSession(rc, user, await visibleSession(rc, user, req.params[0]!));
  sendEmpty(req.reply, 204);
}

/**
 * A captured session as the contract describes it (schemas/control-captured-session.schema.json): its artifact fields
 * are its current artifact's, else (a session not completed yet, seen by its owner) its newest artifact's.
 */
export function sessionView(session: CapturedSession, now: number, newest?: Artifact): Listed.CapturedSession {
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

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
