/**
 * `blue-agent logout` against the real Control API: a device sign-in is revoked on the server and its credentials
 * removed; a token from `login --token-stdin` is removed but revoked only with --revoke; revoking is best effort (an
 * unreachable Control API still leaves nothing behind, and says so); control_url stays, so `login` signs in there
 * again.
 */
import { lstat, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loginCommand } from '../../src/cli/login.js';
import { main } from '../../src/cli/main.js';
import { bufferOutput } from '../../src/context.js';
import { normaliseUserCode } from '@blue-agent/control-api/store/tokens.js';
import { startTestServer, type TestServer } from '../../../../test/support/control-server.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { closedOrigin } from '../../../../test/support/policy-server.js';

let home: TestHome;
let t: TestServer | undefined;
beforeEach(async () => {
  home = await makeTestHome();
});
afterEach(async () => {
  await t?.close();
  t = undefined;
  await home.cleanup();
});

const tokenFile = () => path.join(home.env.BLUE_AGENT_HOME!, 'token');

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const before = { out: home.stdout.text().length, err: home.stderr.text().length };
  const code = await main(argv, home.ctx);
  return { code, stdout: home.stdout.text().slice(before.out), stderr: home.stderr.text().slice(before.err) };
}

/** `blue-agent login --control-url URL --token-stdin` with `token` piped in. */
async function tokenLogin(url: string, token: string): Promise<number> {
  return loginCommand(home.ctx, { controlUrl: url, tokenStdin: true }, Readable.from([Buffer.from(token)]));
}

/** `blue-agent login` with the device flow, its code approved for `userId` as the approval page would. */
async function deviceLogin(server: TestServer, userId: string): Promise<void> {
  const login = main(['login', '--control-url', server.url, '--no-browser'], home.ctx);
  let code: string | undefined;
  for (let i = 0; i < 600 && code === undefined; i++) {
    code = /enter the code ([A-Z]{4}-[A-Z]{4})/.exec(home.stderr.text())?.[1];
    if (code === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  expect(code, home.stderr.text()).toBeDefined();
  expect(
    await server.server.store.identity.decideDeviceCode(normaliseUserCode(code!)!, userId, server.clock.now()),
  ).toBe(true);
  expect(await login).toBe(0);
}

describe('blue-agent logout', () => {
  it('ends a device sign-in on the Control API, removes its credentials, keeps control_url for login', async () => {
    t = await startTestServer({ liveClock: true, identity: { deviceIntervalMs: 1_000 } });
    await deviceLogin(t, t.alice.id);
    const saved = JSON.parse(await readFile(tokenFile(), 'utf8')) as { access_token: string; refresh_token: string };
    expect((await t.call('GET', '/auth/me', saved.access_token)).status).toBe(200);

    const out = await run(['logout', '--json']);
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({
      ok: true,
      token_file: tokenFile(),
      control_url: t.url,
      held: 'device',
      removed: true,
      revocation: { state: 'revoked' },
      warnings: [],
    });
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
    const device = (await t.server.store.identity.grants(t.alice.id)).find((g) => g.kind === 'device')!;
    expect(device.revoked_at).not.toBeNull();
    expect((await t.call('GET', '/auth/me', saved.access_token)).status).toBe(401);
    expect(out.stdout + out.stderr).not.toContain(saved.refresh_token);
    expect(await readFile(home.env.BLUE_AGENT_CONFIG!, 'utf8')).toBe(`control_url: ${t.url}\n`);

    // Signed out: the commands say so, and logging out again has nothing to do.
    const list = await run(['sessions', 'list', '--json']);
    expect(JSON.parse(list.stdout)).toMatchObject({ ok: false, error: { code: 'NOT_LOGGED_IN' } });
    const again = await run(['logout']);
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(
      `Not signed in: there is no ${tokenFile()}; nothing to remove.\ncontrol_url ${t.url} stays saved: ` +
        `\`blue-agent login\` signs in there again.\n`,
    );
  });

  it('removes a token an administrator made but revokes it only with --revoke: it may be used elsewhere', async () => {
    t = await startTestServer();
    expect(await tokenLogin(t.url, t.carol.token)).toBe(0);
    const kept = await run(['logout']);
    expect(kept.code).toBe(0);
    expect(kept.stdout).toContain(`Signed out: removed the token (${tokenFile()}).`);
    expect(kept.stdout).toContain(
      'The token was not revoked, as it may be in use elsewhere (`logout --revoke` revokes it too)',
    );
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await t.call('GET', '/auth/me', t.carol.token)).status).toBe(200);

    expect(await tokenLogin(t.url, t.carol.token)).toBe(0);
    const revoked = await run(['logout', '--revoke']);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain('Revoked on the Control API: the token no longer works anywhere.');
    expect((await t.call('GET', '/auth/me', t.carol.token)).status).toBe(401);
    expect(revoked.stdout + revoked.stderr).not.toContain(t.carol.token);
  });

  it('removes the credentials even when the Control API cannot revoke them, and says what is left to do', async () => {
    const origin = await closedOrigin();
    await mkdir(path.dirname(tokenFile()), { recursive: true });
    const credentials = {
      version: 1,
      access_token: 'access-abc',
      refresh_token: 'refresh-xyz',
      expires_at: null,
      token_endpoint: `${origin}/api/auth/oauth2/token`,
      client_id: 'blue-agent',
      scope: '',
    };
    await writeFile(tokenFile(), `${JSON.stringify(credentials)}\n`, { mode: 0o600 });
    const out = await run(['logout']);
    expect(out.code).toBe(0);
    expect(out.stdout).toContain(`Signed out: removed this machine's sign-in (${tokenFile()}).`);
    expect(out.stdout).toMatch(
      new RegExp(
        String.raw`Not revoked on the Control API: POST .*\/api\/auth\/oauth2\/revoke: .*\. It works until ` +
          "it lapses: revoke it on the dashboard's Account page",
      ),
    );
    expect(out.stdout).not.toContain('refresh-xyz');
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('says that BLUE_AGENT_TOKEN, which it cannot remove, still signs commands in', async () => {
    const stdout = bufferOutput();
    expect(await main(['logout', '--json'], home.context({ stdout, env: { BLUE_AGENT_TOKEN: 'blue_from_env' } }))).toBe(
      0,
    );
    expect(JSON.parse(stdout.text())).toMatchObject({
      held: 'nothing',
      removed: false,
      warnings: ['BLUE_AGENT_TOKEN is set: commands keep using that token until you unset it'],
    });
  });
});
