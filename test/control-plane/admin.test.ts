import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveCommand } from '../../src/cli/control-plane.js';
import { main } from '../../src/cli/main.js';
import { ControlStore } from '../../src/control-plane/store.js';
import { makeTestHome, type TestHome } from '../support/context.js';
import { BUNDLE_TYPE, sha256 } from '../support/control-server.js';
import { HARNESSES } from '../../src/harnesses/names.js';

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
    const store = ControlStore.open(data);
    try {
      expect(store.tokenHashOf(result.user_id)).toBe(createHash('sha256').update(result.token).digest('hex'));
      expect(store.userByToken(result.token)?.email).toBe('ada@example.com');
      const raw = JSON.stringify(store.db.prepare('SELECT * FROM users').all());
      expect(raw).not.toContain(result.token);
    } finally {
      store.close();
    }
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

  it('users add creates the data directory (0700) and control.db with its -wal and -shm files 0600, whatever the umask', async () => {
    const old = process.umask(0o022);
    try {
      expect((await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data)).code).toBe(0);
      const store = ControlStore.open(data);
      try {
        store.addUser('bea@example.com', false, Date.now());
        for (const name of ['control.db', 'control.db-wal', 'control.db-shm']) {
          expect((statSync(path.join(data, name)).mode & 0o777).toString(8), name).toBe('600');
        }
      } finally {
        store.close();
      }
      expect((statSync(data).mode & 0o777).toString(8)).toBe('700');
    } finally {
      process.umask(old);
    }
    const list = await run('control-plane', 'users', 'list', '--data', data);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('ada@example.com');
  });
});

describe('control-plane policy publish', () => {
  it('validates and publishes revisions numbered by the server', async () => {
    const file = path.join(home.root, 'policy.yaml');
    await writeFile(file, 'revision: 77\nallowed_harnesses: [claude]\nsession_upload:\n  presign_url: https://control.example.com/session-uploads/presign\n');
    ControlStore.open(data).close(); // publishing needs an existing data directory
    const first = await run('control-plane', 'policy', 'publish', file, '--data', data);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/revision 1\b/);
    expect(first.stdout).toMatch(/77.*replaced/);
    await writeFile(file, '{"allowed_harnesses": ["codex"]}');
    const second = await run('control-plane', 'policy', 'publish', file, '--data', data, '--json');
    expect(JSON.parse(second.stdout)).toMatchObject({ revision: 2, ignored_revision: null });
    const store = ControlStore.open(data);
    try {
      expect(store.currentPolicy()?.body).toEqual({ allowed_harnesses: ['codex'], revision: 2 });
    } finally {
      store.close();
    }
  });

  it('rejects an invalid policy naming the field and its line, publishing nothing', async () => {
    const file = path.join(home.root, 'bad.yaml');
    await writeFile(file, 'allowed_harnesses: [claude]\nharnesses:\n  claude:\n    version_requirement: "not a range"\n');
    ControlStore.open(data).close();
    const answer = await run('control-plane', 'policy', 'publish', file, '--data', data);
    expect(answer.code).toBe(1);
    expect(answer.stderr).toContain('/harnesses/claude/version_requirement');
    expect(answer.stderr).toContain('bad.yaml:4:');
    await writeFile(file, 'allowed_harnesses: [vim]\n');
    expect((await run('control-plane', 'policy', 'publish', file, '--data', data)).stderr).toContain('/allowed_harnesses/0');
    const store = ControlStore.open(data);
    try {
      expect(store.currentPolicy()).toBeUndefined();
    } finally {
      store.close();
    }
  });
});

describe('control-plane serve', () => {
  it('serves with the local blob store, while admin commands change the same data directory', async () => {
    const user = JSON.parse((await run('control-plane', 'users', 'add', 'ada@example.com', '--data', data, '--json')).stdout) as { token: string };
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
      // A policy published while the server runs is served at once (revision 1 is the default a first start publishes).
      const file = path.join(home.root, 'policy.yaml');
      await writeFile(file, 'allowed_harnesses: [claude]\n');
      expect((await run('control-plane', 'policy', 'publish', file, '--data', data)).code).toBe(0);
      const policy = await fetch(`${url}/governance-config`, { headers: auth });
      expect(await policy.json()).toEqual({ allowed_harnesses: ['claude'], revision: 2 });
      // The installed compatibility profiles are the server's harness metadata.
      const metadata = (await (await fetch(`${url}/harness-metadata`, { headers: auth })).json()) as { harnesses: { harness: string }[] };
      expect(metadata.harnesses.map((h) => h.harness)).toEqual([...HARNESSES]);

      const bytes = Buffer.from('a real bundle would be a tar.gz');
      const presign = await fetch(`${url}/session-uploads/presign`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ harness: 'codex', session_id: 's-1', sha256: sha256(bytes), size_bytes: bytes.length, content_type: BUNDLE_TYPE }),
      });
      const p = (await presign.json()) as { upload_url: string; headers: Record<string, string>; complete_url: string; upload_id: string };
      expect(p.upload_url.startsWith(`${url}/blobs/`)).toBe(true);
      expect((await fetch(p.upload_url, { method: 'PUT', headers: p.headers, body: bytes })).status).toBe(200);
      const done = await fetch(p.complete_url, { method: 'POST', headers: { authorization: auth.authorization } });
      expect(((await done.json()) as { status: string }).status).toBe('complete');
      const dl = (await (await fetch(`${url}/session-uploads/${p.upload_id}/download`, { method: 'POST', headers: { authorization: auth.authorization } })).json()) as {
        download_url: string;
      };
      expect(Buffer.from(await (await fetch(dl.download_url)).arrayBuffer()).equals(bytes)).toBe(true);
    } finally {
      stop();
      expect(await serving).toBe(0);
    }
    expect(home.stderr.text()).toContain('POST /session-uploads/presign 201');
    expect(home.stderr.text()).not.toContain(user.token);
    expect(home.stdout.text()).toContain('Control API stopped.');
  });

  it('a port in use is a usage error naming the address, not a bug', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const answer = await run('control-plane', 'serve', '--listen', `127.0.0.1:${port}`, '--data', data);
      expect(answer.code).toBe(2);
      expect(answer.stderr).toContain(`error [USAGE]: 127.0.0.1:${port} is in use; choose another --listen`);
      expect(answer.stderr).not.toMatch(/INTERNAL|bug/);
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

  it('migrates once and reopens a current database', () => {
    ControlStore.open(dir).close();
    const store = ControlStore.open(dir);
    try {
      const versions = store.db.prepare('SELECT version FROM schema_version').all();
      expect(versions).toEqual([{ version: 1 }]);
      expect(store.db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    } finally {
      store.close();
    }
  });

  it('refuses a database written by a newer release', () => {
    ControlStore.open(dir).close();
    const db = new DatabaseSync(path.join(dir, 'control.db'));
    db.prepare('INSERT INTO schema_version (version, applied_at) VALUES (?, ?)').run(99, Date.now());
    db.close();
    expect(() => ControlStore.open(dir)).toThrow(/schema version 99, newer than this blue-agent understands \(1\)/);
  });
});
