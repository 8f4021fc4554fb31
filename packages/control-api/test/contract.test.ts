/**
 * The contract suite: every operation of Blue's service contract the server implements (fixtures/contract), called
 * with requests shaped as the contract's request schemas say, every documented answer it can give produced, and each
 * answer's body validated against the contract's schema for that status (test/support/contract.ts does that for
 * every call). At the end, each operation must have answered every status the contract documents for it, but those
 * this file names with the reason it cannot.
 */
import { createHash } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { DatabaseSync } from 'node:sqlite';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, BUNDLE_TYPE, startTestServer, type TestServer } from '../../../test/support/control-server.js';
import { blueContract, blueValidator, checkAnswerContract, contractCoverage } from '../../../test/support/contract.js';
import { nextEvent, openEventStream } from '../../../test/support/event-stream.js';

/** Documented statuses no request can produce here, with the reason (docs/contract.md lists the deviations). */
const UNREACHABLE: Record<string, Record<string, string>> = {
  getGovernanceConfig: { '403': 'every token carries governance:read', '409': 'gateway mode is not implemented' },
  watchGovernanceConfigRevisions: { '403': 'every token carries governance:read' },
  getSessionUpload: { '403': 'a session the caller may not see is answered 404' },
  getSessionSharing: { '403': 'a session the caller may not see is answered 404' },
};

/** A body the contract's request schema for `operationId` accepts (checked before it is sent). */
function contractRequest(operationId: string, body: unknown): unknown {
  const operation = blueContract().operations.find((o) => o.operationId === operationId)!;
  const validate = blueValidator(operation.request)!;
  if (!validate(body))
    throw new Error(`${operationId}: the test's request breaks the contract: ${JSON.stringify(validate.errors)}`);
  return body;
}

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe.each(BACKENDS)("Blue's service contract (%s)", (backend) => {
  let t: TestServer;
  beforeAll(() => contractCoverage.clear());
  beforeEach(async () => {
    t = await startTestServer({ backend, events: { pollMs: 50 } });
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude', 'codex'] }, t.clock.now());
  });
  afterEach(async () => {
    await t.close();
  });

  it('answers the public routes without a token', async () => {
    const discovery = await t.call('GET', '/.well-known/metaharness', undefined);
    expect(discovery.status).toBe(200);
    expect(discovery.body.control_api_url).toBe(t.url);
    expect((await t.call('GET', '/health', undefined)).status).toBe(200);
    expect((await t.call('GET', '/ready', undefined)).status).toBe(200);
  });

  it('answers /ready 503 when the blob store, the schema or the database is not usable', async () => {
    // The blob store's folder gone.
    await rename(t.blobDir, `${t.blobDir}.away`);
    const noBlobs = await t.call('GET', '/ready', undefined);
    expect([noBlobs.status, noBlobs.body]).toEqual([503, 'not ready: the blob store is unavailable']);
    await rename(`${t.blobDir}.away`, t.blobDir);
    // A newer release migrated the database under a running server.
    if (backend === 'sqlite') {
      const db = new DatabaseSync(path.join(t.dataDir, 'control.db'));
      db.prepare('INSERT INTO schema_version (version, applied_at) VALUES (?, ?)').run(99, 0);
      db.close();
    } else {
      const client = new pg.Client({ connectionString: t.storeOptions.databaseUrl });
      await client.connect();
      await client.query('INSERT INTO schema_version (version, applied_at) VALUES (99, 0)');
      await client.end();
    }
    const newer = await t.call('GET', '/ready', undefined);
    expect([newer.status, newer.body]).toEqual([503, 'not ready: the database schema is newer than this server']);
    // The database gone.
    await t.server.store.close();
    const gone = await t.call('GET', '/ready', undefined);
    expect([gone.status, gone.body]).toEqual([503, 'not ready: the database is unavailable']);
  });

  it('identifies the caller, and answers 401 without a valid token', async () => {
    const me = await t.call('GET', '/auth/me', t.alice.token);
    expect([me.status, me.body.email]).toEqual([200, t.alice.email]);
    expect((await t.call('GET', '/auth/me', undefined)).status).toBe(401);
    expect((await t.call('GET', '/harness-metadata', 'nope')).status).toBe(401);
  });

  it('serves governance and harness metadata, with 426 and the client-version pin for an older client', async () => {
    const current = await t.call('GET', '/governance-config', t.alice.token);
    expect(current.status).toBe(200);
    expect(typeof current.body.revision).toBe('string');
    await t.server.store.publishPolicy(
      {
        allowed_harnesses: ['claude'],
        contract_version: 2,
        required_capabilities: ['tenant_client_version_pin'],
        required_client_version: '1.4.0',
      },
      t.clock.now(),
    );
    const old = await t.call('GET', '/governance-config', t.alice.token);
    expect([old.status, old.headers.get('x-blue-required-client-version')]).toEqual([426, '1.4.0']);
    const able = await t.call('GET', '/governance-config', t.alice.token, undefined, {
      'x-blue-contract-version': '2',
      'x-blue-capabilities': 'tenant_client_version_pin',
    });
    expect([able.status, able.headers.get('x-blue-required-client-version')]).toEqual([200, '1.4.0']);
    const metadata = await t.call('GET', '/harness-metadata', t.alice.token);
    expect(metadata.status).toBe(200);
    expect(metadata.body.harnesses.map((h: { key: string }) => h.key)).toEqual(
      expect.arrayContaining(['claude', 'codex']),
    );
  });

  it('streams revisions in the wire format Blue clients parse', async () => {
    const stream = await openEventStream(`${t.url}/governance-config/events`, t.alice.token);
    checkAnswerContract(
      'GET',
      '/governance-config/events',
      stream.status,
      undefined,
      stream.headers['content-type'] ?? null,
    );
    const event = await nextEvent(stream);
    expect(event?.event).toBe('revision');
    expect(JSON.parse(event!.data!)).toEqual({ revision: event!.id });
    stream.close();
    const refused = await openEventStream(`${t.url}/governance-config/events`, undefined);
    checkAnswerContract(
      'GET',
      '/governance-config/events',
      refused.status,
      JSON.parse(refused.body),
      refused.headers['content-type'] ?? null,
    );
    expect(refused.status).toBe(401);
  });

  it("accepts the contract's client status report, unknown fields included, with 204", async () => {
    const report = contractRequest('reportClientStatus', {
      instance_id: 'workstation-f3d151',
      hostname: 'developer-laptop',
      client_version: '0.1.0',
      platform: 'macos',
      config_revision: null,
      applied: true,
      files_ok: true,
      harnesses: ['claude'],
      error: null,
      from_a_newer_client: { anything: true },
    });
    const answer = await t.call('POST', '/client-status', t.alice.token, report);
    expect([answer.status, answer.body]).toEqual([204, undefined]);
  });

  it('runs the session-capture operations end to end on contract-shaped requests', async () => {
    const bytes = Buffer.from('{"type":"user"}\n');
    // presign: 200, and 401 without a token.
    const request = contractRequest('presignSessionUpload', {
      harness: 'codex',
      session_id: 'codex-session-20260827',
      sha256: sha(bytes),
      size_bytes: bytes.length,
      content_type: 'application/x-ndjson',
      cwd: null,
      artifact_format: 'legacy-raw',
      resumable: false,
      title: 'Contract',
      summary: null,
      captured_at_unix_ms: 1_790_000_000_000,
      repository_root: null,
      repository_remote: null,
    });
    expect((await t.call('POST', '/session-uploads/presign', undefined, request)).status).toBe(401);
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, request);
    expect([presigned.status, presigned.body.status]).toEqual([200, 'pending']);
    // complete before the upload: 400; after it: 200.
    const completePath = new URL(presigned.body.complete_url).pathname;
    expect((await t.call('POST', completePath, t.alice.token)).status).toBe(400);
    const put = await fetch(presigned.body.upload_url, {
      method: presigned.body.method,
      headers: presigned.body.headers,
      body: bytes,
    });
    expect(put.status).toBe(200);
    const completed = await t.call('POST', completePath, t.alice.token);
    expect([completed.status, completed.body.status]).toEqual([200, 'complete']);
    const sessionId: string = presigned.body.session_id;

    // list: cursor and numbered modes (200), a mix of both (400); facets; members.
    const listed = await t.call('GET', '/session-uploads?limit=10', t.alice.token);
    expect(listed.body.items.map((s: { id: string }) => s.id)).toEqual([sessionId]);
    expect(listed.body.items[0]).toMatchObject({
      native_session_id: 'codex-session-20260827',
      resumable: false,
      artifact_format: 'legacy-raw',
    });
    expect((await t.call('GET', '/session-uploads?page=1&per_page=5&sort=updated_asc', t.alice.token)).body.total).toBe(
      1,
    );
    expect((await t.call('GET', '/session-uploads?page=1&cursor=x', t.alice.token)).status).toBe(400);
    expect((await t.call('GET', '/session-uploads/facets', t.admin.token)).body.harnesses).toEqual(['codex']);
    expect((await t.call('GET', '/session-uploads/members?q=bob', t.alice.token)).body.items).toEqual([
      { id: t.bob.id, email: t.bob.email },
    ]);

    // detail, sharing (read and change), download.
    expect((await t.call('GET', `/session-uploads/${sessionId}`, t.alice.token)).body.session.id).toBe(sessionId);
    const share = contractRequest('updateSessionSharing', { mode: 'selected', user_ids: [t.bob.id] });
    expect((await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.alice.token, share)).body).toEqual({
      id: sessionId,
      mode: 'selected',
      user_ids: [t.bob.id],
    });
    expect((await t.call('GET', `/session-uploads/${sessionId}/sharing`, t.bob.token)).body).toMatchObject({
      mode: 'selected',
      can_edit: false,
      recipient_count: 1,
    });
    // A recipient may see the session but not change its sharing: the contract's 403.
    expect(
      (
        await t.call(
          'PUT',
          `/session-uploads/${sessionId}/sharing`,
          t.bob.token,
          contractRequest('updateSessionSharing', { mode: 'private' }),
        )
      ).status,
    ).toBe(403);
    const download = await t.call('POST', `/session-uploads/${sessionId}/download`, t.bob.token);
    expect(download.status).toBe(200);
    expect(Buffer.from(await (await fetch(download.body.download_url)).arrayBuffer())).toEqual(bytes);
    // Past its retention: 410.
    t.clock.advance(91 * 86_400_000);
    expect((await t.call('POST', `/session-uploads/${sessionId}/download`, t.alice.token)).status).toBe(410);
  });

  it('accepts a resumable bundle presign with a profile, as blue-agent and Blue clients send it', async () => {
    const bytes = Buffer.from('bundle bytes');
    const request = contractRequest('presignSessionUpload', {
      harness: 'claude',
      compatibility_profile: 'claude-v2_0_12',
      session_id: 'b7c3a9e0-0000-4000-8000-000000000001',
      sha256: sha(bytes),
      size_bytes: bytes.length,
      content_type: BUNDLE_TYPE,
      artifact_format: 'blue-session-bundle-v1',
      resumable: true,
    });
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, request);
    expect([presigned.status, presigned.body.status]).toEqual([200, 'pending']);
  });

  afterAll(() => {
    // Every implemented operation answered every status its contract documents, but the unreachable ones.
    const missing: string[] = [];
    for (const operation of blueContract().operations) {
      const seen = contractCoverage.get(operation.operationId) ?? new Set<number>();
      for (const status of Object.keys(operation.responses)) {
        if (!seen.has(Number(status)) && UNREACHABLE[operation.operationId]?.[status] === undefined)
          missing.push(`${operation.operationId} ${status}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('the contract fixtures', () => {
  it('name a request schema for every operation with a body, and compile', async () => {
    for (const operation of blueContract().operations) {
      if (operation.request !== undefined)
        expect(blueValidator(operation.request), operation.operationId).toBeDefined();
      for (const [status, response] of Object.entries(operation.responses)) {
        if (response.schema !== undefined || response.inline !== undefined)
          expect(blueValidator(response.schema, response.inline), `${operation.operationId} ${status}`).toBeDefined();
      }
    }
  });
});
