import { chmod, lstat, mkdir, readFile, readdir, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput, type Context } from '../../src/context.js';
import { main } from '../../src/cli/main.js';
import { ADAPTERS } from '../../src/harnesses/index.js';
import { isManagedCommand } from '../../src/harness-kit/signature.js';
import { applyFilePlan } from '../../src/reconcile/apply.js';
import { reconcile, type ReconcileReport } from '../../src/reconcile/index.js';
import { noRanges } from '@blue-agent/contract/util/semver.js';
import { planHarness } from '../../src/reconcile/plan.js';
import { readLedger } from '../../src/reconcile/ledger.js';
import { makeTestHome, versionStubs, type TestHome } from '../../../../test/support/context.js';
import { HARNESSES } from '../../src/harnesses/names.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { rigFor, versionLines } from '../../../../test/support/rigs.js';

const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const VERSIONS = versionLines();
const ENABLED = [
  'revision: 5',
  'harnesses:',
  '  kimi: { allow_unverified_versions: true }',
  'session_upload: { presign_url: "https://control.example/session-uploads/presign" }',
  '',
].join('\n');
const DISABLED = 'revision: 6\n';

let t: TestHome;
let ctx: Context;
let policy: string;

beforeEach(async () => {
  t = await makeTestHome();
  const bin = await versionStubs(t.root, VERSIONS);
  policy = path.join(t.root, 'policy.yaml');
  await writeFile(policy, ENABLED);
  ctx = t.context({ env: { PATH: `${bin}:/usr/bin:/bin` }, self: SELF });
});
afterEach(async () => t.cleanup());

const claudeSettings = () => path.join(t.home, '.claude', 'settings.json');
const codexConfig = () => path.join(t.home, '.codex', 'config.toml');
const kimiConfig = () => path.join(t.home, '.kimi-code', 'config.toml');

/** Every file under a directory with its bytes and mtime: "nothing was written" means this does not change. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    for (const entry of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) {
        out[`${full}/`] = 'dir';
        await walk(full);
      } else {
        const info = await lstat(full);
        out[full] = `${info.mtimeMs}:${info.isSymbolicLink() ? await readlink(full) : await readFile(full, 'utf8')}`;
      }
    }
  };
  await walk(dir);
  return out;
}

const byHarness = (report: ReconcileReport) => Object.fromEntries(report.harnesses.map((h) => [h.harness, h]));

function managedCount(text: string, harness: HarnessName): number {
  return text.split('\n').filter(
    (line) =>
      /command/.test(line) &&
      isManagedCommand(
        line
          .replace(/^.*?command"?\s*[:=]\s*/, '')
          .replace(/^"|",?\s*$/g, '')
          .replace(/\\"/g, '"'),
        harness,
      ),
  ).length;
}

describe('reconcile', () => {
  it('--dry-run shows the plan and writes nothing at all, not even caches', async () => {
    const before = await snapshot(t.root);
    const report = await reconcile(ctx, { dryRun: true, policyFile: policy });
    expect(await snapshot(t.root)).toEqual(before);
    const h = byHarness(report);
    for (const name of HARNESSES) {
      expect(h[name]).toMatchObject({ installed: true, action: 'create' });
      expect(rigFor(name).reconcileStates).toContain(h[name]!.state);
    }
    expect(h.claude!.files.map((f) => [f.path, f.action])).toEqual([[claudeSettings(), 'create']]);
  });

  it('applies exactly the plan the dry run showed, then changes nothing on the next run', async () => {
    const dry = await reconcile(ctx, { dryRun: true, policyFile: policy });
    const real = await reconcile(ctx, { dryRun: false, policyFile: policy });
    const planned = dry.harnesses.flatMap((h) => h.files.map((f) => [f.path, f.after]));
    expect(real.harnesses.flatMap((h) => h.files.map((f) => [f.path, f.after]))).toEqual(planned);
    for (const [file, after] of planned) expect(await readFile(file!, 'utf8')).toBe(after);

    const mtimes = await Promise.all(planned.map(async ([file]) => (await stat(file!)).mtimeMs));
    const again = await reconcile(ctx, { dryRun: false, policyFile: policy });
    expect(again.harnesses.map((h) => h.action)).toEqual(HARNESSES.map(() => 'unchanged'));
    expect(await Promise.all(planned.map(async ([file]) => (await stat(file!)).mtimeMs))).toEqual(mtimes);
    expect(managedCount(await readFile(claudeSettings(), 'utf8'), 'claude')).toBe(1);
  });

  it('removing session_upload removes the managed hooks and gives back the user files byte for byte', async () => {
    const userSettings =
      '{\r\n\t"model": "opus",\r\n\t"hooks": {\r\n\t\t"SessionEnd": [\r\n\t\t\t{ "matcher": "", "hooks": [ { ' +
      '"type": "command", "command": "echo mine" } ] }\r\n\t\t]\r\n\t}\r\n}';
    const userKimi =
      '# my kimi settings\ndefault_model = "k2"\n\n[[hooks]]\nevent = "SessionEnd"\ncommand = "echo bye"\n';
    await mkdir(path.dirname(claudeSettings()), { recursive: true });
    await writeFile(claudeSettings(), userSettings);
    await mkdir(path.dirname(kimiConfig()), { recursive: true });
    await writeFile(kimiConfig(), userKimi);

    await reconcile(ctx, { dryRun: false, policyFile: policy });
    const installed = await readFile(claudeSettings(), 'utf8');
    expect(installed).toContain('echo mine');
    expect(managedCount(installed, 'claude')).toBe(1);

    await writeFile(policy, DISABLED);
    const report = await reconcile(ctx, { dryRun: false, policyFile: policy });
    expect(byHarness(report).claude).toMatchObject({ state: 'capture_disabled', action: 'remove' });
    expect(await readFile(claudeSettings(), 'utf8')).toBe(userSettings);
    expect(await readFile(kimiConfig(), 'utf8')).toBe(userKimi);
    // Files that only existed for the managed hook are gone again.
    await expect(stat(codexConfig())).rejects.toThrow();
    expect((await readLedger(ctx)).files).toEqual({});
  });

  it('repairs a stale managed entry when the agent moved, with a diff and a backup', async () => {
    await reconcile(ctx, { dryRun: false, policyFile: policy });
    const moved = t.context({
      env: { PATH: ctx.env.PATH! },
      self: { ...SELF, entry: '/usr/lib/node_modules/blue-agent/bin/blue-agent.js' },
    });
    const report = await reconcile(moved, { dryRun: false, policyFile: policy, harnesses: ['claude'] });
    const claude = byHarness(report).claude!;
    expect(claude.action).toBe('update');
    expect(claude.files[0]!.backup).toMatch(/backups\/claude\/settings\.json\./);
    const text = await readFile(claudeSettings(), 'utf8');
    expect(text).toContain('/usr/lib/node_modules/blue-agent/bin/blue-agent.js');
    expect(text).not.toContain('/opt/blue-agent/');
    expect(managedCount(text, 'claude')).toBe(1);
  });

  it('leaves a file that does not parse untouched and reports its line and column', async () => {
    const broken = '{\n  "model": "opus",\n  "hooks": { oops }\n}\n';
    await mkdir(path.dirname(claudeSettings()), { recursive: true });
    await writeFile(claudeSettings(), broken);
    const mtime = (await stat(claudeSettings())).mtimeMs;
    const report = await reconcile(ctx, { dryRun: false, policyFile: policy });
    const claude = byHarness(report).claude!;
    expect(claude.state).toBe('error');
    // The harness's error names its code, as the file's does (the status report and `status` carry it).
    expect(claude.code).toBe('NATIVE_CONFIG_PARSE');
    expect(claude.files[0]!.error).toMatchObject({ code: 'NATIVE_CONFIG_PARSE', line: 3 });
    expect(claude.reason).toMatch(/settings\.json:3:\d+/);
    expect(await readFile(claudeSettings(), 'utf8')).toBe(broken);
    expect((await stat(claudeSettings())).mtimeMs).toBe(mtime);
    expect(report.ok).toBe(false);
    expect(byHarness(report).codex!.action).toBe('create');
  });

  it('updates a symlinked config at its target, keeps the link, and keeps the file mode', async () => {
    const real = path.join(t.root, 'dotfiles', 'claude-settings.json');
    await mkdir(path.dirname(real), { recursive: true });
    await writeFile(real, '{\n  "theme": "dark"\n}\n');
    await chmod(real, 0o640);
    await mkdir(path.dirname(claudeSettings()), { recursive: true });
    await symlink(real, claudeSettings());
    await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: ['claude'] });
    expect((await lstat(claudeSettings())).isSymbolicLink()).toBe(true);
    expect(await readlink(claudeSettings())).toBe(real);
    expect(await readFile(real, 'utf8')).toContain('capture --harness claude');
    expect((await stat(real)).mode & 0o777).toBe(0o640);
  });

  it('--harness limits the run to the named harnesses', async () => {
    const report = await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: ['codex'] });
    expect(report.harnesses.map((h) => h.harness)).toEqual(['codex']);
    await expect(stat(claudeSettings())).rejects.toThrow();
  });

  it("holds a harness to the policy's version_requirement, and the other harnesses to none", async () => {
    const claude = VERSIONS.claude!.split(' ')[0]!;
    await writeFile(
      policy,
      ENABLED.replace('harnesses:\n', `harnesses:\n  claude: { version_requirement: ">${claude}" }\n`),
    );
    const report = byHarness(
      await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: ['claude', 'codex'] }),
    );
    expect(report.claude).toMatchObject({ state: 'unsupported_version', action: 'unchanged' });
    expect(report.claude!.reason).toContain(`version_requirement ">${claude}"`);
    expect(report.codex).toMatchObject({ action: 'create' });
    await writeFile(
      policy,
      ENABLED.replace('harnesses:\n', `harnesses:\n  claude: { version_requirement: "<=${claude}" }\n`),
    );
    expect(
      byHarness(await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: ['claude'] })).claude,
    ).toMatchObject({ state: 'active', action: 'create' });
  });

  it('reports harnesses that are not installed without touching their files', async () => {
    const bare = t.context({ env: { PATH: '/nonexistent' }, self: SELF });
    const report = await reconcile(bare, { dryRun: false, policyFile: policy });
    expect(report.harnesses.map((h) => h.state)).toEqual(HARNESSES.map(() => 'not_installed'));
    expect(report.harnesses.every((h) => h.action === 'unchanged')).toBe(true);
  });

  it('a harness uninstalled after install gets its managed hook removed', async () => {
    await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: ['claude'] });
    const bare = t.context({ env: { PATH: '/nonexistent' }, self: SELF });
    const report = await reconcile(bare, { dryRun: false, policyFile: policy, harnesses: ['claude'] });
    expect(report.harnesses[0]).toMatchObject({ state: 'not_installed', action: 'remove' });
    await expect(stat(claudeSettings())).rejects.toThrow();
  });

  it('two reconciles at once end with one correct result', async () => {
    await mkdir(path.dirname(claudeSettings()), { recursive: true });
    const user =
      '{\n  "hooks": {\n    "Stop": [{ "hooks": [{ "type": "command", "command": "echo stop" }] }]\n  }\n}\n';
    await writeFile(claudeSettings(), user);
    const runs = await Promise.all(
      [1, 2, 3, 4].map(() =>
        reconcile(t.context({ env: { PATH: ctx.env.PATH! }, self: SELF }), { dryRun: false, policyFile: policy }),
      ),
    );
    for (const report of runs) expect(report.ok).toBe(true);
    const text = await readFile(claudeSettings(), 'utf8');
    expect(managedCount(text, 'claude')).toBe(1);
    expect(text).toContain('echo stop');
    expect(managedCount(await readFile(kimiConfig(), 'utf8'), 'kimi')).toBe(1);
    const final = await reconcile(ctx, { dryRun: true, policyFile: policy });
    expect(final.harnesses.map((h) => h.action)).toEqual(HARNESSES.map(() => 'unchanged'));
  });

  it('a change made between planning and writing is detected and planned again', async () => {
    await mkdir(path.dirname(claudeSettings()), { recursive: true });
    await writeFile(claudeSettings(), '{\n  "a": 1\n}\n');
    const { decide } = await import('../../src/reconcile/decide.js');
    const { loadProfiles } = await import('@blue-agent/contract/profiles/index.js');
    const loaded = (await loadProfiles(ctx.paths.profilesDir)).get('claude')!;
    const d = decide(
      'claude',
      loaded,
      { installed: true, version: '2.1.332' },
      { revision: 1, session_upload: { presign_url: 'https://x.example/p' } },
      SELF,
      noRanges,
    );
    const plan = await planHarness(ctx, ADAPTERS.claude, d.interval, d.desired!, await readLedger(ctx));
    // Someone edits the file after the plan was made.
    await writeFile(claudeSettings(), '{\n  "a": 1,\n  "b": 2\n}\n');
    const applied = await applyFilePlan(ctx, ADAPTERS.claude, plan.files[0]!);
    const text = await readFile(claudeSettings(), 'utf8');
    expect(text).toContain('"b": 2');
    expect(managedCount(text, 'claude')).toBe(1);
    expect(applied.plan.before).toContain('"b": 2');
  });
});

describe('reconcile command', () => {
  async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
    const stdout = bufferOutput();
    const stderr = bufferOutput();
    const c = t.context({ env: { PATH: ctx.env.PATH! }, self: SELF, stdout, stderr });
    const code = await main(args, c);
    return { code, out: stdout.text(), err: stderr.text() };
  }

  it('--json gives the policy and per-harness fields scripts need', async () => {
    const { code, out } = await cli(['reconcile', '--dry-run', '--json', '--policy', policy]);
    expect(code).toBe(0);
    const doc = JSON.parse(out);
    expect(doc.policy).toMatchObject({ revision: 5, source: 'file', location: policy });
    expect(doc.harnesses[0]).toEqual({
      harness: 'claude',
      installed: true,
      path: expect.stringMatching(/bin\/claude$/),
      raw_version: '2.1.332 (Claude Code)',
      version: '2.1.332',
      profile: 'claude-v2_0_12',
      verified: true,
      state: 'active',
      reason: expect.any(String),
      action: 'create',
      files: [{ path: claudeSettings(), action: 'create' }],
    });
  });

  it('human output shows state, profile, version and a unified diff per changed file', async () => {
    const { code, out } = await cli(['reconcile', '--dry-run', '--policy', policy, '--harness', 'claude']);
    expect(code).toBe(0);
    expect(out).toMatch(/^claude\s+active\s+claude-v2_0_12\s+2\.1\.332\s+create$/m);
    expect(out).toContain('--- /dev/null');
    expect(out).toContain(`+++ b${claudeSettings()}`);
    expect(out).toMatch(/^\s+\+.*capture --harness claude --profile claude-v2_0_12/m);
    expect(out).toContain('Dry run: nothing was written.');
  });

  it('exits 1 with the location when a native file does not parse', async () => {
    await mkdir(path.dirname(claudeSettings()), { recursive: true });
    await writeFile(claudeSettings(), '{ "a": ');
    const { code, out } = await cli(['reconcile', '--policy', policy, '--harness', 'claude']);
    expect(code).toBe(1);
    expect(out).toMatch(/settings\.json:1:\d+/);
  });

  it('usage errors exit 2', async () => {
    expect((await cli(['reconcile', '--harness', 'vim'])).code).toBe(2);
    expect((await cli(['reconcile', '--frobnicate'])).code).toBe(2);
    expect((await cli(['teleport'])).code).toBe(2);
  });

  it(
    'refuses a policy file with a mistyped key at any level, naming file:line:col and the key meant, and writes ' +
      'nothing',
    async () => {
      const cases: [text: string, where: string, meant: string][] = [
        [
          ENABLED.replace('session_upload:', 'sesion_upload:'),
          '4:1',
          '/ has an unknown field "sesion_upload" (did you mean "session_upload"?)',
        ],
        [
          ENABLED.replace('allow_unverified_versions', 'allow_unverified_version'),
          '3:11',
          '/harnesses/kimi has an unknown field "allow_unverified_version" (did you mean "allow_unverified_versions"?)',
        ],
        [`${ENABLED}ttl_secs: 60\n`, '5:1', '/ has an unknown field "ttl_secs" (did you mean "ttl_seconds"?)'],
        [
          ENABLED.replace('presign_url', 'presign_ur'),
          '4:19',
          '/session_upload has an unknown field "presign_ur" (did you mean "presign_url"?)',
        ],
      ];
      const before = await snapshot(t.home);
      for (const [text, where, meant] of cases) {
        await writeFile(policy, text);
        const human = await cli(['reconcile', '--dry-run', '--policy', policy]);
        expect(human.code, text).toBe(1);
        expect(human.err, text).toContain(
          `blue-agent: error [POLICY_INVALID]: ${policy}:${where}: invalid policy: ${meant}`,
        );
        expect(human.err, text).toMatch(/hint: Rename "\w+" to "\w+" in /);
        const json = await cli(['reconcile', '--policy', policy, '--json']);
        expect(json.code, text).toBe(1);
        const error = (JSON.parse(json.out) as { error: { code: string; file: string; line: number; column: number } })
          .error;
        expect(`${error.code} ${error.file}:${error.line}:${error.column}`, text).toBe(
          `POLICY_INVALID ${policy}:${where}`,
        );
      }
      expect(await snapshot(t.home)).toEqual(before);
      // Blue's fields blue-agent does not act on stay accepted.
      await writeFile(
        policy,
        `${ENABLED}packages: []\ngateway: { type: litellm }\ntelemetry: { sink_url: "https://t.example" }\n`,
      );
      expect((await cli(['reconcile', '--dry-run', '--policy', policy])).code).toBe(0);
    },
  );

  it('a YAML error names the line to fix: a key indented too deep, not the value above it', async () => {
    await writeFile(
      policy,
      'revision: 5\nsession_upload:\n  presign_url: https://control.example/session-uploads/presign\n  ' +
        'idle_capture_minutes: 30\n    backfill: true\n',
    );
    const { code, err } = await cli(['reconcile', '--dry-run', '--policy', policy]);
    expect(code).toBe(1);
    expect(err).toContain(`error [POLICY_INVALID]: ${policy}:5:5: line 5 is indented deeper than line 4`);
  });

  it('a missing policy file is a clear failure', async () => {
    const { code, err } = await cli(['reconcile', '--policy', path.join(t.root, 'nope.yaml')]);
    expect(code).toBe(1);
    expect(err).toMatch(/nope\.yaml/);
  });

  it('--help explains every flag', async () => {
    const { code, out } = await cli(['reconcile', '--help']);
    expect(code).toBe(0);
    for (const flag of ['--dry-run', '--json', '--policy <file>', '--harness <name>']) expect(out).toContain(flag);
  });
});

describe('reconcile edge cases', () => {
  it('a harness whose hook file cannot be chosen is reported in error while the others proceed', async () => {
    // kimi-cli's hooks not yet migrated to Kimi Code: a managed hook in Kimi Code's config would have them dropped.
    await mkdir(path.join(t.home, '.kimi'), { recursive: true });
    await writeFile(path.join(t.home, '.kimi', 'config.toml'), '[[hooks]]\nevent = "Stop"\ncommand = "echo mine"\n');
    const report = await reconcile(ctx, { dryRun: false, policyFile: policy });
    const h = byHarness(report);
    expect(h.kimi).toMatchObject({ state: 'error', action: 'error' });
    expect(h.kimi!.files[0]!.error).toMatchObject({ code: 'NATIVE_CONFIG_CONFLICT' });
    expect(h.claude!.action).toBe('create');
    await expect(stat(kimiConfig())).rejects.toThrow();
    // Removing capture does not need a hook file, so the pending migration is no obstacle then.
    await writeFile(policy, DISABLED);
    const off = byHarness(await reconcile(ctx, { dryRun: false, policyFile: policy }));
    expect(off.kimi).toMatchObject({ state: 'capture_disabled', action: 'unchanged' });
  });
});
