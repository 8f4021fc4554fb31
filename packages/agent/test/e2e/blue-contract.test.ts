/**
 * The agent against a stand-in for Blue's own Control API (test/support/blue-contract-server.ts), which answers only
 * the contract's shapes: the full GovernanceConfig fetched and applied (a stand-in Claude Code on PATH), a captured
 * session drained (presign → PUT to another origin → a relative complete_url), listed, shown, shared by e-mail,
 * resumed with --no-launch into another HOME by the person it was shared with, a client status reported, and a 426
 * pinning another major refused with the cached policy deleted. Every request and answer is held to Blue's published
 * schemas along the way.
 */
import { readFile, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { bufferOutput, stateLayout, type Context } from '../../src/context.js';
import { clientStatusBody, instanceId } from '../../src/daemon/report.js';
import { policyTask, reconcileTask, statusTask } from '../../src/daemon/tasks.js';
import { lastKnownGoodPath } from '../../src/policy/index.js';
import { Spool } from '../../src/spool/index.js';
import {
  startBlueContractServer,
  type BlueContractServer,
  type BlueUser,
} from '../../../../test/support/blue-contract-server.js';
import {
  CLAUDE_PROFILE,
  claudeProjectKey,
  claudeSession,
  type ClaudeSession,
} from '../../../../test/support/cli-process.js';
import { makeTestHome, versionStubs, type TestHome } from '../../../../test/support/context.js';

const MANAGED = 'capture --harness claude';

let server: BlueContractServer;
/** Alice's machine, where the session is captured; Bob's, where it is resumed. */
let a: TestHome;
let b: TestHome;
let binA: string;
let binB: string;
let version: string;
let captured: ClaudeSession;
let sessionId: string;

beforeAll(async () => {
  a = await makeTestHome();
  b = await makeTestHome();
  version = a.ctx.self.version;
  server = await startBlueContractServer({ clientVersion: version });
  binA = await versionStubs(a.root, { claude: '2.1.197 (Claude Code)' });
  binB = await versionStubs(b.root, { claude: '2.1.197 (Claude Code)' });
});

afterAll(async () => {
  await server?.close();
  await a?.cleanup();
  await b?.cleanup();
});

function contextOf(
  home: TestHome,
  bin: string,
  user: BlueUser,
  extra: Parameters<TestHome['context']>[0] = {},
): Context {
  return home.context({
    ...extra,
    env: {
      PATH: `${bin}:/usr/bin:/bin`,
      BLUE_AGENT_CONTROL_URL: server.url,
      BLUE_AGENT_TOKEN: user.token,
      ...extra.env,
    },
  });
}

async function cli(
  home: TestHome,
  bin: string,
  user: BlueUser,
  argv: string[],
  cwd?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = bufferOutput();
  const stderr = bufferOutput();
  const code = await main(argv, contextOf(home, bin, user, { stdout, stderr, ...(cwd === undefined ? {} : { cwd }) }));
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

const alice = (argv: string[]) => cli(a, binA, server.alice, argv);
const settingsA = () => readFile(path.join(a.home, '.claude', 'settings.json'), 'utf8');
const exists = (file: string) =>
  stat(file).then(
    () => true,
    () => false,
  );

describe("the agent against Blue's contract", () => {
  it('fetches the whole GovernanceConfig (string revision, packages, gateway, managed_config, mcp)', async () => {
    const { code, stdout, stderr } = await alice(['reconcile', '--json']);
    expect(code, stderr).toBe(0);
    const report = JSON.parse(stdout);
    expect(report.policy).toMatchObject({ revision: server.governance().revision, source: 'fetched', warnings: [] });
    expect(report.harnesses.find((h: { harness: string }) => h.harness === 'claude')).toMatchObject({
      state: 'active',
      action: 'create',
      profile: CLAUDE_PROFILE,
    });
    expect(await settingsA()).toContain(MANAGED);
    const fetch = server.requests.find((r) => r.path === '/governance-config')!;
    expect(fetch.headers['x-blue-contract-version']).toBe('3');
    expect(String(fetch.headers['x-blue-capabilities']).split(',')).toEqual(
      expect.arrayContaining(server.governance().required_capabilities as string[]),
    );
    expect(server.problems).toEqual([]);
  });

  it(
    "shows the organisation's recommendation and rollout floor in reconcile and status, and the policy still " +
      'applies',
    async () => {
      const [major] = version.split('.');
      server.publish({ required_client_version: `${major}.999.0`, minimum_client_version: `${major}.998.0` });
      const human = await alice(['reconcile']);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toContain(
        `warning: the organisation recommends blue-agent ${major}.999.0; this is ${version}`,
      );
      expect(human.stdout).toContain(`warning: the organisation's rollout floor is blue-agent ${major}.998.0`);
      const status = JSON.parse((await alice(['status', '--json'])).stdout);
      expect(status.policy.warnings).toEqual(
        expect.arrayContaining([expect.stringContaining(`recommends blue-agent ${major}.999.0`)]),
      );
      server.publish();
      expect((await alice(['reconcile'])).code).toBe(0);
    },
  );

  it(
    'drains a captured session: presign, PUT to the storage origin (no token), complete on the relative ' +
      'complete_url',
    async () => {
      const cwd = path.join(a.home, 'work', 'shop');
      await mkdir(cwd, { recursive: true });
      captured = await claudeSession(path.join(a.home, '.claude'), {
        id: '0e2c1a4e-7b1f-4c55-9a51-2b4d7a4d8e10',
        cwd,
        prompt: 'Add a coupon field to the checkout page',
      });
      const spool = await Spool.open(stateLayout(a.env.BLUE_AGENT_HOME!));
      await spool.enqueueIntake({
        harness: 'claude',
        profile: CLAUDE_PROFILE,
        payload: captured.payload,
        createdAtUnixMs: Date.now() - 60_000,
      });

      const { code, stdout, stderr } = await alice(['drain', '--json']);
      expect(code, stderr).toBe(0);
      const report = JSON.parse(stdout);
      expect(report).toMatchObject({ ok: true, failed: [], retried: [], left_ready: 0 });
      expect(report.uploaded).toHaveLength(1);
      // Blue's server names no captured session at upload time.
      expect(report.uploaded[0].captured_session_id).toBeUndefined();

      const artifact = report.uploaded[0].upload_id as string;
      const put = server.requests.find((r) => r.origin === 'storage' && r.method === 'PUT')!;
      expect(put.path).toBe(`/bucket/${artifact}`);
      expect(put.headers['x-amz-meta-sha256']).toBe(report.uploaded[0].sha256);
      expect(put.headers.authorization).toBeUndefined();
      const done = server.requests.find((r) => r.path === `/session-uploads/${artifact}/complete`)!;
      expect(done).toMatchObject({ origin: 'control', method: 'POST', status: 200 });
      expect(server.problems).toEqual([]);
    },
  );

  it('lists the session by its captured-session id (owned, not expired, no digest from Blue), shows it', async () => {
    const { code, stdout, stderr } = await alice(['sessions', 'list', '--json']);
    expect(code, stderr).toBe(0);
    const { sessions } = JSON.parse(stdout);
    expect(sessions).toHaveLength(1);
    sessionId = sessions[0].id;
    expect(sessions[0]).toMatchObject({
      user_email: 'alice@example.com',
      harness: 'claude',
      native_session_id: captured.id,
      title: 'Add a coupon field to the checkout page',
      sharing_mode: 'private',
      status: 'complete',
      resumable: true,
      sha256: null,
      artifact_id: null,
      owned: true,
      expired: false,
      repository: { root: null, remote: null },
    });
    expect(sessions[0]).not.toHaveProperty('upload_id');
    // A short id: Blue's listing ignores id_prefix, so the agent finds it among the pages.
    const show = await alice(['sessions', 'show', sessionId.slice(0, 8)]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain(`  id          ${sessionId}`);
    expect(show.stdout).toContain('  owner       you (alice@example.com)');
    expect(show.stdout).toContain('  sharing     private (only you)');
    expect(show.stdout).toContain('  uploads     1 (1 complete)');
    expect(show.stdout).toMatch(/^ {2}retention {3}kept until \d{4}-\d\d-\d\dT/m);
  });

  it('shares it with Bob by e-mail: the address resolved to his user id, PUT {mode, user_ids} only', async () => {
    const { code, stdout, stderr } = await alice([
      'sessions',
      'share',
      sessionId.slice(0, 8),
      '--mode',
      'selected',
      '--user',
      'BOB@example.com',
    ]);
    expect(code, stderr).toBe(0);
    expect(stdout).toBe(
      `Add a coupon field to the checkout page (${sessionId}): sharing is now selected: BOB@example.com\n`,
    );
    const lookup = server.requests.find((r) => r.path === '/session-uploads/members')!;
    expect(lookup.query.get('q')).toBe('bob@example.com');
    const put = server.requests.find((r) => r.method === 'PUT' && r.path === `/session-uploads/${sessionId}/sharing`)!;
    expect(JSON.parse(put.body)).toEqual({ mode: 'selected', user_ids: [server.bob.id] });

    const unknown = await alice(['sessions', 'share', sessionId, '--mode', 'selected', '--user', 'nobody@example.com']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('[SHARE_RECIPIENT_UNKNOWN]');
    expect(unknown.stderr).toContain('nobody@example.com');

    const bob = JSON.parse((await cli(b, binB, server.bob, ['sessions', 'list', '--all', '--json'])).stdout);
    expect(bob.sessions.map((s: { id: string; owned: boolean }) => [s.id, s.owned])).toEqual([[sessionId, false]]);
    // Carol may not see it: Blue answers 403, which reads as not found.
    const carol = await cli(b, binB, server.carol, ['sessions', 'show', sessionId]);
    expect(carol.code).toBe(1);
    expect(carol.stderr).toContain('[SESSION_NOT_FOUND]');
    // And Bob may not change it.
    const notOwner = await cli(b, binB, server.bob, ['sessions', 'share', sessionId, '--mode', 'private']);
    expect(notOwner.stderr).toContain('[SESSION_NOT_OWNED]');
    expect(server.problems).toEqual([]);
  });

  it(
    'Bob resumes it into his HOME with --no-launch: downloaded (size checked, no digest from Blue), verified, ' +
      'restored',
    async () => {
      const dest = path.join(b.home, 'work', 'shop');
      await mkdir(dest, { recursive: true });
      const { code, stdout, stderr } = await cli(b, binB, server.bob, [
        'resume',
        sessionId.slice(0, 8),
        '--dest',
        dest,
        '--yes',
        '--no-launch',
      ]);
      expect(code, stderr).toBe(0);
      expect(stdout).toBe(`cd ${dest} && claude --resume ${captured.id}\n`);
      const restored = path.join(b.home, '.claude', 'projects', claudeProjectKey(dest), `${captured.id}.jsonl`);
      expect(await exists(restored)).toBe(true);
      const download = server.requests.find((r) => r.path === `/session-uploads/${sessionId}/download`)!;
      expect(download.status).toBe(200);
      expect(
        server.requests
          .filter((r) => r.origin === 'storage' && r.method === 'GET')
          .every((r) => r.headers.authorization === undefined),
      ).toBe(true);
      expect(server.problems).toEqual([]);
    },
  );

  it('reports a client status (204): the revision applied, files ok, the harnesses as inventory entries', async () => {
    const ctx = contextOf(a, binA, server.alice);
    const policy = await policyTask(ctx, {}, ctx.paths.policySnapshotFile);
    expect(policy.error).toBeUndefined();
    const reconciled = await reconcileTask(ctx, ctx.paths.policySnapshotFile);
    const body = clientStatusBody(
      ctx,
      await instanceId(ctx),
      { harnesses: reconciled.harnesses },
      policy.resolved!.revision,
      new Set(),
    );
    expect(await statusTask(ctx, body, 5_000)).toEqual({ ok: true });
    const sent = server.statuses.at(-1)!;
    expect(sent).toMatchObject({
      config_revision: server.governance().revision,
      applied: true,
      files_ok: true,
      client_version: version,
    });
    expect(sent.harnesses).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'claude',
          api_allowed: true,
          client_supported: true,
          installed: true,
          reconciled: true,
          version: '2.1.197',
          compatibility_profile: CLAUDE_PROFILE,
        }),
      ]),
    );
    expect(server.requests.at(-1)).toMatchObject({ path: '/client-status', status: 204 });
    expect(server.problems).toEqual([]);
  });

  it('a 426 pinning another major: refused, nothing applied, the cached policy deleted', async () => {
    const lkg = lastKnownGoodPath(a.ctx);
    expect(await exists(lkg)).toBe(true);
    const hooks = await settingsA();
    server.publish({ contract_version: 4, required_client_version: '99.0.0' });
    const { code, stderr } = await alice(['reconcile']);
    expect(code).toBe(1);
    expect(stderr).toContain('[CLIENT_VERSION_MISMATCH]');
    expect(stderr).toContain(`requires blue-agent 99.0.0, and this is ${version}`);
    expect(stderr).toContain('Install blue-agent 99.0.0');
    expect(server.requests.at(-1)).toMatchObject({ path: '/governance-config', status: 426 });
    expect(await exists(lkg)).toBe(false);
    expect(await settingsA()).toBe(hooks);
    // Without a cached policy nothing is enforced from it: the next run says why.
    const again = await alice(['reconcile']);
    expect(again.stderr).toContain('[CLIENT_VERSION_MISMATCH]');
    expect(server.problems).toEqual([]);
  });
});
