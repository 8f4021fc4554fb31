/**
 * Gemini CLI through reconcile: the managed SessionEnd group in settings.json beside the user's hooks, the enabling
 * switch a version before 0.26 needs (added with the hook, never over the user's own value, gone with it), a
 * real-world settings file round trip, and a settings switch that turns hooks off reported as `hooks_disabled`.
 */
import { readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../../src/context.js';
import { GEMINI_HOOK_NAME, geminiHooksDisabled } from '../../../src/harnesses/gemini/plan.js';
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
  await writeFile(policy, POLICY);
  settings = path.join(t.home, '.gemini', 'settings.json');
  await mkdir(path.dirname(settings), { recursive: true });
});
afterEach(async () => t.cleanup());

async function agent(version: string): Promise<Context> {
  const bin = await versionStubs(path.join(t.root, version), { gemini: version });
  return t.context({ env: { PATH: `${bin}:/usr/bin:/bin` }, self: SELF });
}

async function run(version: string, revision = POLICY) {
  await writeFile(policy, revision);
  return (await reconcile(await agent(version), { dryRun: false, policyFile: policy, harnesses: ['gemini'] }))
    .harnesses[0]!;
}

const read = async () => JSON.parse(await readFile(settings, 'utf8')) as Record<string, any>;

describe('Gemini CLI through reconcile', () => {
  it(
    '0.61: one managed group in SessionEnd, as Gemini CLI reads it (name, command, timeout in milliseconds), the ' +
      'user hook kept',
    async () => {
      const original = readFileSync(path.join(repoRoot, 'fixtures', 'real-world', 'gemini-mcp-hooks.json'));
      await writeFile(settings, original);
      expect(await run('0.61.0')).toMatchObject({ state: 'active', action: 'create', profile: 'gemini-v0_39_0' });
      const doc = await read();
      expect(doc.hooks.SessionEnd).toHaveLength(2);
      expect(doc.hooks.SessionEnd[0].hooks[0].name).toBe('notes');
      expect(doc.hooks.SessionEnd[1]).toEqual({
        matcher: '',
        hooks: [
          {
            name: GEMINI_HOOK_NAME,
            type: 'command',
            command:
              "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness gemini --profile gemini-v0_39_0",
            timeout: 10_000,
          },
        ],
      });
      expect(doc.tools).toEqual({ sandbox: false });
      expect(doc.hooks.AfterAgent).toEqual(JSON.parse(original.toString()).hooks.AfterAgent);

      expect((await run('0.61.0')).action).toBe('unchanged');
      await run('0.61.0', 'revision: 2\n');
      expect((await readFile(settings)).equals(original)).toBe(true);
    },
  );

  it(
    "0.21: the enabling switch goes into the user's tools object with the hook; an upgrade to 0.61 takes it out; " +
      'removal gives back the bytes',
    async () => {
      const original = readFileSync(path.join(repoRoot, 'fixtures', 'real-world', 'gemini-mcp-hooks.json'));
      await writeFile(settings, original);
      const first = await run('0.21.3');
      expect(first).toMatchObject({ state: 'active', action: 'create', profile: 'gemini-v0_21_0' });
      expect((await read()).tools).toEqual({ sandbox: false, enableHooks: true });

      const upgraded = await run('0.61.0');
      expect(upgraded).toMatchObject({ state: 'active', action: 'update', profile: 'gemini-v0_39_0' });
      expect((await read()).tools).toEqual({ sandbox: false });
      expect((await read()).hooks.SessionEnd[1].hooks[0].command).toContain('--profile gemini-v0_39_0');

      await run('0.21.3');
      await run('0.21.3', 'revision: 2\n');
      expect((await readFile(settings)).equals(original)).toBe(true);
    },
  );

  it('0.24: the switch is hooks.enabled, beside the events; a fresh file goes away again', async () => {
    expect(await run('0.24.0', `${POLICY}harnesses:\n  gemini: { allow_unverified_versions: true }\n`)).toMatchObject({
      state: 'active',
      action: 'create',
      profile: 'gemini-v0_24_0',
    });
    const doc = await read();
    expect(doc.hooks.enabled).toBe(true);
    expect(doc.hooks.SessionEnd).toHaveLength(1);
    await run('0.24.0', 'revision: 2\n');
    await expect(readFile(settings)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it("0.21 with the user's own tools.enableHooks false: refused with its place, the file untouched", async () => {
    const text = '{\n  "tools": {\n    "enableHooks": false\n  }\n}\n';
    await writeFile(settings, text);
    const report = await run('0.21.3');
    expect(report.state).toBe('error');
    expect(report.reason).toContain('tools.enableHooks is false');
    expect(await readFile(settings, 'utf8')).toBe(text);
  });

  it('a settings switch that turns hooks off is reported as hooks_disabled, the hook still in place', async () => {
    await writeFile(settings, '{\n  "hooksConfig": {\n    "enabled": false\n  }\n}\n');
    const report = await run('0.61.0');
    expect(report).toMatchObject({ state: 'hooks_disabled', action: 'create' });
    expect(report.reason).toContain('hooksConfig.enabled to false');
    expect((await read()).hooks.SessionEnd).toHaveLength(1);
  });
});

describe('geminiHooksDisabled', () => {
  it('names hooksConfig.enabled false and the managed hook in hooksConfig.disabled; anything else runs', () => {
    expect(geminiHooksDisabled('{"hooksConfig":{"enabled":false}}')).toContain('hooksConfig.enabled');
    expect(geminiHooksDisabled(`{"hooksConfig":{"disabled":["x","${GEMINI_HOOK_NAME}"]}}`)).toContain(
      'hooksConfig.disabled',
    );
    for (const text of [
      '{}',
      '{"hooksConfig":{"enabled":true,"disabled":["x"]}}',
      '{"hooksConfig":5}',
      'not json',
      '[]',
    ]) {
      expect(geminiHooksDisabled(text), text).toBeUndefined();
    }
  });
});
