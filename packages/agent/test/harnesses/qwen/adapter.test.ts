/**
 * Qwen Code through reconcile: the managed SessionEnd group in settings.json beside the user's hooks (a real-world
 * settings file, byte for byte back on removal), the timeout in milliseconds every version reads alike, what the hook
 * cannot catch (headless runs) said with the state, and `disableAllHooks` reported as `hooks_disabled`.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { QWEN_HOOK_NAME, qwenHooksDisabled } from '../../../src/harnesses/qwen/plan.js';
import { reconcile } from '../../../src/reconcile/index.js';
import { makeTestHome, repoRoot, versionStubs, type TestHome } from '../../../../../test/support/context.js';

const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const POLICY = 'revision: 1\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n';

let t: TestHome;
let policy: string;
let settings: string;

beforeEach(async () => {
  t = await makeTestHome();
  policy = path.join(t.root, 'policy.yaml');
  settings = path.join(t.home, '.qwen', 'settings.json');
  await mkdir(path.dirname(settings), { recursive: true });
});
afterEach(async () => t.cleanup());

async function run(version: string, revision = POLICY, env: Record<string, string> = {}) {
  await writeFile(policy, revision);
  const bin = await versionStubs(path.join(t.root, version), { qwen: version });
  return (
    await reconcile(t.context({ env: { PATH: `${bin}:/usr/bin:/bin`, ...env }, self: SELF }), {
      dryRun: false,
      policyFile: policy,
      harnesses: ['qwen'],
    })
  ).harnesses[0]!;
}

describe('Qwen Code through reconcile', () => {
  it('one managed group in SessionEnd beside the user hooks; removal gives back every byte', async () => {
    const original = readFileSync(path.join(repoRoot, 'fixtures', 'real-world', 'qwen-guard-hooks.json'));
    await writeFile(settings, original);
    const first = await run('0.24.4');
    expect(first).toMatchObject({ state: 'active', action: 'create', profile: 'qwen-v0_15_6' });
    expect(first.reason).toBe(
      'managed SessionEnd capture hook for qwen-v0_15_6; headless runs (`qwen -p`) fire no SessionEnd, so they are ' +
        'not captured',
    );
    const doc = JSON.parse(await readFile(settings, 'utf8')) as Record<string, any>;
    expect(doc.hooks.SessionEnd).toEqual([
      {
        matcher: '',
        hooks: [
          {
            name: QWEN_HOOK_NAME,
            type: 'command',
            command:
              "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness qwen --profile qwen-v0_15_6",
            timeout: 10_000,
          },
        ],
      },
    ]);
    expect(doc.hooks.Stop).toEqual(JSON.parse(original.toString()).hooks.Stop);
    expect(doc.$version).toBe(4);
    expect((await run('0.24.4')).action).toBe('unchanged');
    await run('0.24.4', 'revision: 2\n');
    expect((await readFile(settings)).equals(original)).toBe(true);
  });

  it('uses QWEN_HOME for settings.json, and versions before 0.15.6 fire no SessionEnd: none is written', async () => {
    const home = path.join(t.root, 'qwen-home');
    expect(await run('0.24.4', POLICY, { QWEN_HOME: home })).toMatchObject({
      state: 'active',
      files: [{ path: path.join(home, 'settings.json') }],
    });
    expect(await run('0.12.0')).toMatchObject({ state: 'unsupported_version' });
    await expect(readFile(settings)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('disableAllHooks is reported as hooks_disabled, the hook still in place', async () => {
    await writeFile(settings, '{\n  "disableAllHooks": true\n}\n');
    const report = await run('0.24.4');
    expect(report).toMatchObject({ state: 'hooks_disabled', action: 'create' });
    expect(report.reason).toContain('disableAllHooks');
    expect(qwenHooksDisabled('{"disableAllHooks": false}')).toBeUndefined();
    expect(qwenHooksDisabled('not json')).toBeUndefined();
  });
});
