/**
 * The session-upload routes: `POST /session-uploads/presign` and `POST /session-uploads/{upload_id}/complete`. The
 * presign answer is checked before use: its signed URL is where the bundle goes, and its complete_url gets the bearer
 * token. Blue's server answers complete_url relative (`/session-uploads/<artifact id>/complete`): it is resolved
 * against the presign URL, as Blue's client does, and must still land on the Control API's origin.
 * (The signed-URL transfer itself is src/upload/put.ts; the retry loop around these is src/upload/index.ts.)
 */
import type { PresignRequest } from '@blue-agent/contract/schema/generated/control-presign.js';
import type { ControlClient } from './client.js';
import { UploadError } from './errors.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { originOf } from '@blue-agent/contract/util/url.js';

export const PRESIGN_ROUTE = 'session-uploads/presign';

/** `POST /session-uploads/presign`, Blue's field names (generated from schemas/control-presign.schema.json). */
export type { PresignRequest } from '@blue-agent/contract/schema/generated/control-presign.js';

export interface SignedUpload {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * `upload_id` is the artifact's id (complete takes it); `session_id`, when the server says it (an extension of this
 * project's server; Blue's does not), is the captured session's id, the one `sessions` and `resume` take.
 */
export type PresignResponse =
  | { upload_id: string; status: 'complete'; session_id?: string }
  | {
      upload_id: string;
      status: 'pending';
      upload: SignedUpload;
      complete_url: string | undefined;
      session_id?: string;
    };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `url` is the policy's presign_url, already checked to be on the Control API's origin. */
export async function presign(client: ControlClient, request: PresignRequest, url?: URL): Promise<PresignResponse> {
  const target = url ?? client.routeUrl(PRESIGN_ROUTE);
  const body = await client.requestJson('POST', target, request);
  return parsePresignResponse(body, client.origin, target);
}

/**
 * `POST /session-uploads/{id}/complete`: the server checks the stored object's size and digest. `completeUrl` is the
 * presign answer's, already checked to be on the Control API's origin. `expected` repeats what was presigned, so the
 * server can refuse an object that is not the bundle this client meant.
 */
export async function complete(
  client: ControlClient,
  uploadId: string,
  completeUrl?: string,
  expected?: { sha256: string; size_bytes: number },
): Promise<{ session_id?: string }> {
  const url =
    completeUrl === undefined
      ? client.routeUrl(`session-uploads/${encodeURIComponent(uploadId)}/complete`)
      : new URL(completeUrl);
  const body = await client.requestJson('POST', url, expected ?? {});
  // `{id, status}` (Blue's), with `session_id` from this project's server; only that extension is read.
  return isRecord(body) && typeof body.session_id === 'string' && UUID.test(body.session_id)
    ? { session_id: body.session_id }
    : {};
}

/**
 * The presign answer, checked. `presignUrl` is where it came from: a relative complete_url is resolved against it
 * (Blue's client joins it onto presign_url), and, relative or not, it must be on `controlOrigin`.
 */
export function parsePresignResponse(body: unknown, controlOrigin: string, presignUrl?: URL): PresignResponse {
  const bad = (what: string) =>
    new UploadError('service', 'UPLOAD_FAILED', `the presign answer is not usable: ${what}`, {
      hint: 'The Control API and this agent disagree on the presign contract; check the server version.',
    });
  if (!isRecord(body)) throw bad('not a JSON object');
  const id = body.upload_id;
  // The id goes into a URL path and into spool records.
  if (typeof id !== 'string' || !/^[A-Za-z0-9._:-]{1,200}$/.test(id)) throw bad('upload_id is missing or malformed');
  const captured =
    typeof body.session_id === 'string' && UUID.test(body.session_id) ? { session_id: body.session_id } : {};
  if (body.status === 'complete') return { upload_id: id, status: 'complete', ...captured };
  if (body.status !== 'pending')
    throw bad(`status is ${JSON.stringify(body.status)?.slice(0, 40)}, not pending or complete`);
  const url = body.upload_url;
  if (typeof url !== 'string' || originOf(url) === '') throw bad('upload_url is missing or not an http(s) URL');
  if (new URL(url).username !== '' || new URL(url).password !== '') throw bad('upload_url carries credentials');
  const method = body.method ?? 'PUT';
  if (method !== 'PUT' && method !== 'POST')
    throw bad(`method ${JSON.stringify(method)?.slice(0, 20)} is neither PUT nor POST`);
  const headers: Record<string, string> = {};
  if (body.headers !== undefined && body.headers !== null) {
    if (!isRecord(body.headers)) throw bad('headers is not an object');
    for (const [name, value] of Object.entries(body.headers)) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw bad('a header name is not a valid token');
      if (typeof value !== 'string' || /[\r\n\u0000]/.test(value)) throw bad(`header ${name} has no usable value`);
      headers[name] = value;
    }
  }
  let completeUrl: string | undefined;
  if (body.complete_url !== undefined && body.complete_url !== null) {
    if (typeof body.complete_url !== 'string' || body.complete_url.length > 8192)
      throw bad('complete_url is not a string');
    const resolved = resolveCompleteUrl(body.complete_url, presignUrl);
    // complete carries the bearer token: it may only go back to the Control API itself (a protocol-relative
    // `//elsewhere/...` resolves to another origin and is refused here too).
    const origin = resolved === undefined ? '' : originOf(resolved.href);
    if (resolved === undefined || origin !== controlOrigin || resolved.username !== '' || resolved.password !== '') {
      throw new UploadError(
        'service',
        'UPLOAD_FAILED',
        `the presign answer's complete_url is on ${origin || 'no http(s) origin'}, not on the Control API's origin ` +
          `${controlOrigin}; refusing it`,
        {
          hint: 'complete_url must be on the Control API origin, since the token is sent to it.',
        },
      );
    }
    completeUrl = resolved.href;
  }
  return { upload_id: id, status: 'pending', upload: { method, url, headers }, complete_url: completeUrl, ...captured };
}

/** An absolute complete_url as it is; a relative one against the presign URL; undefined when neither works. */
function resolveCompleteUrl(value: string, presignUrl: URL | undefined): URL | undefined {
  try {
    return new URL(value, presignUrl);
  } catch {
    return undefined;
  }
}
