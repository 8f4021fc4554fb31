/**
 * A managed hook that is missing, out of date or unwanted is named as such (status and doctor), and an `active`
 * harness without its hook is marked; a config that does not parse is one doctor failure, the checks that depend on
 * it are skipped, and no fix ever sends the reader back to `blue-agent doctor`.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkControlApi, checkHarness, runChecks, SKIPPED_CONFIG, type Check } from '../../src/doctor/checks.js';
import { renderDoctor, summarise } from '../../src/doctor/render.js';
import type { HarnessStatus, StatusReport } from '../../src/status/collect.js';
import { displayState, pendingNote, renderStatus } from '../../src/status/render.js';
import { ADAPTERS } from '../../src/harnesses/index.js';
import { HARNESSES } from '../../src/harnesses/names.js';
import { setup, type Setup } from '../../../../test/support/status-home.js';

let s: Setup;
beforeEach(async () => {
  s = await setup();
});
afterEach(async () => s.cleanup());

const harness: HarnessStatus = {
  harness: 'claude',
  installed: true,
  path: '/bin/claude',
  version: '2.1.332',
  raw_version: '2.1.332',
  profile: 'claude-v2_0_12',
  verified: true,
  verified_before: '2.1.333-0',
  state: 'active',
  reason: 'managed SessionEnd capture hook for claude-v2_0_12',
  pending: null,
  hint: null,
};

function report(harnesses: HarnessStatus[]): StatusReport {
  return {
    now_unix_ms: 1_000_000,
    config_file: '/c',
    state_dir: '/s',
    policy: {
      revision: 1,
      source: 'file',
      location: '/p',
      fetched_at_unix_ms: null,
      age_seconds: null,
      stale: false,
      capture_enabled: true,
      warnings: [],
    },
    harnesses,
    spool: {
      root: '/s/spool',
      exists: false,
      counts: { intake: 0, building: 0, ready: 0, uploading: 0, failed: 0 },
      handed_over: 0,
      waiting: 0,
      oldest_waiting: null,
    },
    sessions: { harnesses: [], backfill_finished_at_unix_ms: null },
    last_drain: null,
    agent: {
      state: 'absent',
      pid: null,
      started_at_unix_ms: null,
      updated_at_unix_ms: null,
      detail: null,
      last_reconcile: null,
      next_drain_at_unix_ms: null,
      next_policy_check_at_unix_ms: null,
      policy_error: null,
    },
    service: {
      manager: 'none',
      unitFile: undefined,
      installed: false,
      ours: false,
      current: false,
      enabled: undefined,
      active: undefined,
      detail: '',
    },
  };
}

describe('pending managed hooks', () => {
  it('missing, out of date and unwanted each have their own words', () => {
    expect(pendingNote('create')).toBe('the managed hook is missing: `blue-agent reconcile` adds it');
    expect(pendingNote('update')).toBe('the managed hook is out of date: `blue-agent reconcile` updates it');
    expect(pendingNote('remove')).toBe(
      'a managed hook is installed but no longer wanted: `blue-agent reconcile` removes it',
    );
    expect(displayState({ state: 'active', pending: null })).toBe('active');
    expect(displayState({ state: 'active', pending: 'create' })).toBe('active (missing hook)');
    expect(displayState({ state: 'active', pending: 'update' })).toBe('active (outdated hook)');
    expect(displayState({ state: 'capture_disabled', pending: 'remove' })).toBe('capture_disabled (unwanted hook)');
  });

  it('status never shows a harness whose hook is missing as plainly active', () => {
    const text = renderStatus(
      report([
        { ...harness, pending: 'create' },
        { ...harness, harness: 'codex', profile: 'codex-v0_120', pending: 'update' },
        { ...harness, harness: 'kimi', profile: 'kimi-v1_40', state: 'capture_disabled', pending: 'remove' },
        { ...harness, harness: 'opencode', profile: 'opencode-v1_2_0' },
      ]),
      { color: false, home: '/h' },
    );
    expect(text).toMatch(
      new RegExp(
        String.raw`^ {2}claude +active \(missing hook\) +claude-v2_0_12 +2\.1\.332\n {12}the managed hook is ` +
          'missing: `blue-agent reconcile` adds it\\n',
        'm',
      ),
    );
    expect(text).toMatch(
      new RegExp(
        String.raw`^ {2}codex +active \(outdated hook\) +codex-v0_120 +2\.1\.332\n {12}the managed hook is ` +
          'out of date: `blue-agent reconcile` updates it\\n',
        'm',
      ),
    );
    expect(text).toMatch(
      new RegExp(
        String.raw`^ {2}kimi +capture_disabled \(unwanted hook\) +kimi-v1_40 +2\.1\.332\n {12}a managed hook ` +
          'is installed but no longer wanted: `blue-agent reconcile` removes it\\n',
        'm',
      ),
    );
    expect(text).toMatch(/^ {2}opencode +active +opencode-v1_2_0 +2\.1\.332$/m);
    // The marker is painted as a warning, not in the green of a healthy harness.
    const colored = renderStatus(report([{ ...harness, pending: 'create' }]), { color: true, home: '/h' });
    expect(colored).toContain('\u001b[33mactive (missing hook)');
    expect(colored).not.toContain('\u001b[32mactive');
  });

  it('doctor says missing, not out of date', () => {
    expect(checkHarness({ ...harness, pending: 'create' })).toEqual({
      id: 'harness:claude',
      status: 'warn',
      message:
        'claude 2.1.332, profile claude-v2_0_12, active: the managed hook is missing: `blue-agent reconcile` adds it',
      fix: 'blue-agent reconcile',
    });
    expect(checkHarness({ ...harness, pending: 'update' }).message).toContain(
      'the managed hook is out of date: `blue-agent reconcile` updates it',
    );
    expect(checkHarness({ ...harness, state: 'capture_disabled', pending: 'remove' }).message).toContain(
      'no longer wanted: `blue-agent reconcile` removes it',
    );
  });

  it('end to end: a harness never reconciled is missing its hook, in status and doctor alike', async () => {
    const file = path.join(s.t.root, 'policy.yaml');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(
      file,
      'revision: 3\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n',
    );
    await s.config(`policy_file: ${file}\n`);
    await s.harnesses({ claude: '2.1.332 (Claude Code)' });
    const json = JSON.parse((await s.cli(['status', '--json'])).stdout);
    expect(json.harnesses.find((h: { harness: string }) => h.harness === 'claude')).toMatchObject({
      state: 'active',
      pending: 'create',
    });
    const doctor = JSON.parse((await s.cli(['doctor', '--json'], { platform: 'linux' })).stdout);
    const claude = doctor.checks.find((c: Check) => c.id === 'harness:claude');
    expect(claude).toMatchObject({ status: 'warn', message: expect.stringContaining('the managed hook is missing') });
    expect(claude.message).not.toContain('out of date');
  });
});

describe('doctor with an agent config that does not parse', () => {
  it('one failure (config, with its location and fix); the checks that read the config are skipped', async () => {
    await s.config('control_url: [unclosed\n');
    await s.harnesses({ claude: '2.1.332 (Claude Code)' });
    const out = await s.cli(['doctor', '--json'], { platform: 'linux' });
    expect(out.code).toBe(1);
    const parsed = JSON.parse(out.stdout) as { ok: boolean; summary: Record<string, number>; checks: Check[] };
    const byId = Object.fromEntries(parsed.checks.map((c) => [c.id, c]));
    const configFile = s.t.env.BLUE_AGENT_CONFIG!;
    expect(byId.config).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(new RegExp(`^${escape(configFile)}:\\d+:\\d+: `)),
    });
    expect(byId.config!.fix).toContain(configFile);
    // Every harness's own checks (the adapters' doctorChecks), Codex's trust check among them.
    const harnessChecks = Object.values(ADAPTERS).flatMap((a) => (a.doctorChecks ?? []).map((c) => c.id));
    expect(harnessChecks).toContain('codex-trust');
    const skipped = ['control-api', 'token', 'policy', ...HARNESSES.map((h) => `harness:${h}`), ...harnessChecks];
    for (const id of skipped)
      expect(byId[id], id).toEqual({ id, status: 'skip', message: 'skipped: the agent config does not parse' });
    expect(parsed.checks.filter((c) => c.status === 'fail').map((c) => c.id)).toEqual(['config']);
    expect(parsed.summary).toMatchObject({ fail: 1, skip: skipped.length });
    expect(parsed.ok).toBe(false);
    for (const c of parsed.checks) expect(c.fix ?? '', c.id).not.toContain('blue-agent doctor');

    const human = await s.cli(['doctor'], { platform: 'linux' });
    expect(human.stdout).toMatch(/^skip {2}control-api +skipped: the agent config does not parse$/m);
    expect(human.stdout).toMatch(/^skip {2}harness:claude +skipped: the agent config does not parse$/m);
    expect(human.stdout).not.toMatch(/no Control API and no policy file/);
    expect(human.stdout.trimEnd().split('\n').at(-1)).toMatch(new RegExp(`, 1 failure, ${skipped.length} skipped$`));
  });

  it('pure: skips are counted, not failures', () => {
    const checks: Check[] = [
      { id: 'config', status: 'fail', message: 'x', fix: 'y' },
      { id: 'token', status: 'skip', message: SKIPPED_CONFIG },
    ];
    expect(summarise(checks)).toEqual({ ok: 0, warn: 0, fail: 1, skip: 1 });
    expect(renderDoctor(checks, { color: false })).toBe(
      `fail  config    x\n                fix: y\nskip  token     ${SKIPPED_CONFIG}\n\n0 ok, 0 warnings, 1 ` +
        `failure, 1 skipped\n`,
    );
    expect(runChecks).toBeTypeOf('function');
  });
});

describe('no fix sends the reader back to `blue-agent doctor`', () => {
  it('a Control API that cannot be reached, with no policy fetched yet', async () => {
    await s.config('control_url: http://127.0.0.1:1\n');
    await s.token('secret');
    const out = await s.cli(['doctor', '--json'], { platform: 'linux' });
    const parsed = JSON.parse(out.stdout) as { checks: Check[] };
    const policy = parsed.checks.find((c) => c.id === 'policy')!;
    expect(policy).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('has been fetched on this machine yet'),
    });
    expect(policy.fix).toContain('blue-agent reconcile');
    for (const c of parsed.checks) expect(c.fix ?? '', c.id).not.toContain('blue-agent doctor');
    expect(parsed.checks.find((c) => c.id === 'token')!.fix).toContain('control-api');
  });

  it('pure: a Control API that was not checked', () => {
    const check = checkControlApi(
      {
        url: 'https://control.example',
        urlSource: 'control_url',
        tokenSource: 't',
        token: 'present',
        probe: undefined,
      },
      undefined,
    );
    expect(check).toMatchObject({ status: 'warn' });
    expect(check.fix).not.toContain('blue-agent doctor');
  });

  it('the doctor sources carry no fix that runs the doctor', async () => {
    const dir = path.join(__dirname, '..', '..', 'src', 'doctor');
    for (const name of await readdir(dir))
      expect(await readFile(path.join(dir, name), 'utf8'), name).not.toContain('blue-agent doctor');
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
