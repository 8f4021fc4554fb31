/**
 * The SigV4 verifier the S3 gateway tests put in front of s3rver (test/support/sigv4-verify.ts): pinned to the AWS
 * documentation vectors, then run against what the AWS SDK itself signs — presigned URLs and header-signed calls —
 * so that "the gateway accepts it" means the request is signed exactly right, and "refuses it" means S3 would too.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signingKey, uriEncode, verifySigV4, type ReceivedRequest } from '../../../../test/support/sigv4-verify.js';

const AKID = 'AKIAIOSFODNN7EXAMPLE';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const secrets = { [AKID]: SECRET };

/** A received request for a URL: the target and the host header, as a server sees them. */
function received(method: string, url: string, headers: Record<string, string> = {}): ReceivedRequest {
  const u = new URL(url);
  return { method, url: `${u.pathname}${u.search}`, headers: { host: u.host, ...headers } };
}

describe('the SigV4 verifier against the AWS documentation', () => {
  // "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)", S3 API reference.
  const example =
    'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256' +
    '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request' +
    '&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
    '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
  const signedAt = Date.UTC(2013, 4, 24);

  it('accepts the documented presigned GET, and only while it lasts', () => {
    expect(verifySigV4(received('GET', example), secrets, signedAt + 1000)).toEqual({ ok: true, accessKeyId: AKID });
    expect(verifySigV4(received('GET', example), secrets, signedAt + 86_400_000 + 1000)).toMatchObject({
      ok: false,
      reason: 'Request has expired',
    });
  });

  it('refuses it with another secret, method, key, host or an unknown key id', () => {
    const now = signedAt + 1000;
    expect(verifySigV4(received('GET', example), { [AKID]: 'another' }, now)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(received('HEAD', example), secrets, now)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(received('GET', example.replace('/test.txt', '/test.txu')), secrets, now)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(received('GET', example.replace('examplebucket', 'otherbucket')), secrets, now)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(received('GET', `${example}&extra=1`), secrets, now)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(received('GET', example), { OTHER: SECRET }, now)).toMatchObject({
      ok: false,
      code: 'InvalidAccessKeyId',
    });
  });

  it('derives the signing key of the AWS general reference example, and encodes like RFC 3986', () => {
    expect(signingKey('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', '20120215', 'us-east-1', 'iam').toString('hex')).toBe(
      'f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d',
    );
    expect(uriEncode('a b/c~d*é')).toBe('a%20b%2Fc~d%2A%C3%A9');
    expect(uriEncode('a b/c', true)).toBe('a%20b/c');
  });
});

describe('the SigV4 verifier against the AWS SDK', () => {
  const client = new S3Client({
    region: 'eu-west-1',
    endpoint: 'http://127.0.0.1:9',
    forcePathStyle: true,
    credentials: { accessKeyId: AKID, secretAccessKey: SECRET, sessionToken: 'session/token+1' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const body = Buffer.from('hello');
  const checksum = createHash('sha256').update(body).digest('base64');
  const otherChecksum = createHash('sha256').update('hellO').digest('base64');
  const presignPut = (): Promise<string> =>
    getSignedUrl(
      client,
      new PutObjectCommand({
        Bucket: 'blobs',
        Key: 'sessions/a b.tar.gz',
        ContentLength: body.length,
        ChecksumSHA256: checksum,
      }),
      {
        expiresIn: 600,
        signableHeaders: new Set(['content-length', 'x-amz-checksum-sha256']),
        unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
      },
    );

  afterAll(() => client.destroy());

  it('accepts a presigned upload with its signed length and checksum headers, refuses any change to them', async () => {
    const url = await presignPut();
    expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;host;x-amz-checksum-sha256');
    const headers = { 'content-length': String(body.length), 'x-amz-checksum-sha256': checksum };
    expect(verifySigV4(received('PUT', url, headers), secrets)).toEqual({ ok: true, accessKeyId: AKID });
    // Headers the signature does not name may be added.
    expect(
      verifySigV4(received('PUT', url, { ...headers, 'content-type': 'application/gzip' }), secrets),
    ).toMatchObject({ ok: true });

    expect(
      verifySigV4(received('PUT', url, { ...headers, 'x-amz-checksum-sha256': otherChecksum }), secrets),
    ).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifySigV4(received('PUT', url, { ...headers, 'content-length': '6' }), secrets)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(received('PUT', url, { 'content-length': '5' }), secrets)).toMatchObject({
      ok: false,
      reason: 'signed header x-amz-checksum-sha256 is missing',
    });
    expect(verifySigV4(received('GET', url, headers), secrets)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(verifySigV4(received('PUT', url.replace('a%20b', 'a%20c'), headers), secrets)).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
    expect(
      verifySigV4(received('PUT', url.replace('X-Amz-Expires=600', 'X-Amz-Expires=6000'), headers), secrets),
    ).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(
      verifySigV4(received('PUT', url.replace('session%2Ftoken', 'session%2Ftoken2'), headers), secrets),
    ).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifySigV4(received('PUT', url, headers), { [AKID]: 'not-the-secret' })).toMatchObject({
      ok: false,
      code: 'SignatureDoesNotMatch',
    });
  });

  it('refuses a presigned download once it has expired', async () => {
    const signedAt = new Date(Date.UTC(2026, 0, 1));
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: 'blobs', Key: 'k' }), {
      expiresIn: 60,
      signingDate: signedAt,
    });
    expect(verifySigV4(received('GET', url), secrets, signedAt.getTime() + 60_000)).toMatchObject({ ok: true });
    expect(verifySigV4(received('GET', url), secrets, signedAt.getTime() + 61_000)).toMatchObject({
      ok: false,
      reason: 'Request has expired',
    });
  });

  describe('header-signed calls, as the SDK sends them to a loopback server', () => {
    let server: http.Server;
    let seen: ReceivedRequest | undefined;
    let sdk: S3Client;

    beforeAll(async () => {
      server = http.createServer((request, response) => {
        seen = { method: request.method ?? '', url: request.url ?? '', headers: request.headers };
        request.resume();
        response.writeHead(204).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      sdk = new S3Client({
        region: 'eu-west-1',
        endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        forcePathStyle: true,
        credentials: { accessKeyId: AKID, secretAccessKey: SECRET, sessionToken: 'session/token+1' },
        maxAttempts: 1,
      });
    });

    afterAll(async () => {
      sdk?.destroy();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    });

    it(
      'accepts the Authorization header the SDK computed, refuses it with another secret or a changed signed ' +
        'header',
      async () => {
        await sdk.send(new DeleteObjectCommand({ Bucket: 'blobs', Key: 'sessions/x.tar.gz' }));
        const request = seen!;
        expect(request.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\//);
        expect(verifySigV4(request, secrets)).toEqual({ ok: true, accessKeyId: AKID });
        expect(verifySigV4(request, { [AKID]: 'not-the-secret' })).toMatchObject({
          ok: false,
          code: 'SignatureDoesNotMatch',
        });
        expect(
          verifySigV4({ ...request, headers: { ...request.headers, 'x-amz-security-token': 'other' } }, secrets),
        ).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
        expect(verifySigV4({ ...request, url: request.url.replace('x.tar.gz', 'y.tar.gz') }, secrets)).toMatchObject({
          ok: false,
          code: 'SignatureDoesNotMatch',
        });
        expect(verifySigV4(request, secrets, Date.now() + 16 * 60_000)).toMatchObject({
          ok: false,
          reason: 'request time too skewed',
        });
      },
    );
  });
});
