/**
 * The presign answer (src/control-api/uploads.ts): Blue's shape with a relative complete_url, resolved against the
 * presign URL and kept on the Control API's origin (the token goes there), and the captured session's id when the
 * server names it.
 */
import { describe, expect, it } from 'vitest';
import { parsePresignResponse } from '../../src/control-api/uploads.js';
import { UploadError } from '../../src/control-api/errors.js';

const ORIGIN = 'https://control.example.com';
const PRESIGN = new URL(`${ORIGIN}/blue/session-uploads/presign`);
const ARTIFACT = '6b1f0c2e-1111-4222-8333-444455556666';

/** Blue's PresignedUpload, every key present. */
function blue(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    upload_id: ARTIFACT,
    status: 'pending',
    upload_url: 'https://bucket.s3.example.com/org/s/a.tgz?X-Amz-Signature=abc',
    method: 'PUT',
    headers: { 'content-type': 'application/vnd.blue.session-bundle+tar+gzip', 'x-amz-meta-sha256': 'a'.repeat(64) },
    complete_url: `/session-uploads/${ARTIFACT}/complete`,
    ...over,
  };
}

function refusal(body: unknown): UploadError {
  try {
    parsePresignResponse(body, ORIGIN, PRESIGN);
  } catch (error) {
    expect(error).toBeInstanceOf(UploadError);
    return error as UploadError;
  }
  throw new Error('accepted');
}

describe('parsePresignResponse', () => {
  it("resolves Blue's relative complete_url against the presign URL, as Blue's client does", () => {
    expect(parsePresignResponse(blue(), ORIGIN, PRESIGN)).toEqual({
      upload_id: ARTIFACT,
      status: 'pending',
      upload: {
        method: 'PUT',
        url: 'https://bucket.s3.example.com/org/s/a.tgz?X-Amz-Signature=abc',
        headers: {
          'content-type': 'application/vnd.blue.session-bundle+tar+gzip',
          'x-amz-meta-sha256': 'a'.repeat(64),
        },
      },
      complete_url: `${ORIGIN}/session-uploads/${ARTIFACT}/complete`,
    });
    expect(parsePresignResponse(blue({ complete_url: 'complete' }), ORIGIN, PRESIGN)).toMatchObject({
      complete_url: `${ORIGIN}/blue/session-uploads/complete`,
    });
  });

  it(
    'refuses a complete_url that lands on another origin, relative (protocol-relative) or absolute, or carries ' +
      'credentials',
    () => {
      for (const url of [
        '//evil.example.com/session-uploads/x/complete',
        'https://evil.example.com/complete',
        'https://user:pw@control.example.com/c',
        'javascript:alert(1)',
      ]) {
        const error = refusal(blue({ complete_url: url }));
        expect(error.kind, url).toBe('service');
        expect(error.message).toContain("not on the Control API's origin");
      }
      // Without the presign URL a relative one cannot be placed: refused, never guessed.
      expect(() => parsePresignResponse(blue(), ORIGIN)).toThrow(/complete_url/);
    },
  );

  it("Blue's status complete (null URL, method, complete_url; empty headers) needs no upload", () => {
    expect(
      parsePresignResponse(
        blue({ status: 'complete', upload_url: null, method: null, headers: {}, complete_url: null }),
        ORIGIN,
        PRESIGN,
      ),
    ).toEqual({ upload_id: ARTIFACT, status: 'complete' });
  });

  it("keeps the captured session's id when the server names it (ours), and only a well-formed one", () => {
    const session = '0d9c3f1e-aaaa-4bbb-8ccc-000000000001';
    expect(parsePresignResponse(blue({ session_id: session }), ORIGIN, PRESIGN)).toMatchObject({ session_id: session });
    expect(parsePresignResponse(blue({ session_id: '../x' }), ORIGIN, PRESIGN)).not.toHaveProperty('session_id');
  });
});
