/**
 * The scale-out blob store: an S3-compatible bucket reached with SigV4 presigned URLs. Upload URLs sign
 * `content-length` and `x-amz-checksum-sha256` as headers, because S3 enforces a checksum only when it arrives as a
 * signed header, never from the query string. The server's own reads (stat, delete) use presigned URLs too, so one
 * signer serves both; `stat` hashes the object's bytes because an ETag is not a content hash.
 */
import { createHash } from 'node:crypto';
import { request } from 'undici';
import { BlueError, usageError } from '../../errors.js';
import { assertValidKey, assertValidObject, hexToBase64 } from './keys.js';
import { presignV4, uriEncode } from './sigv4.js';
import type { BlobStore, SignedRequest, StoredObject } from './types.js';

export interface S3BlobStoreOptions {
  /** e.g. `https://s3.eu-west-1.amazonaws.com` or `http://127.0.0.1:9000`. */
  endpoint: string;
  bucket: string;
  region: string;
  /** `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint host>/<key>`; needed by most S3-compatible servers. */
  forcePathStyle: boolean;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
  clock?: () => number;
}

/** SigV4 presigned URLs live at most a week. */
const MAX_EXPIRES_SECONDS = 604_800;
/** Server-side requests (stat, delete) are used at once. */
const INTERNAL_EXPIRES_SECONDS = 300;

/** Credentials from the standard AWS variables; the rest from the server's configuration. */
export function s3OptionsFromEnv(
  env: Record<string, string | undefined>,
  config: { endpoint?: string | undefined; bucket: string; region?: string | undefined; forcePathStyle?: boolean | undefined },
): S3BlobStoreOptions {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw usageError('the S3 blob store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY', 'Set both in the server environment.');
  }
  const region = config.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  if (!region) throw usageError('the S3 blob store needs a region', 'Set AWS_REGION or configure the region.');
  return {
    endpoint: config.endpoint ?? `https://s3.${region}.amazonaws.com`,
    bucket: config.bucket,
    region,
    forcePathStyle: config.forcePathStyle ?? false,
    accessKeyId,
    secretAccessKey,
    sessionToken: env.AWS_SESSION_TOKEN || undefined,
  };
}

function s3Error(action: string, key: string, status: number, body: string): BlueError {
  const code = /<Code>([^<]*)<\/Code>/.exec(body)?.[1] ?? '';
  return new BlueError(status === 403 ? 'AUTH_FAILED' : 'INTERNAL', `S3 ${action} ${key}: HTTP ${status}${code ? ` ${code}` : ''}`, {
    hint: 'Check the bucket, region, endpoint and the server credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY).',
  });
}

export async function createS3BlobStore(options: S3BlobStoreOptions): Promise<BlobStore> {
  if (!options.bucket || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(options.bucket)) {
    throw usageError(`S3 bucket name ${JSON.stringify(options.bucket)} is not valid`, 'A bucket name is 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit.');
  }
  const endpoint = new URL(options.endpoint);
  const clock = options.clock ?? Date.now;
  const credentials = { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey, sessionToken: options.sessionToken };

  function objectUrl(key: string): string {
    const base = endpoint.pathname.replace(/\/+$/, '');
    if (options.forcePathStyle) return `${endpoint.origin}${base}/${options.bucket}/${uriEncode(key, true)}`;
    return `${endpoint.protocol}//${options.bucket}.${endpoint.host}${base}/${uriEncode(key, true)}`;
  }

  function presign(method: string, key: string, signedAtMs: number, expiresSeconds: number, headers?: Record<string, string>): string {
    return presignV4({
      method,
      url: objectUrl(key),
      region: options.region,
      service: 's3',
      credentials,
      date: new Date(signedAtMs),
      expiresSeconds,
      ...(headers === undefined ? {} : { headers }),
    }).url;
  }

  /**
   * SigV4 counts whole seconds from a signing time with whole-second precision; round up so the URL lives at least as
   * long as asked (capped at a week), and report the real deadline.
   */
  function window(expiresAtUnixMs: number): { signedAtMs: number; seconds: number; expiresAtUnixMs: number } {
    const nowMs = clock();
    if (!(expiresAtUnixMs > nowMs)) throw new BlueError('INTERNAL', 'cannot presign a URL that has already expired');
    const signedAtMs = Math.floor(nowMs / 1000) * 1000;
    const wanted = Math.ceil((expiresAtUnixMs - signedAtMs) / 1000);
    const seconds = Math.min(wanted, MAX_EXPIRES_SECONDS);
    return { signedAtMs, seconds, expiresAtUnixMs: signedAtMs + seconds * 1000 };
  }

  const now = (): number => Math.floor(clock() / 1000) * 1000;

  return {
    kind: 's3',

    async presignUpload(key: string, object: StoredObject, expiresAtUnixMs: number): Promise<SignedRequest> {
      assertValidKey(key);
      assertValidObject(object);
      const w = window(expiresAtUnixMs);
      const headers = { 'content-length': String(object.size), 'x-amz-checksum-sha256': hexToBase64(object.sha256) };
      return { method: 'PUT', url: presign('PUT', key, w.signedAtMs, w.seconds, headers), headers, expiresAtUnixMs: w.expiresAtUnixMs };
    },

    async presignDownload(key: string, expiresAtUnixMs: number): Promise<SignedRequest> {
      assertValidKey(key);
      const w = window(expiresAtUnixMs);
      return { method: 'GET', url: presign('GET', key, w.signedAtMs, w.seconds), headers: {}, expiresAtUnixMs: w.expiresAtUnixMs };
    },

    async stat(key: string): Promise<StoredObject | undefined> {
      assertValidKey(key);
      const head = await request(presign('HEAD', key, now(), INTERNAL_EXPIRES_SECONDS), { method: 'HEAD' });
      await head.body.dump();
      if (head.statusCode === 404) return undefined;
      if (head.statusCode !== 200) throw s3Error('HEAD', key, head.statusCode, '');
      const headSize = Number(head.headers['content-length']);

      // undici's request, unlike fetch, never decodes a Content-Encoding the uploader may have set: the digest must be
      // of the stored bytes.
      const get = await request(presign('GET', key, now(), INTERNAL_EXPIRES_SECONDS), { method: 'GET' });
      if (get.statusCode !== 200) {
        const body = await get.body.text().catch(() => '');
        if (get.statusCode === 404) return undefined;
        throw s3Error('GET', key, get.statusCode, body);
      }
      const hash = createHash('sha256');
      let size = 0;
      for await (const chunk of get.body) {
        size += (chunk as Buffer).length;
        hash.update(chunk as Buffer);
      }
      if (Number.isFinite(headSize) && headSize !== size) {
        throw new BlueError(
          'CONCURRENT_MODIFICATION',
          `S3 object ${key} changed while it was being read (${headSize} then ${size} bytes)`,
          {
            hint: 'Retry; the object was replaced during the check.',
          },
        );
      }
      return { size, sha256: hash.digest('hex') };
    },

    async delete(key: string): Promise<void> {
      assertValidKey(key);
      const response = await request(presign('DELETE', key, now(), INTERNAL_EXPIRES_SECONDS), { method: 'DELETE' });
      const body = await response.body.text().catch(() => '');
      if (response.statusCode >= 300 && response.statusCode !== 404) throw s3Error('DELETE', key, response.statusCode, body);
    },

    async close(): Promise<void> {},
  };
}
