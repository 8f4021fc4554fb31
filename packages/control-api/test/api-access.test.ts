/**
 * The Control API's routes besides the upload itself, on both databases: public probes and discovery, authentication
 * after routing, who the token is, governance with Blue's client negotiation (426, the pinned client release), the
 * harness registry, client status, listing in its three modes with search and filters, facets, members, and who may
 * see and share a session.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HARNESSES } from 'blue-agent/harnesses/names.js';
import { BACKENDS, presignBody, startTestServer, type TestServer } from '../../../test/support/control-server.js';

const bundle = (text: string): Buffer => Buffer.from(`bundle:${text}`);
const RESUMABLE = {
  artifact_format: 'blue-session-bundle-v1',
  compatibility_profile: 'claude-v2_0_12',
  resumable: true,
};
const report = (instance: string, revision: string) => ({
  instance_id: instance,
  hostname: instance,
  client_version: '0.1.0',
  platform: 'linux',
  config_revision: revision,
  applied: true,
  files_ok: true,
});

describe.each(BACKENDS)('Control API routes (%s)', (backend) => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({ backend });
  });
  afterEach(async () => {
    await t.close();
  });

  describe('public routes, authentication and identity', () => {
    it('answers the probes and the discovery document without a token', async () => {
      const health = await t.call('GET', '/health', undefined);
      expect([health.status, health.body, health.headers.get('content-type')]).toEqual([
        200,
        'ok',
        'text/plain; charset=utf-8',
      ]);
      const ready = await t.call('GET', '/ready', undefined);
      expect([ready.status, ready.body]).toEqual([200, 'ready']);
      const discovery = await t.call('GET', '/.well-known/metaharness', undefined);
      expect(discovery.body).toEqual({
        version: 1,
        control_api_url: t.url,
        oauth: {
          issuer: `${t.url}/api/auth`,
          client_id: 'blue-agent',
          scopes: [
            'openid',
            'profile',
            'email',
            'offline_access',
            'governance:read',
            'session:read',
            'session:write',
            'client-status:write',
            'admin',
          ],
        },
      });
      // A token, even a bad one, changes nothing there.
      expect((await t.call('GET', '/health', 'blue_not-a-token')).status).toBe(200);
    });

    it(
      'routes first: an unknown path is 404 and a wrong method 405, with or without a token; every other route ' +
        'wants a valid token',
      async () => {
        expect((await t.call('GET', '/nope', undefined)).status).toBe(404);
        const wrong = await t.call('DELETE', '/session-uploads', undefined);
        expect([wrong.status, wrong.headers.get('allow')]).toEqual([405, 'GET']);
        const none = await t.call('GET', '/session-uploads', undefined);
        expect([none.status, none.body.code]).toEqual([401, 'unauthenticated']);
        expect(none.body.error).toMatch(/bearer token/);
        expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
        expect(
          (await t.call('GET', '/session-uploads', undefined, undefined, { authorization: 'Basic YTpi' })).status,
        ).toBe(401);
        const wrongToken = await t.call('GET', '/session-uploads', 'blue_not-a-real-token');
        expect([wrongToken.status, wrongToken.body.code]).toEqual([401, 'invalid_token']);
        expect((await t.call('GET', '/session-uploads', 'a'.repeat(4000))).status).toBe(401);
        // Before anything is read of the request: a bad body behind a bad token is still 401.
        expect((await t.call('POST', '/session-uploads/presign', 'blue_x', 'not json')).status).toBe(401);
        expect((await t.call('GET', '/session-uploads/00000000-0000-4000-8000-000000000000', 'blue_x')).status).toBe(
          401,
        );
      },
    );

    it('GET /auth/me says who the token belongs to', async () => {
      const me = await t.call('GET', '/auth/me', t.alice.token);
      expect(me.body).toEqual({
        id: t.alice.id,
        sub: t.alice.id,
        email: t.alice.email,
        org_id: await t.server.store.organizationId(),
        role: 'member',
        expires_at: null,
        current_revision: null,
      });
      const published = await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
      expect((await t.call('GET', '/auth/me', t.admin.token)).body).toMatchObject({
        role: 'admin',
        current_revision: published.revision,
      });
      expect((await t.call('GET', '/auth/me', undefined)).status).toBe(401);
    });
  });

  describe('governance config', () => {
    it('answers 404 before any policy, then the revision with a string id, an ETag, 304 on If-None-Match', async () => {
      const none = await t.call('GET', '/governance-config', t.alice.token);
      expect([none.status, none.body.code]).toEqual([404, 'no_policy']);
      const published = await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
      const first = await t.call('GET', '/governance-config', t.alice.token);
      expect(first.body).toEqual({ allowed_harnesses: ['claude'], revision: published.revision });
      expect(published.revision).toMatch(/^[0-9a-f-]{36}$/);
      const etag = first.headers.get('etag')!;
      expect(
        (await t.call('GET', '/governance-config', t.alice.token, undefined, { 'if-none-match': etag })).status,
      ).toBe(304);
      const next = await t.server.store.publishPolicy({ allowed_harnesses: ['codex'] }, t.clock.now());
      const changed = await t.call('GET', '/governance-config', t.alice.token, undefined, { 'if-none-match': etag });
      expect([changed.status, changed.body.revision]).toEqual([200, next.revision]);
      expect(next.revision).not.toBe(published.revision);
    });

    it(
      'answers 426 to a client whose contract version or capabilities fall short, with the pinned release on 200 ' +
        'and 426',
      async () => {
        await t.server.store.publishPolicy(
          {
            allowed_harnesses: ['claude'],
            contract_version: 3,
            required_capabilities: ['adapter_intervals', 'tenant_client_version_pin'],
            required_client_version: '2.1.0',
          },
          t.clock.now(),
        );
        const old = await t.call('GET', '/governance-config', t.alice.token);
        expect([old.status, old.body.code, old.headers.get('x-blue-required-client-version')]).toEqual([
          426,
          'client_upgrade_required',
          '2.1.0',
        ]);
        expect(old.body.error).toMatch(/governance contract 3 requires a newer client; the client reports 1/);
        const lacking = await t.call('GET', '/governance-config', t.alice.token, undefined, {
          'x-blue-contract-version': '3',
          'x-blue-capabilities': 'adapter_intervals',
        });
        expect([lacking.status, lacking.body.error]).toEqual([
          426,
          'governance requires client capabilities it did not declare: tenant_client_version_pin',
        ]);
        const able = await t.call('GET', '/governance-config', t.alice.token, undefined, {
          'x-blue-contract-version': '4',
          'x-blue-capabilities': ' adapter_intervals , tenant_client_version_pin,versioned_state',
        });
        expect([
          able.status,
          able.headers.get('x-blue-required-client-version'),
          able.body.required_client_version,
        ]).toEqual([200, '2.1.0', '2.1.0']);
        // No pin, no header.
        await t.server.store.publishPolicy({ allowed_harnesses: ['claude'] }, t.clock.now());
        expect(
          (await t.call('GET', '/governance-config', t.alice.token)).headers.get('x-blue-required-client-version'),
        ).toBeNull();
      },
    );
  });

  describe('client status', () => {
    it('records the contract report (unknown fields kept), answers 204, and refuses an invalid one', async () => {
      const ok = await t.call('POST', '/client-status', t.alice.token, {
        ...report('machine-1', 'r1'),
        architecture: 'x86_64',
        harnesses: [
          'claude',
          { name: 'codex', api_allowed: true, client_supported: true, installed: false, reconciled: false },
        ],
      });
      expect([ok.status, ok.body]).toEqual([204, undefined]);
      await t.call('POST', '/client-status', t.alice.token, report('machine-1', 'r2'));
      const stored = await t.server.store.clientStatuses({ limit: 10, offset: 0 });
      expect(stored.total).toBe(1);
      expect(stored.items[0]).toMatchObject({
        user_id: t.alice.id,
        user_email: 'alice@example.com',
        instance_id: 'machine-1',
        report: { config_revision: 'r2' },
      });
      const bad = await t.call('POST', '/client-status', t.alice.token, {
        instance_id: 'x',
        client_version: '1',
        platform: 'linux',
      });
      expect([bad.status, bad.body.code]).toEqual([400, 'validation_failed']);
      expect(bad.body.error).toMatch(/applied/);
      expect(
        (await t.call('POST', '/client-status', t.alice.token, { ...report(' ', 'r'), instance_id: ' ' })).status,
      ).toBe(400);
    });

    it(
      'GET /client-status lists the latest report per machine to administrators only, a page at a time, ' +
        'optionally for one user',
      async () => {
        await t.call('POST', '/client-status', t.bob.token, report('bob-desktop', 'r2'));
        await t.call('POST', '/client-status', t.alice.token, report('alice-laptop', 'r1'));
        await t.call('POST', '/client-status', t.alice.token, report('alice-laptop', 'r2'));
        await t.call('POST', '/client-status', t.alice.token, report('alice-desktop', 'r2'));
        const all = await t.call('GET', '/client-status', t.admin.token);
        // By person, then machine: an order new reports do not change.
        expect(all.body.items.map((i: any) => [i.user_email, i.instance_id, i.report.config_revision])).toEqual([
          ['alice@example.com', 'alice-desktop', 'r2'],
          ['alice@example.com', 'alice-laptop', 'r2'],
          ['bob@example.com', 'bob-desktop', 'r2'],
        ]);
        expect(all.body).toMatchObject({ page: 1, per_page: 100, total: 3, total_pages: 1 });
        expect(all.body.items[0].received_at).toMatch(/^\d{4}-\d\d-\d\dT/);
        await t.call('POST', '/client-status', t.alice.token, report('alice-laptop', 'r3'));
        const second = await t.call('GET', '/client-status?page=2&per_page=2', t.admin.token);
        expect([second.body.items.map((i: any) => i.instance_id), second.body.total, second.body.total_pages]).toEqual([
          ['bob-desktop'],
          3,
          2,
        ]);
        expect((await t.call('GET', '/client-status?page=3&per_page=2', t.admin.token)).body.items).toEqual([]);
        expect(
          (await t.call('GET', `/client-status?user_id=${t.bob.id}`, t.admin.token)).body.items.map(
            (i: any) => i.instance_id,
          ),
        ).toEqual(['bob-desktop']);
        const member = await t.call('GET', '/client-status', t.alice.token);
        expect([member.status, member.body.error]).toEqual([403, 'only administrators may read client status reports']);
        for (const bad of ['host=x', 'per_page=101', 'page=0', 'user_id=bob'])
          expect((await t.call('GET', `/client-status?${bad}`, t.admin.token)).status, bad).toBe(400);
      },
    );

    it(
      "keeps each person's 20 machines that reported last: one more replaces the least recent, and is never " +
        'refused',
      async () => {
        for (let i = 1; i <= 25; i++) {
          t.clock.advance(1000);
          expect((await t.call('POST', '/client-status', t.alice.token, report(`machine-${i}`, 'r1'))).status).toBe(
            204,
          );
          // The first machine keeps reporting: it stays.
          if (i % 5 === 0)
            expect((await t.call('POST', '/client-status', t.alice.token, report('machine-1', 'r1'))).status).toBe(204);
        }
        await t.call('POST', '/client-status', t.bob.token, report('bob-desktop', 'r1'));
        const alice = await t.call('GET', `/client-status?user_id=${t.alice.id}`, t.admin.token);
        expect(alice.body.total).toBe(20);
        const kept = alice.body.items
          .map((i: any) => Number(i.instance_id.slice('machine-'.length)))
          .sort((a: number, b: number) => a - b);
        expect(kept).toEqual([1, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]);
        // Another person's machines are theirs.
        expect((await t.call('GET', `/client-status?user_id=${t.bob.id}`, t.admin.token)).body.total).toBe(1);
      },
    );

    it('refuses a report larger than 16 KiB, whatever carries its size, and one with more than 32 fields', async () => {
      const big = await t.call('POST', '/client-status', t.alice.token, {
        ...report('machine-1', 'r1'),
        padding: 'x'.repeat(16 * 1024),
      });
      expect([big.status, big.body.code]).toEqual([413, 'body_too_large']);
      const packages = Array.from({ length: 100 }, (_, i) => ({
        id: `p${i}`,
        version: '1',
        sha256: 'a'.repeat(64),
        harness: 'claude',
        state: 'applied',
        error: 'e'.repeat(100),
      }));
      expect(
        (await t.call('POST', '/client-status', t.alice.token, { ...report('machine-1', 'r1'), packages })).status,
      ).toBe(413);
      const odd = await t.call('POST', '/client-status', t.alice.token, {
        ...report('machine-1', 'r1'),
        packages: [{ anything: 'x'.repeat(1000) }],
      });
      expect([odd.status, odd.body.code]).toEqual([400, 'validation_failed']);
      const fields = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`extra_${i}`, 1]));
      expect(
        (await t.call('POST', '/client-status', t.alice.token, { ...report('machine-1', 'r1'), ...fields })).status,
      ).toBe(400);
      expect((await t.server.store.clientStatuses({ limit: 10, offset: 0 })).total).toBe(0);
      // What an agent sends is far within.
      expect(
        (
          await t.call('POST', '/client-status', t.alice.token, {
            ...report('machine-1', 'r1'),
            padding: 'x'.repeat(8 * 1024),
          })
        ).status,
      ).toBe(204);
    });
  });

  describe('harness metadata', () => {
    it("serves Blue's harness registry, generated from the profiles, with an ETag, 304 on If-None-Match", async () => {
      expect((await t.call('GET', '/harness-metadata', undefined)).status).toBe(401);
      const first = await t.call('GET', '/harness-metadata', t.alice.token);
      expect(first.body.contract_version).toBe(1);
      expect(first.body.harnesses.map((h: any) => h.key)).toEqual([...HARNESSES]);
      const claude = first.body.harnesses[0];
      expect(claude).toMatchObject({
        key: 'claude',
        label: 'Claude Code',
        binary_names: ['claude'],
        install_command_template: "npm install -g '@anthropic-ai/claude-code@{version}'",
      });
      expect(claude.capabilities).toEqual(['hooks', 'session_resume', 'session_upload']);
      expect(claude.generations.at(-1)).toMatchObject({
        profile: 'claude-v2_0_12',
        introduced: '2.0.12',
        before: null,
        lifecycle: 'supported',
        capabilities: ['hooks', 'session_upload', 'session_resume'],
        capture_event: 'SessionEnd',
      });
      const opencode = first.body.harnesses.find((h: any) => h.key === 'opencode');
      expect(opencode.component_rules).toEqual({
        agents_require_plugin: false,
        hooks_require_plugin: true,
        hooks_as_plugin_modules: true,
      });
      const etag = first.headers.get('etag')!;
      expect(
        (await t.call('GET', '/harness-metadata', t.alice.token, undefined, { 'if-none-match': etag })).status,
      ).toBe(304);
    });

    it('answers 404 when the server has no profiles', async () => {
      const bare = await startTestServer({ backend, profiles: false });
      try {
        const none = await bare.call('GET', '/harness-metadata', bare.alice.token);
        expect([none.status, none.body.code]).toEqual([404, 'no_metadata']);
      } finally {
        await bare.close();
      }
    });
  });

  describe('listing, search, filters and pagination', () => {
    it('id_prefix finds the sessions whose id starts with it, among those the caller may see', async () => {
      const a = await t.upload(t.alice, bundle('prefix-a'), { session_id: 'pa' });
      await t.upload(t.alice, bundle('prefix-b'), { session_id: 'pb' });
      const b = await t.upload(t.bob, bundle('prefix-c'), { session_id: 'pc' });
      const found = await t.call('GET', `/session-uploads?id_prefix=${a.sessionId.slice(0, 8)}`, t.alice.token);
      expect(found.body.items.map((i: any) => i.id)).toEqual([a.sessionId]);
      expect((await t.call('GET', `/session-uploads?id_prefix=${a.sessionId}`, t.alice.token)).body.items).toHaveLength(
        1,
      );
      expect(
        (await t.call('GET', `/session-uploads?id_prefix=${b.sessionId.slice(0, 8)}`, t.alice.token)).body.items,
      ).toEqual([]);
      for (const bad of ['XYZ', 'abc%', `${a.sessionId}0`]) {
        const answer = await t.call('GET', `/session-uploads?id_prefix=${encodeURIComponent(bad)}`, t.alice.token);
        expect(answer.status, bad).toBe(400);
        expect(answer.body.error).toMatch(/id_prefix/);
      }
    });

    it('searches the native id, working directory, title and summary, and filters', async () => {
      await t.upload(t.alice, bundle('a'), {
        session_id: 'alpha',
        title: 'Refactor the parser',
        cwd: '/src/app',
        ...RESUMABLE,
      });
      await t.upload(t.alice, bundle('b'), {
        session_id: 'beta',
        harness: 'codex',
        summary: 'add 100% coverage_now',
        cwd: '/src/lib',
      });
      await t.upload(t.bob, bundle('c'), { session_id: 'gamma', title: 'Parser tests', ...RESUMABLE });
      const ids = (body: any): string[] => body.items.map((i: any) => i.native_session_id).sort();
      const list = async (query: string, token = t.alice.token) =>
        ids((await t.call('GET', `/session-uploads?${query}`, token)).body);

      expect(await list('q=PARSER')).toEqual(['alpha']);
      expect(await list('q=parser', t.admin.token)).toEqual(['alpha', 'gamma']);
      expect(await list('q=lib')).toEqual(['beta']);
      expect(await list('q=bet')).toEqual(['beta']);
      // LIKE wildcards are literal characters in q.
      expect(await list(`q=${encodeURIComponent('100%')}`)).toEqual(['beta']);
      expect(await list('q=_')).toEqual(['beta']);
      expect(await list('harness=codex')).toEqual(['beta']);
      expect(await list(`user_id=${t.bob.id}`, t.admin.token)).toEqual(['gamma']);
      expect(await list(`user_id=${t.bob.id}`)).toEqual([]);
      expect(await list('status=complete')).toEqual(['alpha', 'beta']);
      expect(await list('status=pending')).toEqual([]);
      expect(await list('resumable=true')).toEqual(['alpha']);
      // Resuming is personal: an administrator sees only what is theirs or shared with them.
      expect(await list('resumable=true', t.admin.token)).toEqual([]);
    });

    it('filters by inclusive UTC days', async () => {
      await t.upload(t.alice, bundle('early'), { session_id: 'early' });
      t.clock.advance(2 * 86_400_000);
      await t.upload(t.alice, bundle('late'), { session_id: 'late' });
      const day = (offset: number) => new Date(t.clock.now() + offset * 86_400_000).toISOString().slice(0, 10);
      const list = async (query: string) =>
        (await t.call('GET', `/session-uploads?${query}`, t.alice.token)).body.items.map(
          (i: any) => i.native_session_id,
        );
      expect(await list(`updated_from=${day(0)}`)).toEqual(['late']);
      expect(await list(`updated_to=${day(-2)}`)).toEqual(['early']);
      expect(await list(`updated_from=${day(-2)}&updated_to=${day(0)}`)).toEqual(['late', 'early']);
      for (const bad of [
        'updated_to=yesterday',
        'updated_from=2026-02-30',
        `updated_from=${day(0)}&updated_to=${day(-1)}`,
      ]) {
        expect((await t.call('GET', `/session-uploads?${bad}`, t.alice.token)).status, bad).toBe(400);
      }
    });

    it('pages with a cursor (the last item id), newest first, without gaps or repeats', async () => {
      for (let i = 0; i < 7; i++) {
        await t.upload(t.alice, bundle(`s${i}`), { session_id: `s${i}` });
        if (i % 2 === 0) t.clock.advance(10);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const answer: any = await t.call(
          'GET',
          `/session-uploads?limit=3${cursor === null ? '' : `&cursor=${cursor}`}`,
          t.alice.token,
        );
        expect(answer.body.items.length).toBeLessThanOrEqual(3);
        seen.push(...answer.body.items.map((i: any) => i.native_session_id));
        cursor = answer.body.next_cursor;
        if (cursor !== null) expect(cursor).toBe(answer.body.items.at(-1).id);
        pages++;
      } while (cursor !== null && pages < 10);
      expect(pages).toBe(3);
      expect([...seen].sort()).toEqual(['s0', 's1', 's2', 's3', 's4', 's5', 's6']);
      expect(['s5', 's6']).toContain(seen[0]);
      expect((await t.call('GET', '/session-uploads?cursor=bogus!', t.alice.token)).status).toBe(400);
      // A cursor this server never handed out is an empty page, as in Blue's server.
      expect(
        (await t.call('GET', '/session-uploads?cursor=00000000-0000-4000-8000-000000000000', t.alice.token)).body,
      ).toEqual({ items: [], next_cursor: null });
    });

    it('pages by number with totals, in either order, and refuses mixing the two ways of paging', async () => {
      for (let i = 0; i < 5; i++) {
        await t.upload(t.alice, bundle(`n${i}`), { session_id: `n${i}` });
        t.clock.advance(10);
      }
      const page2 = await t.call('GET', '/session-uploads?page=2&per_page=2', t.alice.token);
      expect(page2.body).toMatchObject({ page: 2, per_page: 2, total: 5, total_pages: 3 });
      expect(page2.body.items.map((i: any) => i.native_session_id)).toEqual(['n2', 'n1']);
      expect(page2.body.next_cursor).toBeUndefined();
      const asc = await t.call('GET', '/session-uploads?sort=updated_asc&per_page=2', t.alice.token);
      expect(asc.body.items.map((i: any) => i.native_session_id)).toEqual(['n0', 'n1']);
      expect((await t.call('GET', '/session-uploads?page=9&per_page=2', t.alice.token)).body).toMatchObject({
        items: [],
        total: 5,
        total_pages: 3,
      });
      expect((await t.call('GET', '/session-uploads?q=zzz', t.alice.token)).body).toMatchObject({
        items: [],
        total: 0,
        total_pages: 0,
        page: 1,
        per_page: 25,
      });
      for (const bad of [
        'page=1&cursor=00000000-0000-4000-8000-000000000000',
        'q=x&limit=10',
        'per_page=101',
        'per_page=0',
        'page=0',
        'limit=101',
        'sort=size_desc',
      ]) {
        expect((await t.call('GET', `/session-uploads?${bad}`, t.alice.token)).status, bad).toBe(400);
      }
    });

    it('facets: owners (at most 10, the selected one first) and harnesses of what the caller may see', async () => {
      await t.upload(t.alice, bundle('fa'), { session_id: 'fa' });
      const bobs = await t.upload(t.bob, bundle('fb'), { session_id: 'fb', harness: 'codex' });
      expect((await t.call('GET', '/session-uploads/facets', t.alice.token)).body).toEqual({
        users: [{ id: t.alice.id, email: t.alice.email }],
        harnesses: ['claude'],
      });
      const all = await t.call('GET', `/session-uploads/facets?selected_user_id=${t.bob.id}`, t.admin.token);
      expect(all.body).toEqual({
        users: [
          { id: t.bob.id, email: t.bob.email },
          { id: t.alice.id, email: t.alice.email },
        ],
        harnesses: ['claude', 'codex'],
      });
      expect((await t.call('GET', '/session-uploads/facets?user_q=ALI', t.admin.token)).body.users).toEqual([
        { id: t.alice.id, email: t.alice.email },
      ]);
      await t.call('PUT', `/session-uploads/${bobs.sessionId}/sharing`, t.bob.token, { mode: 'workspace' });
      expect((await t.call('GET', '/session-uploads/facets', t.alice.token)).body.harnesses).toEqual([
        'claude',
        'codex',
      ]);
      expect((await t.call('GET', `/session-uploads/facets?user_q=${'a'.repeat(201)}`, t.alice.token)).status).toBe(
        400,
      );
      expect((await t.call('GET', '/session-uploads/facets?selected_user_id=x', t.alice.token)).status).toBe(400);
    });

    it('members: people a session may be shared with, by e-mail, the caller left out', async () => {
      expect(
        (await t.call('GET', '/session-uploads/members', t.alice.token)).body.items.map((u: any) => u.email),
      ).toEqual(['admin@example.com', 'bob@example.com', 'carol@example.com']);
      expect((await t.call('GET', '/session-uploads/members?q=BO', t.alice.token)).body).toEqual({
        items: [{ id: t.bob.id, email: t.bob.email }],
      });
      expect((await t.call('GET', '/session-uploads/members?q=%25', t.alice.token)).body.items).toEqual([]);
      expect((await t.call('GET', `/session-uploads/members?q=${'a'.repeat(201)}`, t.alice.token)).status).toBe(400);
    });
  });

  describe('access control and sharing', () => {
    it('keeps a private session from other members', async () => {
      const { sessionId, uploadId } = await t.upload(t.alice, bundle('private'), RESUMABLE);
      expect((await t.call('GET', '/session-uploads', t.bob.token)).body.items).toEqual([]);
      for (const [method, route] of [
        ['GET', ''],
        ['POST', '/download'],
        ['GET', '/sharing'],
      ] as const) {
        expect((await t.call(method, `/session-uploads/${sessionId}${route}`, t.bob.token)).status, route).toBe(404);
      }
      expect(
        (await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.bob.token, { mode: 'workspace' })).status,
      ).toBe(404);
      expect((await t.call('POST', `/session-uploads/${uploadId}/complete`, t.bob.token)).status).toBe(404);
      // Administrators see and download everything, but sharing stays the owner's.
      expect((await t.call('GET', `/session-uploads/${sessionId}`, t.admin.token)).status).toBe(200);
      expect((await t.call('POST', `/session-uploads/${sessionId}/download`, t.admin.token)).status).toBe(200);
      const adminSharing = await t.call('GET', `/session-uploads/${sessionId}/sharing`, t.admin.token);
      expect(adminSharing.body).toEqual({ mode: 'private', can_edit: false, recipient_count: 0, recipients: [] });
      expect(
        (await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.admin.token, { mode: 'workspace' })).status,
      ).toBe(403);
    });

    it('shares with selected users by id or e-mail; recipients view, download, resume but cannot reshare', async () => {
      const { sessionId } = await t.upload(t.alice, bundle('shared'), RESUMABLE);
      const put = await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.alice.token, {
        mode: 'selected',
        emails: ['BOB@example.com'],
      });
      expect(put.body).toEqual({ id: sessionId, mode: 'selected', user_ids: [t.bob.id] });
      expect((await t.call('GET', `/session-uploads/${sessionId}/sharing`, t.alice.token)).body).toEqual({
        mode: 'selected',
        can_edit: true,
        recipient_count: 1,
        recipients: [{ id: t.bob.id, email: 'bob@example.com' }],
      });
      const bobList = await t.call('GET', '/session-uploads?resumable=true', t.bob.token);
      expect(bobList.body.items.map((i: any) => [i.id, i.shared, i.share_recipient_count])).toEqual([
        [sessionId, true, 1],
      ]);
      expect((await t.call('GET', '/session-uploads?resumable=true', t.alice.token)).body.items[0].shared).toBe(false);
      expect((await t.call('POST', `/session-uploads/${sessionId}/download`, t.bob.token)).status).toBe(200);
      expect((await t.call('GET', `/session-uploads/${sessionId}`, t.bob.token)).body.sharing).toEqual({
        user_ids: [t.bob.id],
      });
      expect((await t.call('GET', `/session-uploads/${sessionId}/sharing`, t.bob.token)).body.can_edit).toBe(false);
      const byEmailInIds = await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.alice.token, {
        mode: 'selected',
        user_ids: ['bob@example.com', t.alice.id],
      });
      expect(byEmailInIds.body.user_ids).toEqual([t.bob.id]);
      expect(
        (
          await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.bob.token, {
            mode: 'selected',
            user_ids: [t.carol.id],
          })
        ).status,
      ).toBe(403);
      expect((await t.call('GET', `/session-uploads/${sessionId}`, t.carol.token)).status).toBe(404);
      await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.alice.token, {
        mode: 'selected',
        user_ids: [t.admin.id, t.bob.id],
      });
      expect((await t.call('GET', '/session-uploads?resumable=true', t.admin.token)).body.items).toHaveLength(1);
      // Back to private: access ends.
      expect(
        (await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.alice.token, { mode: 'private' })).body,
      ).toEqual({ id: sessionId, mode: 'private', user_ids: [] });
      expect((await t.call('GET', `/session-uploads/${sessionId}`, t.bob.token)).status).toBe(404);
    });

    it('shares with the whole workspace: every member but the owner is a recipient', async () => {
      const { sessionId } = await t.upload(t.alice, bundle('team'));
      await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.alice.token, { mode: 'workspace' });
      expect((await t.call('GET', `/session-uploads/${sessionId}`, t.carol.token)).status).toBe(200);
      const listed = await t.call('GET', '/session-uploads', t.carol.token);
      expect(listed.body.items.map((i: any) => [i.id, i.sharing_mode, i.share_recipient_count])).toEqual([
        [sessionId, 'workspace', 3],
      ]);
      expect(
        (await t.call('GET', `/session-uploads/${sessionId}/sharing`, t.carol.token)).body.recipients.map(
          (r: any) => r.email,
        ),
      ).toEqual(['admin@example.com', 'bob@example.com', 'carol@example.com']);
    });

    it('rejects bad sharing requests with a reason', async () => {
      const { sessionId } = await t.upload(t.alice, bundle('s'));
      const cases: [unknown, RegExp][] = [
        [{ mode: 'selected' }, /at least one recipient/],
        [{ mode: 'selected', user_ids: [t.alice.id] }, /at least one recipient other than you/],
        [{ mode: 'public' }, /must be one of/],
        [{ mode: 'private', user_ids: [t.bob.id] }, /only given with mode "selected"/],
        [{ mode: 'selected', user_ids: ['nobody'] }, /unknown user "nobody"/],
        [{ mode: 'selected', emails: ['nobody@example.com'] }, /unknown user/],
        [{ mode: 'workspace', extra: 1 }, /unknown field "extra"/],
      ];
      for (const [body, message] of cases) {
        const answer = await t.call('PUT', `/session-uploads/${sessionId}/sharing`, t.alice.token, body);
        expect(answer.status, JSON.stringify(body)).toBe(400);
        expect(answer.body.error).toMatch(message);
      }
    });

    it('does not show a shared session to recipients while it has no verified artifact', async () => {
      const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('p')));
      await t.call('PUT', `/session-uploads/${presigned.body.session_id}/sharing`, t.alice.token, {
        mode: 'workspace',
      });
      expect((await t.call('GET', `/session-uploads/${presigned.body.session_id}`, t.bob.token)).status).toBe(404);
      expect((await t.call('GET', '/session-uploads', t.bob.token)).body.items).toEqual([]);
    });
  });

  describe('presign checks what the contract allows', () => {
    it(
      'takes legacy-raw artifacts of any content type, nulls where the contract allows them, and upper-case ' +
        'digests',
      async () => {
        const bytes = bundle('raw');
        const legacy = await t.call('POST', '/session-uploads/presign', t.alice.token, {
          ...presignBody(bytes, {
            content_type: 'application/x-ndjson',
            cwd: null,
            title: null,
            summary: null,
            repository_root: null,
            repository_remote: null,
          }),
          sha256: String(presignBody(bytes).sha256).toUpperCase(),
          client_extra: 'tolerated',
        });
        expect(legacy.body.status).toBe('pending');
        const shown = (await t.call('GET', `/session-uploads/${legacy.body.session_id}`, t.alice.token)).body.session;
        expect(shown).toMatchObject({
          compatibility_profile: 'legacy',
          artifact_format: 'legacy-raw',
          resumable: false,
          cwd: null,
          title: null,
        });
      },
    );

    it('refuses an unknown profile and a resumable artifact that cannot be resumed', async () => {
      const bytes = bundle('x');
      const unknown = await t.call(
        'POST',
        '/session-uploads/presign',
        t.alice.token,
        presignBody(bytes, { compatibility_profile: 'claude-v9_9_9' }),
      );
      expect([unknown.status, unknown.body.code]).toEqual([400, 'unknown_profile']);
      const raw = await t.call(
        'POST',
        '/session-uploads/presign',
        t.alice.token,
        presignBody(bytes, { resumable: true }),
      );
      expect([raw.status, raw.body.code]).toEqual([400, 'not_resumable']);
      const captureOnly = await t.call(
        'POST',
        '/session-uploads/presign',
        t.alice.token,
        presignBody(bytes, { ...RESUMABLE, compatibility_profile: 'claude-v1_0_85' }),
      );
      expect([captureOnly.status, captureOnly.body.error]).toEqual([
        400,
        'profile claude-v1_0_85 does not resume sessions; presign it with resumable false',
      ]);
    });
  });
});
