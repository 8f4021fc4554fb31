import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import path from 'node:path';
import { harnessMetadataDocument } from '../../src/control-plane/harness-metadata.js';
import { loadProfiles } from '../../src/profiles/index.js';
import { repoRoot } from '../support/context.js';
import { presignBody, startTestServer, type TestServer } from '../support/control-server.js';
import { HARNESSES } from '../../src/harnesses/names.js';

let t: TestServer;
beforeEach(async () => {
  t = await startTestServer();
});
afterEach(async () => {
  await t.close();
});

const bundle = (text: string): Buffer => Buffer.from(`bundle:${text}`);

describe('authentication', () => {
  it('refuses requests without a token, with a malformed header, or with an unknown token', async () => {
    const none = await t.call('GET', '/session-uploads', undefined);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthenticated');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const basic = await t.call('GET', '/session-uploads', undefined, undefined, { authorization: 'Basic YTpi' });
    expect(basic.status).toBe(401);
    const wrong = await t.call('GET', '/session-uploads', 'blue_not-a-real-token');
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('invalid_token');
    const huge = await t.call('GET', '/session-uploads', 'a'.repeat(4000));
    expect(huge.status).toBe(401);
    expect((await t.call('GET', '/session-uploads', t.alice.token)).status).toBe(200);
  });
});

describe('governance config', () => {
  it('answers 404 with JSON before any policy, then the policy with an ETag and 304 on If-None-Match', async () => {
    const none = await t.call('GET', '/governance-config', t.alice.token);
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('no_policy');
    t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
    const first = await t.call('GET', '/governance-config', t.alice.token);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ allowed_harnesses: ['claude'], revision: 1 });
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    const cached = await t.call('GET', '/governance-config', t.alice.token, undefined, { 'if-none-match': etag });
    expect(cached.status).toBe(304);
    t.server.store.publishPolicy({ allowed_harnesses: ['codex'] }, t.clock.now());
    const next = await t.call('GET', '/governance-config', t.alice.token, undefined, { 'if-none-match': etag });
    expect(next.status).toBe(200);
    expect(next.body.revision).toBe(2);
    expect(next.headers.get('etag')).not.toBe(etag);
  });
});

describe('client status', () => {
  it('stores a valid report and rejects an invalid one', async () => {
    const report = {
      instance_id: 'machine-1',
      hostname: 'ada-laptop',
      client_version: '0.1.0',
      platform: 'linux',
      policy_revision: 3,
      harnesses: { claude: { installed: true, version: '2.0.20', profile: 'claude-v2_0_12', capture: 'active' } },
    };
    const ok = await t.call('POST', '/client-status', t.alice.token, report);
    expect(ok.status).toBe(200);
    await t.call('POST', '/client-status', t.alice.token, { ...report, policy_revision: 4 });
    const stored = t.server.store.clientStatuses();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ user_id: t.alice.id, instance_id: 'machine-1', report: { policy_revision: 4 } });
    const bad = await t.call('POST', '/client-status', t.alice.token, { ...report, harnesses: { vim: {} } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/harnesses/);
  });
});

describe('client status reports for administrators', () => {
  it('GET /client-status lists the latest report per machine to administrators only, optionally for one user', async () => {
    const report = (instance: string, revision: number) => ({ instance_id: instance, hostname: instance, client_version: '0.1.0', platform: 'linux', policy_revision: revision, harnesses: {} });
    await t.call('POST', '/client-status', t.alice.token, report('alice-laptop', 1));
    await t.call('POST', '/client-status', t.alice.token, report('alice-laptop', 2));
    await t.call('POST', '/client-status', t.bob.token, report('bob-desktop', 2));
    const all = await t.call('GET', '/client-status', t.admin.token);
    expect(all.status).toBe(200);
    expect(all.body.items.map((i: any) => [i.user_id, i.instance_id, i.report.policy_revision]).sort()).toEqual(
      [[t.alice.id, 'alice-laptop', 2], [t.bob.id, 'bob-desktop', 2]].sort(),
    );
    expect(all.body.items[0].received_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    const bobs = await t.call('GET', `/client-status?user_id=${t.bob.id}`, t.admin.token);
    expect(bobs.body.items.map((i: any) => i.instance_id)).toEqual(['bob-desktop']);
    const member = await t.call('GET', '/client-status', t.alice.token);
    expect(member.status).toBe(403);
    expect(member.body.error.message).toMatch(/administrators/);
    expect((await t.call('GET', '/client-status?host=x', t.admin.token)).status).toBe(400);
  });
});

describe('harness metadata', () => {
  it('answers 404 when the server has no profiles', async () => {
    const none = await t.call('GET', '/harness-metadata', t.alice.token);
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('no_metadata');
  });

  it('serves the compatibility profiles it was started with, with an ETag and 304 on If-None-Match', async () => {
    const profiles = await loadProfiles(path.join(repoRoot, 'profiles'));
    const withProfiles = await startTestServer({ harnessMetadata: harnessMetadataDocument(profiles) });
    try {
      expect((await withProfiles.call('GET', '/harness-metadata', undefined)).status).toBe(401);
      const first = await withProfiles.call('GET', '/harness-metadata', withProfiles.alice.token);
      expect(first.status).toBe(200);
      expect(first.body.format).toBe('blue-harness-metadata-v1');
      expect(first.body.harnesses.map((h: any) => h.harness)).toEqual([...HARNESSES]);
      const claude = first.body.harnesses[0];
      const latest = profiles.get('claude')!.doc.intervals.at(-1)!;
      expect(claude.intervals.at(-1)).toMatchObject({
        profile: latest.profile,
        introduced: latest.introduced,
        verified_before: latest.verified_before,
        operations: latest.operations,
        capture_event: 'SessionEnd',
      });
      const etag = first.headers.get('etag')!;
      expect(etag).toMatch(/^".+"$/);
      const cached = await withProfiles.call('GET', '/harness-metadata', withProfiles.alice.token, undefined, { 'if-none-match': etag });
      expect(cached.status).toBe(304);
    } finally {
      await withProfiles.close();
    }
  });
});

describe('listing, search, filters and pagination', () => {
  it('id_prefix finds the uploads whose id starts with it, among those the caller may see', async () => {
    const a = await t.upload(t.alice, bundle('prefix-a'), { session_id: 'pa' });
    await t.upload(t.alice, bundle('prefix-b'), { session_id: 'pb' });
    const b = await t.upload(t.bob, bundle('prefix-c'), { session_id: 'pc' });
    const found = await t.call('GET', `/session-uploads?id_prefix=${a.uploadId.slice(0, 8)}`, t.alice.token);
    expect(found.body.items.map((i: any) => i.upload_id)).toEqual([a.uploadId]);
    expect((await t.call('GET', `/session-uploads?id_prefix=${a.uploadId}`, t.alice.token)).body.items).toHaveLength(1);
    // Another member's private session stays invisible, prefix or not.
    expect((await t.call('GET', `/session-uploads?id_prefix=${b.uploadId.slice(0, 8)}`, t.alice.token)).body.items).toEqual([]);
    for (const bad of ['XYZ', 'abc%', `${a.uploadId}0`]) {
      const answer = await t.call('GET', `/session-uploads?id_prefix=${encodeURIComponent(bad)}`, t.alice.token);
      expect(answer.status, bad).toBe(400);
      expect(answer.body.error.message).toMatch(/id_prefix/);
    }
  });

  it('searches title, summary, session id and cwd, and filters', async () => {
    await t.upload(t.alice, bundle('a'), { session_id: 'alpha', title: 'Refactor the parser', cwd: '/src/app', resumable: true });
    await t.upload(t.alice, bundle('b'), { session_id: 'beta', harness: 'codex', summary: 'add 100% coverage_now', cwd: '/src/lib' });
    await t.upload(t.bob, bundle('c'), { session_id: 'gamma', title: 'Parser tests', resumable: true });
    const ids = (body: any): string[] => body.items.map((i: any) => i.session_id).sort();

    expect(ids((await t.call('GET', '/session-uploads?q=parser', t.alice.token)).body)).toEqual(['alpha']);
    expect(ids((await t.call('GET', '/session-uploads?q=parser', t.admin.token)).body)).toEqual(['alpha', 'gamma']);
    expect(ids((await t.call('GET', '/session-uploads?q=lib', t.alice.token)).body)).toEqual(['beta']);
    expect(ids((await t.call('GET', '/session-uploads?q=bet', t.alice.token)).body)).toEqual(['beta']);
    // LIKE wildcards are literal characters in q.
    expect(ids((await t.call('GET', `/session-uploads?q=${encodeURIComponent('100%')}`, t.alice.token)).body)).toEqual(['beta']);
    expect(ids((await t.call('GET', '/session-uploads?q=_', t.alice.token)).body)).toEqual(['beta']);
    expect(ids((await t.call('GET', '/session-uploads?harness=codex', t.alice.token)).body)).toEqual(['beta']);
    expect(ids((await t.call('GET', `/session-uploads?user_id=${t.bob.id}`, t.admin.token)).body)).toEqual(['gamma']);
    expect(ids((await t.call('GET', `/session-uploads?user_id=${t.bob.id}`, t.alice.token)).body)).toEqual([]);
    expect(ids((await t.call('GET', '/session-uploads?status=complete', t.alice.token)).body)).toEqual(['alpha', 'beta']);
    expect(ids((await t.call('GET', '/session-uploads?status=pending', t.alice.token)).body)).toEqual([]);
    expect(ids((await t.call('GET', '/session-uploads?resumable=true', t.alice.token)).body)).toEqual(['alpha']);
    // Resuming is personal: an administrator sees only what is theirs or shared with them.
    expect(ids((await t.call('GET', '/session-uploads?resumable=true', t.admin.token)).body)).toEqual([]);
  });

  it('filters by update time', async () => {
    await t.upload(t.alice, bundle('early'), { session_id: 'early' });
    const middle = t.clock.now() + 1000;
    t.clock.advance(2000);
    await t.upload(t.alice, bundle('late'), { session_id: 'late' });
    const from = await t.call('GET', `/session-uploads?updated_from=${new Date(middle).toISOString()}`, t.alice.token);
    expect(from.body.items.map((i: any) => i.session_id)).toEqual(['late']);
    const to = await t.call('GET', `/session-uploads?updated_to=${middle}`, t.alice.token);
    expect(to.body.items.map((i: any) => i.session_id)).toEqual(['early']);
    expect((await t.call('GET', '/session-uploads?updated_to=yesterday', t.alice.token)).status).toBe(400);
  });

  it('pages with a cursor, newest first, without gaps or repeats', async () => {
    for (let i = 0; i < 7; i++) {
      await t.upload(t.alice, bundle(`s${i}`), { session_id: `s${i}` });
      if (i % 2 === 0) t.clock.advance(10);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const answer: any = await t.call('GET', `/session-uploads?limit=3${cursor === null ? '' : `&cursor=${cursor}`}`, t.alice.token);
      expect(answer.status).toBe(200);
      expect(answer.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...answer.body.items.map((i: any) => i.session_id));
      cursor = answer.body.next_cursor;
      pages++;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect([...seen].sort()).toEqual(['s0', 's1', 's2', 's3', 's4', 's5', 's6']);
    // s5 and s6 share the newest update time; ties are ordered by id.
    expect(['s5', 's6']).toContain(seen[0]);
    expect((await t.call('GET', '/session-uploads?cursor=bogus!', t.alice.token)).status).toBe(400);
    expect((await t.call('GET', `/session-uploads?cursor=${Buffer.from('{"a":1}').toString('base64url')}`, t.alice.token)).status).toBe(400);
  });
});

describe('access control and sharing', () => {
  it('keeps a private session from other members', async () => {
    const { uploadId } = await t.upload(t.alice, bundle('private'), { resumable: true });
    expect((await t.call('GET', '/session-uploads', t.bob.token)).body.items).toEqual([]);
    expect((await t.call('GET', `/session-uploads/${uploadId}`, t.bob.token)).status).toBe(404);
    expect((await t.call('POST', `/session-uploads/${uploadId}/download`, t.bob.token)).status).toBe(404);
    expect((await t.call('GET', `/session-uploads/${uploadId}/sharing`, t.bob.token)).status).toBe(404);
    expect((await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.bob.token, { mode: 'workspace' })).status).toBe(404);
    // Administrators see and download everything, but sharing stays the owner's.
    expect((await t.call('GET', `/session-uploads/${uploadId}`, t.admin.token)).status).toBe(200);
    expect((await t.call('POST', `/session-uploads/${uploadId}/download`, t.admin.token)).status).toBe(200);
    expect((await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.admin.token, { mode: 'workspace' })).status).toBe(403);
  });

  it('shares with selected users by id or e-mail; recipients view, download and resume but cannot re-share', async () => {
    const { uploadId } = await t.upload(t.alice, bundle('shared'), { resumable: true });
    const put = await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.alice.token, { mode: 'selected', emails: ['BOB@example.com'] });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ mode: 'selected', user_ids: [t.bob.id] });
    expect((await t.call('GET', `/session-uploads/${uploadId}/sharing`, t.alice.token)).body.recipients).toEqual([
      { user_id: t.bob.id, email: 'bob@example.com' },
    ]);

    const bobList = await t.call('GET', '/session-uploads?resumable=true', t.bob.token);
    expect(bobList.body.items.map((i: any) => i.upload_id)).toEqual([uploadId]);
    expect(bobList.body.items[0]).toMatchObject({ owned: false, sharing: 'shared' });
    expect((await t.call('POST', `/session-uploads/${uploadId}/download`, t.bob.token)).status).toBe(200);
    const byEmailInIds = await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.alice.token, { mode: 'selected', user_ids: ['bob@example.com'] });
    expect(byEmailInIds.body.user_ids).toEqual([t.bob.id]);
    const reshare = await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.bob.token, { mode: 'selected', user_ids: [t.carol.id] });
    expect(reshare.status).toBe(403);
    expect((await t.call('GET', `/session-uploads/${uploadId}/sharing`, t.bob.token)).status).toBe(403);
    expect((await t.call('POST', `/session-uploads/${uploadId}/complete`, t.bob.token)).status).toBe(403);
    // Carol was never named.
    expect((await t.call('GET', `/session-uploads/${uploadId}`, t.carol.token)).status).toBe(404);
    // An administrator's resumable list includes what is shared with them.
    await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.alice.token, { mode: 'selected', user_ids: [t.admin.id, t.bob.id] });
    expect((await t.call('GET', '/session-uploads?resumable=true', t.admin.token)).body.items).toHaveLength(1);

    // Back to private: access ends.
    expect((await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.alice.token, { mode: 'private' })).status).toBe(200);
    expect((await t.call('GET', `/session-uploads/${uploadId}`, t.bob.token)).status).toBe(404);
  });

  it('shares with the whole workspace', async () => {
    const { uploadId } = await t.upload(t.alice, bundle('team'));
    await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.alice.token, { mode: 'workspace' });
    expect((await t.call('GET', `/session-uploads/${uploadId}`, t.carol.token)).status).toBe(200);
    expect((await t.call('GET', '/session-uploads', t.carol.token)).body.items).toHaveLength(1);
  });

  it('rejects bad sharing requests with a reason', async () => {
    const { uploadId } = await t.upload(t.alice, bundle('s'));
    const cases: [unknown, RegExp][] = [
      [{ mode: 'selected' }, /at least one recipient/],
      [{ mode: 'public' }, /must be one of/],
      [{ mode: 'private', user_ids: [t.bob.id] }, /only given with mode "selected"/],
      [{ mode: 'selected', user_ids: ['nobody'] }, /unknown user "nobody"/],
      [{ mode: 'selected', emails: ['nobody@example.com'] }, /unknown user/],
      [{ mode: 'workspace', extra: 1 }, /unknown field "extra"/],
    ];
    for (const [body, message] of cases) {
      const answer = await t.call('PUT', `/session-uploads/${uploadId}/sharing`, t.alice.token, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.message).toMatch(message);
    }
  });

  it('does not show a shared session to recipients while it is pending', async () => {
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('p')));
    await t.call('PUT', `/session-uploads/${presigned.body.upload_id}/sharing`, t.alice.token, { mode: 'workspace' });
    expect((await t.call('GET', `/session-uploads/${presigned.body.upload_id}`, t.bob.token)).status).toBe(404);
    expect((await t.call('GET', '/session-uploads', t.bob.token)).body.items).toEqual([]);
  });
});
