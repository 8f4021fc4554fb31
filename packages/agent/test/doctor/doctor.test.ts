/**
 * `blue-agent doctor`: healthy and broken set-ups in temporary HOMEs, with the real Control API on loopback, fake
 * harness binaries and a fake `systemctl` on PATH. Doctor talks to the Control API but writes nothing.
 */
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkHarness, checkService, checkNode, type Check } from '../../src/doctor/checks.js';
import { HARNESSES } from '../../src/harnesses/names.js';
import { hookStateKey, hookTrustHash } from '../../src/harnesses/codex/trust.js';
import { renderUnit, unitFilePath } from '../../src/service/index.js';
import type { HarnessStatus } from '../../src/status/collect.js';
import { startTestServer, type TestServer } from '../../../../test/support/control-server.js';
import { enqueue, setup, snapshot, type Setup } from '../../../../test/support/status-home.js';

let s: Setup;
let api: TestServer | undefined;

beforeEach(async () => {
  s = await setup();
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await s.cleanup();
});

/** The real Control API with a published policy, the agent logged in as alice, claude and opencode installed. */
async function healthy(): Promise<TestServer> {
  api = await startTestServer();
  api.server.store.publishPolicy(
    {
      revision: 1,
      contract_version: 1,
      ttl_seconds: 3600,
      session_upload: { presign_url: `${api.url}/session-uploads/presign` },
    },
    Date.now(),
  );
  await s.config(`control_url: ${api.url}\n`);
  await s.token(api.alice.token);
  await s.harnesses({ claude: '2.1.332 (Claude Code)', opencode: '1.18.33' });
  expect((await s.cli(['reconcile'])).code).toBe(0);
  await enqueue(s.stateDir, 'claude', ['sess-1'], [Date.now() - 60_000]);
  return api;
}

/** A fake systemctl that answers is-enabled / is-active as told. */
async function fakeSystemctl(enabled: string, active: string): Promise<void> {
  await writeFile(
    path.join(s.bin, 'systemctl'),
    `#!/bin/sh\ncase "$2" in\n  is-enabled) echo ${enabled} ;;\n  is-active) echo ${active} ;;\n  *) exit 1 ;;\nesac\n`,
    { mode: 0o755 },
  );
}

async function installUnit(): Promise<void> {
  const ctx = s.context({ platform: 'linux' });
  const file = unitFilePath(ctx)!;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, renderUnit(ctx));
}

async function doctor(
  extra: string[] = [],
  overrides: Parameters<Setup['context']>[0] = {},
): Promise<{ code: number; checks: Record<string, Check>; list: Check[]; ok: boolean }> {
  const out = await s.cli(['doctor', '--json', ...extra], { platform: 'linux', ...overrides });
  const parsed = JSON.parse(out.stdout) as { ok: boolean; checks: Check[]; summary: Record<string, number> };
  expect(parsed.summary.fail).toBe(parsed.checks.filter((c) => c.status === 'fail').length);
  for (const c of parsed.checks) if (c.status !== 'ok') expect(c.fix, `${c.id} has a fix`).toEqual(expect.any(String));
  return {
    code: out.code,
    checks: Object.fromEntries(parsed.checks.map((c) => [c.id, c])),
    list: parsed.checks,
    ok: parsed.ok,
  };
}

describe('doctor', () => {
  it('a healthy machine: every check ok, exit 0, and nothing written', async () => {
    await healthy();
    await installUnit();
    await fakeSystemctl('enabled', 'active');
    const before = await snapshot(s.t.root);
    const result = await doctor();
    const human = await s.cli(['doctor'], { platform: 'linux' });
    expect(await snapshot(s.t.root)).toEqual(before);

    expect(result.list.map((c) => c.id)).toEqual([
      'node',
      'config',
      'control-api',
      'token',
      'policy',
      'spool',
      ...HARNESSES.map((h) => `harness:${h}`),
      'codex-trust',
      'sessions-at-risk',
      'service',
    ]);
    expect(result.list.filter((c) => c.status !== 'ok')).toEqual([]);
    expect(result).toMatchObject({ code: 0, ok: true });
    expect(result.checks.token!.message).toContain('is accepted');
    // The Control API names each revision (a UUID, as Blue's does).
    expect(result.checks.policy!.message).toMatch(
      /^revision [0-9a-f-]{36} \(fetched: from the Control API\), capture on$/,
    );
    expect(result.checks['harness:claude']!.message).toBe(
      'claude 2.1.332, profile claude-v2_0_12, certified below 2.1.333-0: active',
    );
    expect(result.checks.service!.message).toMatch(/installed, enabled, running$/);

    expect(human.code).toBe(0);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 12).every((l) => /^ok {4}\S/.test(l))).toBe(true);
    expect(lines.at(-1)).toBe(`${result.list.length} ok, 0 warnings, 0 failures`);
  });

  it('no Control API configured: fail with the login command (a policy file alone: a warning)', async () => {
    await s.harnesses({ claude: '2.1.332 (Claude Code)' });
    let result = await doctor();
    expect(result.code).toBe(1);
    expect(result.checks['control-api']).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('blue-agent login --control-url URL'),
    });
    expect(result.checks.policy).toMatchObject({ status: 'fail' });
    expect(result.checks.token).toMatchObject({ status: 'ok' });

    const file = path.join(s.t.root, 'policy.yaml');
    await writeFile(file, 'revision: 2\n');
    await s.config(`policy_file: ${file}\n`);
    result = await doctor();
    expect(result.checks['control-api']).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/stay in the spool/),
    });
    expect(result.checks.policy).toMatchObject({ status: 'ok', message: `revision 2 (file: ${file}), capture off` });
    expect(result.list.filter((c) => c.status === 'fail')).toEqual([]);
  });

  it('the Control API is down: unreachable is a failure, the token unchecked, the cached policy used', async () => {
    await healthy();
    // The same URL (and so the same policy cache), after the server has gone.
    await api!.close();
    api = undefined;
    // Refused at once (ECONNREFUSED, named below): nothing to wait for, so a doctor that hung fails by the test's
    // timeout.
    const result = await doctor();
    expect(result.code).toBe(1);
    expect(result.checks['control-api']).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/cannot be reached: unreachable \(ECONNREFUSED\)/),
      fix: expect.stringContaining('control_url'),
    });
    expect(result.checks.token).toMatchObject({ status: 'warn' });
    expect(result.checks.policy).toMatchObject({
      status: 'ok',
      message: expect.stringMatching(/^revision [0-9a-f-]{36} \(cached/),
    });
    expect(result.checks['harness:claude']).toMatchObject({ status: 'ok' });
  });

  it('a refused token fails with the login fix; a token file others can read fails with the chmod fix', async () => {
    await healthy();
    await s.token('tok_not_a_real_token');
    let result = await doctor();
    expect(result.code).toBe(1);
    expect(result.checks['control-api']).toMatchObject({ status: 'ok' });
    expect(result.checks.token).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('HTTP 401'),
      fix: expect.stringContaining('blue-agent login --control-url URL'),
    });

    await s.token(api!.alice.token, 0o644);
    result = await doctor();
    const tokenFile = path.join(s.stateDir, 'token');
    expect(result.checks.token).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('accessible by group or others'),
      fix: `Run \`chmod 600 ${tokenFile}\`, then try again.`,
    });
  });

  it('a spool open to others (0755) fails with the chmod fix', async () => {
    await healthy();
    const spool = path.join(s.stateDir, 'spool');
    await chmod(spool, 0o755);
    let result = await doctor();
    expect(result.code).toBe(1);
    expect(result.checks.spool).toMatchObject({
      status: 'fail',
      message: expect.stringContaining(`${spool} (mode 0755)`),
      fix: `chmod 700 ${spool}`,
    });

    // Writable by others is what the spool itself refuses (SPOOL_UNSAFE); a loose record file is caught too.
    await chmod(spool, 0o700);
    const intake = path.join(spool, 'intake');
    await chmod(intake, 0o777);
    result = await doctor();
    expect(result.checks.spool).toMatchObject({ status: 'fail', fix: `chmod 700 ${intake}` });
    await chmod(intake, 0o700);
    const names = await readdir(intake);
    await chmod(path.join(intake, names[0]!), 0o644);
    result = await doctor();
    expect(result.checks.spool).toMatchObject({ status: 'fail', fix: `chmod 600 ${path.join(intake, names[0]!)}` });
  });

  it('a harness newer than its ceiling is a warning with the certify command', async () => {
    await healthy();
    await s.harnesses({ opencode: '1.19.0' });
    const result = await doctor();
    expect(result.code).toBe(0);
    expect(result.checks['harness:opencode']).toMatchObject({
      status: 'warn',
      message:
        "opencode 1.19.0 is unverified: at or past opencode-v1_2_0's certified ceiling 1.18.34-0, so capture is off",
      fix: expect.stringContaining(
        'certify it in a checkout of blue-agent: scripts/with-node24 npm run certify -- --harness opencode ' +
          '--version 1.19.0',
      ),
    });
  });

  it('Codex awaiting trust is a warning with the /hooks step, and ok once Codex trusts the hook', async () => {
    await healthy();
    await s.harnesses({ codex: 'codex-cli 0.171.0' });
    let result = await doctor();
    // Not reconciled yet: the hook is missing.
    expect(result.checks['harness:codex']).toMatchObject({ status: 'warn', fix: 'blue-agent reconcile' });
    expect(result.checks['codex-trust']).toMatchObject({
      status: 'warn',
      fix: expect.stringMatching(/^run `blue-agent reconcile`, then open `codex`, run \/hooks/),
    });

    expect((await s.cli(['reconcile'])).code).toBe(0);
    result = await doctor();
    expect(result.checks['harness:codex']).toMatchObject({ status: 'ok' });
    expect(result.checks['codex-trust']).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('only once you trust it'),
      fix: 'open `codex`, run /hooks and trust the blue-agent capture hook',
    });

    // Trust the hook the way Codex records it.
    const config = path.join(s.t.home, '.codex', 'config.toml');
    const text = await readFile(config, 'utf8');
    const groups = (parseToml(text) as any).hooks.SessionEnd as Record<string, unknown>[];
    const group = groups.length - 1;
    const handler = (groups[group]!.hooks as Record<string, unknown>[])[0]!;
    const key = hookStateKey(config, 'SessionEnd', group, 0);
    await writeFile(
      config,
      `${text}\n[hooks.state."${key}"]\ntrusted_hash = "${hookTrustHash('SessionEnd', groups[group]!, handler)}"\n`,
    );
    result = await doctor();
    expect(result.checks['codex-trust']).toMatchObject({ status: 'ok', message: 'Codex trusts the managed hook' });
  });

  it('an old Node.js fails with the fix; the range comes from package.json engines', async () => {
    await healthy();
    const { doctorCommand } = await import('../../src/cli/doctor.js');
    const { bufferOutput } = await import('../../src/context.js');
    const stdout = bufferOutput();
    const code = await doctorCommand(s.context({ stdout, platform: 'linux' }), { json: true, nodeVersion: '20.11.1' });
    expect(code).toBe(1);
    const node = (JSON.parse(stdout.text()).checks as Check[]).find((c) => c.id === 'node');
    expect(node).toMatchObject({
      status: 'fail',
      message: 'Node.js 20.11.1 is older than blue-agent needs (>=22.22)',
      fix: expect.stringContaining('install Node.js 22.22 or newer'),
    });
    expect(checkNode({ version: '22.22.0', required: '>=22.22' }).status).toBe('ok');
    expect(checkNode({ version: '22.21.9', required: '>=22.22' }).status).toBe('fail');
    expect(checkNode({ version: '24.0.0-pre', required: '>=22.22' }).status).toBe('ok');
  });

  it('the service: not installed, installed but stopped, not ours', async () => {
    await healthy();
    await fakeSystemctl('disabled', 'inactive');
    let result = await doctor();
    expect(result.checks.service).toMatchObject({
      status: 'warn',
      message: 'the systemd service is not installed',
      fix: 'blue-agent service install',
    });
    expect(result.code).toBe(0);

    await installUnit();
    await fakeSystemctl('enabled', 'inactive');
    result = await doctor();
    expect(result.checks.service).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('the agent is not running'),
      fix: expect.stringContaining('blue-agent service install'),
    });

    const unit = unitFilePath(s.context({ platform: 'linux' }))!;
    await writeFile(unit, '[Service]\nExecStart=/usr/bin/something-else\n');
    result = await doctor();
    expect(result.checks.service).toMatchObject({
      status: 'warn',
      message: `${unit} exists but was not written by blue-agent`,
    });

    // And status shows the same service.
    const status = JSON.parse((await s.cli(['status', '--json'], { platform: 'linux' })).stdout);
    expect(status.service).toMatchObject({
      manager: 'systemd',
      unit_file: unit,
      installed: true,
      ours: false,
      enabled: true,
      active: false,
    });
  });

  it(
    'the service cannot run in this session: no `service install` advice, but what works here; a hand-run agent ' +
      'is ok',
    async () => {
      await healthy();
      // systemctl without a user manager to reach (the words of the real one), on a machine systemd runs.
      const noUserManager = (system: string) =>
        writeFile(
          path.join(s.bin, 'systemctl'),
          `#!/bin/sh\nif [ "$1" = is-system-running ]; then echo ${system}; exit 1; fi\necho "Failed to connect to ` +
            `bus: No medium found" >&2\nexit 1\n`,
          { mode: 0o755 },
        );
      await noUserManager('running');
      let result = await doctor();
      expect(result.checks.service).toMatchObject({
        status: 'warn',
        message: expect.stringMatching(
          new RegExp(
            '^the systemd service cannot run here: there is no systemd user manager in this ' +
              'session .*; the agent does not run',
          ),
        ),
        fix: expect.stringContaining(
          '`loginctl enable-linger $USER`, log in again and run `blue-agent service install` again; or run the agent ' +
            'yourself: `blue-agent run`',
        ),
      });

      // Not a machine systemd runs (a container): lingering would not help.
      await noUserManager('offline');
      result = await doctor();
      expect(result.checks.service!.message).toContain('systemd does not run this machine');
      expect(result.checks.service!.fix).toMatch(
        new RegExp(
          '^run the agent yourself: `blue-agent run` in a session that stays open \\(tmux or ' +
            String.raw`screen\), or at boot from cron`,
        ),
      );
      expect(result.checks.service!.fix).not.toContain('service install');

      // A unit left by an earlier install is named as one that cannot run.
      await installUnit();
      result = await doctor();
      expect(result.checks.service!.message).toContain('blue-agent.service is installed but cannot run');

      // The agent started by hand (its state file, this very process as its pid): that is what works here.
      await writeFile(
        path.join(s.stateDir, 'agent-run.json'),
        JSON.stringify({ pid: process.pid, started_at_unix_ms: Date.now(), updated_at_unix_ms: Date.now() }),
      );
      result = await doctor();
      expect(result.checks.service).toMatchObject({
        status: 'ok',
        message: expect.stringContaining(`the agent runs (pid ${process.pid}) without a service manager`),
      });
    },
  );

  it('pure checks: states map to ok / warn / fail with a fix', () => {
    const base: HarnessStatus = {
      harness: 'claude',
      installed: true,
      path: '/bin/claude',
      version: '2.1.400',
      raw_version: '2.1.400',
      profile: 'claude-v2_0_12',
      verified: false,
      verified_before: '2.1.333-0',
      state: 'active',
      reason: 'managed',
      pending: null,
      hint: null,
    };
    expect(checkHarness(base)).toMatchObject({
      status: 'warn',
      fix: expect.stringContaining('scripts/with-node24 npm run certify -- --harness claude --version 2.1.400'),
    });
    expect(checkHarness({ ...base, state: 'error', reason: 'settings.json:3:1: bad', hint: 'Fix the JSON' })).toEqual({
      id: 'harness:claude',
      status: 'fail',
      message: 'settings.json:3:1: bad',
      fix: 'Fix the JSON',
    });
    expect(checkHarness({ ...base, state: 'not_installed', installed: false, version: null })).toMatchObject({
      status: 'ok',
    });
    expect(
      checkHarness({
        ...base,
        state: 'unsupported_version',
        reason: 'Claude Code 1.0.0 is outside every compatibility profile',
      }),
    ).toMatchObject({ status: 'warn', fix: expect.stringContaining('blue-agent profiles list') });
    expect(checkService({ error: { code: 'INTERNAL', message: 'boom' } })).toMatchObject({ status: 'warn' });
    expect(
      checkService({
        manager: 'none',
        unitFile: undefined,
        installed: false,
        ours: false,
        current: false,
        enabled: undefined,
        active: undefined,
        detail: '',
      }),
    ).toMatchObject({ status: 'warn', fix: expect.stringContaining('blue-agent run') });
    expect(
      checkService({
        manager: 'systemd',
        unitFile: '/u',
        installed: true,
        ours: true,
        current: false,
        enabled: true,
        active: true,
        detail: 'old',
      }),
    ).toMatchObject({ status: 'warn', fix: 'blue-agent service install' });
  });
});
