/**
 * An upload: presign (a signed URL for the bytes, or `complete` when they are already the session's current
 * artifact), then complete once the bytes are stored.
 */
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import type { CompleteRequest } from '@blue-agent/contract/schema/generated/control-complete.js';
import { HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';
import type { PresignRequest } from '@blue-agent/contract/schema/generated/control-presign.js';
import { caller, type Request, type RouteContext } from '../route-context.js';
import { badRequest, forbidden, notFound, readJsonBody, sendJson, validateBody, type Validate } from '../http.js';
import { LEGACY_FORMAT, LEGACY_PROFILE, type Artifact } from '../store/index.js';
import { iso } from './sessions.js';

/** The harness names the schemas accept (schemas/harness-name.schema.json). */
const HARNESS_NAMES: readonly string[] = HARNESSES;

export async function presign(rc: RouteContext, req: Request): Promise<void> {
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

export async function complete(rc: RouteContext, req: Request): Promise<void> {
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
