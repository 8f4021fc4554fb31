/**
 * `blue-agent login --control-url URL` with the device flow, end to end against the real Control API: the code is
 * printed, a person approves it on the server's own approval page (signed in with a one-time link, as in a browser),
 * the credentials land 0600, and the agent's access token refreshes itself — one refresh at a time, however many
 * processes ask — until the sign-in is revoked. Denied, expired and unsupported sign-ins are told apart.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../src/config.js';
import { controlSettings } from '../../src/control-api/settings.js';
import { main } from '../../src/cli/main.js';
import { startTestServer, type TestServer, type TestUser } from '../../../../test/support/control-server.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { runCli } from '../../../../test/support/cli-process.js';
import { startPolicyServer } from '../../../../test/support/policy-server.js';

let home: TestHome;
let t: TestServer;
beforeEach(async () => {
  home = await makeTestHome();
});
afterEach(async () => {
  await t?.close();
  await home.cleanup();
});

const tokenFile = () => path.join(home.env.BLUE_AGENT_HOME!, 'token');

/** Waits for the printed code, then answers it as `user` does on the approval page in a browser. */
async function answerInBrowser(user: TestUser, decision: 'approve' | 'deny'): Promise<string> {
  const deadline = Date.now() + 15_000;
  let code: string | undefined;
  while ((code = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(home.stderr.text())?.[1]) === undefined) {
    if (Date.now() > deadline) throw new Error(`no code printed: ${home.stderr.text()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const secret = await t.server.store.identity.createSignInLink(user.id, t.clock.now(), 60_000);
  const form = (fields: Record<string, string>, cookie?: string) => ({
    method: 'POST',
    redirect: 'manual' as const,
    headers: {
      origin: t.url,
      'content-type': 'application/x-www-form-urlencoded',
      ...(cookie === undefined ? {} : { cookie }),
    },
    body: new URLSearchParams(fields).toString(),
  });
  const signedIn = await fetch(`${t.url}/auth/link`, form({ token: secret, next: `/device?user_code=${code}` }));
  const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
  const page = await (await fetch(`${t.url}${signedIn.headers.get('location')}`, { headers: { cookie } })).text();
  expect(page).toContain(`blue-agent/`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
  const answered = await fetch(`${t.url}/device`, form({ csrf, user_code: code, decision }, cookie));
  expect(answered.status).toBe(200);
  return code;
}

describe('blue-agent login (device flow)', () => {
  it('prints a code, saves refreshable credentials once it is approved, and keeps the access token fresh', async () => {
    // Access tokens that live 30 s: within the agent's refresh margin, so every use refreshes first.
    t = await startTestServer({ liveClock: true, identity: { deviceIntervalMs: 1_000, accessTtlMs: 30_000 } });
    const login = main(['login', '--control-url', t.url, '--json'], home.ctx);
    const code = await answerInBrowser(t.alice, 'approve');
    expect(await login).toBe(0);
    expect(home.stderr.text()).toContain(`To sign in, open ${t.url}/device in a browser and enter the code ${code}`);
    expect(home.stderr.text()).toContain(`(or open ${t.url}/device?user_code=${code})`);
    const report = JSON.parse(home.stdout.text()) as Record<string, unknown>;
    expect(report).toMatchObject({
      ok: true,
      method: 'device',
      email: 'alice@example.com',
      verified: true,
      control_url: t.url,
      token_file: tokenFile(),
    });

    expect((await stat(tokenFile())).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(await readFile(tokenFile(), 'utf8')) as {
      access_token: string;
      refresh_token: string;
      token_endpoint: string;
      scope: string;
    };
    expect(saved).toMatchObject({
      version: 1,
      client_id: 'blue-agent',
      token_endpoint: `${t.url}/api/auth/oauth2/token`,
      scope: 'governance:read session:read session:write client-status:write',
    });
    expect(home.stdout.text() + home.stderr.text()).not.toContain(saved.access_token);
    expect(home.stdout.text() + home.stderr.text()).not.toContain(saved.refresh_token);

    // Every reader gets a working token; five at once spend the refresh token one after another, never twice.
    const settings = controlSettings(home.ctx, (await loadAgentConfig(home.ctx)).config);
    const tokens = await Promise.all(Array.from({ length: 5 }, () => settings.readToken()));
    for (const token of tokens) expect((await t.call('GET', '/auth/me', token)).body.email).toBe('alice@example.com');
    const after = JSON.parse(await readFile(tokenFile(), 'utf8')) as { refresh_token: string };
    expect(after.refresh_token).not.toBe(saved.refresh_token);
    const device = (await t.server.store.identity.grants(t.alice.id)).find((g) => g.kind === 'device')!;
    expect(device.revoked_at).toBeNull();
    // And the commands work with it.
    const before = home.stdout.text().length;
    expect(await main(['sessions', 'list', '--json'], home.ctx)).toBe(0);
    expect(JSON.parse(home.stdout.text().slice(before))).toMatchObject({ ok: true });

    // Revoked on the server: the next refresh says the sign-in ended, and what to do.
    await t.server.store.identity.revokeGrant(device.id, t.clock.now());
    await expect(settings.readToken()).rejects.toMatchObject({
      code: 'AUTH_FAILED',
      message: expect.stringMatching(/sign-in ended/),
      hint: `Sign in again: blue-agent login --control-url ${t.url}`,
    });
  });

  it('says so when the code is denied, and saves nothing', async () => {
    t = await startTestServer({ liveClock: true, identity: { deviceIntervalMs: 1_000 } });
    const login = main(['login', '--control-url', t.url, '--no-browser'], home.ctx);
    await answerInBrowser(t.bob, 'deny');
    expect(await login).toBe(1);
    expect(home.stderr.text()).toMatch(/LOGIN_DENIED|the sign-in was denied in the browser/);
    await expect(stat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('says so when the code expires unanswered', async () => {
    t = await startTestServer({ liveClock: true, identity: { deviceIntervalMs: 1_000, deviceCodeTtlMs: 2_000 } });
    expect(await main(['login', '--control-url', t.url, '--json'], home.ctx)).toBe(1);
    expect(JSON.parse(home.stdout.text())).toMatchObject({ ok: false, error: { code: 'LOGIN_EXPIRED' } });
    await expect(stat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('Ctrl-C while it waits for approval is an interruption (exit 130, INTERRUPTED), saving nothing', async () => {
    t = await startTestServer({ liveClock: true, identity: { deviceIntervalMs: 1_000 } });
    const login = runCli(['login', '--control-url', t.url, '--no-browser'], { env: home.env, timeoutMs: 30_000 });
    let printed = '';
    login.child.stderr!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    for (let i = 0; i < 400 && !printed.includes('Ctrl-C stops'); i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(printed).toContain('Ctrl-C stops');
    login.child.kill('SIGINT');
    const done = await login;
    expect(done.code, done.stderr).toBe(130);
    expect(done.stderr).toContain(
      'blue-agent: error [INTERRUPTED]: the sign-in was stopped (Ctrl-C) before the code was approved; nothing was ' +
        'saved',
    );
    await expect(stat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(stat(home.env.BLUE_AGENT_CONFIG!)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('tells a URL with a wrong path prefix apart from a server without device sign-in', async () => {
    t = await startTestServer();
    expect(await main(['login', '--control-url', `${t.url}/blue`, '--json'], home.ctx)).toBe(1);
    const error = (JSON.parse(home.stdout.text()) as { error: { code: string; message: string; hint: string } }).error;
    expect(error.code).toBe('CONTROL_URL_WRONG');
    expect(error.message).toContain(
      `a server answers at ${t.url} but not with the Control API's routes under the path /blue`,
    );
    await expect(stat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('tells a server without device sign-in apart, pointing at --token-stdin', async () => {
    const policy = await startPolicyServer({ revision: 1 });
    try {
      expect(await main(['login', '--control-url', policy.origin, '--json'], home.ctx)).toBe(1);
      const error = (JSON.parse(home.stdout.text()) as { error: { code: string; message: string; hint: string } })
        .error;
      expect(error).toMatchObject({
        code: 'AUTH_FAILED',
        message: expect.stringContaining('offers no device sign-in'),
      });
      expect(error.hint).toContain('--token-stdin');
    } finally {
      await policy.close();
    }
  });
});
