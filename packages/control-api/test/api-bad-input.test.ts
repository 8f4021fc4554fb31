/**
 * Bad input of every kind against the real server: malformed presigns, oversized and mistyped bodies, query
 * parameters out of bounds, unknown paths and methods, malformed HTTP; each a 4xx naming the problem, and the server
 * keeps serving.
 */
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, presignBody, startTestServer, type TestServer } from '../../../test/support/control-server.js';

const bytes = Buffer.from('bundle');

function expectError(answer: { status: number; body: any }, status: number, message?: RegExp): void {
  expect(answer.status).toBe(status);
  expect(answer.body.code).toEqual(expect.any(String));
  expect(answer.body.error).toEqual(expect.any(String));
  if (message !== undefined) expect(answer.body.error).toMatch(message);
}

describe.each(BACKENDS)('bad input (%s)', (backend) => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({ backend, maxBodyBytes: 64 * 1024 });
  });
  afterEach(async () => {
    await t.close();
  });

  it('answers every malformed presign with a 4xx naming the problem, and stays up', async () => {
    const cases: [unknown, number, RegExp][] = [
      ['{"harness": ', 400, /not valid JSON/],
      ['[]', 400, /must be object/],
      ['null', 400, /must be object/],
      [{ ...presignBody(bytes), size_bytes: '6' }, 400, /size_bytes must be integer/],
      [{ ...presignBody(bytes), size_bytes: 128 * 1024 * 1024 + 1 }, 400, /size_bytes must be <= 134217728/],
      [{ ...presignBody(bytes), content_type: '' }, 400, /content_type must NOT have fewer than 1 characters/],
      [{ ...presignBody(bytes), harness: 'vim' }, 400, /harness must be one of/],
      [{ ...presignBody(bytes), session_id: '' }, 400, /session_id/],
      [{ ...presignBody(bytes), session_id: 'a\u0000b' }, 400, /session_id must match/],
      [{ ...presignBody(bytes), session_id: 'x'.repeat(513) }, 400, /session_id/],
      [{ ...presignBody(bytes), sha256: 'XYZ' }, 400, /sha256/],
      [{ ...presignBody(bytes), artifact_format: 'zip' }, 400, /artifact_format must be one of/],
      [{ ...presignBody(bytes), cwd: 7 }, 400, /cwd must be string,null/],
      [{ harness: 'claude' }, 400, /missing the required field "session_id"/],
      [{ ...presignBody(bytes), title: 'x'.repeat(257) }, 400, /title/],
      // NUL, which PostgreSQL's text cannot hold: refused alike on both backends, naming the field.
      ...(['cwd', 'title', 'summary', 'repository_root', 'repository_remote'] as const).map(
        (field): [unknown, number, RegExp] => [
          { ...presignBody(bytes), [field]: 'a\u0000b' },
          400,
          new RegExp(`${field} must match`),
        ],
      ),
      [{ ...presignBody(bytes), compatibility_profile: 'claude\u0000' }, 400, /compatibility_profile must match/],
      [{ ...presignBody(bytes), content_type: 'text/plain\u0000' }, 400, /content_type must match/],
      // Session records: any provider by the provider rule, never resumable, tags one word each.
      [
        { ...presignBody(bytes), harness: 'Not A Provider', artifact_format: 'blue-session-record-v1' },
        400,
        /harness must match/,
      ],
      [
        { ...presignBody(bytes), harness: 'notes', artifact_format: 'blue-session-record-v1', resumable: true },
        400,
        /a session record is never resumable/,
      ],
      [{ ...presignBody(bytes), tags: ['two words'] }, 400, /tags\/0 must match/],
      [
        { ...presignBody(bytes), tags: Array.from({ length: 33 }, (_, i) => `t${i}`) },
        400,
        /tags must NOT have more than 32 items/,
      ],
    ];
    for (const [body, status, message] of cases) {
      const answer = await t.call('POST', '/session-uploads/presign', t.alice.token, body);
      expect(answer.status, JSON.stringify(body).slice(0, 100)).toBe(status);
      expectError(answer, status, message);
    }
    expect((await t.call('GET', '/session-uploads', t.alice.token)).status).toBe(200);
  });

  it('refuses oversized bodies, missing bodies and other media types', async () => {
    expectError(
      await t.call('POST', '/session-uploads/presign', t.alice.token, {
        ...presignBody(bytes),
        title: 'x'.repeat(70_000),
      }),
      413,
    );
    expectError(await t.call('POST', '/session-uploads/presign', t.alice.token), 400, /needs a JSON body/);
    expectError(
      await t.call('POST', '/session-uploads/presign', t.alice.token, JSON.stringify(presignBody(bytes)), {
        'content-type': 'text/plain',
      }),
      415,
    );
    // A body streamed without a length is bounded as it arrives.
    const chunked = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${t.url}/client-status`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.alice.token}`,
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 20; i++) req.write('x'.repeat(8192));
      req.end();
    }).catch(() => 413);
    expect(chunked).toBe(413);
    expect((await t.call('GET', '/session-uploads', t.alice.token)).status).toBe(200);
  });

  it('bounds q and rejects unknown or malformed query parameters', async () => {
    expectError(await t.call('GET', `/session-uploads?q=${'a'.repeat(1000)}`, t.alice.token), 400, /at most 200/);
    expectError(
      await t.call('GET', `/session-uploads?q=${'a'.repeat(10_000)}`, t.alice.token),
      400,
      /longer than 8192/,
    );
    expectError(
      await t.call('GET', '/session-uploads?order=desc', t.alice.token),
      400,
      /unknown query parameter "order"/,
    );
    expectError(await t.call('GET', '/session-uploads?limit=0', t.alice.token), 400, /limit/);
    expectError(await t.call('GET', '/session-uploads?limit=abc', t.alice.token), 400, /limit/);
    expectError(await t.call('GET', '/session-uploads?status=done', t.alice.token), 400, /status must be one of/);
    expectError(await t.call('GET', '/session-uploads?resumable=yes', t.alice.token), 400, /resumable/);
    expectError(await t.call('GET', '/session-uploads?harness=x&harness=y', t.alice.token), 400, /more than once/);
    // A URL too long for the server's header limit is answered, not dropped.
    const huge = await fetch(`${t.url}/session-uploads?q=${'a'.repeat(20_000)}`, {
      headers: { authorization: `Bearer ${t.alice.token}` },
    });
    expect(huge.status).toBeGreaterThanOrEqual(400);
    expect(huge.status).toBeLessThan(500);
  });

  it('answers unknown paths 404, wrong methods 405, bad ids 404, with JSON', async () => {
    expectError(await t.call('GET', '/nope', undefined), 404);
    expectError(await t.call('GET', '/session-uploads/not-an-id', t.alice.token), 404);
    expectError(await t.call('GET', '/session-uploads/00000000-0000-4000-8000-000000000000', t.alice.token), 404);
    expectError(await t.call('GET', '/session-uploads/..%2F..%2Fetc', t.alice.token), 404);
    const wrong = await t.call('DELETE', '/session-uploads/presign', t.alice.token);
    expectError(wrong, 405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expectError(await t.call('POST', '/governance-config', t.alice.token, {}), 405);
  });

  it('answers malformed HTTP with a 400 and keeps serving', async () => {
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
      socket.write('GARBAGE / HTTP/9\r\n\r\n');
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400/);
    expect((await t.call('GET', '/session-uploads', t.alice.token)).status).toBe(200);
  });
});
