/**
 * The built command line, run as a process the way users and harnesses run it.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isManagedCommand } from '../../src/harnesses/signature.js';
import { makeTestHome, repoRoot, type TestHome } from '../support/context.js';
import { startPolicyServer } from '../policy/server.js';

const run = promisify(execFile);
const entry = path.join(repoRoot, 'bin', 'blue-agent.js');

let t: TestHome;
let env: Record<string, string>;
let policy: string;

beforeEach(async () => {
  t = await makeTestHome();
  const bin = path.join(t.root, 'bin');
  await mkdir(bin);
  const versions = { claude: '2.1.332 (Claude Code)', codex: 'codex-cli 0.171.0', kimi: 'kimi, version 1.49.0', opencode: '1.18.33' };
  for (const [name, output] of Object.entries(versions)) await writeFile(path.join(bin, name), `#!/bin/sh\necho '${output}'\n`, { mode: 0o755 });
  env = { ...t.env, PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin` };
  policy = path.join(t.root, 'policy.yaml');
  await writeFile(policy, 'revision: 2\nharnesses: { kimi: { allow_unverified_versions: true } }\nsession_upload: { presign_url: "https://c.example/session-uploads/presign" }\n');
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
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'POLICY_MISSING', hint: expect.any(String) } });
  });

  it('profiles list --json and profiles check', async () => {
    const list = await cli(['profiles', 'list', '--json']);
    expect(list.code).toBe(0);
    const profiles = (JSON.parse(list.stdout) as { profiles: { profile: string }[] }).profiles.map((p) => p.profile);
    expect(profiles).toEqual(expect.arrayContaining(['claude-v2_0_12', 'codex-v0_145_0', 'kimi-v1_28_0', 'opencode-v1_2_0']));
    expect(await cli(['profiles', 'check'])).toMatchObject({ code: 0, stdout: expect.stringContaining('consistent') });
  });

  it('four reconcile processes at once end with one correct result', async () => {
    const settings = path.join(t.home, '.claude', 'settings.json');
    await mkdir(path.dirname(settings), { recursive: true });
    await writeFile(settings, '{\n  "env": { "A": "1" },\n  "hooks": { "SessionEnd": [ { "hooks": [ { "type": "command", "command": "echo mine" } ] } ] }\n}\n');
    const results = await Promise.all([1, 2, 3, 4].map(() => cli(['reconcile', '--policy', policy, '--json'])));
    for (const r of results) expect(r.code, r.stderr).toBe(0);
    const text = await readFile(settings, 'utf8');
    const commands = [...text.matchAll(/"command": "((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string);
    expect(commands.filter((c) => isManagedCommand(c, 'claude'))).toHaveLength(1);
    expect(commands).toContain('echo mine');
    const creators = results.map((r) => (JSON.parse(r.stdout) as { harnesses: { harness: string; action: string }[] }).harnesses.find((h) => h.harness === 'claude')!.action);
    expect(creators.filter((a) => a !== 'unchanged').length).toBeGreaterThanOrEqual(1);
    const after = await cli(['reconcile', '--policy', policy, '--dry-run', '--json']);
    expect((JSON.parse(after.stdout) as { harnesses: { action: string }[] }).harnesses.map((h) => h.action)).toEqual(['unchanged', 'unchanged', 'unchanged', 'unchanged']);
  });

  it('reconciles of different harnesses at once all keep their ledger records', async () => {
    for (let round = 0; round < 3; round++) {
      const harnesses = ['claude', 'codex', 'kimi', 'opencode'];
      const results = await Promise.all(harnesses.map((h) => cli(['reconcile', '--policy', policy, '--harness', h])));
      for (const r of results) expect(r.code, r.stderr).toBe(0);
      const ledger = JSON.parse(await readFile(path.join(env.BLUE_AGENT_HOME!, 'ledger.json'), 'utf8')) as { files: Record<string, { harness: string }> };
      expect(Object.values(ledger.files).map((f) => f.harness).sort()).toEqual(harnesses);
      // Start the next round from nothing, so every round races on creating the records.
      await writeFile(policy.replace('policy.yaml', 'off.yaml'), 'revision: 3\n');
      const off = await Promise.all(harnesses.map((h) => cli(['reconcile', '--policy', policy.replace('policy.yaml', 'off.yaml'), '--harness', h])));
      for (const r of off) expect(r.code, r.stderr).toBe(0);
      const cleared = JSON.parse(await readFile(path.join(env.BLUE_AGENT_HOME!, 'ledger.json'), 'utf8')) as { files: Record<string, unknown> };
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
      expect(JSON.parse(fetched.stdout)).toMatchObject({ policy: { revision: 12, source: 'fetched' }, harnesses: [{ state: 'active', action: 'create' }] });
      await server.close();
      const cached = await cli(['reconcile', '--json', '--harness', 'claude']);
      expect(cached.code, cached.stderr).toBe(0);
      expect(JSON.parse(cached.stdout)).toMatchObject({ policy: { revision: 12, source: 'cached' }, harnesses: [{ action: 'unchanged' }] });
      expect(cached.stdout + cached.stderr).not.toContain('tok_process_test_123456');
    } finally {
      await server.close().catch(() => undefined);
    }
  });
});
