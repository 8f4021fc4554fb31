/**
 * `control-plane serve` with no flags on a fresh machine: the data directory under XDG_DATA_HOME, an administrator
 * whose token stays out of every output, a default policy presigned at the server's own origin; `policy publish`
 * warns when presign_url leaves that origin; agents of a server without a policy are told to publish one.
 */
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveCommand } from 'blue-agent/cli/control-plane.js';
import { loginCommand } from 'blue-agent/cli/login.js';
import { main } from 'blue-agent/cli/main.js';
import { openStore } from '../src/store/index.js';
import { reconcile } from 'blue-agent/reconcile/index.js';
import { makeTestHome, type TestHome } from '../../../test/support/context.js';
import { BACKENDS, freePort } from '../../../test/support/control-server.js';
import { signInThroughProvider, startOidcProvider } from '../../../test/support/oidc-provider.js';
import { rejected } from '../../../test/support/errors.js';
import { freshDatabase } from '../../../test/support/postgres-db.js';

let home: TestHome;
beforeEach(async () => {
  home = await makeTestHome({ BLUE_AGENT_LOG_LEVEL: 'info', USER: 'ops' });
  delete home.env.BLUE_CONTROL_DATA;
});
afterEach(async () => {
  await home.cleanup();
});

const defaultData = () => path.join(home.env.XDG_DATA_HOME!, 'blue-agent', 'control');

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const before = { out: home.stdout.text().length, err: home.stderr.text().length };
  const code = await main(args, home.ctx);
  return { code, stdout: home.stdout.text().slice(before.out), stderr: home.stderr.text().slice(before.err) };
}

/** Runs `serve` (only a loopback port given, so tests can run side by side) until the returned stop is called. */
async function serve(
  opts: Record<string, string> = {},
): Promise<{ url: string; printed: string; stop: () => Promise<number> }> {
  const from = home.stdout.text().length;
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const serving = serveCommand(home.ctx, { listen: '127.0.0.1:0', ...opts }, stopped);
  let url = '';
  for (let i = 0; i < 250 && url === ''; i++) {
    await Promise.race([serving, new Promise((resolve) => setTimeout(resolve, 20))]);
    url = /listening on (http:\/\/\S+)/.exec(home.stdout.text().slice(from))?.[1] ?? '';
  }
  expect(url).not.toBe('');
  return {
    url,
    printed: home.stdout.text().slice(from),
    stop: async () => {
      stop();
      return serving;
    },
  };
}

describe.each(BACKENDS)('control-plane serve on a fresh machine (%s)', (backend) => {
  /** The database the commands use: SQLite in the data directory, or a fresh PostgreSQL one through the environment. */
  let databaseUrl: string | undefined;
  beforeEach(async () => {
    databaseUrl = backend === 'postgres' ? await freshDatabase() : undefined;
    if (databaseUrl !== undefined) {
      home.env.BLUE_CONTROL_DATABASE_URL = databaseUrl;
      home.ctx = home.context();
    }
  });
  const openDb = () => openStore({ dataDir: defaultData(), databaseUrl });

  it(
    'keeps its data under XDG_DATA_HOME, creates an administrator whose token is only in a 0600 file, and ' +
      'publishes a default policy on its own origin',
    async () => {
      const server = await serve();
      try {
        const data = defaultData();
        expect(server.printed).toContain(databaseUrl === undefined ? `(data ${data},` : `(database postgres://`);
        if (databaseUrl !== undefined) expect(server.printed).not.toContain(new URL(databaseUrl).password);
        const tokenFile = path.join(data, 'admin-token');
        expect(server.printed).toContain(`Created the administrator admin@localhost; its token is in ${tokenFile}`);
        expect(server.printed).toContain(`blue-agent login --control-url ${server.url} --token-stdin < ${tokenFile}`);
        expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
        const token = (await readFile(tokenFile, 'utf8')).trim();
        expect(token).toMatch(/^blue_/);

        // And a one-time sign-in link for the dashboard, its secret in the fragment: it signs a browser in once.
        const link = new RegExp(`^  ${server.url.replaceAll('.', '\\.')}/auth/link#([A-Za-z0-9_-]{43})$`, 'm').exec(
          server.printed,
        );
        expect(link, server.printed).not.toBeNull();
        const signIn = () =>
          fetch(`${server.url}/auth/link`, {
            method: 'POST',
            redirect: 'manual',
            headers: { origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ token: link![1]! }).toString(),
          });
        const first = await signIn();
        expect([
          first.status,
          first.headers.get('location'),
          first.headers.get('set-cookie')?.startsWith('blue_session='),
        ]).toEqual([303, '/', true]);
        expect((await signIn()).headers.get('location')).toBe('/sign-in?failed=link');
        // `users link` makes another, on the same server, as serve printed it and as the signed-out page says.
        const flags = databaseUrl === undefined ? '' : ' --database-url "$BLUE_CONTROL_DATABASE_URL"';
        expect(server.printed).toContain(
          `Make another, at any time, with:\n  blue-agent control-plane users link admin@localhost${flags}\n`,
        );
        const signedOut = await (await fetch(`${server.url}/sign-in`)).text();
        expect(signedOut).toContain(
          `The administrator <code>control-plane serve</code> created, admin@localhost, gets a new link the same way`,
        );
        expect(signedOut).toContain(
          `<pre>blue-agent control-plane users link admin@localhost${flags.replaceAll('"', '&quot;')}</pre>`,
        );
        const made = JSON.parse((await run('control-plane', 'users', 'link', 'admin@localhost', '--json')).stdout) as {
          url: string;
          email: string;
        };
        expect(made).toMatchObject({
          email: 'admin@localhost',
          url: expect.stringMatching(new RegExp(`^${server.url.replaceAll('.', '\\.')}/auth/link#[A-Za-z0-9_-]{43}$`)),
        });
        expect((await run('control-plane', 'users', 'link', 'nobody@example.com')).stderr).toMatch(
          /there is no user nobody@example.com/,
        );

        // The token works, and the policy sends uploads back to this very server.
        const answer = await fetch(`${server.url}/governance-config`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(answer.status).toBe(200);
        const policy = (await answer.json()) as { revision: string; session_upload: { presign_url: string } };
        expect(policy).toMatchObject({ session_upload: { presign_url: `${server.url}/session-uploads/presign` } });
        expect(server.printed).toContain(`Published a default policy (revision ${policy.revision})`);

        // The printed login command works as printed.
        const login = await loginCommand(
          home.ctx,
          { controlUrl: server.url, tokenStdin: true, json: true },
          Readable.from([Buffer.from(token)]),
        );
        expect(login).toBe(0);
        // A dry-run reconcile accepts the default policy against this Control API (presign on its origin).
        await expect(reconcile(home.ctx, { dryRun: true })).resolves.toBeDefined();

        expect(home.stdout.text() + home.stderr.text()).not.toContain(token);
      } finally {
        expect(await server.stop()).toBe(0);
      }

      // A second start creates nobody and publishes nothing.
      const again = await serve();
      try {
        expect(again.printed).not.toMatch(/Created the administrator|Published a default policy/);
      } finally {
        await again.stop();
      }
      const store = await openDb();
      try {
        expect((await store.listUsers()).map((u) => u.email)).toEqual(['admin@localhost']);
        // Its token says what made it.
        expect((await store.identity.grants(undefined)).map((g) => g.label)).toEqual([
          'token made by serve for the first administrator',
        ]);
        expect((await store.currentPolicy())?.created_at).toBeDefined();
        // Kept as a text too, which `policy show` prints and the dashboard edits.
        expect((await store.currentPolicy())?.text).toMatch(
          new RegExp(
            String.raw`^# The policy a first start publishes: .*\nsession_upload:\n {2}presign_url: ` +
              String.raw`http:\/\/127\.0\.0\.1:\d+\/session-uploads\/presign\n$`,
            's',
          ),
        );
        expect(await store.publicUrl()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
        // The audit log says what the first start and `users link` did, by the local operator.
        const log = await store.auditEvents({ limit: 100 });
        expect(log.map((e) => [e.action, e.actor_kind, e.actor_id])).toEqual(
          ['user.add', 'token.create', 'sign_in_link.create', 'policy.publish', 'sign_in_link.create'].map((action) => [
            action,
            'cli',
            'ops',
          ]),
        );
        expect(log[3]!.details).toMatchObject({
          revision: (await store.currentPolicy())!.revision,
          previous_revision: null,
        });
      } finally {
        await store.close();
      }
      expect(home.stdout.text() + home.stderr.text()).not.toContain(
        (await readFile(path.join(defaultData(), 'admin-token'), 'utf8')).trim(),
      );
    },
  );

  it('with --data, prints the commands that reach it with --data, and the signed-out page says the same', async () => {
    if (databaseUrl !== undefined) return; // PostgreSQL: the data directory holds no database.
    const data = path.join(home.root, 'my control');
    const server = await serve({ data });
    try {
      const flags = ` --data '${data}'`;
      expect(server.printed).toContain(`  blue-agent control-plane users link admin@localhost${flags}\n`);
      expect(server.printed).toContain(`Publish your own with: blue-agent control-plane policy publish FILE${flags}\n`);
      expect(await (await fetch(`${server.url}/sign-in`)).text()).toContain(
        `<pre>blue-agent control-plane users link admin@localhost --data '${data}'</pre>`,
      );
      // As printed, it works.
      const made = await run('control-plane', 'users', 'link', 'admin@localhost', '--data', data, '--json');
      expect(made.code, made.stderr).toBe(0);
    } finally {
      await server.stop();
    }
  });

  it('presigns at --public-url when given; policy publish warns when presign_url leaves the origin', async () => {
    const server = await serve({ publicUrl: 'https://control.example.com' });
    await server.stop();
    const policy = JSON.parse((await run('control-plane', 'users', 'list', '--json')).stdout) as { users: unknown[] };
    expect(policy.users).toHaveLength(1);
    const store = await openDb();
    try {
      expect((await store.currentPolicy())?.body).toMatchObject({
        session_upload: { presign_url: 'https://control.example.com/session-uploads/presign' },
      });
    } finally {
      await store.close();
    }

    const foreign = path.join(home.root, 'foreign.yaml');
    await import('node:fs/promises').then((fs) =>
      fs.writeFile(foreign, 'session_upload:\n  presign_url: http://127.0.0.1:8787/session-uploads/presign\n'),
    );
    const text = await run('control-plane', 'policy', 'publish', foreign);
    expect(text.code).toBe(0);
    expect(text.stderr).toContain(
      "warning: session_upload.presign_url is on http://127.0.0.1:8787, not on this server's origin " +
        'https://control.example.com',
    );
    expect(text.stderr).toContain('use https://control.example.com/session-uploads/presign');
    const json = await run('control-plane', 'policy', 'publish', foreign, '--json');
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: true,
      warnings: [expect.stringContaining('POLICY_FOREIGN_ORIGIN')],
    });

    const own = path.join(home.root, 'own.yaml');
    await import('node:fs/promises').then((fs) =>
      fs.writeFile(own, 'session_upload:\n  presign_url: https://control.example.com/session-uploads/presign\n'),
    );
    const fine = await run('control-plane', 'policy', 'publish', own, '--json');
    expect(JSON.parse(fine.stdout)).toMatchObject({ ok: true, warnings: [] });
  });
});

describe('a Control API without a policy', () => {
  it('login saves and says to publish one; reconcile says to publish one, not to check the URL', async () => {
    const data = path.join(home.root, 'bare');
    const added = JSON.parse(
      (await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data, '--json')).stdout,
    ) as { token: string };
    // A server whose policy a first start did not publish: the store is opened by hand, as an older server left it.
    const { createControlServer } = await import('../src/server.js');
    const { createLocalBlobStore } = await import('../src/blobs/index.js');
    const server = createControlServer({
      store: await openStore({ dataDir: data }),
      blobs: (publicUrl) => createLocalBlobStore({ dir: path.join(data, 'blobs'), publicUrl }),
    });
    const { url } = await server.listen('127.0.0.1', 0);
    try {
      const before = home.stdout.text().length;
      const code = await loginCommand(
        home.ctx,
        { controlUrl: url, tokenStdin: true },
        Readable.from([Buffer.from(added.token)]),
      );
      expect(code).toBe(0);
      const said = home.stdout.text().slice(before);
      expect(said).toContain('the Control API accepted the token');
      expect(said).toContain(`the Control API at ${url} has no governance policy yet`);
      expect(said).toContain('blue-agent control-plane policy publish FILE');

      const error = await rejected(reconcile(home.ctx, { dryRun: true }));
      expect(error.code).toBe('POLICY_MISSING');
      expect(error.message).toContain('has no governance policy yet');
      expect(error.hint).toContain('blue-agent control-plane policy publish FILE');
      expect(`${error.message} ${error.hint}`).not.toMatch(/check control_url/i);
    } finally {
      await server.close();
    }
  });
});

describe('control-plane serve with an identity provider', () => {
  it('reads the client secret from a 0600 file (never argv) and signs browsers in through the provider', async () => {
    const port = await freePort();
    const idp = await startOidcProvider(`http://127.0.0.1:${port}/auth/oidc/callback`, [
      { email: 'gwen@example.com', groups: ['ops'] },
    ]);
    try {
      const secretFile = path.join(home.root, 'oidc-secret');
      await writeFile(secretFile, `${idp.clientSecret}\n`, { mode: 0o644 });
      const options = {
        listen: `127.0.0.1:${port}`,
        oidcIssuer: idp.issuer,
        oidcClientId: idp.clientId,
        oidcClientSecretFile: secretFile,
        oidcAdminGroup: 'ops',
      };
      const loose = await rejected(serveCommand(home.ctx, options, Promise.resolve()));
      expect([loose.code, loose.message]).toEqual([
        'USAGE',
        `--oidc-client-secret-file: ${secretFile} is readable by group or others`,
      ]);
      await chmod(secretFile, 0o600);
      const server = await serve(options);
      try {
        const { landed, jar } = await signInThroughProvider(`${server.url}/auth/oidc/start`, 'gwen@example.com');
        expect(landed).toBe(`${server.url}/sessions`);
        const account = await fetch(`${server.url}/account`, {
          headers: { cookie: jar.header(new URL(server.url)) ?? '' },
        });
        expect(await account.text()).toContain('Signed in as <strong>gwen@example.com</strong> (administrator)');
        expect(home.stdout.text() + home.stderr.text()).not.toContain(idp.clientSecret);
      } finally {
        await server.stop();
      }
    } finally {
      await idp.close();
    }
  });
});
