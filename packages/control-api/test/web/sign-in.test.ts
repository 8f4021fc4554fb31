/**
 * Browser sign-in without a browser: one-time sign-in links, the session cookie, forms refused from other sites or
 * without their CSRF token, the device approval page that finishes a `blue-agent login`, and the account page; on both
 * databases. (test/e2e/dashboard.test.ts drives the same pages in Chromium.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEVICE_GRANT } from '../../src/identity/oauth.js';
import { CONTENT_SECURITY_POLICY, safeNext, sessionCookie } from '../../src/web/http.js';
import { CODE_MISS_WINDOW_MS, CODE_MISSES_ALLOWED } from '../../src/web/sign-in.js';
import {
  BACKENDS,
  startReplica,
  startTestServer,
  type TestServer,
  type TestUser,
} from '../../../../test/support/control-server.js';

describe.each(BACKENDS)('signing a browser in (%s)', (backend) => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  /** One request as a browser makes it: no redirects followed, the cookie given, same-origin forms. */
  const browse = async (
    method: string,
    route: string,
    options: { cookie?: string; form?: Record<string, string>; origin?: string | null; userAgent?: string } = {},
  ) => {
    const headers: Record<string, string> = {};
    if (options.cookie !== undefined) headers.cookie = options.cookie;
    if (options.userAgent !== undefined) headers['user-agent'] = options.userAgent;
    if (options.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    if (method !== 'GET' && options.origin !== null) headers.origin = options.origin ?? t.url;
    const response = await fetch(`${t.url}${route}`, {
      method,
      headers,
      redirect: 'manual',
      ...(options.form === undefined ? {} : { body: new URLSearchParams(options.form).toString() }),
    });
    return {
      status: response.status,
      text: await response.text(),
      headers: response.headers,
      location: response.headers.get('location'),
    };
  };
  /** A signed-in browser of `user`: its cookie, and the CSRF token its pages carry. */
  const signedIn = async (user: TestUser, next = '/') => {
    const secret = await t.server.store.identity.createSignInLink(user.id, t.clock.now(), 60_000);
    const answer = await browse('POST', '/auth/link', { form: { token: secret, next } });
    expect(answer.status).toBe(303);
    const cookie = answer.headers.get('set-cookie')!.split(';')[0]!;
    const page = await browse('GET', '/account', { cookie });
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
    return { cookie, csrf, location: answer.location };
  };

  it('signs in once with a sign-in link: an HttpOnly SameSite=Lax cookie, back to where the person went', async () => {
    t = await startTestServer({ backend });
    const page = await browse('GET', '/auth/link');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.text).toContain('<script src="/assets/link.js" defer></script>');

    const secret = await t.server.store.identity.createSignInLink(t.alice.id, t.clock.now(), 60_000);
    const answer = await browse('POST', '/auth/link', { form: { token: secret, next: '/device?user_code=ABCD' } });
    expect([answer.status, answer.location]).toEqual([303, '/device?user_code=ABCD']);
    expect(answer.headers.get('set-cookie')).toMatch(
      /^blue_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Max-Age=43200$/,
    );
    const cookie = answer.headers.get('set-cookie')!.split(';')[0]!;
    const account = await browse('GET', '/account', { cookie });
    expect(account.text).toContain('Signed in as <strong>alice@example.com</strong>');

    // Once only; and a link that expired, or was never made, sends the person back to the sign-in page.
    expect((await browse('POST', '/auth/link', { form: { token: secret } })).location).toBe('/sign-in?failed=link');
    const late = await t.server.store.identity.createSignInLink(t.alice.id, t.clock.now(), 60_000);
    t.clock.advance(61_000);
    expect((await browse('POST', '/auth/link', { form: { token: late } })).location).toBe('/sign-in?failed=link');
    const failed = await browse('GET', '/sign-in?failed=link');
    expect(failed.text).toContain('That sign-in link is not valid');
    // The session lasts 12 hours.
    t.clock.advance(12 * 3_600_000);
    expect((await browse('GET', '/account', { cookie })).location).toBe('/sign-in?next=%2Faccount');
  });

  it('refuses forms from other sites, without their CSRF token, and never redirects off this server', async () => {
    t = await startTestServer({ backend });
    const secret = await t.server.store.identity.createSignInLink(t.alice.id, t.clock.now(), 60_000);
    const crossSite = await browse('POST', '/auth/link', { form: { token: secret }, origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect(crossSite.headers.get('content-type')).toMatch(/^text\/html/);
    expect(crossSite.text).toContain(`forms are accepted only from ${t.url}`);
    expect((await browse('POST', '/auth/link', { form: { token: secret }, origin: null })).status).toBe(403);
    // The link was not spent by the refused forms.
    const { cookie, csrf } = await signedIn(t.alice);
    expect((await browse('POST', '/sign-out', { cookie, form: {} })).status).toBe(403);
    expect((await browse('POST', '/sign-out', { cookie, form: { csrf: `${csrf}x` } })).status).toBe(403);
    const out = await browse('POST', '/sign-out', { cookie, form: { csrf } });
    expect([out.status, out.location]).toEqual([303, '/sign-in']);
    expect(out.headers.get('set-cookie')).toMatch(/^blue_session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0/);
    expect((await browse('GET', '/account', { cookie })).status).toBe(303);

    // Off this server, or not a path a Location header can hold (it would fail after the sign-in was spent).
    for (const next of [
      '//evil.example/x',
      'https://evil.example',
      '/\\evil.example',
      'javascript:alert(1)',
      '/✓',
      '/a b',
    ])
      expect(safeNext(next)).toBe('/');
    expect(safeNext('/device?user_code=X')).toBe('/device?user_code=X');
    const again = await signedIn(t.alice, '//evil.example');
    expect(again.location).toBe('/');
  });

  it('approves a device sign-in from the page the terminal names, showing what asks, escaped', async () => {
    t = await startTestServer({ backend });
    const start = await fetch(`${t.url}/api/auth/device/code`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': 'blue-agent/1.0 <script>alert(1)</script>',
      },
      body: 'client_id=blue-agent',
    });
    const code = (await start.json()) as { device_code: string; user_code: string; verification_uri_complete: string };
    const path = new URL(code.verification_uri_complete).pathname + new URL(code.verification_uri_complete).search;
    // Not signed in: to the sign-in page, and back here after.
    const anonymous = await browse('GET', path);
    expect(anonymous.location).toBe(`/sign-in?next=${encodeURIComponent(path)}`);

    const { cookie, csrf } = await signedIn(t.bob);
    const page = await browse('GET', path, { cookie });
    expect(page.status).toBe(200);
    expect(page.text).toContain('blue-agent/1.0 &lt;script>alert(1)&lt;/script>');
    expect(page.text).not.toContain('<script>alert');
    expect(page.text).toContain(code.user_code);
    expect(page.text).toContain('upload, share and delete your sessions');
    expect(page.text.replace(/<[^>]*>/g, '')).toContain('started just now, with the code');
    t.clock.advance(60_000);
    expect((await browse('GET', path, { cookie })).text.replace(/<[^>]*>/g, '')).toContain(
      'started 1 minute ago, with the code',
    );
    t.clock.advance(60_000);
    expect((await browse('GET', path, { cookie })).text.replace(/<[^>]*>/g, '')).toContain(
      'started 2 minutes ago, with the code',
    );
    expect((await browse('GET', '/device?user_code=BBBB-BBBB', { cookie })).status).toBe(404);

    // Without the CSRF token nothing is decided.
    expect(
      (await browse('POST', '/device', { cookie, form: { user_code: code.user_code, decision: 'approve' } })).status,
    ).toBe(403);
    const approved = await browse('POST', '/device', {
      cookie,
      form: { csrf, user_code: code.user_code, decision: 'approve' },
    });
    expect(approved.status).toBe(200);
    expect(approved.text).toContain('Device signed in');
    const tokens = await fetch(`${t.url}/api/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: DEVICE_GRANT,
        device_code: code.device_code,
        client_id: 'blue-agent',
      }).toString(),
    });
    const access = ((await tokens.json()) as { access_token: string }).access_token;
    expect((await t.call('GET', '/auth/me', access)).body.email).toBe('bob@example.com');
    // Answered: the same code cannot be decided again.
    expect(
      (await browse('POST', '/device', { cookie, form: { csrf, user_code: code.user_code, decision: 'deny' } })).status,
    ).toBe(409);
  });

  it('stops looking codes up for a person who got ten wrong, for ten minutes (RFC 8628 §5.1)', async () => {
    // A code that outlives the wait.
    t = await startTestServer({ backend, identity: { deviceCodeTtlMs: 3_600_000 } });
    const start = await fetch(`${t.url}/api/auth/device/code`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'client_id=blue-agent',
    });
    const code = (await start.json()) as { user_code: string };
    const { cookie, csrf } = await signedIn(t.carol);
    for (let i = 0; i < CODE_MISSES_ALLOWED; i++)
      expect((await browse('GET', '/device?user_code=BBBB-BBBB', { cookie })).status).toBe(404);
    // Even the right code is not looked up now, by the page or by its form.
    const blocked = await browse('GET', `/device?user_code=${code.user_code}`, { cookie });
    expect([blocked.status, blocked.headers.get('retry-after')]).toEqual([429, '600']);
    expect(blocked.text).toContain('too many codes that match no sign-in');
    expect(
      (await browse('POST', '/device', { cookie, form: { csrf, user_code: code.user_code, decision: 'approve' } }))
        .status,
    ).toBe(429);
    // Another person is not held back.
    expect(
      (await browse('GET', `/device?user_code=${code.user_code}`, { cookie: (await signedIn(t.alice)).cookie })).status,
    ).toBe(200);
    t.clock.advance(CODE_MISS_WINDOW_MS);
    expect((await browse('GET', `/device?user_code=${code.user_code}`, { cookie })).status).toBe(200);
  });

  it('holds the limit of wrong codes however many arrive at once, by page and by form, on two replicas', async () => {
    t = await startTestServer({ backend });
    const replica = await startReplica(t);
    try {
      const { cookie, csrf } = await signedIn(t.carol);
      const attempts = 300;
      const statuses = await Promise.all(
        Array.from({ length: attempts }, async (_, i) => {
          const base = i % 2 === 0 ? t.url : replica.url;
          const response =
            i % 4 < 2
              ? await fetch(`${base}/device?user_code=BBBB-BBBB`, { headers: { cookie }, redirect: 'manual' })
              : await fetch(`${base}/device`, {
                  method: 'POST',
                  headers: { cookie, origin: base, 'content-type': 'application/x-www-form-urlencoded' },
                  body: new URLSearchParams({ csrf, user_code: 'BBBB-BBBB', decision: 'approve' }).toString(),
                  redirect: 'manual',
                });
          await response.arrayBuffer();
          return response.status;
        }),
      );
      // A miss is 404 on the page and 409 by the form; every other attempt was refused before looking the code up.
      const misses = statuses.filter((s) => s === 404 || s === 409).length;
      expect([misses, statuses.filter((s) => s === 429).length]).toEqual([
        CODE_MISSES_ALLOWED,
        attempts - CODE_MISSES_ALLOWED,
      ]);
    } finally {
      await replica.close();
    }
  });

  it('lists and revokes the person’s own tokens on the account page', async () => {
    t = await startTestServer({ backend });
    const { cookie, csrf } = await signedIn(t.carol);
    const page = await browse('GET', '/account', { cookie });
    expect(page.text).toContain('token from users add');
    // A command is shown as code, not as the backquotes a terminal's text would carry.
    expect(page.text).toContain('the devices you signed in with <code>blue-agent login</code>.');
    expect(page.text).not.toContain('`');
    const id = /action="\/account\/tokens\/([0-9a-f-]{36})\/revoke"/.exec(page.text)![1]!;
    expect((await browse('POST', `/account/tokens/${id}/revoke`, { cookie, form: { csrf } })).location).toBe(
      '/account#tokens',
    );
    expect((await t.call('GET', '/auth/me', t.carol.token)).status).toBe(401);
    // Someone else's token is not the person's to revoke.
    const alices = (await t.server.store.identity.grants(t.alice.id))[0]!.id;
    expect((await browse('POST', `/account/tokens/${alices}/revoke`, { cookie, form: { csrf } })).status).toBe(404);
    expect((await t.call('GET', '/auth/me', t.alice.token)).status).toBe(200);
  });

  it('serves its built stylesheet and script with an ETag, and nothing else from disk', async () => {
    t = await startTestServer({ backend });
    const css = await browse('GET', '/assets/app.css');
    expect([css.status, css.headers.get('content-type')]).toEqual([200, 'text/css; charset=utf-8']);
    const etag = css.headers.get('etag')!;
    expect((await fetch(`${t.url}/assets/app.css`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await browse('GET', '/assets/link.js')).headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await browse('GET', '/assets/..%2Fpackage.json')).status).toBe(404);
    expect((await browse('GET', '/assets/main.js')).status).toBe(404);
  });
});

describe('the session cookie', () => {
  it('is Secure with the __Host- prefix when the server is reached over TLS', () => {
    const rc = {
      publicUrl: () => 'https://control.example.com',
      identitySettings: { browserSessionTtlMs: 3_600_000 },
    } as Parameters<typeof sessionCookie>[0];
    expect(sessionCookie(rc, 'abc')).toBe(
      '__Host-blue_session=abc; Path=/; HttpOnly; SameSite=Lax; Max-Age=3600; Secure',
    );
  });
});
