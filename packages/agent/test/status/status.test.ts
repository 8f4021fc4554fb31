/**
 * `blue-agent status`: read from a temporary HOME with fake harness binaries and a Control API on loopback that
 * records every request — status must not make one, and must not write a single byte.
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeLastDrain, writeRunState } from '../../src/daemon/state.js';
import { startPolicyServer, type PolicyServer } from '../../../../test/support/policy-server.js';
import { enqueue, setup, snapshot, type Setup } from '../../../../test/support/status-home.js';

let s: Setup;
let server: PolicyServer | undefined;

beforeEach(async () => {
  s = await setup();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await s.cleanup();
});

const policy = (origin: string, revision = 7) => ({
  revision,
  ttl_seconds: 3600,
  session_upload: { presign_url: `${origin}/session-uploads/presign` },
});

async function connected(): Promise<PolicyServer> {
  server = await startPolicyServer({});
  server.setPolicy(policy(server.origin));
  await s.config(`control_url: ${server.origin}\n`);
  await s.token('tok_0123456789abcdef');
  return server;
}

/** A pid that no process has: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

describe('status', () => {
  it(
    'shows policy, harnesses, spool, last drain, agent and service — without a request and without writing ' +
      'anything',
    async () => {
      const api = await connected();
      await s.harnesses({ claude: '2.1.332 (Claude Code)', opencode: '1.18.33' });
      // The clock is the test's: the policy was fetched 42 s before status looks, whatever the machine's speed.
      const now = Date.now();
      expect((await s.cli(['reconcile'], { clock: { now: () => now - 42_000 } })).code).toBe(0);
      const ids = await enqueue(s.stateDir, 'claude', ['sess-old', 'sess-new'], [now - 2 * 3600_000, now - 3600_000]);
      await writeLastDrain(s.ctx, {
        finished_at_unix_ms: now - 300_000,
        ok: true,
        built: 1,
        uploaded: 3,
        failed: 0,
        retried: 0,
        left: 0,
        left_ready: 0,
        notes: [],
      });
      // A capture the sh hook handed over that no drain has admitted yet.
      await mkdir(path.join(s.stateDir, 'spool', 'inbox'), { recursive: true, mode: 0o700 });
      await writeFile(path.join(s.stateDir, 'spool', 'inbox', '4242-0.hook'), 'blue-agent-hook-v1\n\n{}', {
        mode: 0o600,
      });

      const requests = api.requests.length;
      const before = await snapshot(s.t.root);
      const clock = { now: () => now };
      const json = await s.cli(['status', '--json'], { clock });
      const human = await s.cli(['status'], { clock });
      expect(await snapshot(s.t.root)).toEqual(before);
      expect(api.requests.length).toBe(requests);

      expect(json.code).toBe(0);
      const report = JSON.parse(json.stdout);
      expect(report).toMatchObject({
        ok: true,
        policy: {
          revision: 7,
          source: 'cached',
          location: `${api.origin}/governance-config`,
          stale: false,
          capture_enabled: true,
          warnings: [],
        },
        spool: {
          exists: true,
          counts: { intake: 2, building: 0, ready: 0, uploading: 0, failed: 0 },
          handed_over: 1,
          waiting: 3,
          oldest_waiting: {
            id: ids[0],
            state: 'intake',
            harness: 'claude',
            session_id: 'sess-old',
            created_at_unix_ms: now - 2 * 3600_000,
          },
        },
        last_drain: { ok: true, uploaded: 3 },
        agent: { state: 'absent' },
        service: { manager: expect.any(String) },
      });
      expect(report.policy.age_seconds).toBe(42);
      const h = Object.fromEntries(report.harnesses.map((x: { harness: string }) => [x.harness, x]));
      expect(h.claude).toMatchObject({
        installed: true,
        version: '2.1.332',
        profile: 'claude-v2_0_12',
        verified: true,
        verified_before: '2.1.333-0',
        state: 'active',
        pending: null,
      });
      expect(h.opencode).toMatchObject({ state: 'active', pending: null });
      expect(h.codex).toMatchObject({ installed: false, state: 'not_installed' });

      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(
        /^Policy +revision 7 \(cached: http:\/\/127\.0\.0\.1:\d+\/governance-config, fetched 42 s ago\)$/m,
      );
      expect(human.stdout).toMatch(/^ {2}claude +active +claude-v2_0_12 +2\.1\.332$/m);
      expect(human.stdout).toMatch(/^ {2}codex +not_installed/m);
      expect(human.stdout).toMatch(/^Spool +3 waiting \(handed over 1, intake 2\)$/m);
      expect(human.stdout).toContain(`oldest waiting: ${ids[0]} (intake, claude, captured 2 h ago)`);
      expect(human.stdout).toMatch(/^Last drain +5 min ago: ok \(built 1, uploaded 3, failed 0, retried 0, left 0\)$/m);
      expect(human.stdout).toMatch(/^Agent +not running$/m);
      expect(human.stdout).toMatch(/^Service +/m);
      expect(human.stdout).not.toMatch(/\u001b\[/);
    },
  );

  it('keeps working when the Control API is down: it never asks it', async () => {
    const api = await connected();
    await s.harnesses({ claude: '2.1.332 (Claude Code)' });
    expect((await s.cli(['reconcile'])).code).toBe(0);
    // Down as in "never answers": a status that asked would wait on it, and the request would be seen.
    api.setHandler(() => undefined);
    const requests = api.requests.length;
    const out = await s.cli(['status', '--json']);
    expect(JSON.parse(out.stdout).policy).toMatchObject({ revision: 7, source: 'cached' });
    expect(api.requests.length).toBe(requests);
    // And with nothing listening at all.
    await api.close();
    server = undefined;
    expect(JSON.parse((await s.cli(['status', '--json'])).stdout).policy).toMatchObject({
      revision: 7,
      source: 'cached',
    });
  });

  it('a harness newer than its ceiling shows as unverified, with the certify command; drift as pending', async () => {
    const file = path.join(s.t.root, 'policy.yaml');
    await writeFile(
      file,
      'revision: 3\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n',
    );
    await s.config(`policy_file: ${file}\n`);
    await s.harnesses({ claude: '2.1.332 (Claude Code)', opencode: '1.19.0' });

    const before = await snapshot(s.t.root);
    const report = JSON.parse((await s.cli(['status', '--json'])).stdout);
    const human = (await s.cli(['status'])).stdout;
    expect(await snapshot(s.t.root)).toEqual(before);

    expect(report.policy).toMatchObject({ revision: 3, source: 'file', location: file, age_seconds: null });
    const h = Object.fromEntries(report.harnesses.map((x: { harness: string }) => [x.harness, x]));
    expect(h.opencode).toMatchObject({
      version: '1.19.0',
      profile: 'opencode-v1_2_0',
      verified: false,
      verified_before: '1.18.34-0',
      state: 'unverified_version',
      pending: null,
    });
    // Not reconciled yet: the hook is missing, and status says what reconcile would do.
    expect(h.claude).toMatchObject({ state: 'active', pending: 'create' });
    expect(human).toMatch(/^ {2}opencode +unverified_version +opencode-v1_2_0 +1\.19\.0 \(unverified\)$/m);
    expect(human).toContain(
      'certify it in a checkout of blue-agent: scripts/with-node24 npm run certify -- --harness opencode --version ' +
        '1.19.0',
    );
    // Missing, not "out of date": the row is marked and the note comes right under it.
    expect(human).toMatch(
      new RegExp(
        String.raw`^ {2}claude +active \(missing hook\) +claude-v2_0_12 +2\.1\.332\n {12}the managed hook is ` +
          'missing: `blue-agent reconcile` adds it$',
        'm',
      ),
    );
    expect(human).not.toContain('out of date');
    expect(human).not.toMatch(/^ {2}claude +active +claude/m);
    expect(human).toMatch(/^Spool +empty \(not created yet\)$/m);
  });

  it('a harness in error says its code, in --json and on its line', async () => {
    const file = path.join(s.t.root, 'policy.yaml');
    await writeFile(
      file,
      'revision: 3\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n',
    );
    await s.config(`policy_file: ${file}\n`);
    await s.harnesses({ claude: '2.1.332 (Claude Code)' });
    await mkdir(path.join(s.t.home, '.claude'), { recursive: true });
    await writeFile(path.join(s.t.home, '.claude', 'settings.json'), '{\n  "hooks": { oops }\n}\n');
    const report = JSON.parse((await s.cli(['status', '--json'])).stdout);
    const h = Object.fromEntries(report.harnesses.map((x: { harness: string }) => [x.harness, x]));
    expect(h.claude).toMatchObject({ state: 'error', code: 'NATIVE_CONFIG_PARSE' });
    expect(h.codex).not.toHaveProperty('code');
    expect((await s.cli(['status'])).stdout).toMatch(
      /^ {2}claude +error +claude-v2_0_12 +2\.1\.332\n {12}\[NATIVE_CONFIG_PARSE\] .*settings\.json/m,
    );
  });

  it('with no policy configured, still inspects the harnesses and says capture is off', async () => {
    await s.harnesses({ claude: '2.1.332 (Claude Code)' });
    const before = await snapshot(s.t.root);
    const out = await s.cli(['status', '--json']);
    expect(await snapshot(s.t.root)).toEqual(before);
    expect(out.code).toBe(0);
    const report = JSON.parse(out.stdout);
    expect(report.policy).toMatchObject({ revision: null, source: null, error: { code: 'POLICY_MISSING' } });
    expect(report.harnesses.find((x: { harness: string }) => x.harness === 'claude')).toMatchObject({
      version: '2.1.332',
      profile: 'claude-v2_0_12',
      state: 'capture_disabled',
      reason: 'no governance policy is available, so capture is off',
    });
    expect(report.last_drain).toBeNull();
    const human = (await s.cli(['status'])).stdout;
    expect(human).toMatch(/^Policy +no governance policy source is configured$/m);
    expect(human).toContain('hint: Run `blue-agent login --control-url URL`');
    expect(human).toMatch(/^Last drain +none recorded$/m);
  });

  it('a broken agent config is reported in place; the rest of the status still shows', async () => {
    await s.config('control_url: [unclosed\n');
    const now = Date.now();
    await enqueue(s.stateDir, 'claude', ['a'], [now - 1000]);
    const out = await s.cli(['status', '--json']);
    expect(out.code).toBe(0);
    const report = JSON.parse(out.stdout);
    expect(report.config_error).toMatchObject({ code: 'CONFIG_PARSE' });
    expect(report.harnesses_error).toMatchObject({ code: 'CONFIG_PARSE' });
    expect(report.spool).toMatchObject({ waiting: 1 });
    expect((await s.cli(['status'])).stdout).toMatch(/^Config +error: /m);
    const doctor = JSON.parse((await s.cli(['doctor', '--json'])).stdout);
    expect(doctor.checks.find((c: { id: string }) => c.id === 'config')).toMatchObject({
      status: 'fail',
      fix: expect.any(String),
    });
  });

  it('writes nothing on a machine where nothing has run yet (no state directory is created)', async () => {
    const { rm } = await import('node:fs/promises');
    await rm(s.stateDir, { recursive: true });
    const before = await snapshot(s.t.root);
    expect((await s.cli(['status'])).code).toBe(0);
    expect((await s.cli(['status', '--json'])).code).toBe(0);
    expect(await snapshot(s.t.root)).toEqual(before);
    await expect(stat(s.stateDir)).rejects.toThrow();
  });

  it('shows the running agent, and an agent that is gone as not running with when it was last seen', async () => {
    const api = await connected();
    expect((await s.cli(['reconcile'])).code).toBe(0);
    const now = Date.now();
    const run = {
      pid: process.pid,
      started_at_unix_ms: now - 3 * 3600_000,
      updated_at_unix_ms: now - 30_000,
      policy: {
        revision: 7,
        source: 'fetched' as const,
        fetched_at_unix_ms: now - 30_000,
        failures: 0,
        next_check_at_unix_ms: now + 600_000,
      },
      last_reconcile: { at_unix_ms: now - 30_000, ok: true, corrected: ['claude'] },
      next_drain_at_unix_ms: now + 120_000,
    };
    await writeRunState(s.ctx, run);
    // Status reads the times against the test's clock: "30 s ago" is exact however long the steps take.
    const clock = { now: () => now };
    let report = JSON.parse((await s.cli(['status', '--json'], { clock })).stdout);
    expect(report.agent).toMatchObject({
      state: 'running',
      pid: process.pid,
      last_reconcile: { corrected: ['claude'] },
    });
    // The agent fetched this very revision: the source is what it says.
    expect(report.policy).toMatchObject({ revision: 7, source: 'fetched' });
    let human = (await s.cli(['status'], { clock })).stdout;
    expect(human).toMatch(/^Agent +running \(pid \d+, started 3 h ago, last report 30 s ago\)$/m);
    expect(human).toContain('last reconcile 30 s ago: corrected claude');
    expect(human).toContain('next drain in 2 min');
    expect(human).toContain('next policy check in 10 min');
    expect(report.agent.next_policy_check_at_unix_ms).toBe(now + 600_000);

    await writeRunState(s.ctx, {
      ...run,
      pid: deadPid(),
      updated_at_unix_ms: now - 2 * 3600_000,
      next_drain_at_unix_ms: now - 2 * 3600_000,
    });
    report = JSON.parse((await s.cli(['status', '--json'], { clock })).stdout);
    expect(report.agent).toMatchObject({ state: 'stopped', detail: expect.stringMatching(/is gone/) });
    expect(report.policy.source).toBe('cached');
    human = (await s.cli(['status'], { clock })).stdout;
    expect(human).toMatch(/^Agent +not running \(last seen 2 h ago; pid \d+ is gone\)$/m);

    // A live pid whose file stopped changing long ago (the pid was reused) is not the agent either.
    await writeRunState(s.ctx, {
      ...run,
      updated_at_unix_ms: now - 5 * 3600_000,
      policy: { ...run.policy, next_check_at_unix_ms: now - 4 * 3600_000 },
      next_drain_at_unix_ms: now - 4 * 3600_000,
    });
    report = JSON.parse((await s.cli(['status', '--json'], { clock })).stdout);
    expect(report.agent).toMatchObject({ state: 'stopped', detail: expect.stringMatching(/has not reported/) });
    void api;
  });

  it('a service that cannot run in this session is not offered as the fix', async () => {
    await writeFile(
      path.join(s.bin, 'systemctl'),
      '#!/bin/sh\nif [ "$1" = is-system-running ]; then echo running; exit 0; fi\necho "Failed to connect to bus: ' +
        'No medium found" >&2\nexit 1\n',
      { mode: 0o755 },
    );
    const human = await s.cli(['status'], { platform: 'linux' });
    expect(human.stdout).toMatch(
      new RegExp(
        String.raw`^Service +systemd: not installed\n +not installed; systemctl --user could not answer: ` +
          String.raw`Failed to connect to bus: No medium found \(no systemd user manager in this session\); ` +
          '`blue-agent doctor` says what runs the agent here$',
        'm',
      ),
    );
    expect(human.stdout).not.toContain('blue-agent service install');
    const json = JSON.parse((await s.cli(['status', '--json'], { platform: 'linux' })).stdout);
    expect(json.service).toMatchObject({ installed: false, availability: 'no_user_manager' });
  });

  it('counts a spool that fails its safety check, and says why', async () => {
    const now = Date.now();
    await enqueue(s.stateDir, 'claude', ['a', 'b', 'c'], [now - 60_000, now - 50_000, now - 40_000]);
    const intake = path.join(s.stateDir, 'spool', 'intake');
    await chmod(intake, 0o777);
    const report = JSON.parse((await s.cli(['status', '--json'])).stdout);
    expect(report.spool).toMatchObject({ counts: { intake: 3 }, waiting: 3, unsafe: { code: 'SPOOL_UNSAFE' } });
    expect(report.spool.oldest_waiting.created_at_unix_ms).toBe(now - 60_000);
    const human = (await s.cli(['status'])).stdout;
    expect(human).toContain(`unsafe: the spool directory ${intake} is writable by group and others`);
    expect(human).toContain(`chmod 700 '${intake}'`);
  });
});
