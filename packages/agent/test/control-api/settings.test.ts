/**
 * Where the Control API is and which token it gets: the environment over the config, the token file's safety checks,
 * and the client made from them.
 * (A device sign-in's credentials and their refresh: test/cli/login-device.test.ts.)
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { controlClient, controlSettings } from '../../src/control-api/settings.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { rejected } from '../../../../test/support/errors.js';

const SECRET = 'tok-SECRET-7f3a9c1e5b';

let t: TestHome;
beforeEach(async () => {
  t = await makeTestHome();
});
afterEach(async () => {
  await t.cleanup();
});

describe('controlSettings', () => {
  it('lets BLUE_AGENT_CONTROL_URL override control_url', () => {
    const ctx = t.context({ env: { BLUE_AGENT_CONTROL_URL: 'https://env.example.com' } });
    const settings = controlSettings(ctx, { control_url: 'https://config.example.com' });
    expect(settings.controlUrl).toBe('https://env.example.com');
    expect(settings.controlUrlSource).toBe('BLUE_AGENT_CONTROL_URL');
    expect(controlSettings(t.ctx, { control_url: 'https://config.example.com' }).controlUrl).toBe(
      'https://config.example.com',
    );
    expect(controlSettings(t.ctx, {}).controlUrl).toBeUndefined();
  });

  it('rejects a malformed or credential-bearing control URL', async () => {
    const bad = await rejected(() => controlSettings(t.context({ env: { BLUE_AGENT_CONTROL_URL: 'not a url' } }), {}));
    expect(bad.code).toBe('CONFIG_INVALID');
    expect(bad.message).toContain('BLUE_AGENT_CONTROL_URL');
    const creds = await rejected(() =>
      controlSettings(t.ctx, { control_url: `https://user:${SECRET}@control.example.com` }),
    );
    expect(creds.code).toBe('CONFIG_INVALID');
    expect(creds.message).not.toContain(SECRET);
  });

  it('prefers BLUE_AGENT_TOKEN over the token file', async () => {
    await mkdir(t.ctx.paths.stateDir, { recursive: true });
    await writeFile(path.join(t.ctx.paths.stateDir, 'token'), 'from-file\n', { mode: 0o600 });
    const ctx = t.context({ env: { BLUE_AGENT_TOKEN: SECRET } });
    expect(await controlSettings(ctx, {}).readToken()).toBe(SECRET);
    expect(await controlSettings(t.ctx, {}).readToken()).toBe('from-file');
  });

  it('reads <stateDir>/token by default and token_file when set (relative to the config file, or ~/)', async () => {
    expect(await controlSettings(t.ctx, {}).readToken()).toBeUndefined();
    expect(controlSettings(t.ctx, {}).tokenFile).toBe(path.join(t.ctx.paths.stateDir, 'token'));

    const configDir = path.dirname(t.ctx.paths.configFile);
    await mkdir(configDir, { recursive: true });
    await writeFile(path.join(configDir, 'my-token'), `${SECRET}\n`, { mode: 0o600 });
    const relative = controlSettings(t.ctx, { token_file: 'my-token' });
    expect(relative.tokenFile).toBe(path.join(configDir, 'my-token'));
    expect(await relative.readToken()).toBe(SECRET);

    await writeFile(path.join(t.home, 'home-token'), 'abc\n', { mode: 0o600 });
    expect(await controlSettings(t.ctx, { token_file: '~/home-token' }).readToken()).toBe('abc');
  });

  it('refuses a token file readable by group or others, with the chmod hint and without the token', async () => {
    await mkdir(t.ctx.paths.stateDir, { recursive: true });
    const file = path.join(t.ctx.paths.stateDir, 'token');
    await writeFile(file, SECRET);
    await chmod(file, 0o644);
    const error = await rejected(controlSettings(t.ctx, {}).readToken());
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(file);
    expect(error.message).toContain('0644');
    expect(error.hint).toContain(`chmod 600 ${file}`);
    expect(JSON.stringify(error.toJSON())).not.toContain(SECRET);

    await chmod(file, 0o640);
    expect((await rejected(controlSettings(t.ctx, {}).readToken())).code).toBe('CONFIG_INVALID');
    await chmod(file, 0o600);
    expect(await controlSettings(t.ctx, {}).readToken()).toBe(SECRET);
  });

  it('rejects a token with control characters without printing it', async () => {
    const ctx = t.context({ env: { BLUE_AGENT_TOKEN: `${SECRET}\r\nX-Evil: 1` } });
    const error = await rejected(controlSettings(ctx, {}).readToken());
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('BLUE_AGENT_TOKEN');
    expect(JSON.stringify(error.toJSON())).not.toContain(SECRET);
  });
});

describe('controlClient', () => {
  it('builds a client from the configuration, and says when there is none', async () => {
    const home = await makeTestHome({
      BLUE_AGENT_CONTROL_URL: 'https://control.example/blue',
      BLUE_AGENT_TOKEN: SECRET,
    });
    try {
      const c = await controlClient(home.ctx);
      try {
        expect(c.origin).toBe('https://control.example');
        expect(c.routeUrl('session-uploads/presign').href).toBe('https://control.example/blue/session-uploads/presign');
      } finally {
        await c.close();
      }
      const bare = await makeTestHome();
      try {
        await expect(controlClient(bare.ctx)).rejects.toMatchObject({
          code: 'NOT_LOGGED_IN',
          message: 'not logged in: no Control API is configured on this machine',
        });
      } finally {
        await bare.cleanup();
      }
    } finally {
      await home.cleanup();
    }
  });
});
