/**
 * The scale-out blob store: an S3-compatible bucket reached with the AWS SDK v3. Credentials come from the SDK's
 * default provider chain (environment, shared config and credentials files with profiles, web identity as on EKS/IRSA,
 * container and instance metadata) unless the configuration gives static ones, so workload identity and ambient
 * credentials work with nothing blue-agent-specific to set.
 *
 * Clients upload and download with presigned URLs. Upload URLs sign `content-length` and `x-amz-checksum-sha256` as
 * headers, because S3 enforces a checksum only when it arrives as a signed header, never from the query string. The
 * server's own reads go through the SDK, and `stat` hashes the object's bytes because an ETag is not a content hash.
 * Errors never carry credentials or signed URLs.
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { BlueError, usageError } from '@blue-agent/contract/errors.js';
import { assertValidKey, assertValidObject, hexToBase64 } from './keys.js';
import type { BlobStore, SignedRequest, StoredObject } from './types.js';

export interface S3StaticCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface S3BlobStoreOptions {
  /** e.g. `http://127.0.0.1:9000`; undefined: the SDK's endpoint for the region (or AWS_ENDPOINT_URL_S3). */
  endpoint?: string | undefined;
  bucket: string;
  /** Undefined: the SDK's region chain (AWS_REGION, the profile's `region`); none at all is a usage error. */
  region?: string | undefined;
  /** `<endpoint>/<bucket>/<key>` instead of `<bucket>.<endpoint host>/<key>`; needed by most S3-compatible servers. */
  forcePathStyle?: boolean | undefined;
  /** Only when the configuration gives them; otherwise the SDK's default credential chain. */
  credentials?: S3StaticCredentials | undefined;
  clock?: () => number;
}

/** What the server's configuration says about the bucket. */
export interface S3Config {
  endpoint?: string | undefined;
  bucket: string;
  region?: string | undefined;
  forcePathStyle?: boolean | undefined;
  credentials?: S3StaticCredentials | undefined;
}

/** SigV4 presigned URLs live at most a week. */
const MAX_EXPIRES_SECONDS = 604_800;
/** The headers an upload URL binds, in the order X-Amz-SignedHeaders lists them (with `host`). */
const UPLOAD_SIGNED_HEADERS = 'content-length;host;x-amz-checksum-sha256';

const CREDENTIALS_HINT =
  'Give the server AWS credentials in any way the AWS SDK reads them: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY ' +
  '(and AWS_SESSION_TOKEN), a profile in ~/.aws/credentials or ~/.aws/config (AWS_PROFILE), web identity ' +
  '(AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, as EKS/IRSA sets), or the container or instance role.';

/** The bucket from the configuration; the region falls back to AWS_REGION / AWS_DEFAULT_REGION, then to the SDK. */
export function s3Options(env: Record<string, string | undefined>, config: S3Config): S3BlobStoreOptions {
  const region = config.region || env.AWS_REGION || env.AWS_DEFAULT_REGION || undefined;
  return {
    endpoint: config.endpoint,
    bucket: config.bucket,
    region,
    forcePathStyle: config.forcePathStyle ?? false,
    ...(config.credentials === undefined ? {} : { credentials: config.credentials }),
  };
}

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  message?: unknown;
}

/** The first line of a credential provider's message (which names the providers and profiles it tried, not secrets). */
function errorDetail(error: unknown): string {
  const e = (typeof error === 'object' && error !== null ? error : {}) as ErrorLike;
  const message = typeof e.message === 'string' ? e.message.split('\n')[0]!.trim().slice(0, 200) : '';
  return message === '' ? '' : `: ${message}`;
}

/** A BlueError that names the failure by its S3 code or system error code, never by a URL or a credential. */
function s3Error(action: string, key: string, error: unknown): BlueError {
  if (error instanceof BlueError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as ErrorLike;
  if (e.name === 'CredentialsProviderError') {
    return new BlueError('AUTH_FAILED', `S3 ${action} ${key}: no AWS credentials${errorDetail(error)}`, {
      hint: CREDENTIALS_HINT,
    });
  }
  if (error instanceof S3ServiceException) {
    const status = error.$metadata.httpStatusCode;
    const code = error.name && error.name !== 'Error' && error.name !== 'Unknown' ? ` ${error.name}` : '';
    if (status === 403) {
      return new BlueError('AUTH_FAILED', `S3 ${action} ${key}: HTTP 403${code}`, {
        hint:
          `The bucket refused the server's credentials: check that they are current and allowed to read, write ` +
          `and delete in the bucket. ${CREDENTIALS_HINT}`,
      });
    }
    return new BlueError('INTERNAL', `S3 ${action} ${key}: HTTP ${status ?? '?'}${code}`, {
      hint: 'Check the bucket, region and endpoint (--s3-bucket, --s3-region, --s3-endpoint, --s3-path-style).',
    });
  }
  const code = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? e.name : 'error';
  return new BlueError('INTERNAL', `S3 ${action} ${key}: ${code}`, {
    hint: 'Check that the endpoint is reachable from the server (--s3-endpoint) and the bucket and region are right.',
  });
}

const isNotFound = (error: unknown): boolean =>
  error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404;

export async function createS3BlobStore(options: S3BlobStoreOptions): Promise<BlobStore> {
  if (!options.bucket || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(options.bucket)) {
    throw usageError(
      `S3 bucket name ${JSON.stringify(options.bucket)} is not valid`,
      'A bucket name is 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or ' +
        'digit.',
    );
  }
  if (options.endpoint !== undefined && !URL.canParse(options.endpoint)) {
    throw usageError(
      `S3 endpoint ${JSON.stringify(options.endpoint)} is not a URL`,
      'Give --s3-endpoint as a URL, e.g. https://s3.eu-west-1.amazonaws.com or http://127.0.0.1:9000.',
    );
  }
  const clock = options.clock ?? Date.now;
  const client = new S3Client({
    ...(options.region === undefined ? {} : { region: options.region }),
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    forcePathStyle: options.forcePathStyle ?? false,
    // Omitted: the SDK's default chain.
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
    // No checksum of the SDK's own choosing: upload URLs carry exactly the SHA-256 the client declared, downloads no
    // checksum mode, and stat computes the digest itself.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
  });

  // Fail at start, with the remedy, rather than on the first upload.
  try {
    await client.config.region();
  } catch {
    client.destroy();
    throw usageError(
      'the S3 blob store needs a region',
      'Pass --s3-region, set AWS_REGION (or AWS_DEFAULT_REGION), or set `region` in the AWS profile.',
    );
  }
  try {
    await client.config.credentials();
  } catch (error) {
    client.destroy();
    throw new BlueError('AUTH_FAILED', `the S3 blob store found no AWS credentials${errorDetail(error)}`, {
      hint: CREDENTIALS_HINT,
    });
  }

  /**
   * SigV4 counts whole seconds from a signing time with whole-second precision; round up so the URL lives at least as
   * long as asked (capped at a week), and report the real deadline.
   */
  function window(expiresAtUnixMs: number): { signedAt: Date; seconds: number; expiresAtUnixMs: number } {
    const nowMs = clock();
    if (!(expiresAtUnixMs > nowMs)) throw new BlueError('INTERNAL', 'cannot presign a URL that has already expired');
    const signedAtMs = Math.floor(nowMs / 1000) * 1000;
    const wanted = Math.ceil((expiresAtUnixMs - signedAtMs) / 1000);
    const seconds = Math.min(wanted, MAX_EXPIRES_SECONDS);
    return { signedAt: new Date(signedAtMs), seconds, expiresAtUnixMs: signedAtMs + seconds * 1000 };
  }

  /** The URL must bind exactly the headers the SignedRequest lists, or a client following it would be refused. */
  function checkSignedHeaders(url: string, expected: string, key: string): void {
    if (new URL(url).searchParams.get('X-Amz-SignedHeaders') !== expected) {
      throw new BlueError('INTERNAL', `S3 presign ${key}: the AWS SDK did not sign exactly ${expected}`, {
        hint: 'A change in @aws-sdk/s3-request-presigner; report it with its version.',
      });
    }
  }

  return {
    kind: 's3',

    async check(): Promise<void> {
      try {
        await client.send(new HeadBucketCommand({ Bucket: options.bucket }));
      } catch (error) {
        throw s3Error('HEAD', options.bucket, error);
      }
    },

    async presignUpload(key: string, object: StoredObject, expiresAtUnixMs: number): Promise<SignedRequest> {
      assertValidKey(key);
      assertValidObject(object);
      const w = window(expiresAtUnixMs);
      const headers = { 'content-length': String(object.size), 'x-amz-checksum-sha256': hexToBase64(object.sha256) };
      const command = new PutObjectCommand({
        Bucket: options.bucket,
        Key: key,
        ContentLength: object.size,
        ChecksumSHA256: headers['x-amz-checksum-sha256'],
      });
      let url: string;
      try {
        url = await getSignedUrl(client, command, {
          expiresIn: w.seconds,
          signingDate: w.signedAt,
          // Signed, and kept as headers: hoisted into the query, S3 would not enforce the checksum.
          signableHeaders: new Set(['content-length', 'x-amz-checksum-sha256']),
          unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
        });
      } catch (error) {
        throw s3Error('presign PUT', key, error);
      }
      checkSignedHeaders(url, UPLOAD_SIGNED_HEADERS, key);
      return { method: 'PUT', url, headers, expiresAtUnixMs: w.expiresAtUnixMs };
    },

    async presignDownload(key: string, expiresAtUnixMs: number): Promise<SignedRequest> {
      assertValidKey(key);
      const w = window(expiresAtUnixMs);
      let url: string;
      try {
        url = await getSignedUrl(client, new GetObjectCommand({ Bucket: options.bucket, Key: key }), {
          expiresIn: w.seconds,
          signingDate: w.signedAt,
        });
      } catch (error) {
        throw s3Error('presign GET', key, error);
      }
      checkSignedHeaders(url, 'host', key);
      return { method: 'GET', url, headers: {}, expiresAtUnixMs: w.expiresAtUnixMs };
    },

    async stat(key: string, statOptions: { copyTo?: string | undefined } = {}): Promise<StoredObject | undefined> {
      assertValidKey(key);
      let body: unknown;
      let declared: number | undefined;
      try {
        const response = await client.send(new GetObjectCommand({ Bucket: options.bucket, Key: key }));
        body = response.Body;
        declared = response.ContentLength;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw s3Error('GET', key, error);
      }
      // The SDK's Node handler never decodes a Content-Encoding the uploader may have set: the digest is of the stored
      // bytes.
      if (!(body instanceof Readable))
        throw new BlueError('INTERNAL', `S3 GET ${key}: the response has no readable body`);
      const hash = createHash('sha256');
      let size = 0;
      const copy = statOptions.copyTo === undefined ? undefined : await open(statOptions.copyTo, 'wx', 0o600);
      try {
        for await (const chunk of body) {
          const bytes = chunk as Buffer;
          size += bytes.length;
          hash.update(bytes);
          if (copy !== undefined) await copy.write(bytes);
        }
      } catch (error) {
        body.destroy();
        throw s3Error('GET', key, error);
      } finally {
        await copy?.close();
      }
      if (declared !== undefined && declared !== size) {
        throw new BlueError('INTERNAL', `S3 GET ${key}: read ${size} of ${declared} bytes`, {
          hint: 'Retry; the read was cut short.',
        });
      }
      return { size, sha256: hash.digest('hex') };
    },

    async delete(key: string): Promise<void> {
      assertValidKey(key);
      try {
        await client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: key }));
      } catch (error) {
        // S3 answers 204 for a missing key; some compatible servers 404.
        if (!isNotFound(error)) throw s3Error('DELETE', key, error);
      }
    },

    async close(): Promise<void> {
      client.destroy();
    },
  };
}
