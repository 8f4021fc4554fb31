/**
 * The control-plane commands: users, policy publish with Blue's rules for revisions, data directories (SQLite) and
 * --database-url (PostgreSQL), serve next to admin commands, and the embedded database's migrations (a database of
 * the first schema carried over to captured sessions and artifacts).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveCommand } from 'blue-agent/cli/control-plane.js';
import { main } from 'blue-agent/cli/main.js';
import { API_SCOPES, hashToken, openStore } from '../src/store/index.js';
import { SqliteStore } from '../src/store/sqlite.js';
import { migrateSqlite, SQLITE_MIGRATIONS } from '../src/store/sqlite/migrations.js';
import { freshDatabase } from '../../../test/support/postgres-db.js';
import { makeTestHome, type TestHome } from '../../../test/support/context.js';
import { BUNDLE_TYPE, sha256 } from '../../../test/support/control-server.js';
import { HARNESSES } from 'blue-agent/harnesses/names.js';

let home: TestHome;
let data: string;
beforeEach(async () => {
  home = await makeTestHome({ BLUE_AGENT_LOG_LEVEL: 'info' });
  data = path.join(home.root, 'control');
});
afterEach(async () => {
  await home.cleanup();
});

async function run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const before = { out: home.stdout.text().length, err: home.stderr.text().length };
  const code = await main(args, home.ctx);
  return { code, stdout: home.stdout.text().slice(before.out), stderr: home.stderr.text().slice(before.err) };
}

describe('control-plane users', () => {
  it('prints a new token once and stores only its hash', async () => {
    const added = await run('control-plane', 'users', 'add', 'ada@example.com', '--admin', '--data', data, '--json');
    expect(added.code).toBe(0);
    const result = JSON.parse(added.stdout) as { user_id: string; token: string; is_admin: boolean };
    expect(result.token).toMatch(/^blue_[A-Za-z0-9_-]{43}$/);
    expect(result.is_admin).toBe(true);
    const store = await openStore({ dataDir: data });
    try {
      expect(await store.identity.authenticate(result.token, Date.now())).toMatchObject({
        user: { id: result.user_id, email: 'ada@example.com' },
      });
    } finally {
      await store.close();
    }
    const db = new DatabaseSync(path.join(data, 'control.db'));
    expect(JSON.stringify(db.prepare('SELECT * FROM users').all())).not.toContain(result.token);
    expect(JSON.stringify(db.prepare('SELECT * FROM tokens').all())).not.toContain(result.token);
    expect(db.prepare('SELECT hash FROM tokens').all()).toContainEqual({
      hash: createHash('sha256').update(result.token).digest('hex'),
    });
    db.close();
    const human = await run('control-plane', 'users', 'add', 'bea@example.com', '--data', data);
    const token = /^(blue_\S+)$/m.exec(human.stdout)?.[1];
    expect(token).toBeDefined();
    expect(human.stdout.split(token!).length - 1).toBe(1);
    expect(human.stderr).not.toContain(token);
    const list = await run('control-plane', 'users', 'list', '--data', data);
    expect(list.stdout).toContain('ada@example.com  (admin)');
    expect(list.stdout).not.toContain(result.token);
    expect(list.stdout).not.toContain(token);
    const again = await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exists/);
    expect((await run('control-plane', 'users', 'add', 'not-an-email', '--data', data)).code).toBe(2);
  });

  it('tokens: adds a personal token for automation, lists every sign-in, and revokes one at once', async () => {
    const ada = JSON.parse(
      (await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data, '--json')).stdout,
    ) as { token: string };
    const added = await run(
      'control-plane',
      'tokens',
      'add',
      'ada@example.com',
      '--label',
      'nightly export',
      '--data',
      data,
      '--json',
    );
    expect(added.code).toBe(0);
    const made = JSON.parse(added.stdout) as {
      id: string;
      token: string;
      label: string;
      kind: string;
      active: boolean;
    };
    expect(made).toMatchObject({ label: 'nightly export', kind: 'personal', active: true });
    const listed = await run('control-plane', 'tokens', 'list', '--data', data);
    expect(listed.stdout.trim().split('\n')).toHaveLength(2);
    expect(listed.stdout).toMatch(
      new RegExp(`^${made.id}  ada@example.com  personal  active  never used  nightly export$`, 'm'),
    );
    expect(listed.stdout).not.toContain(made.token);
    expect(listed.stdout).not.toContain(ada.token);
    const revoked = await run('control-plane', 'tokens', 'revoke', made.id, '--data', data);
    expect([revoked.code, revoked.stdout]).toEqual([
      0,
      `Revoked ${made.id} (ada@example.com, nightly export): its tokens no longer work.\n`,
    ]);
    const store = await openStore({ dataDir: data });
    try {
      expect(await store.identity.authenticate(made.token, Date.now())).toBeUndefined();
      expect(await store.identity.authenticate(ada.token, Date.now())).toBeDefined();
    } finally {
      await store.close();
    }
    expect((await run('control-plane', 'tokens', 'list', 'ada@example.com', '--data', data)).stdout).toMatch(
      /personal {2}revoked/,
    );
    const unknown = await run(
      'control-plane',
      'tokens',
      'revoke',
      '00000000-0000-4000-8000-000000000000',
      '--data',
      data,
    );
    expect([unknown.code, /there is no token/.test(unknown.stderr)]).toEqual([2, true]);
    expect((await run('control-plane', 'tokens', 'add', 'nobody@example.com', '--data', data)).stderr).toMatch(
      /there is no user nobody@example.com/,
    );
  });

  it('needs a data directory', async () => {
    const answer = await run('control-plane', 'users', 'list');
    expect(answer.code).toBe(2);
    expect(answer.stderr).toMatch(/--data/);
  });
});

describe('data directories', () => {
  it('users list, policy publish and gc refuse a directory that does not exist, creating nothing', async () => {
    const typo = path.join(home.root, 'typo', 'control');
    const policy = path.join(home.root, 'policy.yaml');
    await writeFile(policy, 'allowed_harnesses: [claude]\n');
    for (const args of [['users', 'list'], ['policy', 'publish', policy], ['gc']]) {
      const answer = await run('control-plane', ...args, '--data', typo);
      expect(answer.code, args.join(' ')).toBe(2);
      expect(answer.stderr).toContain(`error [USAGE]: the Control API data directory ${typo} does not exist`);
      expect(answer.stderr).toMatch(/--data \(or BLUE_CONTROL_DATA\)/);
      expect(answer.stderr).toContain('users add EMAIL --admin');
      expect(answer.stdout).not.toContain('No users yet.');
    }
    expect(existsSync(path.join(home.root, 'typo'))).toBe(false);
  });

  it('refuses a directory without control.db, and creates none in it', async () => {
    await mkdir(data, { recursive: true });
    const answer = await run('control-plane', 'users', 'list', '--data', data);
    expect(answer.code).toBe(2);
    expect(answer.stderr).toContain(`${data} is not a Control API data directory: it holds no control.db`);
    expect(readdirSync(data)).toEqual([]);
  });

  it(
    'users add creates the data directory (0700) and control.db with its -wal and -shm files 0600, whatever the ' +
      'umask',
    async () => {
      const old = process.umask(0o022);
      try {
        expect((await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data)).code).toBe(0);
        const store = await openStore({ dataDir: data });
        try {
          await store.addUser('bea@example.com', false, Date.now());
          for (const name of ['control.db', 'control.db-wal', 'control.db-shm']) {
            expect((statSync(path.join(data, name)).mode & 0o777).toString(8), name).toBe('600');
          }
        } finally {
          await store.close();
        }
        expect((statSync(data).mode & 0o777).toString(8)).toBe('700');
      } finally {
        process.umask(old);
      }
      const list = await run('control-plane', 'users', 'list', '--data', data);
      expect(list.code).toBe(0);
      expect(list.stdout).toContain('ada@example.com');
    },
  );
});

describe.each(['sqlite', 'postgres'] as const)('control-plane users and policy publish (%s)', (backend) => {
  let where: string[];
  beforeEach(async () => {
    where = backend === 'postgres' ? ['--database-url', await freshDatabase()] : ['--data', data];
    // Publishing needs an existing database.
    await (await openStore({ dataDir: data, databaseUrl: backend === 'postgres' ? where[1] : undefined })).close();
  });
  const current = async () => {
    const store = await openStore({ dataDir: data, databaseUrl: backend === 'postgres' ? where[1] : undefined });
    try {
      return await store.currentPolicy();
    } finally {
      await store.close();
    }
  };

  it('adds and lists users', async () => {
    const added = JSON.parse(
      (await run('control-plane', 'users', 'add', 'ada@example.com', '--admin', ...where, '--json')).stdout,
    ) as { token: string };
    expect(added.token).toMatch(/^blue_/);
    const list = await run('control-plane', 'users', 'list', ...where);
    expect(list.stdout).toContain('ada@example.com  (admin)');
    expect((await run('control-plane', 'users', 'add', 'ADA@example.com', ...where)).stderr).toMatch(/already exists/);
  });

  it('validates and publishes revisions whose ids the server makes, filling in allowed_harnesses', async () => {
    const file = path.join(home.root, 'policy.yaml');
    await writeFile(
      file,
      'revision: 77\nallowed_harnesses: [claude]\nsession_upload:\n  presign_url: ' +
        'https://control.example.com/session-uploads/presign\n',
    );
    const first = await run('control-plane', 'policy', 'publish', file, ...where);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Published policy revision [0-9a-f-]{36}\./);
    expect(first.stdout).toMatch(/77.*replaced/);
    await writeFile(file, '{"ttl_seconds": 60}');
    const second = JSON.parse(
      (await run('control-plane', 'policy', 'publish', file, ...where, '--json', '--confirm')).stdout,
    ) as { revision: string };
    expect(second).toMatchObject({ revision: expect.stringMatching(/^[0-9a-f-]{36}$/), ignored_revision: null });
    expect((await current())?.body).toEqual({
      ttl_seconds: 60,
      allowed_harnesses: [...HARNESSES],
      revision: second.revision,
    });
  });

  it(
    'rejects an invalid policy naming the field and its line, and a client pin Blue would refuse, publishing ' +
      'nothing',
    async () => {
      const file = path.join(home.root, 'bad.yaml');
      await writeFile(
        file,
        'allowed_harnesses: [claude]\nharnesses:\n  claude:\n    version_requirement: "not a range"\n',
      );
      const answer = await run('control-plane', 'policy', 'publish', file, ...where);
      expect(answer.code).toBe(1);
      expect(answer.stderr).toContain('/harnesses/claude/version_requirement');
      expect(answer.stderr).toContain('bad.yaml:4:');
      const pins: [string, RegExp][] = [
        [
          'required_client_version: "^2.1.0"\nrequired_capabilities: [tenant_client_version_pin]\n',
          /must be one exact release/,
        ],
        ['required_client_version: 2.1.0\n', /needs tenant_client_version_pin in required_capabilities/],
        ['required_capabilities: [teleportation]\n', /names "teleportation", which no client declares/],
        ['minimum_client_version: soon\n', /minimum_client_version must be a release/],
      ];
      for (const [text, message] of pins) {
        await writeFile(file, `allowed_harnesses: [claude]\n${text}`);
        const refused = await run('control-plane', 'policy', 'publish', file, ...where);
        expect(refused.code, text).toBe(1);
        expect(refused.stderr, text).toMatch(message);
      }
      expect(await current()).toBeUndefined();
      await writeFile(
        file,
        'allowed_harnesses: [claude]\nrequired_client_version: 2.1.0\nrequired_capabilities: ' +
          '[tenant_client_version_pin]\ncontract_version: 3\n',
      );
      expect((await run('control-plane', 'policy', 'publish', file, ...where)).code).toBe(0);
      expect((await current())?.body).toMatchObject({ required_client_version: '2.1.0', contract_version: 3 });
    },
  );

  const PRESIGN = 'https://control.example.com/session-uploads/presign';
  const json = (answer: { stdout: string }) => JSON.parse(answer.stdout) as Record<string, any>;
  const refusedReason = (answer: { stderr: string }) =>
    /would stop session capture on every machine: (.*)/.exec(answer.stderr)?.[1];

  it('refuses an unknown key at any level, naming file:line:col and the key meant, publishing none', async () => {
    const file = path.join(home.root, 'typo.yaml');
    const cases: [text: string, at: string, message: string][] = [
      [
        `allowed_harnesses: [claude]\nsesion_upload:\n  presign_url: ${PRESIGN}\n`,
        '2:1',
        '/ has an unknown field "sesion_upload" (did you mean "session_upload"?)',
      ],
      [
        `harnesses:\n  claude:\n    version_requirment: ">=2"\nsession_upload:\n  presign_url: ${PRESIGN}\n`,
        '3:5',
        '/harnesses/claude has an unknown field "version_requirment" (did you mean "version_requirement"?)',
      ],
      [
        `session_upload:\n  presign_url: ${PRESIGN}\n  backfil: true\n`,
        '3:3',
        '/session_upload has an unknown field "backfil" (did you mean "backfill"?)',
      ],
      [
        `allowed_harnesses: [claude, cladue]\nsession_upload:\n  presign_url: ${PRESIGN}\n`,
        '1:29',
        '/allowed_harnesses/1 names the harness "cladue", which blue-agent does not know (did you mean "claude"?)',
      ],
    ];
    for (const [text, at, message] of cases) {
      await writeFile(file, text);
      const human = await run('control-plane', 'policy', 'publish', file, ...where);
      expect(human.code, text).toBe(1);
      expect(human.stderr, text).toContain(`error [POLICY_INVALID]: ${file}:${at}: invalid policy: ${message}`);
      const answer = await run('control-plane', 'policy', 'publish', file, ...where, '--json');
      expect(answer.code, text).toBe(1);
      expect(json(answer).error, text).toMatchObject({
        code: 'POLICY_INVALID',
        file,
        line: Number(at.split(':')[0]),
        column: Number(at.split(':')[1]),
      });
    }
    expect(await current()).toBeUndefined();
    // Blue's fields blue-agent does not act on are published as they are.
    await writeFile(
      file,
      `packages: []\ngateway: { type: litellm }\ntelemetry: { sink_url: "https://t.example" }\nharnesses:\n  ` +
        `claude: { managed_config: { model: m }, mcp: [], package_overrides: {} }\n`,
    );
    expect((await run('control-plane', 'policy', 'publish', file, ...where)).code).toBe(0);
    expect((await current())?.body).toMatchObject({
      packages: [],
      gateway: { type: 'litellm' },
      harnesses: { claude: { mcp: [] } },
    });
  });

  it('asks for --confirm before a revision that stops capture on every machine, and says what it does', async () => {
    const file = path.join(home.root, 'policy.yaml');
    await writeFile(file, `allowed_harnesses: [claude]\nsession_upload:\n  presign_url: ${PRESIGN}\n`);
    expect((await run('control-plane', 'policy', 'publish', file, ...where)).code).toBe(0);
    const capturing = (await current())!.revision;
    for (const text of [
      'allowed_harnesses: [claude]\n',
      `allowed_harnesses: []\nsession_upload:\n  presign_url: ${PRESIGN}\n`,
    ]) {
      await writeFile(file, text);
      const refused = await run('control-plane', 'policy', 'publish', file, ...where);
      expect(refused.code, text).toBe(1);
      expect(refused.stderr, text).toContain(
        `error [POLICY_CONFIRMATION_REQUIRED]: ${file} would stop session capture on every machine: `,
      );
      expect(refused.stderr, text).toContain(
        `(the current revision is ${capturing}); once it is published, every machine removes its capture hooks at ` +
          `its next reconcile, and sessions are no longer captured. Nothing was published`,
      );
      expect(refused.stderr, text).toContain('hint: If that is what you want, publish it again with --confirm');
      expect(json(await run('control-plane', 'policy', 'publish', file, ...where, '--json')).error.code, text).toBe(
        'POLICY_CONFIRMATION_REQUIRED',
      );
      expect((await current())!.revision, text).toBe(capturing);
    }
    expect(refusedReason(await run('control-plane', 'policy', 'publish', file, ...where))).toMatch(
      /its allowed_harnesses allows none of the harnesses blue-agent captures/,
    );
    await writeFile(file, 'allowed_harnesses: [claude]\n');
    expect(refusedReason(await run('control-plane', 'policy', 'publish', file, ...where))).toMatch(
      /it drops session_upload, which the current revision has/,
    );
    const confirmed = await run('control-plane', 'policy', 'publish', file, ...where, '--confirm');
    expect(confirmed.code).toBe(0);
    expect(confirmed.stdout).toContain(
      'Session capture stops: every machine removes its capture hooks at its next reconcile',
    );
    expect((await current())!.body.session_upload).toBeUndefined();
    // Capture is off already: nothing left to stop, no confirmation asked.
    await writeFile(file, 'allowed_harnesses: [codex]\n');
    expect(json(await run('control-plane', 'policy', 'publish', file, ...where, '--json'))).toMatchObject({
      ok: true,
      stops_capture: false,
    });
  });

  it(
    'policy show prints a revision exactly as it was published, current or named, and the document served with ' +
      '--json',
    async () => {
      const file = path.join(home.root, 'policy.yaml');
      const text =
        `# Capture on for Claude only, until the pilot ends.\nallowed_harnesses: [claude]   # not yet ` +
        `codex\nsession_upload:\n  presign_url: ${PRESIGN}\n  redact: secrets\n`;
      await writeFile(file, text);
      expect((await run('control-plane', 'policy', 'publish', file, ...where)).code).toBe(0);
      const first = (await current())!;
      await writeFile(file, `{"session_upload": {"presign_url": "${PRESIGN}"}}`);
      expect((await run('control-plane', 'policy', 'publish', file, ...where)).code).toBe(0);
      const shown = await run('control-plane', 'policy', 'show', ...where);
      expect([shown.code, shown.stdout, shown.stderr]).toEqual([
        0,
        `{"session_upload": {"presign_url": "${PRESIGN}"}}\n`,
        '',
      ]);
      const named = await run('control-plane', 'policy', 'show', '--revision', first.revision, ...where);
      expect(named.stdout).toBe(text);
      const answer = json(
        await run('control-plane', 'policy', 'show', '--revision', first.revision, ...where, '--json'),
      );
      expect(answer).toEqual({
        ok: true,
        revision: first.revision,
        published_at: new Date(first.created_at).toISOString(),
        etag: first.etag,
        text,
        document: first.body,
      });
      const missing = await run(
        'control-plane',
        'policy',
        'show',
        '--revision',
        'no-such-revision',
        ...where,
        '--json',
      );
      expect([missing.code, json(missing).error.code]).toEqual([1, 'POLICY_MISSING']);
      // A revision published before texts were kept: its document, as YAML, and a word on stderr.
      const store = await openStore({ dataDir: data, databaseUrl: backend === 'postgres' ? where[1] : undefined });
      const old = await store
        .publishPolicy({ ttl_seconds: 60, allowed_harnesses: ['claude'] }, 1)
        .finally(() => store.close());
      const untold = await run('control-plane', 'policy', 'show', ...where);
      expect(untold.stdout).toBe('ttl_seconds: 60\nallowed_harnesses:\n  - claude\n');
      expect(untold.stderr).toContain(`revision ${old.revision} was published before texts were kept`);
    },
  );

  it('policy show says when nothing has been published yet', async () => {
    const answer = await run('control-plane', 'policy', 'show', ...where);
    expect(answer.code).toBe(1);
    expect(answer.stderr).toContain('error [POLICY_MISSING]: no policy has been published yet');
  });
});

describe('control-plane serve', () => {
  it('serves with the local blob store, while admin commands change the same data directory', async () => {
    const user = JSON.parse(
      (await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data, '--json')).stdout,
    ) as { token: string };
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const serving = serveCommand(home.ctx, { listen: '127.0.0.1:0', data }, stopped);
    let url = '';
    for (let i = 0; i < 100 && url === ''; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      url = /listening on (http:\/\/\S+)/.exec(home.stdout.text())?.[1] ?? '';
    }
    expect(url).not.toBe('');
    const auth = { authorization: `Bearer ${user.token}`, 'content-type': 'application/json' };
    try {
      // A policy published while the server runs is served at once (after the default a first start publishes).
      const file = path.join(home.root, 'policy.yaml');
      await writeFile(file, 'allowed_harnesses: [claude]\n');
      // Without session_upload, over the default that has it: capture stops, so it is confirmed.
      const published = JSON.parse(
        (await run('control-plane', 'policy', 'publish', file, '--data', data, '--json', '--confirm')).stdout,
      ) as { revision: string };
      const policy = await fetch(`${url}/governance-config`, { headers: auth });
      expect(await policy.json()).toEqual({ allowed_harnesses: ['claude'], revision: published.revision });
      // The installed compatibility profiles are the server's harness metadata.
      const metadata = (await (await fetch(`${url}/harness-metadata`, { headers: auth })).json()) as {
        harnesses: { key: string }[];
      };
      expect(metadata.harnesses.map((h) => h.key)).toEqual([...HARNESSES]);

      const bytes = Buffer.from('a real bundle would be a tar.gz');
      const presign = await fetch(`${url}/session-uploads/presign`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({
          harness: 'codex',
          session_id: 's-1',
          sha256: sha256(bytes),
          size_bytes: bytes.length,
          content_type: BUNDLE_TYPE,
        }),
      });
      const p = (await presign.json()) as {
        upload_url: string;
        headers: Record<string, string>;
        complete_url: string;
        upload_id: string;
        session_id: string;
      };
      expect(p.upload_url.startsWith(`${url}/blobs/`)).toBe(true);
      expect((await fetch(p.upload_url, { method: 'PUT', headers: p.headers, body: bytes })).status).toBe(200);
      const done = await fetch(p.complete_url, { method: 'POST', headers: { authorization: auth.authorization } });
      expect(((await done.json()) as { status: string }).status).toBe('complete');
      const dl = (await (
        await fetch(`${url}/session-uploads/${p.session_id}/download`, {
          method: 'POST',
          headers: { authorization: auth.authorization },
        })
      ).json()) as {
        download_url: string;
      };
      expect(Buffer.from(await (await fetch(dl.download_url)).arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      stop();
      expect(await serving).toBe(0);
    }
    expect(home.stderr.text()).toContain('POST /session-uploads/presign 200');
    expect(home.stderr.text()).not.toContain(user.token);
    expect(home.stdout.text()).toContain('Control API stopped.');
  });

  it('logs one JSON object per request with --log-format json: method, path without query, status, time', async () => {
    const user = JSON.parse(
      (await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data, '--json')).stdout,
    ) as { token: string };
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const serving = serveCommand(home.ctx, { listen: '127.0.0.1:0', data, logFormat: 'json' }, stopped);
    let url = '';
    for (let i = 0; i < 100 && url === ''; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      url = /listening on (http:\/\/\S+)/.exec(home.stdout.text())?.[1] ?? '';
    }
    try {
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect(
        (await fetch(`${url}/session-uploads?q=private-words`, { headers: { authorization: `Bearer ${user.token}` } }))
          .status,
      ).toBe(200);
      expect((await fetch(`${url}/auth/me`, { headers: { authorization: 'Bearer wrong-token' } })).status).toBe(401);
    } finally {
      stop();
      expect(await serving).toBe(0);
    }
    const lines = home.stderr
      .text()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const requests = lines.filter((line) => line.event === 'request');
    expect(requests.map((r) => [r.level, r.method, r.path, r.status])).toEqual([
      ['info', 'GET', '/health', 200],
      ['info', 'GET', '/session-uploads', 200],
      ['info', 'GET', '/auth/me', 401],
    ]);
    for (const r of requests) {
      expect(typeof r.duration_ms).toBe('number');
      expect(Number.isNaN(Date.parse(String(r.time)))).toBe(false);
    }
    expect(home.stderr.text()).not.toContain('private-words');
    expect(home.stderr.text()).not.toContain(user.token);
    expect(home.stderr.text()).not.toContain('wrong-token');
  });

  it('a port in use is ADDRESS_IN_USE (exit 1), naming the port and what to do, not a bug or usage error', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const answer = await run('control-plane', 'serve', '--listen', `127.0.0.1:${port}`, '--data', data);
      expect(answer.code).toBe(1);
      expect(answer.stderr).toBe(
        `blue-agent: error [ADDRESS_IN_USE]: cannot listen on 127.0.0.1:${port}: port ${port} is in use by another ` +
          `process\n` +
          (`  hint: Stop the process that listens on port ${port} (perhaps another \`control-plane serve\`: \`ss ` +
            `-ltnp\` names it), or give --listen another port.\n`),
      );
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('rejects a malformed --listen', async () => {
    const answer = await run('control-plane', 'serve', '--listen', 'nowhere', '--data', data);
    expect(answer.code).toBe(2);
    expect(answer.stderr).toMatch(/HOST:PORT/);
  });
});

describe('migrations', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blue-control-db-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('migrates once and reopens a current database', async () => {
    await SqliteStore.open(dir).close();
    await SqliteStore.open(dir).close();
    const db = new DatabaseSync(path.join(dir, 'control.db'));
    try {
      expect(db.prepare('SELECT version FROM schema_version ORDER BY version').all()).toEqual(
        SQLITE_MIGRATIONS.map((_, i) => ({ version: i + 1 })),
      );
      expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    } finally {
      db.close();
    }
  });

  it('refuses a database written by a newer release, and /ready says so', async () => {
    await SqliteStore.open(dir).close();
    const db = new DatabaseSync(path.join(dir, 'control.db'));
    db.prepare('INSERT INTO schema_version (version, applied_at) VALUES (?, ?)').run(99, Date.now());
    db.close();
    expect(() => SqliteStore.open(dir)).toThrow(
      new RegExp(`schema version 99, newer than this blue-agent understands \\(${SQLITE_MIGRATIONS.length}\\)`),
    );
  });

  it('keeps the policy revisions of version 10, without a published text, current and readable', async () => {
    const db = new DatabaseSync(path.join(dir, 'control.db'));
    migrateSqlite(db, 'control.db', SQLITE_MIGRATIONS.slice(0, 10));
    db.prepare(
      `INSERT INTO policy_revisions (revision, body, etag, created_at) VALUES ('r1', ` +
        `'{"revision":"r1","ttl_seconds":60}', '"e1"', 5)`,
    ).run();
    db.close();
    const store = SqliteStore.open(dir);
    try {
      expect(await store.currentPolicy()).toEqual({
        revision: 'r1',
        body: { revision: 'r1', ttl_seconds: 60 },
        text: null,
        etag: '"e1"',
        created_at: 5,
      });
      const next = await store.publishPolicyOver({ ttl_seconds: 30 }, 'r1', 6, { text: 'ttl_seconds: 30 # shorter\n' });
      expect((await store.policyRevision(next!.revision))?.text).toBe('ttl_seconds: 30 # shorter\n');
    } finally {
      await store.close();
    }
  });

  it("carries each user's token of version 6 over as a personal sign-in, and keeps no token in users", async () => {
    const db = new DatabaseSync(path.join(dir, 'control.db'));
    migrateSqlite(db, 'control.db', SQLITE_MIGRATIONS.slice(0, 6));
    db.prepare('INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES (?, ?, 1, ?, 1)').run(
      'u-ada',
      'ada@example.com',
      hashToken('blue_ada'),
    );
    db.prepare('INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES (?, ?, 0, ?, 2)').run(
      'u-bea',
      'bea@example.com',
      hashToken('blue_bea'),
    );
    db.close();
    const store = SqliteStore.open(dir);
    try {
      expect(await store.identity.authenticate('blue_ada', 10)).toMatchObject({
        user: { id: 'u-ada', is_admin: true },
        scopes: [...API_SCOPES],
      });
      expect(await store.identity.authenticate('blue_bea', 10)).toMatchObject({
        user: { id: 'u-bea' },
        scopes: API_SCOPES.filter((s) => s !== 'admin'),
      });
      expect((await store.identity.grants('u-bea')).map((g) => [g.kind, g.label, g.created_at])).toEqual([
        ['personal', 'token from users add', 2],
      ]);
    } finally {
      await store.close();
    }
    const after = new DatabaseSync(path.join(dir, 'control.db'));
    expect(JSON.stringify(after.prepare('SELECT token_hash FROM users').all())).not.toContain(hashToken('blue_ada'));
    after.close();
  });

  it(
    'carries a database of the first schema over: one captured session per session id, its uploads as artifacts, ' +
      'its sharing',
    async () => {
      const db = new DatabaseSync(path.join(dir, 'control.db'));
      migrateSqlite(db, 'control.db', SQLITE_MIGRATIONS.slice(0, 1));
      const user = (id: string, email: string) =>
        db
          .prepare('INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES (?, ?, 0, ?, 1)')
          .run(id, email, `hash-${id}`);
      user('u-ada', 'ada@example.com');
      user('u-bea', 'bea@example.com');
      const upload = (id: string, session: string, revision: number, status: string) =>
        db
          .prepare(
            `INSERT INTO uploads (id, owner_id, harness, session_id, revision, status, size_bytes, sha256, content_type,
             compatibility_profile, artifact_format, resumable, title, blob_key, created_at, updated_at, completed_at,
             retention_deadline)
           VALUES (?, 'u-ada', 'claude', ?, ?, ?, 10, ?, 'application/vnd.blue.session-bundle+tar+gzip',
             'claude-v2_0_12', 'blue-session-bundle-v1', 1, ?, ?, ?, ?, ?, ?)`,
          )
          .run(
            id,
            session,
            revision,
            status,
            String(revision).repeat(64),
            `Title ${revision}`,
            `sessions/${id}.tar.gz`,
            revision * 10,
            revision * 10,
            revision * 10,
            10_000,
          );
      upload('a1111111-0000-4000-8000-000000000001', 's-1', 1, 'superseded');
      upload('a1111111-0000-4000-8000-000000000002', 's-1', 2, 'complete');
      upload('a1111111-0000-4000-8000-000000000003', 's-2', 1, 'pending');
      db.prepare(
        `INSERT INTO sharing (upload_id, mode) VALUES ('a1111111-0000-4000-8000-000000000002', 'selected'), ` +
          `('a1111111-0000-4000-8000-000000000001', 'selected')`,
      ).run();
      db.prepare(
        `INSERT INTO sharing_recipients (upload_id, user_id) VALUES ('a1111111-0000-4000-8000-000000000002', 'u-bea')`,
      ).run();
      db.prepare(
        `INSERT INTO policy_revisions (revision, body, etag, created_at) VALUES (1, '{"revision":1}', '"e1"', 5), ` +
          `(2, '{"revision":2}', '"e2"', 6)`,
      ).run();
      db.close();

      const store = SqliteStore.open(dir);
      try {
        const ada = (await store.userById('u-ada'))!;
        const listed = await store.listSessions(ada, { sort: 'updated_desc', limit: 10 }, 0);
        expect(listed.sessions.map((s) => [s.native_session_id, s.current_artifact_id, s.sharing_mode])).toEqual([
          ['s-1', 'a1111111-0000-4000-8000-000000000002', 'selected'],
        ]);
        const session = listed.sessions[0]!;
        expect(await store.grants(session.id)).toEqual(['u-bea']);
        expect((await store.artifactsOf(session.id)).map((a) => [a.id, a.revision, a.status, a.title])).toEqual([
          ['a1111111-0000-4000-8000-000000000002', 2, 'complete', 'Title 2'],
          ['a1111111-0000-4000-8000-000000000001', 1, 'superseded', 'Title 1'],
        ]);
        const pending = (await store.artifact('a1111111-0000-4000-8000-000000000003'))!;
        expect([
          pending.session.native_session_id,
          pending.session.current_artifact_id,
          pending.artifact.compatibility_profile,
        ]).toEqual(['s-2', null, 'claude-v2_0_12']);
        // Old revision numbers become their ids, the newest still current.
        expect((await store.currentPolicy())?.revision).toBe('2');
        expect(await store.organizationId()).toMatch(/^[0-9a-f-]{36}$/);
      } finally {
        await store.close();
      }
    },
  );
});
