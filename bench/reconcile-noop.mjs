// A no-change reconcile of all four harnesses with a warm version cache, beside bare Node start-up (`node -e 0`).
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { compare, report } from './lib.mjs';

/** A no-change reconcile may cost at most twice a bare Node start-up. */
const TARGET = 2;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');

/**
 * A layout in `dir` where `blue-agent reconcile --policy FILE` changes nothing (its first run, made here, installed the
 * hooks and warmed the version cache): that reconcile's argv and environment.
 */
export async function noChangeReconcile(dir) {
  const home = path.join(dir, 'home');
  const bin = path.join(dir, 'bin');
  await mkdir(bin, { recursive: true });
  const versions = {
    claude: '2.1.332 (Claude Code)',
    codex: 'codex-cli 0.171.0',
    kimi: 'kimi, version 1.49.0',
    opencode: '1.18.33',
  };
  for (const [name, output] of Object.entries(versions)) {
    await writeFile(path.join(bin, name), `#!/bin/sh\necho '${output}'\n`, { mode: 0o755 });
  }
  await mkdir(path.join(home, '.codex'), { recursive: true });
  const policy = path.join(dir, 'policy.yaml');
  await writeFile(
    policy,
    [
      'revision: 1',
      'harnesses:',
      '  kimi: { allow_unverified_versions: true }',
      'session_upload: { presign_url: "https://control.example/session-uploads/presign" }',
      '',
    ].join('\n'),
  );
  const env = {
    ...process.env,
    HOME: home,
    PATH: `${bin}:${process.env.PATH}`,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    BLUE_AGENT_HOME: path.join(home, '.local', 'state', 'blue-agent'),
    BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
  };
  const argv = [process.execPath, entry, 'reconcile', '--policy', policy];
  const first = spawnSync(argv[0], argv.slice(1), { env, encoding: 'utf8' });
  if (first.status !== 0) throw new Error(`setup reconcile failed:\n${first.stdout}\n${first.stderr}`);
  const check = spawnSync(argv[0], [...argv.slice(1), '--json'], { env, encoding: 'utf8' });
  const states = JSON.parse(check.stdout).harnesses.map((h) => `${h.harness}:${h.state}/${h.action}`);
  if (!states.every((s) => s.endsWith('/unchanged'))) throw new Error(`not a no-change run: ${states.join(' ')}`);
  return { argv, env };
}

export async function run() {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-'));
  try {
    const { argv, env } = await noChangeReconcile(dir);
    const result = compare(argv, [process.execPath, '-e', '0'], { env });
    return report('reconcile (no change, 4 harnesses, warm cache)', result, TARGET, 'node -e 0');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
