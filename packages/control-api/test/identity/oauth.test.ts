/**
 * Signing CLIs in with the device flow (RFC 8628) and what the tokens may do, on both databases: device codes and
 * their polling answers, access tokens that expire and refresh tokens that rotate (a spent one used again ends the
 * sign-in), scopes enforced per route, and sign-ins that users and administrators list and revoke — effective at the
 * very next request.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { deviceHash, DEVICE_GRANT } from '../../src/identity/oauth.js';
import { BACKENDS, startTestServer, type TestServer, type TestUser } from '../../../../test/support/control-server.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const HOUR = 3_600_000;

describe.each(BACKENDS)('the device flow and tokens (%s)', (backend) => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  const post = (route: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    t.call('POST', route, undefined, new URLSearchParams(fields).toString(), { ...FORM, ...headers });
  const startDevice = async (scope?: string) => {
    const answer = await post(
      '/api/auth/device/code',
      { client_id: 'blue-agent', ...(scope === undefined ? {} : { scope }) },
      { 'user-agent': 'blue-agent/9.9.9 (test)' },
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body as {
      device_code: string;
      user_code: string;
      verification_uri: string;
      verification_uri_complete: string;
      expires_in: number;
      interval: number;
    };
  };
  const poll = (deviceCode: string) =>
    post('/api/auth/oauth2/token', { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: 'blue-agent' });
  /** A device sign-in of `user`, approved as the approval page does. */
  const signIn = async (user: TestUser, scope?: string) => {
    const code = await startDevice(scope);
    expect(
      await t.server.store.identity.decideDeviceCode(code.user_code.replace('-', ''), user.id, t.clock.now()),
    ).toBe(true);
    const tokens = await poll(code.device_code);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    return tokens.body as {
      access_token: string;
      refresh_token: string;
      expires_in: number;
      scope: string;
      token_type: string;
    };
  };

  it('hands out a device code, answers polls as RFC 8628 says, and the tokens once approved', async () => {
    t = await startTestServer({ backend });
    const code = await startDevice();
    expect(code.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(code.verification_uri).toBe(`${t.url}/device`);
    expect(code.verification_uri_complete).toBe(`${t.url}/device?user_code=${code.user_code}`);
    expect([code.expires_in, code.interval]).toEqual([600, 5]);

    const pending = await poll(code.device_code);
    expect([pending.status, pending.body.error]).toEqual([400, 'authorization_pending']);
    // Faster than the interval: slow down, and the interval is 5 s longer from now on.
    t.clock.advance(1_000);
    expect((await poll(code.device_code)).body.error).toBe('slow_down');
    // 6 s later is within the new 10 s: slower still (15 s); 15 s later is fine.
    t.clock.advance(6_000);
    expect((await poll(code.device_code)).body.error).toBe('slow_down');
    t.clock.advance(15_000);
    expect((await poll(code.device_code)).body.error).toBe('authorization_pending');

    const pendingCode = await t.server.store.identity.pendingDeviceCode(code.user_code.replace('-', ''), t.clock.now());
    expect(pendingCode).toMatchObject({
      client_id: 'blue-agent',
      client_label: 'blue-agent/9.9.9 (test)',
      scopes: ['governance:read', 'session:read', 'session:write', 'client-status:write'],
    });
    await t.server.store.identity.decideDeviceCode(code.user_code.replace('-', ''), t.alice.id, t.clock.now());
    t.clock.advance(15_000);
    const tokens = await poll(code.device_code);
    expect(tokens.status).toBe(200);
    expect(tokens.headers.get('cache-control')).toBe('no-store');
    expect(tokens.body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'governance:read session:read session:write client-status:write',
    });
    expect(tokens.body.access_token).toMatch(/^blue_/);
    expect(tokens.body.refresh_token).not.toBe(tokens.body.access_token);
    // Once: the code went with the tokens.
    t.clock.advance(15_000);
    expect((await poll(code.device_code)).body.error).toBe('invalid_grant');

    const me = await t.call('GET', '/auth/me', tokens.body.access_token);
    expect(me.body).toMatchObject({ email: 'alice@example.com', role: 'member' });
    // A refresh token is not a bearer token.
    expect((await t.call('GET', '/auth/me', tokens.body.refresh_token)).status).toBe(401);
  });

  it('says access_denied, expired_token and invalid_grant, and refuses bad requests by name', async () => {
    t = await startTestServer({ backend });
    const denied = await startDevice();
    await t.server.store.identity.decideDeviceCode(denied.user_code.replace('-', ''), undefined, t.clock.now());
    expect((await poll(denied.device_code)).body.error).toBe('access_denied');
    expect((await poll(denied.device_code)).body.error).toBe('invalid_grant');

    const late = await startDevice();
    t.clock.advance(601_000);
    expect((await poll(late.device_code)).body.error).toBe('expired_token');
    // An expired code cannot be approved either.
    expect(
      await t.server.store.identity.decideDeviceCode(late.user_code.replace('-', ''), t.alice.id, t.clock.now()),
    ).toBe(false);

    expect((await poll('not-a-code')).body.error).toBe('invalid_grant');
    const wrongClient = await post('/api/auth/device/code', { client_id: 'someone-else' });
    expect([wrongClient.status, wrongClient.body.error]).toEqual([401, 'invalid_client']);
    expect((await post('/api/auth/device/code', {})).body).toMatchObject({
      error: 'invalid_request',
      error_description: 'the form field client_id is required',
    });
    expect(
      (await post('/api/auth/device/code', { client_id: 'blue-agent', scope: 'session:read root' })).body.error,
    ).toBe('invalid_scope');
    expect((await post('/api/auth/oauth2/token', { grant_type: 'password', client_id: 'blue-agent' })).body.error).toBe(
      'unsupported_grant_type',
    );
    const twice = await t.call(
      'POST',
      '/api/auth/oauth2/token',
      undefined,
      'client_id=blue-agent&client_id=blue-agent',
      FORM,
    );
    expect([twice.status, twice.body.error]).toEqual([400, 'invalid_request']);
    const json = await t.call('POST', '/api/auth/device/code', undefined, { client_id: 'blue-agent' });
    expect(json.status).toBe(415);
    // Device codes are kept only as their hash.
    const code = await startDevice();
    expect(
      await t.server.store.identity.pollDeviceCode(
        deviceHash(code.device_code),
        'blue-agent',
        t.clock.now(),
        { accessMs: 1, refreshMs: 1 },
        5000,
      ),
    ).toEqual({ outcome: 'pending' });
  });

  it('expires access tokens, rotates refresh tokens, ends the sign-in when a spent refresh token returns', async () => {
    t = await startTestServer({ backend });
    const first = await signIn(t.alice);
    t.clock.advance(HOUR + 1);
    const expired = await t.call('GET', '/auth/me', first.access_token);
    expect([expired.status, expired.body.code]).toEqual([401, 'token_expired']);
    expect(expired.headers.get('www-authenticate')).toBe(
      'Bearer realm="blue-control", error="invalid_token", error_description="The access token expired"',
    );

    const refreshed = await post('/api/auth/oauth2/token', {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: 'blue-agent',
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refresh_token).not.toBe(first.refresh_token);
    expect((await t.call('GET', '/auth/me', refreshed.body.access_token)).status).toBe(200);

    // The spent refresh token again: someone copied it. The whole sign-in ends, the new tokens with it.
    const replay = await post('/api/auth/oauth2/token', {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: 'blue-agent',
    });
    expect(replay.body.error).toBe('invalid_grant');
    expect((await t.call('GET', '/auth/me', refreshed.body.access_token)).status).toBe(401);
    expect(
      (
        await post('/api/auth/oauth2/token', {
          grant_type: 'refresh_token',
          refresh_token: refreshed.body.refresh_token,
          client_id: 'blue-agent',
        })
      ).body.error,
    ).toBe('invalid_grant');

    // A sign-in not refreshed for 30 days lapses.
    const idle = await signIn(t.alice);
    t.clock.advance(30 * 24 * HOUR + 1);
    expect(
      (
        await post('/api/auth/oauth2/token', {
          grant_type: 'refresh_token',
          refresh_token: idle.refresh_token,
          client_id: 'blue-agent',
        })
      ).body.error,
    ).toBe('invalid_grant');
  });

  it('enforces scopes per route, and grants admin only to administrators who ask for it', async () => {
    t = await startTestServer({ backend });
    const policyOnly = await signIn(t.alice, 'governance:read');
    expect(policyOnly.scope).toBe('governance:read');
    expect((await t.call('GET', '/governance-config', policyOnly.access_token)).status).not.toBe(403);
    const refused = await t.call('GET', '/session-uploads', policyOnly.access_token);
    expect([refused.status, refused.body.code]).toEqual([403, 'insufficient_scope']);
    expect(refused.headers.get('www-authenticate')).toBe(
      'Bearer realm="blue-control", error="insufficient_scope", scope="session:read"',
    );
    expect((await t.call('POST', '/client-status', policyOnly.access_token, {})).body.code).toBe('insufficient_scope');
    expect((await t.call('GET', '/auth/me', policyOnly.access_token)).status).toBe(200);
    // Nor may it see or end its person's other sign-ins.
    expect((await t.call('GET', `/users/${t.alice.id}/tokens`, policyOnly.access_token)).body.code).toBe(
      'insufficient_scope',
    );
    expect((await t.call('DELETE', `/tokens/${t.alice.id}`, policyOnly.access_token)).body.code).toBe(
      'insufficient_scope',
    );

    // A member asking for admin does not get it; an administrator gets it only when asked.
    expect((await signIn(t.alice, 'session:read admin')).scope).toBe('session:read');
    const adminAsked = await signIn(t.admin, 'session:read admin');
    expect(adminAsked.scope).toBe('session:read admin');
    expect((await t.call('GET', '/users', adminAsked.access_token)).status).toBe(200);
    // Not asked: the administrator is a member for that token.
    const adminPlain = await signIn(t.admin);
    expect((await t.call('GET', '/auth/me', adminPlain.access_token)).body.role).toBe('member');
    expect((await t.call('GET', '/users', adminPlain.access_token)).body.code).toBe('insufficient_scope');
    expect((await t.call('GET', '/audit-events', adminPlain.access_token)).body.code).toBe('insufficient_scope');
    // A member at an administrator's route hears that it is for administrators.
    expect((await t.call('GET', '/users', t.alice.token)).body).toMatchObject({
      code: 'forbidden',
      error: 'only administrators may list users',
    });
  });

  it('lists sign-ins to their user and to administrators, and a revoked one fails at the next request', async () => {
    t = await startTestServer({ backend });
    t.clock.advance(1_000);
    const laptop = await signIn(t.alice);
    const mine = await t.call('GET', `/users/${t.alice.id}/tokens`, laptop.access_token);
    expect(mine.status).toBe(200);
    expect(
      mine.body.items.map((i: { kind: string; label: string; active: boolean }) => [i.kind, i.label, i.active]),
    ).toEqual([
      ['device', 'blue-agent/9.9.9 (test)', true],
      ['personal', 'token from users add', true],
    ]);
    const device = mine.body.items[0] as { id: string; expires_at: string; last_used_at: string };
    expect(Date.parse(device.expires_at)).toBe(t.clock.now() + 30 * 24 * HOUR);
    expect(JSON.stringify(mine.body)).not.toContain(laptop.access_token);

    // Someone else's: 404 to a member (ids cannot be probed), listed for an administrator.
    expect((await t.call('GET', `/users/${t.alice.id}/tokens`, t.bob.token)).status).toBe(404);
    expect((await t.call('DELETE', `/tokens/${device.id}`, t.bob.token)).status).toBe(404);
    expect((await t.call('GET', `/users/${t.alice.id}/tokens`, t.admin.token)).body.items).toHaveLength(2);
    const users = await t.call('GET', '/users', t.admin.token);
    expect(users.body.items.find((u: { email: string }) => u.email === 'alice@example.com')).toMatchObject({
      role: 'member',
      active_tokens: 2,
    });

    // Revoked by an administrator: the access token fails at once, and so does its refresh token.
    const revoked = await t.call('DELETE', `/tokens/${device.id}`, t.admin.token);
    expect(revoked.body).toMatchObject({ id: device.id, active: false });
    const gone = await t.call('GET', '/auth/me', laptop.access_token);
    expect([gone.status, gone.body.code]).toEqual([401, 'invalid_token']);
    expect(
      (
        await post('/api/auth/oauth2/token', {
          grant_type: 'refresh_token',
          refresh_token: laptop.refresh_token,
          client_id: 'blue-agent',
        })
      ).body.error,
    ).toBe('invalid_grant');
    // The personal token still works; its user revokes it too.
    const personal = (await t.call('GET', `/users/${t.alice.id}/tokens`, t.alice.token)).body.items.find(
      (i: { kind: string }) => i.kind === 'personal',
    );
    expect((await t.call('DELETE', `/tokens/${personal.id}`, t.alice.token)).status).toBe(200);
    expect((await t.call('GET', '/auth/me', t.alice.token)).status).toBe(401);
    expect(
      (await t.call('GET', '/users', t.admin.token)).body.items.find(
        (u: { email: string }) => u.email === 'alice@example.com',
      ).active_tokens,
    ).toBe(0);
  });

  it('revokes a sign-in by its token (RFC 7009), answering the same for a token it does not know', async () => {
    t = await startTestServer({ backend });
    const session = await signIn(t.bob);
    const answer = await post('/api/auth/oauth2/revoke', { token: session.refresh_token, client_id: 'blue-agent' });
    expect(answer.status).toBe(200);
    expect((await t.call('GET', '/auth/me', session.access_token)).status).toBe(401);
    expect((await post('/api/auth/oauth2/revoke', { token: 'blue_unknown', client_id: 'blue-agent' })).status).toBe(
      200,
    );
  });

  it('purges expired device codes and tokens, and sign-ins revoked long ago', async () => {
    t = await startTestServer({ backend });
    await startDevice();
    const session = await signIn(t.carol);
    const grant = (await t.server.store.identity.grants(t.carol.id)).find((g) => g.kind === 'device')!;
    await t.server.store.identity.revokeGrant(grant.id, t.clock.now());
    expect(await t.server.store.identity.purgeExpired(t.clock.now())).toBe(0);
    t.clock.advance(91 * 24 * HOUR);
    // One device code, the access and refresh tokens, the sign-in.
    expect(await t.server.store.identity.purgeExpired(t.clock.now())).toBe(4);
    expect((await t.server.store.identity.grants(t.carol.id)).map((g) => g.kind)).toEqual(['personal']);
    expect((await t.call('GET', '/auth/me', session.access_token)).status).toBe(401);
  });
});
