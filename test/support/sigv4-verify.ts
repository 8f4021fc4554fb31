/**
 * A minimal AWS Signature Version 4 verifier for S3 requests, written against node:crypto and the AWS documentation,
 * independent of the AWS SDK that signs them. s3rver checks only the access key id and the expiry, so the tests put
 * this in front of it to check what S3 checks: the signature recomputed from the request as received (method, path,
 * every query parameter, the values of the signed headers), for both forms — presigned URLs (X-Amz-* in the query)
 * and the Authorization header the SDK's own calls carry. A signed header that is missing or changed, a changed URL,
 * another secret or an expired URL is refused. The payload hash is taken as declared (UNSIGNED-PAYLOAD for presigned
 * URLs); the body is not hashed here.
 */
import { createHash, createHmac } from 'node:crypto';

export interface ReceivedRequest {
  method: string;
  /** The request target as received (`/bucket/key?X-Amz-...`), or an absolute URL. */
  url: string;
  /** Node's lower-cased request headers; `host` is required. */
  headers: Record<string, string | string[] | undefined>;
}

export type Verdict =
  | { ok: true; accessKeyId: string }
  | { ok: false; code: 'AccessDenied' | 'SignatureDoesNotMatch' | 'InvalidAccessKeyId'; reason: string };

/** RFC 3986 percent-encoding as SigV4 wants it: only unreserved characters stay, hex in upper case. */
export function uriEncode(value: string, keepSlash = false): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(c) || (keepSlash && c === '/')) out += c;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();

export function signingKey(secretAccessKey: string, day: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), service), 'aws4_request');
}

/** `20130524T000000Z` as a time, or NaN. */
function parseStamp(stamp: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(stamp);
  return m === null
    ? Number.NaN
    : Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

function header(request: ReceivedRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

/** The raw query as [name, value] pairs, decoded once. */
function queryPairs(search: string): [string, string][] {
  if (search === '' || search === '?') return [];
  return search
    .slice(1)
    .split('&')
    .map((part) => {
      const at = part.indexOf('=');
      const [k, v] = at < 0 ? [part, ''] : [part.slice(0, at), part.slice(at + 1)];
      return [decodeURIComponent(k), decodeURIComponent(v)];
    });
}

/**
 * Whether `request` carries a valid SigV4 signature by one of `secrets` (access key id → secret key) at `nowMs`.
 * Presigned URLs must not have expired; header-signed requests must be dated within 15 minutes of `nowMs`.
 */
export function verifySigV4(request: ReceivedRequest, secrets: Record<string, string>, nowMs = Date.now()): Verdict {
  const refuse = (code: 'AccessDenied' | 'SignatureDoesNotMatch' | 'InvalidAccessKeyId', reason: string): Verdict => ({
    ok: false,
    code,
    reason,
  });
  const url = new URL(request.url, 'http://placeholder');
  const query = queryPairs(url.search);
  const q = (name: string): string | undefined => query.find(([k]) => k === name)?.[1];
  const authorization = header(request, 'authorization');

  let credential: string;
  let signedHeaders: string;
  let signature: string;
  let stamp: string;
  let payloadHash: string;
  let signedQuery: [string, string][];
  if (authorization === undefined) {
    if (q('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return refuse('AccessDenied', 'not a SigV4 presigned request');
    credential = q('X-Amz-Credential') ?? '';
    signedHeaders = q('X-Amz-SignedHeaders') ?? '';
    signature = q('X-Amz-Signature') ?? '';
    stamp = q('X-Amz-Date') ?? '';
    // A presigned URL's body is never hashed by the signer.
    payloadHash = q('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD';
    signedQuery = query.filter(([k]) => k !== 'X-Amz-Signature');
    const expires = Number(q('X-Amz-Expires'));
    const signedAt = parseStamp(stamp);
    if (!Number.isInteger(expires) || expires < 1 || expires > 604_800)
      return refuse('AccessDenied', 'X-Amz-Expires out of range');
    if (!(nowMs <= signedAt + expires * 1000)) return refuse('AccessDenied', 'Request has expired');
  } else {
    const m = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      authorization,
    );
    if (m === null) return refuse('AccessDenied', 'malformed Authorization header');
    [, credential = '', signedHeaders = '', signature = ''] = m;
    stamp = header(request, 'x-amz-date') ?? '';
    payloadHash = header(request, 'x-amz-content-sha256') ?? '';
    if (payloadHash === '') return refuse('AccessDenied', 'missing x-amz-content-sha256');
    signedQuery = query;
    if (!(Math.abs(nowMs - parseStamp(stamp)) <= 15 * 60_000)) return refuse('AccessDenied', 'request time too skewed');
  }

  const [accessKeyId = '', day = '', region = '', service = '', terminator = ''] = credential.split('/');
  const secret = secrets[accessKeyId];
  if (secret === undefined) return refuse('InvalidAccessKeyId', 'unknown access key id');
  if (terminator !== 'aws4_request' || !stamp.startsWith(day))
    return refuse('AccessDenied', 'malformed credential scope');

  const names = signedHeaders.split(';');
  if (!names.includes('host') || [...names].sort().join(';') !== signedHeaders)
    return refuse('AccessDenied', 'malformed SignedHeaders');
  let canonicalHeaders = '';
  for (const name of names) {
    const value = header(request, name);
    if (value === undefined) return refuse('SignatureDoesNotMatch', `signed header ${name} is missing`);
    canonicalHeaders += `${name}:${value.trim().replace(/\s+/g, ' ')}\n`;
  }

  // S3 encodes the path once (no double encoding) and keeps the slashes.
  const canonicalUri = uriEncode(decodeURIComponent(url.pathname), true) || '/';
  const canonicalQuery = signedQuery
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonicalRequest = [
    request.method,
    canonicalUri,
    canonicalQuery,
    canonicalHeaders,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    stamp,
    scope,
    createHash('sha256').update(canonicalRequest, 'utf8').digest('hex'),
  ].join('\n');
  const expected = hmac(signingKey(secret, day, region, service), stringToSign).toString('hex');
  if (expected !== signature) return refuse('SignatureDoesNotMatch', 'the signature does not match the request');
  return { ok: true, accessKeyId };
}
