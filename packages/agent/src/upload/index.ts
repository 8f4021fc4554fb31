/**
 * Uploading one built bundle: presign → upload to the signed URL → complete. Transient failures are retried a few
 * times in-process; what is left is returned as a result the spool can record (uploaded, retry later, or failed), so
 * one bad record or a Control API outage never stops the caller with an exception.
 */
import { BUNDLE_CONTENT_TYPE, ARTIFACT_FORMAT, type BundleManifest } from '@blue-agent/contract/bundle/index.js';
import type { ControlClient } from '../control-api/client.js';
import { isUploadError, type UploadError } from '../control-api/errors.js';
import { originOf } from '@blue-agent/contract/util/url.js';
import { safeUrl } from '../control-api/scrub.js';
import { complete, presign, type PresignRequest } from '../control-api/uploads.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { checkUploadOrigin } from '../policy/file.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { uploadFile } from './put.js';
import {
  DEFAULT_RETRY_POLICY,
  realRetryEnv,
  rescheduleDelay,
  withRetry,
  type RetryEnv,
  type RetryPolicy,
} from './retry.js';

export { uploadFile, type UploadExpectation, type UploadFileOptions } from './put.js';

/** The manifest fields the presign request carries. */
export type UploadManifest = Pick<
  BundleManifest,
  'native_session_id' | 'compatibility_profile' | 'captured_at_unix_ms'
> &
  Partial<Pick<BundleManifest, 'cwd' | 'repository' | 'title' | 'summary'>> & {
    /** A harness; for a session record, its provider. */
    harness: string;
    /** A bundle's, or a session record's (`blue-session-record-v1`). */
    artifact_format?: string;
  };

/** What a ready spool record knows about its bundle. */
export interface UploadItem {
  bundleFile: string;
  size: number;
  sha256: string;
  manifest: UploadManifest;
  /** Whether the session can be resumed elsewhere (its profile supports session_resume). */
  resumable?: boolean;
  /** The caller re-hashed the bundle just before: the upload need not hash it again (see `uploadFile`). */
  verified?: boolean;
  /** What is uploaded, when not a bundle (a session record). */
  contentType?: string;
  /** The session's tags (a record's). */
  tags?: string[];
}

export type UploadResult =
  /**
   * Stored and verified by the Control API; `already` when the presign said it was complete before any upload.
   * `upload_id` is the artifact's id; `session_id` the captured session's, when the server says it (ours does).
   */
  | { kind: 'uploaded'; upload_id: string; already: boolean; session_id?: string }
  /**
   * Not this time: try the record again after `delay_ms`. `stop` means the cause is not the record but the agent's
   * setup or the Control API (a refused token, a wrong URL), so the caller should not try further records now.
   */
  | { kind: 'retry'; delay_ms: number; code: string; reason: string; stop: boolean; upload_id?: string }
  /** Refused for good: the record should fail with this reason (the server's own, when it gave one). */
  | { kind: 'failed'; code: string; reason: string; status?: number; upload_id?: string };

export interface UploadBundleOptions {
  /** The presign URL from the policy's session_upload block; default `<control_url>/session-uploads/presign`. */
  presignUrl?: string;
  retry?: RetryPolicy;
  retryEnv?: RetryEnv;
  /** Presigns per call: a refused signed URL is presigned afresh this many times minus one. */
  maxPresigns?: number;
  /** Told about every retried step. */
  onRetry?(step: 'presign' | 'upload' | 'complete', error: UploadError, delayMs: number): void;
}

/** The presign request for an item, with Blue's field names; absent optional fields are left out. */
export function presignRequest(item: UploadItem): PresignRequest {
  const m = item.manifest;
  return {
    harness: m.harness,
    session_id: m.native_session_id,
    sha256: item.sha256,
    size_bytes: item.size,
    content_type: item.contentType ?? BUNDLE_CONTENT_TYPE,
    compatibility_profile: m.compatibility_profile,
    artifact_format: (m.artifact_format ?? ARTIFACT_FORMAT) as PresignRequest['artifact_format'],
    ...(item.tags === undefined ? {} : { tags: item.tags }),
    captured_at_unix_ms: m.captured_at_unix_ms,
    ...(m.cwd === undefined ? {} : { cwd: m.cwd }),
    ...(item.resumable === undefined ? {} : { resumable: item.resumable }),
    ...(m.title === undefined ? {} : { title: m.title }),
    ...(m.summary === undefined ? {} : { summary: m.summary }),
    ...(m.repository === undefined ? {} : { repository_root: m.repository.root }),
    ...(m.repository?.remote === undefined ? {} : { repository_remote: m.repository.remote }),
  };
}

/**
 * Where to presign, given the policy: its presign_url when it has one, which must be on the Control API's origin
 * because the bearer token goes with the request. An origin merely listed in allowed_upload_origins passes the policy
 * check but still gets no token. Throws POLICY_FOREIGN_ORIGIN or UPLOAD_FAILED.
 */
export function resolvePresignUrl(
  client: ControlClient,
  policy: GovernancePolicy,
  options: { allowedOrigins?: readonly string[]; file: string },
): string | undefined {
  checkUploadOrigin(policy, {
    controlUrl: client.controlUrl,
    allowedOrigins: options.allowedOrigins,
    file: options.file,
  });
  const presign = policy.session_upload?.presign_url;
  if (presign === undefined) return undefined;
  if (originOf(presign) !== client.origin) {
    throw new BlueError(
      'POLICY_FOREIGN_ORIGIN',
      `${options.file}: /session_upload/presign_url ${safeUrl(presign)} is not on the Control API's origin ` +
        `${client.origin}; the token is only sent to the Control API`,
      {
        file: options.file,
        path: '/session_upload/presign_url',
        hint: 'Point presign_url at the Control API, or control_url at the service that presigns.',
      },
    );
  }
  return presign;
}

export async function uploadBundle(
  client: ControlClient,
  item: UploadItem,
  options: UploadBundleOptions = {},
): Promise<UploadResult> {
  const policy = options.retry ?? DEFAULT_RETRY_POLICY;
  const env = options.retryEnv ?? realRetryEnv;
  const maxPresigns = Math.max(1, options.maxPresigns ?? 2);
  const retrying = (step: 'presign' | 'upload' | 'complete') => ({
    policy,
    env,
    onRetry: (error: UploadError, _attempt: number, delay: number) => options.onRetry?.(step, error, delay),
  });
  const request = presignRequest(item);
  const presignUrl = options.presignUrl === undefined ? undefined : new URL(options.presignUrl);
  let uploadId: string | undefined;
  try {
    for (let presigns = 1; ; presigns++) {
      const presigned = await withRetry(() => presign(client, request, presignUrl), retrying('presign'));
      uploadId = presigned.upload_id;
      const captured = presigned.session_id === undefined ? {} : { session_id: presigned.session_id };
      if (presigned.status === 'complete') return { kind: 'uploaded', upload_id: uploadId, already: true, ...captured };
      try {
        const dispatcher = await client.connectionPool();
        await withRetry(
          () =>
            uploadFile(presigned.upload, item.bundleFile, item, {
              dispatcher,
              timeoutMs: client.timeoutMs,
              userAgent: client.userAgent,
              now: env.now,
              verifyDigest: item.verified !== true,
              controlOrigin: client.origin,
            }),
          retrying('upload'),
        );
      } catch (error) {
        if (isUploadError(error) && error.kind === 'expired' && presigns < maxPresigns) continue;
        throw error;
      }
      let completeTries = 0;
      let completed: { session_id?: string };
      try {
        completed = await withRetry(() => {
          completeTries++;
          return complete(client, presigned.upload_id, presigned.complete_url, {
            sha256: item.sha256,
            size_bytes: item.size,
          });
        }, retrying('complete'));
      } catch (error) {
        // An earlier try may have completed the upload with only its answer lost, so a refusal now may just mean
        // "already done": presign tells, since it answers `complete` for a bundle the server already holds.
        if (!isUploadError(error) || error.kind !== 'record' || completeTries < 2) throw error;
        const again = await presign(client, request, presignUrl).catch(() => undefined);
        if (again?.status !== 'complete') throw error;
        return {
          kind: 'uploaded',
          upload_id: again.upload_id,
          already: true,
          ...(again.session_id === undefined ? captured : { session_id: again.session_id }),
        };
      }
      const sessionId = completed.session_id ?? presigned.session_id;
      return {
        kind: 'uploaded',
        upload_id: uploadId,
        already: false,
        ...(sessionId === undefined ? {} : { session_id: sessionId }),
      };
    }
  } catch (error) {
    return toResult(error, policy, env, uploadId);
  }
}

function toResult(error: unknown, policy: RetryPolicy, env: RetryEnv, uploadId: string | undefined): UploadResult {
  const id = uploadId === undefined ? {} : { upload_id: uploadId };
  if (isUploadError(error)) {
    switch (error.kind) {
      case 'record':
        return {
          kind: 'failed',
          code: error.code,
          reason: error.message,
          ...(error.status === undefined ? {} : { status: error.status }),
          ...id,
        };
      case 'transient':
      case 'expired':
        return {
          kind: 'retry',
          delay_ms: rescheduleDelay(error, policy, env.random),
          code: error.code,
          reason: error.message,
          stop: false,
          ...id,
        };
      case 'service':
        return {
          kind: 'retry',
          delay_ms: rescheduleDelay(error, policy, env.random),
          code: error.code,
          reason: error.message,
          stop: true,
          ...id,
        };
    }
  }
  if (error instanceof BlueError) {
    // Configuration and policy problems: nothing about the record, everything about the setup.
    return {
      kind: 'retry',
      delay_ms: rescheduleDelay({}, policy, env.random),
      code: error.code,
      reason: error.message,
      stop: true,
      ...id,
    };
  }
  throw error;
}
