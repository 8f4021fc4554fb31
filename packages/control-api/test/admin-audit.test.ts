/**
 * The audit log of administration, on both databases: what the administration commands do (by the local operator,
 * named by their OS user), what administrators do on the dashboard and through the API (by the person), each entry
 * with who, when and what — a policy's revision, the one it follows and what changed in it — and read back through
 * `GET /audit-events` and the dashboard's audit page as a sentence.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from 'blue-agent/cli/main.js';
import { makeTestHome, type TestHome } from '../../../test/support/context.js';
import { BACKENDS, startTestServer, type TestServer, type TestUser } from '../../../test/support/control-server.js';

interface Entry {
  seq: number;
  at: string;
  actor: { kind: string; id: string; email: string | null };
  action: string;
  session_id: string | null;
  owner_id: string | null;
  details: Record<string, unknown>;
  summary: string;
}

describe.each(BACKENDS)('the audit log of administration (%s)', (backend) => {
  let t: TestServer | undefined;
  let home: TestHome | undefined;
  afterEach(async () => {
    await t?.close();
    await home?.cleanup();
    t = home = undefined;
  });

  const audit = async (server: TestServer, query = ''): Promise<Entry[]> => {
    const got = await server.call('GET', `/audit-events${query}`, server.admin.token);
    expect(got.status).toBe(200);
    return got.body.items as Entry[];
  };

  /** A signed-in browser of `user`: GET a page, POST a form (with its CSRF token). */
  async function browser(server: TestServer, user: TestUser) {
    const secret = await server.server.store.identity.createSignInLink(user.id, server.clock.now(), 60_000);
    const signed = await fetch(`${server.url}/auth/link`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${secret}`,
    });
    const cookie = signed.headers.get('set-cookie')!.split(';')[0]!;
    const get = async (route: string) =>
      (await fetch(`${server.url}${route}`, { redirect: 'manual', headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(await get('/account'))![1]!;
    const post = async (route: string, fields: Record<string, string>) => {
      const response = await fetch(`${server.url}${route}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf, ...fields }).toString(),
      });
      return response.status;
    };
    return { get, post };
  }

  it('records what the administration commands do, by the local operator and their OS user', async () => {
    t = await startTestServer({ backend });
    home = await makeTestHome({ USER: 'ops-ada' });
    await t.server.store.setPublicUrl(t.url);
    const where = [
      '--data',
      t.dataDir,
      ...(t.storeOptions.databaseUrl === undefined ? [] : ['--database-url', t.storeOptions.databaseUrl]),
    ];
    const run = async (...args: string[]) => {
      const from = home!.stdout.text().length;
      expect(await main([...args, ...where], home!.ctx), home!.stderr.text()).toBe(0);
      return home!.stdout.text().slice(from);
    };
    const dana = JSON.parse(await run('control-plane', 'users', 'add', 'dana@example.com', '--admin', '--json')) as {
      user_id: string;
    };
    const token = JSON.parse(
      await run('control-plane', 'tokens', 'add', 'dana@example.com', '--label', 'nightly export', '--json'),
    ) as { id: string };
    await run('control-plane', 'tokens', 'revoke', token.id);
    // Revoked again: nothing changes, and nothing more is recorded.
    await run('control-plane', 'tokens', 'revoke', token.id);
    const link = JSON.parse(await run('control-plane', 'users', 'link', 'dana@example.com', '--json')) as {
      expires_at: string;
    };
    const policy = path.join(home.root, 'policy.yaml');
    await writeFile(
      policy,
      'allowed_harnesses: [claude, codex]\nttl_seconds: 600\n' +
        `session_upload: { presign_url: "${t.url}/session-uploads/presign" }\n`,
    );
    const first = JSON.parse(await run('control-plane', 'policy', 'publish', policy, '--json')) as { revision: string };
    await writeFile(
      policy,
      `allowed_harnesses: [claude, gemini]\nharnesses: { gemini: { allow_unverified_versions: true } }\nrequired: ` +
        `false\nsession_upload: { presign_url: "${t.url}/session-uploads/presign" }\n`,
    );
    const second = JSON.parse(await run('control-plane', 'policy', 'publish', policy, '--json')) as {
      revision: string;
    };

    const entries = await audit(t);
    const operator = { kind: 'cli', id: 'ops-ada', email: null };
    expect(entries.map((e) => [e.action, e.actor, e.session_id, e.owner_id])).toEqual(
      [
        'user.add',
        'token.create',
        'token.create',
        'token.revoke',
        'sign_in_link.create',
        'policy.publish',
        'policy.publish',
      ].map((action) => [action, operator, null, null]),
    );
    const [added, firstToken, nightly, revoked, linked, published, republished] = entries as [
      Entry,
      Entry,
      Entry,
      Entry,
      Entry,
      Entry,
      Entry,
    ];
    expect(added.details).toEqual({ user_id: dana.user_id, email: 'dana@example.com', role: 'admin' });
    expect(firstToken.details).toMatchObject({ user_id: dana.user_id, label: 'token from users add' });
    expect(nightly.details).toMatchObject({ token_id: token.id, email: 'dana@example.com', label: 'nightly export' });
    expect(revoked.details).toMatchObject({
      token_id: token.id,
      email: 'dana@example.com',
      label: 'nightly export',
      kind: 'personal',
    });
    expect(linked.details).toEqual({ user_id: dana.user_id, email: 'dana@example.com', expires_at: link.expires_at });
    expect(published.details).toMatchObject({
      revision: first.revision,
      previous_revision: null,
      keys_added: ['allowed_harnesses', 'session_upload', 'ttl_seconds'],
    });
    expect(republished.details).toEqual({
      revision: second.revision,
      previous_revision: first.revision,
      keys_added: ['harnesses', 'required'],
      keys_removed: ['ttl_seconds'],
      keys_changed: ['allowed_harnesses'],
      harnesses_allowed: ['gemini'],
      harnesses_disallowed: ['codex'],
      harnesses_configured: ['gemini'],
    });
    // When: each entry at the time of the command.
    for (const e of entries) expect(Math.abs(Date.parse(e.at) - Date.now())).toBeLessThan(10 * 60_000);

    // Read as sentences, through the API and on the page.
    expect(entries.map((e) => e.summary)).toEqual([
      'added administrator dana@example.com',
      expect.stringMatching(/^created the token "token from users add" \(\S+\) for dana@example\.com$/),
      `created the token "nightly export" (${token.id}) for dana@example.com`,
      `revoked the token "nightly export" (${token.id}) of dana@example.com`,
      `made a one-time sign-in link for dana@example.com, good until ${link.expires_at}`,
      `published policy revision ${first.revision} (the first): keys added: allowed_harnesses, session_upload, ` +
        `ttl_seconds`,
      `published policy revision ${second.revision} (after ${first.revision}): keys added: harnesses, required; ` +
        `keys removed: ttl_seconds; keys changed: allowed_harnesses; ` +
        'harnesses now allowed: gemini; harnesses no longer allowed: codex; harness settings changed: gemini',
    ]);
    expect((await audit(t, '?action=policy.publish')).map((e) => e.details.revision)).toEqual([
      first.revision,
      second.revision,
    ]);
    expect((await audit(t, '?actor_id=ops-ada')).length).toBe(7);
    const page = await (await browser(t, t.admin)).get('/admin/audit');
    expect(page.split('cli (OS user ops-ada)').length - 1).toBe(7);
    expect(page).toContain(`revoked the token &quot;nightly export&quot; (${token.id}) of dana@example.com`);
    expect(page).toContain('harnesses no longer allowed: codex');
    expect(page).toContain('<option value="policy.publish"');
  });

  it('records what administrators do on the dashboard and through the API, each by the person who did it', async () => {
    t = await startTestServer({ backend });
    const admin = await browser(t, t.admin);
    // Role changes, both ways; one that changes nothing records nothing.
    expect(await admin.post(`/admin/users/${t.bob.id}/role`, { role: 'admin' })).toBe(303);
    expect(await admin.post(`/admin/users/${t.bob.id}/role`, { role: 'admin' })).toBe(303);
    expect(await admin.post(`/admin/users/${t.bob.id}/role`, { role: 'member' })).toBe(303);
    // A token revoked on the page, and one a person revokes themselves through the API.
    const [alices] = await t.server.store.identity.grants(t.alice.id);
    expect(await admin.post(`/admin/tokens/${alices!.id}/revoke`, {})).toBe(303);
    const [carols] = await t.server.store.identity.grants(t.carol.id);
    expect((await t.call('DELETE', `/tokens/${carols!.id}`, t.carol.token)).status).toBe(200);
    // A policy published on the page, over the one published before.
    await t.server.store.publishPolicy({ allowed_harnesses: ['claude'], ttl_seconds: 300 }, t.clock.now());
    const base = (await t.server.store.currentPolicy())!.revision;
    expect(
      await admin.post('/admin/policy/publish', {
        policy: 'allowed_harnesses: [claude, codex]\nttl_seconds: 300\n',
        base,
      }),
    ).toBe(303);
    const published = (await t.server.store.currentPolicy())!.revision;

    const entries = await audit(t);
    const byAdmin = { kind: 'user', id: t.admin.id, email: t.admin.email };
    expect(entries.map((e) => [e.action, e.actor])).toEqual([
      ['user.role', byAdmin],
      ['user.role', byAdmin],
      ['token.revoke', byAdmin],
      ['token.revoke', { kind: 'user', id: t.carol.id, email: t.carol.email }],
      ['policy.publish', byAdmin],
    ]);
    expect(entries.map((e) => e.at)).toEqual(entries.map(() => new Date(t!.clock.now()).toISOString()));
    expect(entries.map((e) => e.summary)).toEqual([
      'made bob@example.com an administrator (was a member)',
      'made bob@example.com a member (was an administrator)',
      `revoked the token "token from users add" (${alices!.id}) of alice@example.com`,
      `revoked the token "token from users add" (${carols!.id}) of carol@example.com`,
      `published policy revision ${published} (after ${base}): keys changed: allowed_harnesses; harnesses now ` +
        `allowed: codex`,
    ]);
    expect(entries[4]!.details).toMatchObject({
      revision: published,
      previous_revision: base,
      keys_changed: ['allowed_harnesses'],
      harnesses_allowed: ['codex'],
    });
    // A review that went stale publishes nothing, and records nothing.
    expect(await admin.post('/admin/policy/publish', { policy: 'allowed_harnesses: [claude]\n', base })).toBe(409);
    expect(await audit(t)).toHaveLength(5);
    const page = await admin.get('/admin/audit');
    expect(page).toContain('made bob@example.com an administrator (was a member)');
    expect(page).toContain(`<td>${t.carol.email}</td>`);
  });
});
