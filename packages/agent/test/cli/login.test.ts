/**
 * `blue-agent login`: the URL is checked, the token comes only from stdin, is verified against a loopback Control API,
 * and lands in a 0600 token file; control_url is spliced into the config keeping everything else. The token never
 * appears in output or errors.
 */
import { lstat, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../src/config.js';
import { controlSettings } from '../../src/control-api/settings.js';
import { loginCommand } from '../../src/cli/login.js';
import { main } from '../../src/cli/main.js';
import { closedOrigin, startPolicyServer, type PolicyServer } from '../../../../test/support/policy-server.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { rejected } from '../../../../test/support/errors.js';

const TOKEN = 'blue_tok_0123456789SECRETabcdef';

let t: TestHome;
let server: PolicyServer;
beforeEach(async () => {
  t = await makeTestHome();
  server = await startPolicyServer({ revision: 1, contract_version: 1, ttl_seconds: 300 });
});
afterEach(async () => {
  await server.close();
  await t.cleanup();
});

const stdin = (text: string) => Readable.from([Buffer.from(text)]);
const configFile = () => t.env.BLUE_AGENT_CONFIG!;
const tokenFile = () => path.join(t.env.BLUE_AGENT_HOME!, 'token');
const everything = () => `${t.stdout.text()}${t.stderr.text()}`;

describe('blue-agent login', () => {
  it('verifies the token, writes a 0600 token file and creates the config', async () => {
    const code = await loginCommand(
      t.ctx,
      { controlUrl: `${server.origin}/`, tokenStdin: true, json: true },
      stdin(`  ${TOKEN}\n`),
    );
    expect(code).toBe(0);
    const report = JSON.parse(t.stdout.text()) as Record<string, unknown>;
    expect(report).toMatchObject({
      ok: true,
      control_url: server.origin,
      verified: true,
      warnings: [],
      token_file: tokenFile(),
    });
    expect(everything()).not.toContain(TOKEN);
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);

    expect((await stat(tokenFile())).mode & 0o777).toBe(0o600);
    expect(await readFile(tokenFile(), 'utf8')).toBe(`${TOKEN}\n`);
    expect(await readFile(configFile(), 'utf8')).toBe(`control_url: ${server.origin}\n`);
    // What login saved is exactly what the rest of the agent reads.
    const settings = controlSettings(t.ctx, (await loadAgentConfig(t.ctx)).config);
    expect(settings.controlUrl).toBe(server.origin);
    expect(await settings.readToken()).toBe(TOKEN);
  });

  it('splices control_url into an existing config, keeping comments and other keys', async () => {
    await mkdir(path.dirname(configFile()), { recursive: true });
    const before =
      '# managed by ops\ncontrol_url: https://old.example # the old one\nallowed_upload_origins:\n  - ' +
      'https://uploads.example # S3\n';
    await writeFile(configFile(), before, { mode: 0o640 });
    const prefixed = await startPolicyServer({ revision: 1 }, { prefix: '/prefix' });
    try {
      await loginCommand(t.ctx, { controlUrl: `${prefixed.origin}/prefix/`, tokenStdin: true }, stdin(TOKEN));
      expect(prefixed.requests.map((r) => r.url)).toEqual(['/prefix/governance-config']);
      const after = await readFile(configFile(), 'utf8');
      expect(after).toBe(before.replace('https://old.example', `${prefixed.origin}/prefix`));
    } finally {
      await prefixed.close();
    }
    expect((await stat(configFile())).mode & 0o777).toBe(0o640);
    expect(t.stdout.text()).toContain('the Control API accepted the token');
    expect(everything()).not.toContain(TOKEN);
  });

  it('saves nothing when the Control API refuses the token', async () => {
    server.setHandler((_req, res) =>
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end('{"error":{"code":"unauthorized","message":"no"}}'),
    );
    const error = await rejected(loginCommand(t.ctx, { controlUrl: server.origin, tokenStdin: true }, stdin(TOKEN)));
    expect(error.code).toBe('AUTH_FAILED');
    expect(JSON.stringify({ ...error.toJSON(), stack: error.stack })).not.toContain(TOKEN);
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lstat(configFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('saves with a warning when the Control API takes the token but refuses this blue-agent the policy', async () => {
    server.setHandler((_req, res) =>
      res
        .writeHead(426, { 'content-type': 'application/json', 'x-blue-required-client-version': '99.0.0' })
        .end('{"error":"governance contract 9 requires a newer client; client reports 3"}'),
    );
    await loginCommand(t.ctx, { controlUrl: server.origin, tokenStdin: true, json: true }, stdin(TOKEN));
    const report = JSON.parse(t.stdout.text()) as { verified: boolean; warnings: string[] };
    expect(report.verified).toBe(true);
    expect(report.warnings[0]).toMatch(/requires blue-agent 99\.0\.0.*saved anyway/);
    expect(await readFile(tokenFile(), 'utf8')).toBe(`${TOKEN}\n`);
    expect(server.requests[0]!.headers['x-blue-contract-version']).toBe('3');
  });

  it('saves nothing when the Control API cannot be reached, and says how to save offline', async () => {
    const origin = await closedOrigin();
    const error = await rejected(
      loginCommand(t.ctx, { controlUrl: origin, tokenStdin: true, json: true }, stdin(TOKEN)),
    );
    expect(error.code).toBe('CONTROL_API_UNREACHABLE');
    expect(error.message).toMatch(
      new RegExp(
        String.raw`cannot check the token with the Control API at http:\/\/127\.0\.0\.1:\d+: unreachable ` +
          String.raw`\(ECONNREFUSED\); nothing was saved`,
      ),
    );
    expect(error.hint).toContain('--offline');
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lstat(configFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('with --offline, saves the token unchecked when the Control API cannot be reached, and says so', async () => {
    const origin = await closedOrigin();
    await loginCommand(t.ctx, { controlUrl: origin, tokenStdin: true, offline: true, json: true }, stdin(TOKEN));
    const report = JSON.parse(t.stdout.text()) as { verified: boolean; warnings: string[] };
    expect(report.verified).toBe(false);
    expect(report.warnings[0]).toMatch(
      new RegExp(
        String.raw`the token was not checked with the Control API at http:\/\/127\.0\.0\.1:\d+: unreachable ` +
          String.raw`\(ECONNREFUSED\); saved anyway \(--offline\)`,
      ),
    );
    expect(await readFile(tokenFile(), 'utf8')).toBe(`${TOKEN}\n`);
  });

  it('with --offline, still refuses a token a reachable Control API refuses', async () => {
    server.setHandler((_req, res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"no"}'));
    const error = await rejected(
      loginCommand(t.ctx, { controlUrl: server.origin, tokenStdin: true, offline: true }, stdin(TOKEN)),
    );
    expect(error.code).toBe('AUTH_FAILED');
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('says a URL with a wrong path prefix reaches a server that is not the Control API; saves nothing', async () => {
    const prefixed = await startPolicyServer({ revision: 1 }, { prefix: '/blue' });
    try {
      const error = await rejected(
        loginCommand(t.ctx, { controlUrl: `${prefixed.origin}/blu`, tokenStdin: true }, stdin(TOKEN)),
      );
      expect(error.code).toBe('CONTROL_URL_WRONG');
      expect(error.message).toBe(
        `GET ${prefixed.origin}/blu/governance-config answered HTTP 404; a server answers at ${prefixed.origin} ` +
          `but not with the Control API's routes under the path /blu`,
      );
      expect(error.hint).toMatch(/base URL, with its path prefix/);
    } finally {
      await prefixed.close();
    }
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lstat(configFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('without --control-url, signs in again where it signed in before, says so; with none saved, asks', async () => {
    const none = await rejected(loginCommand(t.ctx, { tokenStdin: true }, stdin(TOKEN)));
    expect(none.code).toBe('USAGE');
    expect(none.message).toMatch(/no Control API to sign in to: give --control-url/);
    await loginCommand(t.ctx, { controlUrl: server.origin, tokenStdin: true }, stdin(TOKEN));
    await writeFile(tokenFile(), 'old-token\n', { mode: 0o600 });
    const before = t.stdout.text().length;
    expect(await loginCommand(t.ctx, { tokenStdin: true, json: true }, stdin(`${TOKEN}2`))).toBe(0);
    expect(JSON.parse(t.stdout.text().slice(before))).toMatchObject({
      control_url: server.origin,
      control_url_source: 'control_url',
      verified: true,
    });
    expect(t.stderr.text()).toContain(
      `Signing in to the Control API at ${server.origin} (control_url saved in ${configFile()}; --control-url URL ` +
        `signs in elsewhere).`,
    );
    expect(await readFile(tokenFile(), 'utf8')).toBe(`${TOKEN}2\n`);
    expect(server.requests.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}2`);
    // The environment names the Control API for every command, so for login too.
    const other = await startPolicyServer({ revision: 1 });
    try {
      const ctx = t.context({ env: { BLUE_AGENT_CONTROL_URL: other.origin } });
      await loginCommand(ctx, { tokenStdin: true }, stdin(TOKEN));
      expect(other.requests).toHaveLength(1);
      expect(t.stderr.text()).toContain(
        `Signing in to the Control API at ${other.origin} (from BLUE_AGENT_CONTROL_URL;`,
      );
    } finally {
      await other.close();
    }
  });

  it.each([
    ['not a URL', 'control.example.com'],
    ['another scheme', 'ftp://control.example.com'],
    ['credentials', `https://admin:${TOKEN}@control.example.com`],
    ['a query', `https://control.example.com/?token=${TOKEN}`],
  ])('refuses a URL with %s, without echoing it', async (_what, url) => {
    const error = await rejected(loginCommand(t.ctx, { controlUrl: url, tokenStdin: true }, stdin(TOKEN)));
    expect(error.code).toBe('USAGE');
    expect(error.message).not.toContain(TOKEN);
    await expect(lstat(tokenFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it.each([
    ['empty', '  \n'],
    ['with white space inside', 'abc def'],
    ['with a control character', 'abc\u0007def'],
    ['too long', 'x'.repeat(9000)],
  ])('refuses a token that is %s', async (_what, text) => {
    const error = await rejected(loginCommand(t.ctx, { controlUrl: server.origin, tokenStdin: true }, stdin(text)));
    expect(error.code).toBe('USAGE');
    expect(error.message).not.toContain('abc');
    expect(server.requests).toHaveLength(0);
  });

  it('reads no token without --token-stdin: that is the device flow (test/cli/login-device.test.ts)', async () => {
    const input = stdin(TOKEN);
    const error = await rejected(loginCommand(t.ctx, { controlUrl: server.origin }, input));
    expect(error.message).toContain('offers no device sign-in');
    expect(input.readableEnded).toBe(false);
    // No discovery document, but the policy route answers: a Control API without device sign-in, not a wrong URL.
    expect(server.requests.map((r) => r.url)).toEqual(['/.well-known/metaharness', '/governance-config']);
    expect(server.requests.map((r) => r.headers.authorization)).toEqual([undefined, undefined]);
  });

  it('refuses to write the token through a symbolic link', async () => {
    const elsewhere = path.join(t.root, 'elsewhere');
    await mkdir(path.dirname(tokenFile()), { recursive: true });
    await symlink(elsewhere, tokenFile());
    const error = await rejected(loginCommand(t.ctx, { controlUrl: server.origin, tokenStdin: true }, stdin(TOKEN)));
    expect(error.code).toBe('UNSAFE_PATH');
    await expect(lstat(elsewhere)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(lstat(configFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a token file that cannot be written is named, with the failure typed, and the config is left alone', async () => {
    await writeFile(path.join(t.root, 'plain'), 'x');
    const stateDir = path.join(t.root, 'plain', 'state');
    const ctx = t.context({ env: { BLUE_AGENT_HOME: stateDir } });
    const error = await rejected(loginCommand(ctx, { controlUrl: server.origin, tokenStdin: true }, stdin(TOKEN)));
    expect(error.code).toBe('NOT_A_DIRECTORY');
    expect(error.file).toBe(path.join(stateDir, 'token'));
    expect(error.message).toMatch(
      new RegExp(
        `^cannot write the token to ${path.join(stateDir, 'token')}: a part of the path is not a directory ` +
          `\\(ENOTDIR: mkdir`,
      ),
    );
    expect(error.message).not.toContain(TOKEN);
    await expect(lstat(configFile())).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('replaces an existing token file and tightens nothing else', async () => {
    await mkdir(path.dirname(tokenFile()), { recursive: true });
    await writeFile(tokenFile(), 'old-token\n', { mode: 0o600 });
    await loginCommand(t.ctx, { controlUrl: server.origin, tokenStdin: true }, stdin(TOKEN));
    expect(await readFile(tokenFile(), 'utf8')).toBe(`${TOKEN}\n`);
    expect((await stat(tokenFile())).mode & 0o777).toBe(0o600);
  });

  it('says when the environment overrides what was saved', async () => {
    const ctx = t.context({ env: { BLUE_AGENT_TOKEN: 'other', BLUE_AGENT_CONTROL_URL: 'https://env.example' } });
    await loginCommand(ctx, { controlUrl: server.origin, tokenStdin: true, json: true }, stdin(TOKEN));
    const report = JSON.parse(t.stdout.text()) as { warnings: string[] };
    expect(report.warnings.join('\n')).toMatch(/BLUE_AGENT_CONTROL_URL is set[\s\S]*BLUE_AGENT_TOKEN is set/);
  });

  it('is registered in the CLI with help and JSON errors', async () => {
    expect(await main(['login', '--help'], t.ctx)).toBe(0);
    expect(t.stdout.text()).toContain('--token-stdin');
    expect(t.stdout.text()).toContain('--offline');
    const code = await main(['login', '--control-url', 'ftp://x.example', '--token-stdin', '--json'], t.ctx);
    expect(code).toBe(2);
    expect(t.stdout.text()).toContain('"code": "USAGE"');
  });
});
