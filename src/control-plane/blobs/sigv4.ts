/**
 * AWS Signature Version 4 query-string presigning (the "presigned URL" form), written against node:crypto so the
 * server does not need the AWS SDK. Only what the S3 blob store uses: any method, an UNSIGNED-PAYLOAD body, and extra
 * headers bound into the signature (the upload's content-length and x-amz-checksum-sha256).
 */
import { createHash, createHmac } from 'node:crypto';

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface PresignV4Input {
  method: string;
  /** The object URL without any query string. */
  url: string;
  region: string;
  service: string;
  credentials: SigV4Credentials;
  /** Signing time. */
  date: Date;
  expiresSeconds: number;
  /** Headers besides `host` that the request must carry unchanged; they become X-Amz-SignedHeaders. */
  headers?: Record<string, string>;
}

export interface PresignV4Debug {
  canonicalRequest: string;
  stringToSign: string;
  signature: string;
}

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

function hmac(key: Buffer | string, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

export function amzDate(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

export function signingKey(secretAccessKey: string, day: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, day), region), service), 'aws4_request');
}

/** Returns the presigned URL and, for tests, the intermediate strings. */
export function presignV4(input: PresignV4Input): { url: string; debug: PresignV4Debug } {
  const url = new URL(input.url);
  if (url.search !== '') throw new Error('presignV4: the URL must not carry a query string');
  const stamp = amzDate(input.date);
  const day = stamp.slice(0, 8);
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;

  const headers = new Map<string, string>();
  headers.set('host', url.host);
  for (const [name, value] of Object.entries(input.headers ?? {})) {
    // Canonical header values are trimmed with inner runs of spaces collapsed.
    headers.set(name.toLowerCase(), value.trim().replace(/\s+/g, ' '));
  }
  const names = [...headers.keys()].sort();
  const signedHeaders = names.join(';');

  const query: [string, string][] = [
    ['X-Amz-Algorithm', 'AWS4-HMAC-SHA256'],
    ['X-Amz-Credential', `${input.credentials.accessKeyId}/${scope}`],
    ['X-Amz-Date', stamp],
    ['X-Amz-Expires', String(input.expiresSeconds)],
    ['X-Amz-SignedHeaders', signedHeaders],
  ];
  // S3 wants the session token in the signed query string for presigned URLs.
  if (input.credentials.sessionToken) query.push(['X-Amz-Security-Token', input.credentials.sessionToken]);
  const canonicalQuery = query
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');

  // S3 encodes the path once (no double encoding) and keeps the slashes.
  const canonicalUri = uriEncode(decodeURIComponent(url.pathname), true) || '/';
  const canonicalHeaders = names.map((name) => `${name}:${headers.get(name)}\n`).join('');
  const canonicalRequest = [input.method, canonicalUri, canonicalQuery, canonicalHeaders, signedHeaders, 'UNSIGNED-PAYLOAD'].join('\n');
  const stringToSign = ['AWS4-HMAC-SHA256', stamp, scope, createHash('sha256').update(canonicalRequest, 'utf8').digest('hex')].join('\n');
  const signature = hmac(signingKey(input.credentials.secretAccessKey, day, input.region, input.service), stringToSign).toString('hex');

  const signed = `${url.origin}${canonicalUri}?${canonicalQuery}&X-Amz-Signature=${signature}`;
  return { url: signed, debug: { canonicalRequest, stringToSign, signature } };
}
