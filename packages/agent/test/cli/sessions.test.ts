/**
 * `sessions list|show|share|delete|export` against the real reference Control API on loopback, with an owner (alice), a
 * member (bob) and an administrator, and bundles of the recorded fixtures uploaded through the real routes.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { main } from '../../src/cli/main.js';
import { bufferOutput } from '../../src/context.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { startTestServer, type TestServer, type TestUser } from '../../../../test/support/control-server.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import {
  CAPTURED_AT,
  CWD,
  fixtureBundle,
  fixtureProfile,
  goldenExport,
} from '../../../../test/support/fixture-bundles.js';

let server: TestServer;
let t: TestHome;
const ids: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer();
  t = await makeTestHome();
  const up = async (user: TestUser, harness: HarnessName, title: string | undefined, key: string) => {
    const file = path.join(t.root, `${key}.bundle`);
    const bundle = await fixtureBundle(harness, file, title === undefined ? {} : { title });
    const bytes = await readFile(file);
    const done = await server.upload(user, bytes, {
      harness,
      session_id: bundle.manifest.native_session_id,
      compatibility_profile: fixtureProfile(harness),
      artifact_format: 'blue-session-bundle-v1',
      cwd: CWD,
      resumable: true,
      captured_at_unix_ms: CAPTURED_AT,
      repository_root: CWD,
      ...(title === undefined ? {} : { title }),
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    // The captured session's id: what people type and what sessions list shows.
    ids[key] = done.sessionId;
    server.clock.advance(60_000);
  };
  await up(server.alice, 'claude', 'Explain the build steps of this project', 'aliceClaude');
  await up(server.alice, 'codex', undefined, 'aliceCodex');
  await up(server.bob, 'opencode', 'Add a README for the CLI', 'bobOpencode');
  await up(server.bob, 'kimi', 'Bob keeps this one private', 'bobKimi');
  // Bob shares his OpenCode session with everyone.
  const shared = await server.call('PUT', `/session-uploads/${ids.bobOpencode}/sharing`, server.bob.token, {
    mode: 'workspace',
  });
  expect(shared.status).toBe(200);
});

afterAll(async () => {
  await server?.close();
  await t?.cleanup();
});

async function as(
  user: TestUser | undefined,
  argv: string[],
  options: { tty?: boolean; columns?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = bufferOutput(options.tty ?? false);
  if (options.columns !== undefined) Object.assign(stdout, { columns: options.columns });
  const stderr = bufferOutput();
  const ctx = t.context({
    stdout,
    stderr,
    // The server's clock: retention (`expired`) is judged by the agent against the server's deadlines.
    clock: { now: () => server.clock.now() },
    env: { BLUE_AGENT_CONTROL_URL: server.url, ...(user === undefined ? {} : { BLUE_AGENT_TOKEN: user.token }) },
  });
  const code = await main(argv, ctx);
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('sessions list', () => {
  it('shows your own sessions, newest first: title (or Session <8 chars>), harness, owner, status, id', async () => {
    const { code, stdout, stderr } = await as(server.alice, ['sessions', 'list']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^TITLE\s+HARNESS\s+OWNER\s+STATUS\s+UPDATED\s+ID$/);
    expect(lines[1]).toContain(`Session ${ids.aliceCodex!.slice(0, 8)}`);
    expect(lines[1]).toMatch(/codex\s+you\s+complete\s+2026-01-01 00:0\d/);
    expect(lines[1]).toContain(ids.aliceCodex);
    expect(lines[2]).toContain('Explain the build steps of this project');
    expect(lines[2]).toContain(ids.aliceClaude);
    expect(stdout).not.toContain(ids.bobOpencode);
    expect(lines.at(-1)).toBe('2 sessions.');
  });

  it('--all adds what others shared with you, marked "shared by"; private sessions of others stay hidden', async () => {
    const { code, stdout } = await as(server.alice, ['sessions', 'list', '--all']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/Add a README for the CLI\s+opencode\s+shared by bob@example\.com/);
    expect(stdout).not.toContain(ids.bobKimi);
  });

  it('an administrator sees only their own sessions unless --all, then everything with its owner', async () => {
    const own = await as(server.admin, ['sessions', 'list']);
    expect(own.code).toBe(0);
    expect(own.stdout).toContain('No sessions of yours. Others are visible to you: add --all to see them.');
    const all = await as(server.admin, ['sessions', 'list', '--all', '--json']);
    const doc = JSON.parse(all.stdout);
    expect(doc.ok).toBe(true);
    expect(doc.sessions.map((s: { id: string }) => s.id).sort()).toEqual(Object.values(ids).sort());
    expect(doc.sessions.find((s: { id: string }) => s.id === ids.bobKimi)).toMatchObject({
      user_email: 'bob@example.com',
      owned: false,
      expired: false,
      sharing_mode: 'private',
    });
  });

  it('filters by --harness and --q', async () => {
    const byHarness = JSON.parse(
      (await as(server.alice, ['sessions', 'list', '--harness', 'claude', '--json'])).stdout,
    );
    expect(byHarness.sessions.map((s: { id: string }) => s.id)).toEqual([ids.aliceClaude]);
    const two = JSON.parse(
      (await as(server.alice, ['sessions', 'list', '--all', '--harness', 'claude', '--harness', 'opencode', '--json']))
        .stdout,
    );
    expect(two.sessions.map((s: { id: string }) => s.id).sort()).toEqual([ids.aliceClaude, ids.bobOpencode].sort());
    const byText = JSON.parse(
      (await as(server.alice, ['sessions', 'list', '--all', '--q', 'README', '--json'])).stdout,
    );
    expect(byText.sessions.map((s: { id: string }) => s.id)).toEqual([ids.bobOpencode]);
    const none = await as(server.alice, ['sessions', 'list', '--q', 'nothing like this']);
    expect(none.stdout).toBe('No sessions of yours match.\n');
  });

  it('--q finds what a session says, not only its title, and shows the passage under its row', async () => {
    await server.server.searchIdle();
    // The recorded Claude Code session's assistant said "Recorded reply from the stub model."; its title says nothing
    // of it.
    const json = JSON.parse(
      (await as(server.alice, ['sessions', 'list', '--harness', 'claude', '--q', 'stub model', '--json'])).stdout,
    );
    expect(json.sessions.map((s: { id: string }) => s.id)).toEqual([ids.aliceClaude]);
    expect(json.sessions[0].snippet).toMatch(/\[stub\] \[model\]/i);
    const text = await as(server.alice, ['sessions', 'list', '--harness', 'claude', '--q', 'stub model']);
    const lines = text.stdout.split('\n');
    expect(lines[1]).toContain('Explain the build steps of this project');
    expect(lines[2]).toMatch(/^ {4}.*\[stub\] \[model\]/i);
    const narrow = await as(server.alice, ['sessions', 'list', '--harness', 'claude', '--q', 'stub model'], {
      tty: true,
      columns: 40,
    });
    for (const line of narrow.stdout.trimEnd().split('\n').slice(1, 3)) expect(line.length).toBeLessThanOrEqual(80);
    expect(narrow.stdout.split('\n')[2]!.length).toBeLessThanOrEqual(40);
  });

  it('fits a narrow terminal: ids shortened to 8 characters, then titles cut; none cut off a terminal', async () => {
    const narrow = await as(server.alice, ['sessions', 'list', '--all'], { tty: true, columns: 80 });
    for (const line of narrow.stdout.trimEnd().split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    expect(narrow.stdout).toContain(`${ids.aliceClaude!.slice(0, 8)}\n`);
    expect(narrow.stdout).not.toContain(ids.aliceClaude);
    const piped = await as(server.alice, ['sessions', 'list', '--all'], { tty: false });
    expect(piped.stdout).toContain(ids.aliceClaude);
    expect(piped.stdout).toContain('Explain the build steps of this project');
  });
});

describe('sessions show', () => {
  it('shows one session by a prefix of 8 characters, with its sharing for the owner', async () => {
    const { code, stdout } = await as(server.bob, ['sessions', 'show', ids.bobOpencode!.slice(0, 8)]);
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toBe('Add a README for the CLI');
    expect(stdout).toMatch(/^ {2}id {9}/m);
    expect(stdout).toContain(`  native id   ses_dd2b222e3ffeL8eaRd4ALfMz7w`);
    expect(stdout).toContain('  owner       you (bob@example.com)');
    expect(stdout).toContain('  sharing     workspace (everyone on this Control API)');
    expect(stdout).toContain('  status      complete, resumable');
    expect(stdout).toContain('  uploads     1 (1 complete)');
  });

  it('shows a session shared with you as "shared with you", and --json gives the record', async () => {
    const { code, stdout } = await as(server.alice, ['sessions', 'show', ids.bobOpencode!, '--json']);
    expect(code).toBe(0);
    const doc = JSON.parse(stdout);
    expect(doc.ok).toBe(true);
    expect(doc.session).toMatchObject({
      id: ids.bobOpencode,
      user_email: 'bob@example.com',
      sharing_mode: 'workspace',
      owned: false,
    });
    expect(doc.artifacts).toHaveLength(1);
    expect(doc.sharing).toBeUndefined();
  });

  it('tells malformed, not found and ambiguous ids apart', async () => {
    const malformed = await as(server.alice, ['sessions', 'show', 'abc']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('[SESSION_ID_MALFORMED]');
    const missing = await as(server.alice, ['sessions', 'show', '00000000-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('[SESSION_NOT_FOUND]');
    // Another's private session is not found either, whether or not it exists.
    const hidden = await as(server.alice, ['sessions', 'show', ids.bobKimi!]);
    expect(hidden.stderr).toContain('[SESSION_NOT_FOUND]');
    const json = await as(server.alice, ['sessions', 'show', ids.bobKimi!, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'SESSION_NOT_FOUND' } });
  });

  // An ambiguous prefix (ids sharing their first characters) cannot be made on a real server, whose ids are random:
  // test/control-api/sessions.test.ts covers it.
});

describe('sessions share', () => {
  it('checks --mode and --user before any network call', async () => {
    // No token at all: a network call would fail with AUTH_FAILED, so USAGE proves none was made.
    for (const argv of [
      ['--mode', 'public'],
      ['--mode', 'private', '--user', 'bob@example.com'],
      ['--mode', 'workspace', '--user', 'bob@example.com'],
      ['--mode', 'selected'],
      ['--mode', 'selected', '--user', 'not an email'],
    ]) {
      const { code, stderr } = await as(undefined, ['sessions', 'share', ids.aliceClaude!, ...argv]);
      expect(code, argv.join(' ')).toBe(2);
      expect(stderr, argv.join(' ')).toContain('[USAGE]');
    }
  });

  it('shares with selected people, then the workspace, then back to private; recipients see it meanwhile', async () => {
    const selected = await as(server.alice, [
      'sessions',
      'share',
      ids.aliceClaude!.slice(0, 8),
      '--mode',
      'selected',
      '--user',
      'bob@example.com',
    ]);
    expect(selected.stderr).toBe('');
    expect(selected.code).toBe(0);
    expect(selected.stdout).toBe(
      `Explain the build steps of this project (${ids.aliceClaude}): sharing is now selected: bob@example.com\n`,
    );
    const bobSees = JSON.parse((await as(server.bob, ['sessions', 'list', '--all', '--json'])).stdout);
    expect(bobSees.sessions.map((s: { id: string }) => s.id)).toContain(ids.aliceClaude);
    const carolSees = JSON.parse((await as(server.carol, ['sessions', 'list', '--all', '--json'])).stdout);
    expect(carolSees.sessions.map((s: { id: string }) => s.id)).not.toContain(ids.aliceClaude);

    const json = await as(server.alice, ['sessions', 'share', ids.aliceClaude!, '--mode', 'workspace', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({
      ok: true,
      id: ids.aliceClaude,
      sharing: { mode: 'workspace', user_ids: [] },
    });

    const back = await as(server.alice, ['sessions', 'share', ids.aliceClaude!, '--mode', 'private']);
    expect(back.stdout).toContain('sharing is now private (only you)');
    const hidden = await as(server.bob, ['sessions', 'show', ids.aliceClaude!]);
    expect(hidden.stderr).toContain('[SESSION_NOT_FOUND]');
  });

  it('a member cannot share a session someone else shared with them', async () => {
    const { code, stderr } = await as(server.alice, ['sessions', 'share', ids.bobOpencode!, '--mode', 'private']);
    expect(code).toBe(1);
    expect(stderr).toContain('[SESSION_NOT_OWNED]');
    expect(stderr).toContain('bob@example.com');
    expect(stderr).toContain('only its owner may change its sharing');
    // Bob's sharing is unchanged.
    const still = await server.call('GET', `/session-uploads/${ids.bobOpencode}/sharing`, server.bob.token);
    expect(still.body.mode).toBe('workspace');
  });

  it('names an unknown recipient clearly', async () => {
    const { code, stderr } = await as(server.alice, [
      'sessions',
      'share',
      ids.aliceCodex!,
      '--mode',
      'selected',
      '--user',
      'nobody@example.com',
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain('[SHARE_RECIPIENT_UNKNOWN]');
    expect(stderr).toContain('nobody@example.com');
    expect(stderr).toContain(
      'error [SHARE_RECIPIENT_UNKNOWN]: unknown recipient nobody@example.com: no such member on the Control API',
    );
    expect(stderr).not.toMatch(/HTTP 400|user_ids/);
  });
});

describe('sessions export from the Control API', () => {
  it('downloads, verifies and renders the same markdown as the bundle file, with the id and updated time', async () => {
    const { code, stdout, stderr } = await as(server.bob, [
      'sessions',
      'export',
      ids.bobOpencode!.slice(0, 10),
      '--format',
      'markdown',
    ]);
    // Markdown is what an export is without --format.
    expect((await as(server.bob, ['sessions', 'export', ids.bobOpencode!.slice(0, 10)])).stdout).toBe(stdout);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const golden = await readFile(goldenExport('opencode', 'md'), 'utf8');
    const record = await server.call('GET', `/session-uploads/${ids.bobOpencode}`, server.bob.token);
    const withServer = golden
      .replace('- **Harness:**', `- **Id:** \`${ids.bobOpencode}\`\n- **Harness:**`)
      .replace(/(- \*\*Captured:\*\* .*\n)/, `$1- **Updated:** ${record.body.session.updated_at}\n`);
    expect(stdout).toBe(withServer);
  });

  it('json carries the manifest and the server metadata; a shared session can be exported by a recipient', async () => {
    const { code, stdout } = await as(server.alice, ['sessions', 'export', ids.bobOpencode!, '--format', 'json']);
    expect(code).toBe(0);
    const doc = JSON.parse(stdout);
    const golden = JSON.parse(await readFile(goldenExport('opencode', 'json'), 'utf8'));
    expect(doc.source).toBe('control-api');
    expect(doc.id).toBe(ids.bobOpencode);
    expect(doc.manifest).toEqual(golden.manifest);
    const record = await server.call('GET', `/session-uploads/${ids.bobOpencode}`, server.bob.token);
    expect(doc.bundle).toEqual({ size: record.body.artifacts[0].size_bytes, sha256: record.body.artifacts[0].sha256 });
    expect(doc.session).toMatchObject({
      id: ids.bobOpencode,
      user_email: 'bob@example.com',
      sharing_mode: 'workspace',
      status: 'complete',
    });
  });

  it('a session the user may not see is not found, and --format is checked first', async () => {
    const hidden = await as(server.alice, ['sessions', 'export', ids.bobKimi!, '--format', 'markdown']);
    expect(hidden.code).toBe(1);
    expect(hidden.stderr).toContain('[SESSION_NOT_FOUND]');
    const format = await as(server.alice, ['sessions', 'export', ids.bobKimi!, '--format', 'pdf']);
    expect(format.code).toBe(2);
    expect(format.stderr).toContain('[USAGE]');
  });
});

describe('the Control API unreachable', () => {
  async function at(url: string, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const stdout = bufferOutput();
    const stderr = bufferOutput();
    const code = await main(
      argv,
      t.context({ stdout, stderr, env: { BLUE_AGENT_CONTROL_URL: url, BLUE_AGENT_TOKEN: server.alice.token } }),
    );
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  }

  it('list, show and resume ID say CONTROL_API_UNREACHABLE with what to check, not UPLOAD_FAILED', async () => {
    // `sessions list` asks who the caller is first (it lists their own sessions by owner), the others the sessions.
    for (const [argv, first] of [
      [['sessions', 'list'], 'auth/me'],
      [['sessions', 'show', ids.aliceClaude!], 'session-uploads'],
      [['resume', ids.aliceClaude!.slice(0, 8)], 'session-uploads'],
    ] as const) {
      const { code, stderr } = await at('http://127.0.0.1:9', [...argv]);
      expect(code, argv.join(' ')).toBe(1);
      expect(stderr).toContain(
        `error [CONTROL_API_UNREACHABLE]: cannot reach the Control API: GET http://127.0.0.1:9/${first}`,
      );
      expect(stderr).toContain('check control_url / BLUE_AGENT_CONTROL_URL; run `blue-agent doctor`');
      expect(stderr).not.toContain('UPLOAD_FAILED');
    }
    const json = await at('http://127.0.0.1:9', ['resume', ids.aliceClaude!, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      error: {
        code: 'CONTROL_API_UNREACHABLE',
        hint: 'check control_url / BLUE_AGENT_CONTROL_URL; run `blue-agent doctor`',
      },
    });
  });

  it('a Control API answering 503 is unreachable too', async () => {
    const down = createServer((_req, res) =>
      res
        .writeHead(503, { 'content-type': 'application/json' })
        .end('{"error":{"code":"unavailable","message":"maintenance"}}'),
    );
    await new Promise<void>((resolve) => down.listen(0, '127.0.0.1', resolve));
    try {
      const { code, stderr } = await at(`http://127.0.0.1:${(down.address() as AddressInfo).port}`, [
        'sessions',
        'list',
      ]);
      expect(code).toBe(1);
      expect(stderr).toContain('error [CONTROL_API_UNREACHABLE]');
      expect(stderr).toContain('answered HTTP 503');
    } finally {
      down.closeAllConnections();
      await new Promise((resolve) => down.close(resolve));
    }
  });

  it('before any login, says not logged in and how to log in; with a Control API but no token, the same', async () => {
    for (const env of [{}, { BLUE_AGENT_CONTROL_URL: server.url }] as Record<string, string>[]) {
      const stdout = bufferOutput();
      const code = await main(
        ['sessions', 'list', '--json'],
        t.context({ stdout, env: { ...env, BLUE_AGENT_TOKEN: '' } }),
      );
      expect(code, JSON.stringify(env)).toBe(1);
      const { error } = JSON.parse(stdout.text()) as { error: { code: string; message: string; hint: string } };
      expect(error.code).toBe('NOT_LOGGED_IN');
      expect(error.message).toMatch(/^not logged in/);
      expect(error.message).not.toContain('upload');
      expect(error.hint).toMatch(/blue-agent login/);
    }
  });

  it('a Control API URL with a wrong path prefix says the server there is not the Control API', async () => {
    const { code, stderr } = await at(`${server.url}/blue`, ['sessions', 'list']);
    expect(code).toBe(1);
    expect(stderr).toContain(
      `error [CONTROL_URL_WRONG]: GET ${server.url}/blue/auth/me answered HTTP 404: [not_found] no route ` +
        `/blue/auth/me; a server answers at ${server.url} but not with the Control API's routes under the path ` +
        `/blue`,
    );
    expect(stderr).toContain('with its path prefix if it has one');
  });

  it('a refused BLUE_AGENT_TOKEN says the environment overrides the token file', async () => {
    const stderr = bufferOutput();
    const code = await main(
      ['sessions', 'list'],
      t.context({ stderr, env: { BLUE_AGENT_CONTROL_URL: server.url, BLUE_AGENT_TOKEN: 'blue_not-a-real-token' } }),
    );
    expect(code).toBe(1);
    expect(stderr.text()).toContain('[AUTH_FAILED]');
    expect(stderr.text()).toContain(
      'BLUE_AGENT_TOKEN (from the environment) overrides the token file: correct or unset it',
    );
  });
});

// Last: this adds an upload and changes sharing.
describe('a new upload and sharing in sessions list', () => {
  it(
    'a new upload of a session becomes its current artifact: one row, the same id; sharing does not reorder the ' +
      'list',
    async () => {
      const first = JSON.parse((await as(server.alice, ['sessions', 'show', ids.aliceClaude!, '--json'])).stdout);
      server.clock.advance(60_000);
      const next = await server.upload(server.alice, Buffer.from('revision 2 of the claude session'), {
        harness: 'claude',
        session_id: first.session.native_session_id,
        compatibility_profile: first.session.compatibility_profile,
        title: 'Explain the build steps, again',
      });
      expect(next.body).toMatchObject({ status: 'complete' });
      expect(next.sessionId).toBe(ids.aliceClaude);
      const listed = JSON.parse((await as(server.alice, ['sessions', 'list', '--json'])).stdout).sessions as {
        id: string;
        status: string;
        title: string;
      }[];
      expect(listed.map((s) => s.id)).toEqual([ids.aliceClaude, ids.aliceCodex]);
      expect(listed[0]).toMatchObject({ status: 'complete', title: 'Explain the build steps, again' });
      expect((await as(server.alice, ['sessions', 'list'])).stdout).toContain('2 sessions.');
      const shown = await as(server.alice, ['sessions', 'show', ids.aliceClaude!]);
      expect(shown.stdout).toContain('  uploads     2 (1 complete, 1 superseded)');

      // Sharing the older session is not an update: it keeps its place.
      server.clock.advance(60_000);
      expect((await as(server.alice, ['sessions', 'share', ids.aliceCodex!, '--mode', 'workspace'])).code).toBe(0);
      const after = JSON.parse((await as(server.alice, ['sessions', 'list', '--json'])).stdout).sessions as {
        id: string;
      }[];
      expect(after.map((s) => s.id)).toEqual([ids.aliceClaude, ids.aliceCodex]);

      // --status is gone: the Control API lists sessions with a completed upload, each by its current one.
      expect((await as(server.alice, ['sessions', 'list', '--status', 'any'])).code).toBe(2);
    },
  );
});

describe('sessions delete', () => {
  /** A session of `user` of its own, for deleting. */
  async function own(user: TestUser, title: string, sharing?: 'workspace'): Promise<string> {
    const slug = title.replace(/\W/g, '-');
    const file = path.join(t.root, `${slug}.bundle`);
    const bundle = await fixtureBundle('claude', file, { title });
    const done = await server.upload(user, await readFile(file), {
      harness: 'claude',
      // A session of its own (the fixture's id is taken by the sessions above).
      session_id: `${bundle.manifest.native_session_id}-${slug}`,
      compatibility_profile: fixtureProfile('claude'),
      artifact_format: 'blue-session-bundle-v1',
      resumable: true,
      title,
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    if (sharing !== undefined)
      expect(
        (await server.call('PUT', `/session-uploads/${done.sessionId}/sharing`, user.token, { mode: sharing })).status,
      ).toBe(200);
    return done.sessionId;
  }
  const exists = async (id: string) =>
    (await server.call('GET', `/session-uploads/${id}`, server.admin.token)).status === 200;

  it('says what it would delete and deletes nothing without --yes; with it, the session and revisions go', async () => {
    const id = await own(server.carol, 'Carol drops this one');
    const asked = await as(server.carol, ['sessions', 'delete', id.slice(0, 8)]);
    expect(asked.code).toBe(2);
    expect(asked.stderr).toContain('[USAGE]');
    expect(asked.stderr).toContain(
      `sessions delete removes Carol drops this one (${id}, you) and every revision of it from the Control API for ` +
        `good; nothing is deleted without --yes`,
    );
    expect(asked.stderr).toContain(`blue-agent sessions delete ${id} --yes`);
    expect(await exists(id)).toBe(true);

    const done = await as(server.carol, ['sessions', 'delete', id.slice(0, 8), '--yes']);
    expect([done.code, done.stderr]).toEqual([0, '']);
    expect(done.stdout).toBe(`Deleted Carol drops this one (${id}) and every revision of it.\n`);
    expect(await exists(id)).toBe(false);
    expect((await as(server.carol, ['sessions', 'show', id])).stderr).toContain('[SESSION_NOT_FOUND]');
    expect((await as(server.carol, ['sessions', 'delete', id, '--yes'])).stderr).toContain('[SESSION_NOT_FOUND]');
  });

  it('a member may not delete what was shared with them; an administrator may delete any; --json says so', async () => {
    const id = await own(server.carol, 'Carol shares this one', 'workspace');
    const refused = await as(server.bob, ['sessions', 'delete', id, '--yes']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('[SESSION_NOT_OWNED]');
    expect(refused.stderr).toContain('belongs to carol@example.com; only its owner or an administrator may delete it');
    expect(await exists(id)).toBe(true);

    const json = await as(server.admin, ['sessions', 'delete', id, '--yes', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ ok: true, id, deleted: true });
    expect(await exists(id)).toBe(false);
    const audit = await server.call('GET', `/audit-events?session_id=${id}&action=session.delete`, server.admin.token);
    expect(audit.body.items).toMatchObject([{ actor: { email: 'admin@example.com' }, owner_id: server.carol.id }]);
  });
});
