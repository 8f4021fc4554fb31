/**
 * Reconcile never loses or alters a user's bytes: invalid UTF-8, the write-ahead ledger, links and special files in
 * the place of a config, and files far too large to be configs.
 */
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput, type Context } from '../../src/context.js';
import { main } from '../../src/cli/main.js';
import { ADAPTERS } from '../../src/harnesses/index.js';
import { recordIntent } from '../../src/reconcile/apply.js';
import { decide } from '../../src/reconcile/decide.js';
import { noRanges } from '@blue-agent/contract/util/semver.js';
import { reconcile, type ReconcileReport } from '../../src/reconcile/index.js';
import { readLedger } from '../../src/reconcile/ledger.js';
import { planHarness } from '../../src/reconcile/plan.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { MAX_FILE_BYTES, readBytesIfExists, replaceFileAtomically } from '@blue-agent/contract/util/fs.js';
import { makeTestHome, versionStubs, type TestHome } from '../../../../test/support/context.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { versionLines } from '../../../../test/support/rigs.js';

const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const VERSIONS = versionLines();
const ENABLED =
  'revision: 5\nharnesses:\n  kimi: { allow_unverified_versions: true }\nsession_upload: { presign_url: ' +
  '"https://control.example/session-uploads/presign" }\n';
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

const claudeDir = () => path.join(t.home, '.claude');
const claudeSettings = () => path.join(claudeDir(), 'settings.json');
const codexConfig = () => path.join(t.home, '.codex', 'config.toml');
const codexHooksJson = () => path.join(t.home, '.codex', 'hooks.json');
const opencodePlugin = () => path.join(t.home, '.config', 'opencode', 'plugin', 'blue-agent-session-upload.js');
const kimiConfig = () => path.join(t.home, '.kimi-code', 'config.toml');
const byHarness = (report: ReconcileReport) => Object.fromEntries(report.harnesses.map((h) => [h.harness, h]));
const disable = () => writeFile(policy, DISABLED);
const run = (only?: HarnessName[], dryRun = false) =>
  reconcile(ctx, { dryRun, policyFile: policy, ...(only === undefined ? {} : { harnesses: only }) });

async function put(file: string, bytes: Buffer | string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, bytes);
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

async function cli(args: string[]): Promise<{ code: number; out: string }> {
  const stdout = bufferOutput();
  const stderr = bufferOutput();
  const code = await main(args, t.context({ env: { PATH: ctx.env.PATH! }, self: SELF, stdout, stderr }));
  return { code, out: stdout.text() + stderr.text() };
}

/** The plan a real run would make for Claude, made by hand so a test can stop between its steps. */
async function claudePlan() {
  const loaded = (await loadProfiles(ctx.paths.profilesDir)).get('claude')!;
  const d = decide(
    'claude',
    loaded,
    { installed: true, version: '2.1.332' },
    { revision: 1, session_upload: { presign_url: 'https://x.example/p' } },
    SELF,
    noRanges,
  );
  return (await planHarness(ctx, ADAPTERS.claude, d.interval, d.desired!, await readLedger(ctx))).files[0]!;
}

describe('bytes that are not UTF-8', () => {
  it(
    'settings.json with invalid UTF-8 keeps every byte through install, repair and removal; backups are byte ' +
      'copies',
    async () => {
      const original = Buffer.concat([
        Buffer.from('{\n  "model": "'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('",\n  "x": "\xe9'),
        Buffer.from([0xed, 0xa0, 0x80, 0xc3]),
        Buffer.from('"\n}\n'),
      ]);
      await put(claudeSettings(), original);
      await run(['claude']);
      const installed = await readFile(claudeSettings());
      expect(installed.includes(Buffer.from([0x22, 0xff, 0xfe, 0x22]))).toBe(true);
      expect(installed.includes(Buffer.from([0xed, 0xa0, 0x80, 0xc3]))).toBe(true);
      expect(installed.includes(Buffer.from([0xef, 0xbf, 0xbd]))).toBe(false);

      // A repair keeps a backup: the exact bytes that were on disk.
      const moved = t.context({
        env: { PATH: ctx.env.PATH! },
        self: { ...SELF, entry: '/usr/lib/blue-agent/bin/blue-agent.js' },
      });
      const repair = byHarness(await reconcile(moved, { dryRun: false, policyFile: policy, harnesses: ['claude'] }))
        .claude!;
      expect(repair.action).toBe('update');
      expect((await readFile(repair.files[0]!.backup!)).equals(installed)).toBe(true);

      await disable();
      await reconcile(moved, { dryRun: false, policyFile: policy, harnesses: ['claude'] });
      expect((await readFile(claudeSettings())).equals(original)).toBe(true);
    },
  );

  it('TOML configs (Kimi, Codex) with invalid UTF-8 in a value and a comment round-trip byte for byte', async () => {
    const kimi = Buffer.concat([
      Buffer.from('default_model = "k'),
      Buffer.from([0xff]),
      Buffer.from('"\n# note '),
      Buffer.from([0x80, 0x0a]),
    ]);
    const codex = Buffer.concat([Buffer.from('model = "o'), Buffer.from([0xc0, 0xaf]), Buffer.from('"\n')]);
    await put(kimiConfig(), kimi);
    await put(codexConfig(), codex);
    await run(['kimi', 'codex']);
    for (const [file, bytes] of [
      [kimiConfig(), kimi],
      [codexConfig(), codex],
    ] as const) {
      const installed = await readFile(file);
      expect(installed.subarray(0, bytes.length).equals(bytes)).toBe(true);
      expect(installed.toString('latin1')).toContain('capture --harness');
    }
    await disable();
    await run(['kimi', 'codex']);
    expect((await readFile(kimiConfig())).equals(kimi)).toBe(true);
    expect((await readFile(codexConfig())).equals(codex)).toBe(true);
  });
});

describe('the ledger is written ahead of the native file', () => {
  it('a ledger that cannot be written leaves every native file untouched', async () => {
    const user = '{\n  "theme": "dark"\n}\n';
    await put(claudeSettings(), user);
    await mkdir(path.join(ctx.paths.stateDir, 'ledger.json'), { recursive: true });
    const report = await run();
    for (const h of report.harnesses) {
      expect(h.state).toBe('error');
      expect(h.files.find((f) => f.action === 'error')?.error).toMatchObject({ code: 'LEDGER_WRITE_FAILED' });
    }
    expect(await readFile(claudeSettings(), 'utf8')).toBe(user);
    for (const file of [codexConfig(), kimiConfig()]) expect(await exists(file)).toBe(false);
    expect(await exists(path.join(t.home, '.config', 'opencode'))).toBe(false);
  });

  it('a run cut short between the ledger write and the native write converges on the next run', async () => {
    const user =
      '{\n  "theme": "dark",\n  "hooks": {\n    "Stop": [{ "hooks": [{ "type": "command", "command": "echo stop" ' +
      '}] }]\n  }\n}\n';
    await put(claudeSettings(), user);
    const plan = await claudePlan();
    await recordIntent(ctx, ADAPTERS.claude, plan, Buffer.from(user));
    // ...and the process dies here: the ledger describes the new content, the file still holds the old.
    expect(await readFile(claudeSettings(), 'utf8')).toBe(user);
    const next = byHarness(await run(['claude'])).claude!;
    expect(next.action).toBe('create');
    expect(await readFile(claudeSettings(), 'utf8')).toBe(plan.after);
    const entry = (await readLedger(ctx)).files[claudeSettings()]!;
    expect(entry.pending).toBeUndefined();
    expect(entry.owned).toEqual(plan.owned);

    await disable();
    await run(['claude']);
    expect(await readFile(claudeSettings(), 'utf8')).toBe(user);
    expect((await readLedger(ctx)).files).toEqual({});
  });

  it('a run cut short after the native write and before the ledger settled converges too', async () => {
    const plan = await claudePlan();
    expect(plan.before).toBeNull();
    await recordIntent(ctx, ADAPTERS.claude, plan, null);
    await replaceFileAtomically(plan.target, plan.after!, { expected: null });
    const next = byHarness(await run(['claude'])).claude!;
    expect(next.action).toBe('unchanged');
    expect((await readLedger(ctx)).files[claudeSettings()]!.pending).toBeUndefined();
    await disable();
    await run(['claude']);
    expect(await exists(claudeSettings())).toBe(false);
    expect(await exists(claudeDir())).toBe(false);
  });

  it('install into a missing settings.json, then removal: the file and the folder made for it are gone', async () => {
    expect(await exists(claudeDir())).toBe(false);
    await run(['claude', 'kimi', 'opencode']);
    expect(await exists(claudeSettings())).toBe(true);
    await disable();
    await run(['claude', 'kimi', 'opencode']);
    expect(await exists(claudeDir())).toBe(false);
    expect(await exists(path.dirname(kimiConfig()))).toBe(false);
    expect(await exists(path.join(t.home, '.config', 'opencode'))).toBe(false);
    expect(await readdir(t.home)).toEqual(
      expect.not.arrayContaining(['.claude', path.basename(path.dirname(kimiConfig()))]),
    );
    expect((await readLedger(ctx)).files).toEqual({});
  });

  it('a folder the agent made is kept when something else now lives in it', async () => {
    await run(['claude']);
    await writeFile(path.join(claudeDir(), 'CLAUDE.md'), 'mine\n');
    await disable();
    await run(['claude']);
    expect(await exists(claudeSettings())).toBe(false);
    expect(await readFile(path.join(claudeDir(), 'CLAUDE.md'), 'utf8')).toBe('mine\n');
  });

  it('a record whose file is gone is settled, and nothing is re-created', async () => {
    await run(['claude']);
    await rm(claudeSettings());
    await disable();
    const report = byHarness(await run(['claude'])).claude!;
    expect(report.state).toBe('capture_disabled');
    expect(await exists(claudeSettings())).toBe(false);
    expect((await readLedger(ctx)).files).toEqual({});
  });
});

describe('links and special files in the place of a config', () => {
  it('a dangling link never makes blue-agent create its target, not even at the filesystem root', async () => {
    const far = path.join(t.root, 'x', 'a', 'b', 'settings.json');
    const rootTarget = `/nonexistent-blue-agent-${path.basename(t.root)}/settings.json`;
    for (const target of [far, rootTarget]) {
      await rm(claudeSettings(), { force: true });
      await mkdir(claudeDir(), { recursive: true });
      await symlink(target, claudeSettings());
      const claude = byHarness(await run(['claude'])).claude!;
      expect(claude.state).toBe('error');
      const error = claude.files[0]!.error!;
      expect(error).toMatchObject({ code: 'UNSAFE_PATH', file: claudeSettings() });
      expect(error.message).toContain(claudeSettings());
      expect(error.message).toContain(target);
      expect(error.hint).toMatch(/dangling link/);
    }
    expect(await exists(path.join(t.root, 'x'))).toBe(false);
    expect(await exists(path.dirname(rootTarget))).toBe(false);
  });

  it('a config folder that links to an existing folder still gets a new file, inside the link target', async () => {
    const dotfiles = path.join(t.root, 'dotfiles', 'claude');
    await mkdir(dotfiles, { recursive: true });
    await symlink(dotfiles, claudeDir());
    expect(byHarness(await run(['claude'])).claude!.action).toBe('create');
    expect(await readFile(path.join(dotfiles, 'settings.json'), 'utf8')).toContain('capture --harness claude');
    expect((await lstat(claudeDir())).isSymbolicLink()).toBe(true);
  });

  it('a link loop and a parent folder that is a dangling link are refused the same way', async () => {
    await mkdir(claudeDir(), { recursive: true });
    await symlink('settings.json', claudeSettings());
    const loop = byHarness(await run(['claude'])).claude!;
    expect(loop.files[0]!.error).toMatchObject({ code: 'UNSAFE_PATH' });
    expect(loop.files[0]!.error!.message).toMatch(/too many levels of symbolic links \(ELOOP/);

    await symlink(path.join(t.root, 'gone', 'kimi'), path.dirname(kimiConfig()));
    const kimi = byHarness(await run(['kimi'])).kimi!;
    expect(kimi.state).toBe('error');
    expect(kimi.files[0]!.error).toMatchObject({ code: 'UNSAFE_PATH' });
    expect(kimi.files[0]!.error!.message).toContain(path.join(t.root, 'gone', 'kimi'));
    expect(await exists(path.join(t.root, 'gone'))).toBe(false);
  });

  it(
    'a FIFO, a directory, a socket or a link to a device is refused without blocking, by reconcile, status and ' +
      'doctor',
    async () => {
      await mkdir(claudeDir(), { recursive: true });
      execFileSync('mkfifo', [claudeSettings()]);
      await mkdir(path.dirname(codexHooksJson()), { recursive: true });
      execFileSync('mkfifo', [codexHooksJson()]);
      await mkdir(opencodePlugin(), { recursive: true });
      await mkdir(path.dirname(kimiConfig()), { recursive: true });
      await symlink('/dev/null', kimiConfig());
      const server = net.createServer();
      await new Promise<void>((resolve) => server.listen(codexConfig(), resolve));
      try {
        for (const dryRun of [true, false]) {
          const h = byHarness(await run(undefined, dryRun));
          const kinds: Record<string, RegExp> = {
            claude: /FIFO/,
            codex: /socket|FIFO/,
            kimi: /symbolic link to a character device/,
            opencode: /directory/,
          };
          for (const [name, kind] of Object.entries(kinds)) {
            expect(h[name]!.state).toBe('error');
            const error = h[name]!.files.find((f) => f.action === 'error')!.error!;
            expect(error).toMatchObject({ code: 'UNSAFE_PATH' });
            expect(error.message).toMatch(kind);
          }
        }
        const status = await cli(['status', '--json']);
        expect(status.out).toMatch(/settings\.json is a FIFO/);
        const doctor = await cli(['doctor', '--json']);
        expect(doctor.out).toMatch(/FIFO/);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
      expect((await stat(claudeSettings())).isFIFO()).toBe(true);
      expect((await stat(codexHooksJson())).isFIFO()).toBe(true);
    },
  );
});

describe('files far too large to be configs', () => {
  it('a 50 MiB settings.json is refused with a typed error before it is read', async () => {
    await put(claudeSettings(), '{ not json');
    await truncate(claudeSettings(), 50 * 1024 * 1024);
    const claude = byHarness(await run(['claude'])).claude!;
    expect(claude.state).toBe('error');
    // Refused on its size: a read would have reported the syntax error at the start.
    expect(claude.files[0]!.error).toMatchObject({ code: 'FILE_TOO_LARGE', file: claudeSettings() });
    expect(claude.files[0]!.error!.message).toMatch(/50\.0 MiB.*2\.0 MiB/);
    expect((await stat(claudeSettings())).size).toBe(50 * 1024 * 1024);
    await expect(readBytesIfExists(claudeSettings())).rejects.toMatchObject({ code: 'FILE_TOO_LARGE' });
  });

  it('the limit is the documented 2 MiB: one byte more is refused, the limit itself is read', async () => {
    await put(claudeSettings(), '{}');
    await truncate(claudeSettings(), MAX_FILE_BYTES);
    expect((await readBytesIfExists(claudeSettings()))?.length).toBe(2 * 1024 * 1024);
    await truncate(claudeSettings(), MAX_FILE_BYTES + 1);
    await expect(readBytesIfExists(claudeSettings())).rejects.toMatchObject({ code: 'FILE_TOO_LARGE' });
  });

  it('the dry run of a large allowed file prints a bounded diff; a 1 MB line is shortened with a note', async () => {
    const line = `{"filler": "${'x'.repeat(1024 * 1024)}"}`;
    await put(claudeSettings(), line);
    const { code, out } = await cli(['reconcile', '--dry-run', '--policy', policy, '--harness', 'claude']);
    expect(code).toBe(0);
    expect(Buffer.byteLength(out)).toBeLessThan(16 * 1024);
    expect(out).toMatch(/^\s+-\{"filler": "x+… \(\d+ more characters\)$/m);
  });

  it('a diff with thousands of changed lines is cut with the number of lines left out', async () => {
    const group = (i: number) =>
      `{ "matcher": "", "hooks": [{ "type": "command", "command": "'/usr/bin/node' '/old/${i}/bin/blue-agent.js' ` +
      `capture --harness claude --profile claude-v2_0_12", "timeout": 5 }] }`;
    const groups = Array.from({ length: 3000 }, (_, i) => `      ${group(i)}`).join(',\n');
    await put(claudeSettings(), `{\n  "hooks": {\n    "SessionEnd": [\n${groups}\n    ]\n  }\n}\n`);
    const { code, out } = await cli(['reconcile', '--dry-run', '--policy', policy, '--harness', 'claude']);
    expect(code).toBe(0);
    expect(Buffer.byteLength(out)).toBeLessThan(128 * 1024);
    expect(out).toMatch(/… \d+ more lines/);
  });
});
