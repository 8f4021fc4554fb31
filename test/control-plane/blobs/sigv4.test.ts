import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { presignV4, signingKey, uriEncode } from '../../../src/control-plane/blobs/sigv4.js';

// The example from the S3 API reference, "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)".
const awsExample = {
  method: 'GET',
  url: 'https://examplebucket.s3.amazonaws.com/test.txt',
  region: 'us-east-1',
  service: 's3',
  credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' },
  date: new Date('2013-05-24T00:00:00Z'),
  expiresSeconds: 86400,
};

describe('SigV4 query-string presigning', () => {
  it('reproduces the AWS documentation example for a presigned GET', () => {
    const { url, debug } = presignV4(awsExample);
    expect(debug.canonicalRequest).toBe(
      [
        'GET',
        '/test.txt',
        'X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host',
        'host:examplebucket.s3.amazonaws.com',
        '',
        'host',
        'UNSIGNED-PAYLOAD',
      ].join('\n'),
    );
    expect(debug.stringToSign.split('\n').slice(0, 3)).toEqual([
      'AWS4-HMAC-SHA256',
      '20130524T000000Z',
      '20130524/us-east-1/s3/aws4_request',
    ]);
    expect(debug.signature).toBe('aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404');
    expect(url).toBe(
      'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404',
    );
  });

  it('derives the signing key of the AWS general reference example', () => {
    expect(signingKey('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', '20120215', 'us-east-1', 'iam').toString('hex')).toBe(
      'f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d',
    );
  });

  it('signs extra headers, never puts them in the query, and any change to them changes the signature', () => {
    const sha = createHash('sha256').update('hello').digest('base64');
    const headers = { 'content-length': '5', 'x-amz-checksum-sha256': sha };
    const signed = presignV4({ ...awsExample, method: 'PUT', headers });
    const query = new URL(signed.url).searchParams;
    expect(query.get('X-Amz-SignedHeaders')).toBe('content-length;host;x-amz-checksum-sha256');
    expect(signed.url).not.toContain('checksum-sha256=');
    expect(signed.url).not.toContain(encodeURIComponent(sha));
    expect(signed.debug.canonicalRequest).toContain(`x-amz-checksum-sha256:${sha}\n`);
    const other = createHash('sha256').update('hellO').digest('base64');
    expect(presignV4({ ...awsExample, method: 'PUT', headers: { ...headers, 'x-amz-checksum-sha256': other } }).debug.signature).not.toBe(
      signed.debug.signature,
    );
    expect(presignV4({ ...awsExample, method: 'PUT', headers: { ...headers, 'content-length': '6' } }).debug.signature).not.toBe(
      signed.debug.signature,
    );
  });

  it('puts the session token in the signed query string', () => {
    const signed = presignV4({ ...awsExample, credentials: { ...awsExample.credentials, sessionToken: 'tok/en+=' } });
    expect(signed.debug.canonicalRequest).toContain('X-Amz-Security-Token=tok%2Fen%2B%3D');
    expect(signed.debug.signature).not.toBe('aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404');
  });

  it('encodes like RFC 3986 with upper-case hex', () => {
    expect(uriEncode('a b/c~d*é')).toBe('a%20b%2Fc~d%2A%C3%A9');
    expect(uriEncode('a b/c', true)).toBe('a%20b/c');
  });
});
