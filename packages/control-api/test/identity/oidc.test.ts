/**
 * Browser sign-in through a real OpenID provider on loopback (oidc-provider), on both databases: authorization code
 * with PKCE, people made on first sign-in by their verified e-mail, administrators by group, and every way a callback
 * can be wrong — another browser's, replayed, tampered, an unverified address, the provider down — ending on the
 * sign-in page, with nobody signed in.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BACKENDS, freePort, startTestServer, type TestServer } from '../../../../test/support/control-server.js';
import {
  CookieJar,
  signInThroughProvider,
  startOidcProvider,
  type TestOidcProvider,
} from '../../../../test/support/oidc-provider.js';

describe.each(BACKENDS)('signing in with the identity provider (%s)', (backend) => {
  let t: TestServer | undefined;
  let idp: TestOidcProvider | undefined;
  afterEach(async () => {
    await t?.close();
    await idp?.close();
    t = undefined;
    idp = undefined;
  });

  async function start(
    adminGroup?: string,
    allowUnverifiedEmail = false,
  ): Promise<{ t: TestServer; idp: TestOidcProvider }> {
    const port = await freePort();
    idp = await startOidcProvider(`http://127.0.0.1:${port}/auth/oidc/callback`, [
      { email: 'dana@example.com' },
      { email: 'erin@example.com', groups: ['blue-admins', 'staff'] },
      { email: 'frank@example.com', verified: false },
      { email: 'gina@example.com', verified: null },
      { email: 'admin@localhost' },
      { sub: 'dana-again', email: 'dana@example.com' },
    ]);
    t = await startTestServer({
      backend,
      port,
      oidc: {
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        adminGroup,
        name: 'Example SSO',
        allowUnverifiedEmail,
      },
    });
    return { t, idp };
  }
  const account = async (jar: CookieJar) => {
    const url = new URL(`${t!.url}/account`);
    return (await fetch(url, { redirect: 'manual', headers: { cookie: jar.header(url) ?? '' } })).text();
  };

  it('signs a new person in, made a member on first sign-in, and back where they were going', async () => {
    await start('blue-admins');
    const page = await (await fetch(`${t!.url}/sign-in?next=%2Fdevice`)).text();
    expect(page).toContain('href="/auth/oidc/start?next=%2Fdevice"');
    expect(page).toContain('Sign in with Example SSO');

    const { landed, jar, visited } = await signInThroughProvider(
      `${t!.url}/auth/oidc/start?next=%2Fdevice`,
      'dana@example.com',
    );
    expect(landed).toBe(`${t!.url}/device`);
    // PKCE and a nonce went to the provider; the state came back to the callback.
    const authorize = new URL(visited.find((v) => v.startsWith(`${idp!.issuer}/auth?`))!);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('nonce')).toMatch(/\S{20,}/);
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${t!.url}/auth/oidc/callback`);
    expect(await account(jar)).toContain('Signed in as <strong>dana@example.com</strong> (member)');
    const dana = await t!.server.store.userByEmail('dana@example.com');
    expect(dana).toMatchObject({ is_admin: false });
    // A second sign-in is the same person.
    await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'dana@example.com');
    expect((await t!.server.store.listUsers()).filter((u) => u.email === 'dana@example.com')).toHaveLength(1);
  });

  it('makes members of the configured group administrators, and the audit log says the provider did', async () => {
    await start('blue-admins');
    const { jar } = await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'erin@example.com');
    expect(await account(jar)).toContain('(administrator)');
    const erin = (await t!.server.store.userByEmail('erin@example.com'))!;
    const log = await t!.call('GET', '/audit-events', t!.admin.token);
    const provider = { kind: 'identity_provider', id: idp!.issuer, email: null };
    expect(
      log.body.items.map((e: { action: string; actor: unknown; details: unknown; summary: string }) => [
        e.action,
        e.actor,
        e.details,
        e.summary,
      ]),
    ).toEqual([
      [
        'user.add',
        provider,
        { user_id: erin.id, email: 'erin@example.com', role: 'member' },
        'added member erin@example.com',
      ],
      [
        'user.role',
        provider,
        { user_id: erin.id, email: 'erin@example.com', from: 'member', to: 'admin', group: 'blue-admins' },
        'made erin@example.com an administrator (was a member), as a member of the group blue-admins',
      ],
    ]);
    // Signing in again changes nothing, and records nothing.
    await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'erin@example.com');
    expect((await t!.call('GET', '/audit-events', t!.admin.token)).body.items).toHaveLength(2);
    // Without a group configured, nobody becomes one by signing in.
    await t!.close();
    await idp!.close();
    await start();
    const plain = await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'erin@example.com');
    expect(await account(plain.jar)).toContain('(member)');
  });

  it('matches a person by their subject at the provider, first by a verified e-mail, never a local one', async () => {
    await start();
    const unverified = await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'frank@example.com');
    expect(unverified.landed).toBe(`${t!.url}/sign-in?failed=email`);
    expect(await t!.server.store.userByEmail('frank@example.com')).toBeUndefined();
    // No email_verified claim at all: refused unless the server was told to take it.
    expect((await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'gina@example.com')).landed).toBe(
      `${t!.url}/sign-in?failed=email`,
    );
    // The first administrator's account is this server's own.
    expect((await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'admin@localhost')).landed).toBe(
      `${t!.url}/sign-in?failed=email`,
    );
    // Dana's e-mail, bound to her subject at her first sign-in, cannot be claimed by another subject later.
    expect((await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'dana@example.com')).landed).toBe(
      `${t!.url}/sessions`,
    );
    expect((await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'dana-again')).landed).toBe(
      `${t!.url}/sign-in?failed=account`,
    );
    // Her address changes at the provider: she is still herself here.
    idp!.account({ email: 'dana.renamed@example.com', sub: 'dana@example.com' });
    const renamed = await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'dana@example.com');
    expect(await account(renamed.jar)).toContain('Signed in as <strong>dana@example.com</strong>');
    await t!.close();
    await idp!.close();
    await start(undefined, true);
    expect((await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'gina@example.com')).landed).toBe(
      `${t!.url}/sessions`,
    );
  });

  it('refuses another browser’s callback, a replayed one, and a tampered state', async () => {
    await start();

    // Stop at the callback: the code the provider sent back, and the browser's cookies at that point.
    const jar = new CookieJar();
    let callback: string | undefined;
    const original = globalThis.fetch;
    globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.startsWith(`${t!.url}/auth/oidc/callback`) && callback === undefined) {
        callback = url;
        return new Response('', { status: 200 });
      }
      return original(input, init);
    }) as typeof fetch;
    try {
      await signInThroughProvider(`${t!.url}/auth/oidc/start`, 'dana@example.com', jar);
    } finally {
      globalThis.fetch = original;
    }
    expect(callback).toBeDefined();
    const visit = async (url: string, cookies: string | undefined) =>
      (await fetch(url, { redirect: 'manual', headers: cookies === undefined ? {} : { cookie: cookies } })).headers.get(
        'location',
      );
    const browserCookies = jar.header(new URL(t!.url));
    // Another browser (no state cookie) cannot finish it.
    expect(await visit(callback!, undefined)).toBe('/sign-in?failed=oidc');
    // A tampered state is refused by the check, and spends the sign-in.
    const tampered = new URL(callback!);
    tampered.searchParams.set('state', 'x'.repeat(43));
    expect(await visit(tampered.href, browserCookies)).toBe('/sign-in?failed=oidc');
    expect(await visit(callback!, browserCookies)).toBe('/sign-in?failed=oidc');
    expect(await t!.server.store.userByEmail('dana@example.com')).toBeUndefined();
  });

  it('says the provider is unreachable rather than failing without a word', async () => {
    await start();
    await idp!.close();
    idp = undefined;
    const answer = await fetch(`${t!.url}/auth/oidc/start`, { redirect: 'manual' });
    expect(answer.status).toBe(502);
    expect(await answer.text()).toContain('the identity provider at http://127.0.0.1');
  });

  it('has no provider routes without a provider configured', async () => {
    t = await startTestServer({ backend });
    expect((await fetch(`${t.url}/auth/oidc/start`, { redirect: 'manual' })).status).toBe(404);
    expect(await (await fetch(`${t.url}/sign-in`)).text()).not.toContain('/auth/oidc/start');
  });
});
