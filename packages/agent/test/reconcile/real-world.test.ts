/**
 * Reconcile against configurations shaped like real, publicly committed ones (fixtures/real-world): kimi-cli's
 * default config with `hooks = []`, Kimi Code configs as its migration from kimi-cli writes them and with another
 * tool's session hooks, a Codex config with other tools' marker blocks that have unrelated tables inside, and
 * Claude settings with other tools' hooks. Install, re-install and removal: foreign entries untouched, byte-exact.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { isManagedCommand } from '../../src/harness-kit/signature.js';
import { reconcile } from '../../src/reconcile/index.js';
import { makeTestHome, repoRoot, versionStubs, type TestHome } from '../../../../test/support/context.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { versionLines } from '../../../../test/support/rigs.js';

const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const VERSIONS = versionLines();
const ENABLED =
  'revision: 5\nharnesses:\n  kimi: { allow_unverified_versions: true }\nsession_upload: { presign_url: ' +
  '"https://control.example/session-uploads/presign" }\n';

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

const fixture = (name: string) => readFileSync(path.join(repoRoot, 'fixtures', 'real-world', name));

/** Every hook command in a parsed document, wherever it sits, minus the managed ones. */
function foreignCommands(value: unknown, harness: HarnessName): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === 'object' && v !== null) {
      for (const [key, inner] of Object.entries(v)) {
        if (key === 'command' && typeof inner === 'string') {
          if (!isManagedCommand(inner, harness)) out.push(inner);
        } else walk(inner);
      }
    }
  };
  walk(value);
  return out;
}

const cases = [
  // kimi-cli, the Python CLI Kimi Code succeeds.
  {
    harness: 'kimi',
    file: () => path.join(t.home, '.kimi', 'config.toml'),
    name: 'kimi-default.toml',
    parse: (s: string) => parseToml(s),
    version: 'kimi, version 1.49.0',
  },
  {
    harness: 'kimi',
    file: () => path.join(t.home, '.kimi-code', 'config.toml'),
    name: 'kimi-code-migrated.toml',
    parse: (s: string) => parseToml(s),
  },
  {
    harness: 'kimi',
    file: () => path.join(t.home, '.kimi-code', 'config.toml'),
    name: 'kimi-code-hooks.toml',
    parse: (s: string) => parseToml(s),
  },
  {
    harness: 'codex',
    file: () => path.join(t.home, '.codex', 'config.toml'),
    name: 'codex-foreign-blocks.toml',
    parse: (s: string) => parseToml(s),
  },
  {
    harness: 'claude',
    file: () => path.join(t.home, '.claude', 'settings.json'),
    name: 'claude-foreign-hooks.json',
    parse: (s: string) => JSON.parse(s) as unknown,
  },
] as const;

describe('real-world configurations', () => {
  for (const c of cases) {
    it(`${c.name}: install, re-install and removal keep foreign entries and every byte`, async () => {
      if ('version' in c) await versionStubs(t.root, { [c.harness]: c.version });
      const original = fixture(c.name);
      await mkdir(path.dirname(c.file()), { recursive: true });
      await writeFile(c.file(), original);
      const first = await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: [c.harness] });
      expect(first.harnesses[0]!.action).toBe('create');
      const installed = await readFile(c.file(), 'utf8');
      expect(installed).toContain(`capture --harness ${c.harness}`);
      expect(foreignCommands(c.parse(installed), c.harness)).toEqual(
        foreignCommands(c.parse(original.toString('utf8')), c.harness),
      );
      // Foreign marker blocks (and the tables inside them) are never a range to edit: the text before the managed
      // entry is as it was.
      if (c.harness === 'codex') expect(installed.startsWith(original.toString('utf8'))).toBe(true);

      const again = await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: [c.harness] });
      expect(again.harnesses[0]!.action).toBe('unchanged');
      expect(await readFile(c.file(), 'utf8')).toBe(installed);

      await writeFile(policy, 'revision: 6\n');
      await reconcile(ctx, { dryRun: false, policyFile: policy, harnesses: [c.harness] });
      expect((await readFile(c.file())).equals(original)).toBe(true);
    });
  }
});
