/**
 * The built command line, run as a process the way users and harnesses run it.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { isManagedCommand } from '../../src/harness-kit/signature.js';
import { agentRoot, makeTestHome, repoRoot, type TestHome } from '../../../../test/support/context.js';
import { startPolicyServer } from '../../../../test/support/policy-server.js';
import { HARNESSES } from '../../src/harnesses/names.js';
import { versionLines } from '../../../../test/support/rigs.js';

const run = promisify(execFile);
const entry = path.join(agentRoot, 'bin', 'blue-agent.js');

let t: TestHome;
let env: Record<string, string>;
let policy: string;

beforeEach(async () => {
  t = await makeTestHome();
  const bin = path.join(t.root, 'bin');
  await mkdir(bin);
  for (const [name, output] of Object.entries(versionLines()))
    await writeFile(path.join(bin, name), `#!/bin/sh\necho '${output}'\n`, { mode: 0o755 });
  env = { ...t.env, PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin` };
  policy = path.join(t.root, 'policy.yaml');
  await writeFile(
    policy,
    'revision: 2\nharnesses: { kimi: { allow_unverified_versions: true } }\nsession_upload: { presign_url: ' +
      '"https://c.example/session-uploads/presign" }\n',
  );
});
afterEach(async () => t.cleanup());

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [entry, ...args], { env, cwd: t.home, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('blue-agent as a process', () => {
  it('--help lists the commands and exit codes; --version prints the package version', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('reconcile');
    expect(help.stdout).toContain('profiles');
    expect(help.stdout).toContain('Exit codes');
    const pkg = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    expect((await cli(['--version'])).stdout.trim()).toBe(pkg.version);
  });

  it('usage errors exit 2 with a message on stderr', async () => {
    const result = await cli(['reconcile', '--harness', 'emacs']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown harness "emacs"');
  });

  it('failures exit 1 with the error code and a hint; --json puts them in the document', async () => {
    const human = await cli(['reconcile']);
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/blue-agent: error \[POLICY_MISSING\]/);
    expect(human.stderr).toContain('hint:');
    const json = await cli(['reconcile', '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      error: { code: 'POLICY_MISSING', hint: expect.any(String) },
    });
  });

  it('profiles list --json and profiles check', async () => {
    const list = await cli(['profiles', 'list', '--json']);
    expect(list.code).toBe(0);
    const profiles = (JSON.parse(list.stdout) as { profiles: { profile: string }[] }).profiles.map((p) => p.profile);
    expect(profiles).toEqual(
      expect.arrayContaining(['claude-v2_0_12', 'codex-v0_145_0', 'kimi-v1_28_0', 'opencode-v1_2_0']),
    );
    expect(await cli(['profiles', 'check'])).toMatchObject({ code: 0, stdout: expect.stringContaining('consistent') });
  });

  it('four reconcile processes at once end with one correct result', async () => {
    const settings = path.join(t.home, '.claude', 'settings.json');
    await mkdir(path.dirname(settings), { recursive: true });
    await writeFile(
      settings,
      '{\n  "env": { "A": "1" },\n  "hooks": { "SessionEnd": [ { "hooks": [ { "type": "command", "command": "echo ' +
        'mine" } ] } ] }\n}\n',
    );
    const results = await Promise.all([1, 2, 3, 4].map(() => cli(['reconcile', '--policy', policy, '--json'])));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const text = await readFile(settings, 'utf8');
    const commands = [...text.matchAll(/"command": "((?:[^"\\]|\\.)*)"/g)].map(
      (m) => JSON.parse(`"${m[1]}"`) as string,
    );
    expect(commands.filter((c) => isManagedCommand(c, 'claude'))).toHaveLength(1);
    expect(commands).toContain('echo mine');
    const creators = results.map(
      (r) =>
        (JSON.parse(r.stdout) as { harnesses: { harness: string; action: string }[] }).harnesses.find(
          (h) => h.harness === 'claude',
        )!.action,
    );
    expect(creators.filter((a) => a !== 'unchanged').length).toBeGreaterThanOrEqual(1);
    const after = await cli(['reconcile', '--policy', policy, '--dry-run', '--json']);
    expect((JSON.parse(after.stdout) as { harnesses: { action: string }[] }).harnesses.map((h) => h.action)).toEqual(
      HARNESSES.map(() => 'unchanged'),
    );
  });

  it('reconciles of different harnesses at once all keep their ledger records', async () => {
    for (let round = 0; round < 3; round++) {
      const harnesses = [...HARNESSES].sort();
      const results = await Promise.all(harnesses.map((h) => cli(['reconcile', '--policy', policy, '--harness', h])));
      for (const r of results) expect(r.code, r.stderr).toBe(0);
      const ledger = JSON.parse(await readFile(path.join(env.BLUE_AGENT_HOME!, 'ledger.json'), 'utf8')) as {
        files: Record<string, { harness: string }>;
      };
      expect(
        Object.values(ledger.files)
          .map((f) => f.harness)
          .sort(),
      ).toEqual(harnesses);
      // Start the next round from nothing, so every round races on creating the records.
      await writeFile(policy.replace('policy.yaml', 'off.yaml'), 'revision: 3\n');
      const off = await Promise.all(
        harnesses.map((h) => cli(['reconcile', '--policy', policy.replace('policy.yaml', 'off.yaml'), '--harness', h])),
      );
      for (const r of off) expect(r.code, r.stderr).toBe(0);
      const cleared = JSON.parse(await readFile(path.join(env.BLUE_AGENT_HOME!, 'ledger.json'), 'utf8')) as {
        files: Record<string, unknown>;
      };
      expect(cleared.files).toEqual({});
    }
  });

  it('reconcile fetches the policy from a Control API, then falls back to the last-known-good copy', async () => {
    const server = await startPolicyServer({});
    try {
      server.setPolicy({ revision: 12, session_upload: { presign_url: `${server.origin}/session-uploads/presign` } });
      env = { ...env, BLUE_AGENT_CONTROL_URL: server.origin, BLUE_AGENT_TOKEN: 'tok_process_test_123456' };
      const fetched = await cli(['reconcile', '--json', '--harness', 'claude']);
      expect(fetched.code, fetched.stderr).toBe(0);
      expect(JSON.parse(fetched.stdout)).toMatchObject({
        policy: { revision: 12, source: 'fetched' },
        harnesses: [{ state: 'active', action: 'create' }],
      });
      await server.close();
      const cached = await cli(['reconcile', '--json', '--harness', 'claude']);
      expect(cached.code, cached.stderr).toBe(0);
      expect(JSON.parse(cached.stdout)).toMatchObject({
        policy: { revision: 12, source: 'cached' },
        harnesses: [{ action: 'unchanged' }],
      });
      expect(cached.stdout + cached.stderr).not.toContain('tok_process_test_123456');
    } finally {
      await server.close().catch(() => undefined);
    }
  });
});

/** The CLI in this process: `main(argv, ctx)` with the output captured. */
async function inProcess(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = { before: t.stdout.text().length, errBefore: t.stderr.text().length };
  const code = await main(args, t.context({ env: { PATH: env.PATH! } }));
  return { code, stdout: t.stdout.text().slice(out.before), stderr: t.stderr.text().slice(out.errBefore) };
}

describe('parse errors in the standard form', () => {
  it.each([
    [['reconcile', '--bogus'], "unknown option '--bogus'", 'blue-agent reconcile --help'],
    [['sessions', 'show'], "missing required argument 'id'", 'blue-agent sessions show --help'],
    [['reconcile', '--harness', 'emacs'], 'unknown harness "emacs"', 'blue-agent reconcile --help'],
    [
      ['control-plane', 'users', 'add', '--admin', '--bogus'],
      "unknown option '--bogus'",
      'blue-agent control-plane users add --help',
    ],
    [
      ['sessions', 'share', '3d394c86'],
      "required option '--mode <mode>' not specified",
      'blue-agent sessions share --help',
    ],
    [['frobnicate'], "unknown command 'frobnicate'", 'blue-agent --help'],
    [['service', 'status', '--dry-run'], "unknown option '--dry-run'", 'blue-agent service status --help'],
  ])('%j: USAGE error with a hint, exit 2', async (args, message, help) => {
    const human = await inProcess(args);
    expect(human.code).toBe(2);
    expect(human.stdout).toBe('');
    const lines = human.stderr.split('\n');
    expect(lines[0]).toMatch(/^blue-agent: error \[USAGE\]: /);
    expect(lines[0]).toContain(message);
    expect(lines[1]).toBe(`  hint: run \`${help}\``);
    expect(human.stderr).not.toMatch(/^error:/m);
    expect(human.stderr).not.toContain('(run with --help for usage)');

    const json = await inProcess([...args, '--json']);
    expect(json.code).toBe(2);
    expect(json.stdout).not.toBe('');
    expect(json.stderr).toBe('');
    const doc = JSON.parse(json.stdout) as { ok: boolean; error: { code: string; message: string; hint: string } };
    expect(doc).toEqual({
      ok: false,
      error: { code: 'USAGE', message: expect.stringContaining(message), hint: `run \`${help}\`` },
    });
    expect(doc.error.message).not.toMatch(/^error:/);
  });

  it.each([
    [
      ['reconcil'],
      "unknown command 'reconcil'",
      '  hint: did you mean `blue-agent reconcile`? Else run `blue-agent --help`',
    ],
    [
      ['sessions', 'lst'],
      "unknown command 'lst'",
      '  hint: did you mean `blue-agent sessions list`? Else run `blue-agent sessions --help`',
    ],
    [
      ['reconcile', '--dry-rn'],
      "unknown option '--dry-rn'",
      '  hint: did you mean `--dry-run`? Else run `blue-agent reconcile --help`',
    ],
  ])('%j: a typo gets one message line and the suggestion in its hint', async (args, message, hint) => {
    const human = await inProcess(args);
    expect(human.code).toBe(2);
    const lines = human.stderr.split('\n');
    expect(lines[0]).toBe(`blue-agent: error [USAGE]: ${message}`);
    expect(lines[1]).toBe(hint);
    expect(human.stderr).not.toContain('(Did you mean');
  });

  it('--help and --version still print on stdout and exit 0', async () => {
    const help = await inProcess(['reconcile', '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('Usage: blue-agent reconcile');
    const version = await inProcess(['--version']);
    expect(version).toMatchObject({ code: 0, stderr: '' });
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('every --json command result carries ok', () => {
  const okFirst = (stdout: string): Record<string, unknown> => {
    const doc = JSON.parse(stdout) as Record<string, unknown>;
    expect(Object.keys(doc)[0]).toBe('ok');
    return doc;
  };

  it('profiles list and spool list', async () => {
    const profiles = await inProcess(['profiles', 'list', '--json']);
    expect(profiles.code).toBe(0);
    expect(okFirst(profiles.stdout)).toMatchObject({ ok: true, profiles: expect.any(Array) });
    const spool = await inProcess(['spool', 'list', '--json']);
    expect(spool.code).toBe(0);
    expect(okFirst(spool.stdout)).toMatchObject({ ok: true, spool: expect.any(String), records: [] });
  });

  it('control-plane users add, users list, policy publish and gc', async () => {
    const data = path.join(t.root, 'control');
    const added = await inProcess([
      'control-plane',
      'users',
      'add',
      'ada@example.com',
      '--admin',
      '--data',
      data,
      '--json',
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(okFirst(added.stdout)).toMatchObject({
      ok: true,
      email: 'ada@example.com',
      is_admin: true,
      token: expect.any(String),
    });
    const listed = await inProcess(['control-plane', 'users', 'list', '--data', data, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(okFirst(listed.stdout)).toMatchObject({ ok: true, users: [{ email: 'ada@example.com', is_admin: true }] });
    const published = await inProcess(['control-plane', 'policy', 'publish', policy, '--data', data, '--json']);
    expect(published.code, published.stderr).toBe(0);
    expect(okFirst(published.stdout)).toMatchObject({
      ok: true,
      revision: expect.stringMatching(/^[0-9a-f-]{36}$/),
      ignored_revision: 2,
    });
    const gc = await inProcess(['control-plane', 'gc', '--data', data, '--json']);
    expect(gc.code, gc.stderr).toBe(0);
    expect(okFirst(gc.stdout)).toEqual({
      ok: true,
      deleted: [],
      deleted_objects: [],
      failed: [],
      expired_search_entries: 0,
      expired_sign_in_records: 0,
    });
    const reindexed = await inProcess(['control-plane', 'reindex', '--data', data, '--json']);
    expect(reindexed.code, reindexed.stderr).toBe(0);
    expect(okFirst(reindexed.stdout)).toEqual({
      ok: true,
      indexed: 0,
      without_text: 0,
      skipped: 0,
      expired: 0,
      total: 0,
      resumed_after: null,
    });
  });
});

describe('help texts', () => {
  it('the top-level help names every exit code', async () => {
    const help = (await inProcess(['--help'])).stdout;
    expect(help).toContain('2 usage error');
    expect(help).toMatch(/3 `run`: another agent is already running/);
    expect(help).toContain('75 `drain`: nothing failed, but another drain held records');
    expect(help).toContain('130 or 143');
  });

  it('service: only install and uninstall take --dry-run', async () => {
    expect((await inProcess(['service', 'status', '--help'])).stdout).not.toContain('--dry-run');
    expect((await inProcess(['service', 'install', '--help'])).stdout).toContain('--dry-run');
    expect((await inProcess(['service', 'uninstall', '--help'])).stdout).toMatch(
      /--dry-run\s+show what would be stopped and removed, change\s+nothing/,
    );
  });

  it('status, doctor, sessions share, sessions export and bundle create explain themselves by example', async () => {
    const status = (await inProcess(['status', '--help'])).stdout;
    expect(status).toContain('never contacts the network or writes; always exits 0; see `doctor`');
    expect(status).toContain('blue-agent status --json');
    const doctor = (await inProcess(['doctor', '--help'])).stdout;
    expect(doctor).toContain('Exits 1 when any check fails');
    expect(doctor).toMatch(/node, config, control-api, token, policy, spool,\s+harness:NAME/);
    expect(doctor).toContain('codex-trust, service');
    const share = (await inProcess(['sessions', 'share', '--help'])).stdout;
    expect(share).toContain('--user is accepted only with --mode selected');
    expect(share).toContain('blue-agent sessions share 3d394c86 --mode selected --user ada@example.com');
    const exported = (await inProcess(['sessions', 'export', '--help'])).stdout;
    expect(exported).toContain('names an existing file, a local bundle');
    expect(exported).toContain('0600');
    expect(exported).toContain('blue-agent sessions export 3d394c86 --out session.md');
    const create = (await inProcess(['bundle', 'create', '--help'])).stdout;
    expect(create).toContain('--harness, --session and --out are required');
    expect(create).toContain('blue-agent bundle create --harness claude --session');
  });
});
