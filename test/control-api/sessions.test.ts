/**
 * What the session client accepts from the Control API: bodies are held to schemas/control-session-upload(s).schema.json
 * before use, and what is shown is made fit for a terminal.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/control-api/client.js';
import { parseUpload, SessionsApi } from '../../src/control-api/sessions.js';
import { BlueError } from '../../src/errors.js';
import { checkAnswerContract } from '../support/contract.js';

const ID = '3f2a91c0-1111-4222-8333-444455556666';

function detail(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    upload_id: ID,
    user_id: 'u-1',
    owner_email: 'ada@example.com',
    owned: true,
    harness: 'claude',
    session_id: 'sess-1',
    revision: 1,
    status: 'complete',
    size_bytes: 10,
    sha256: 'a'.repeat(64),
    content_type: 'application/vnd.blue.session-bundle+tar+gzip',
    compatibility_profile: 'claude-v2_0_12',
    cwd: '/home/ada/p',
    artifact_format: 'blue-session-bundle-v1',
    resumable: true,
    title: 'Fix the build',
    summary: null,
    captured_at_unix_ms: 1_700_000_000_000,
    repository_root: null,
    repository_remote: null,
    sharing: 'private',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    completed_at: '2026-01-01T00:00:00.000Z',
    retention_deadline: '2026-04-01T00:00:00.000Z',
    expired: false,
    ...over,
  };
}

function refused(value: unknown): BlueError {
  try {
    parseUpload(value, `GET /session-uploads/${ID}`);
  } catch (error) {
    expect(error).toBeInstanceOf(BlueError);
    expect((error as BlueError).code).toBe('UPLOAD_FAILED');
    expect((error as BlueError).message).toContain("the Control API's answer is not usable");
    return error as BlueError;
  }
  throw new Error('accepted');
}

describe('parseUpload', () => {
  it('accepts what the contract allows, ignoring fields it does not know, and keeps only what the commands use', () => {
    const upload = parseUpload(detail({ added_later: { x: 1 } }), 'here');
    expect(upload).toMatchObject({ upload_id: ID, harness: 'claude', session_id: 'sess-1', owned: true, sharing: 'private', summary: null });
    expect(upload).not.toHaveProperty('content_type');
    expect(upload).not.toHaveProperty('added_later');
  });

  it('refuses what the contract does not allow, naming the field', () => {
    expect(refused(detail({ harness: 'vim' })).message).toContain('/harness must be one of');
    expect(refused(detail({ upload_id: '../../etc' })).message).toContain('/upload_id');
    expect(refused(detail({ session_id: '../escape' })).message).toContain('/session_id');
    expect(refused(detail({ sha256: 'zz' })).message).toContain('/sha256');
    expect(refused(detail({ size_bytes: -1 })).message).toContain('/size_bytes');
    expect(refused(detail({ status: 'gone' })).message).toContain('/status');
    expect(refused(detail({ user_id: 'x'.repeat(65) })).message).toContain('/user_id');
    expect(refused(detail({ owned: undefined })).message).toContain('"owned"');
    refused([detail()]);
    refused(null);
  });

  it('makes text from other people fit for a terminal, bounded', () => {
    const upload = parseUpload(detail({ title: 'evil\u001b[2Jtitle\u0007', user_id: 'u\u0000x', cwd: '/p\r\nq' }), 'here');
    expect(upload.title).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(upload.user_id).not.toMatch(/[\u0000-\u001f]/);
    expect(upload.cwd).not.toMatch(/[\r\n]/);
  });
});

describe('the test contract check', () => {
  it('holds session-upload answers to their schemas, and leaves other routes and failures alone', () => {
    expect(() => checkAnswerContract('GET', `/session-uploads/${ID}`, 200, detail())).not.toThrow();
    expect(() => checkAnswerContract('GET', `/session-uploads/${ID}`, 200, detail({ owned: 'yes' }))).toThrow(/control-session-upload\.schema\.json: \/owned/);
    expect(() => checkAnswerContract('GET', '/session-uploads?limit=2', 200, { items: [detail()], next_cursor: null })).not.toThrow();
    expect(() => checkAnswerContract('GET', '/session-uploads', 200, { items: [detail({ expired: 1 })], next_cursor: null })).toThrow(/\/items\/0\/expired/);
    expect(() => checkAnswerContract('POST', `/session-uploads/${ID}/complete`, 200, { nope: true })).toThrow(/control-session-upload/);
    expect(() => checkAnswerContract('GET', `/session-uploads/${ID}`, 404, { error: { code: 'not_found' } })).not.toThrow();
    expect(() => checkAnswerContract('GET', '/governance-config', 200, { anything: true })).not.toThrow();
  });
});

describe('SessionsApi listing', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
  });

  it('refuses a page whose items break the contract', async () => {
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [detail(), detail({ revision: 'two' })], next_cursor: null })));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const client = await ControlClient.create({ controlUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 't', tokenSource: 't', env: {}, userAgent: 'x', timeoutMs: 5_000 });
    const api = new SessionsApi(client);
    try {
      await expect(api.page({})).rejects.toMatchObject({ code: 'UPLOAD_FAILED', message: expect.stringContaining('GET /session-uploads: the Control API\'s answer is not usable: /items/1/revision') });
    } finally {
      await api.close();
    }
  });
});
