/**
 * What reconcile takes as its own hook, in every harness's native file. A managed entry in either shape the agent
 * writes (Node.js and the entry, or the sh hook before them), wherever the agent lived, is found and moved to the
 * current one. A user's own hook that merely begins like the managed command — the same Node.js, entry and flags,
 * then `&&` and a script of theirs — is the user's: reconcile never reports it as an update, installs its own hook
 * beside it, removes only its own, and keeps every byte of the user's.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { HARNESSES } from '../../src/harnesses/names.js';
import { buildManagedHook } from '../../src/harness-kit/signature.js';
import { reconcile } from '../../src/reconcile/index.js';
import { makeTestHome, versionStubs, type TestHome } from '../../../../test/support/context.js';
import { versionLines } from '../../../../test/support/rigs.js';

const OLD_SELF = { node: '/usr/bin/node', entry: '/opt/tools/blue-agent.js' };
const SELF: { node: string; entry: string; hook?: string } = {
  node: '/usr/local/bin/node',
  entry: '/opt/blue-agent/bin/blue-agent.js',
};
const SH_SELF = { ...SELF, hook: '/opt/blue-agent/bin/blue-agent-hook' };
const EXTRA = ' && /usr/local/bin/backup-transcripts.sh';
const POLICY =
  'revision: 5\nharnesses:\n  kimi: { allow_unverified_versions: true }\nsession_upload: { presign_url: ' +
  '"https://control.example/session-uploads/presign" }\n';

let t: TestHome;
let bin: string;
let policy: string;

beforeEach(async () => {
  t = await makeTestHome();
  bin = await versionStubs(t.root, versionLines());
  policy = path.join(t.root, 'policy.yaml');
  await writeFile(policy, POLICY);
});
afterEach(async () => t.cleanup());

const contextFor = (self: typeof SELF): Context => t.context({ env: { PATH: `${bin}:/usr/bin:/bin` }, self });

/**
 * The user's hook made from a managed one as written in `text`: its command with a script of theirs after it, or (a
 * file that holds the argument vector rather than a command line) its words with theirs after them.
 */
function userVariant(
  text: string,
  hook: { command: string; argv: readonly string[] },
): { text: string; mine: string } | undefined {
  if (text.includes(hook.command))
    return { text: text.replace(hook.command, hook.command + EXTRA), mine: hook.command + EXTRA };
  const argv = JSON.stringify(hook.argv);
  if (text.includes(argv)) {
    const mine = JSON.stringify([...hook.argv, '&&', '/usr/local/bin/backup-transcripts.sh']);
    return { text: text.replace(argv, mine), mine };
  }
  return undefined;
}

describe('a managed entry of either shape', () => {
  for (const harness of HARNESSES) {
    it(`${harness}: is found and moved from one shape to the other, and back`, async () => {
      const steps: [typeof SELF, string][] = [
        [OLD_SELF, 'create'],
        [SH_SELF, 'update'],
        [SH_SELF, 'unchanged'],
        [SELF, 'update'],
      ];
      for (const [self, action] of steps) {
        const report = (await reconcile(contextFor(self), { dryRun: false, policyFile: policy, harnesses: [harness] }))
          .harnesses[0]!;
        expect(report.action, `${self.hook === undefined ? 'node' : 'sh hook'} -> ${action}`).toBe(action);
        const file = report.files[0]!.path;
        const text = await readFile(file, 'utf8');
        const hook = buildManagedHook(self, harness, report.profile!, 'unused', 1);
        expect(text.includes(hook.command) || text.includes(JSON.stringify(hook.argv))).toBe(true);
      }
    });
  }
});

describe('a user hook that begins like the managed command', () => {
  for (const harness of HARNESSES) {
    it(`${harness}: is never updated or removed, and keeps its bytes`, async () => {
      // An earlier install wrote the managed hook; the user then added a script of their own to its command.
      const first = await reconcile(contextFor(OLD_SELF), { dryRun: false, policyFile: policy, harnesses: [harness] });
      const report = first.harnesses[0]!;
      expect(report.action).toBe('create');
      const file = report.files.find((f) => f.action === 'create' || f.action === 'update')!.path;
      const written = await readFile(file, 'utf8');
      const profile = report.profile!;
      const old = buildManagedHook(OLD_SELF, harness, profile, 'unused', 1);
      const variant = userVariant(written, old);
      expect(variant, 'the managed hook as written').toBeDefined();
      await writeFile(file, variant!.text);

      // The agent moved: a managed entry of the earlier install would be updated; the user's is not one.
      const dry = await reconcile(contextFor(SELF), { dryRun: true, policyFile: policy, harnesses: [harness] });
      expect(dry.harnesses[0]!.action).not.toBe('update');
      const next = await reconcile(contextFor(SELF), { dryRun: false, policyFile: policy, harnesses: [harness] });
      expect(next.harnesses[0]!.action).not.toBe('update');
      const after = await readFile(file, 'utf8');
      expect(after).toContain(variant!.mine);
      if (next.harnesses[0]!.action === 'error') {
        // A harness whose hook is a whole file of the agent's: the user's file is left as it is.
        expect(after).toBe(variant!.text);
      } else {
        expect(after).toContain(buildManagedHook(SELF, harness, profile, 'unused', 1).command);
      }

      // Removal takes only the agent's own hook.
      await writeFile(policy, 'revision: 6\n');
      await reconcile(contextFor(SELF), { dryRun: false, policyFile: policy, harnesses: [harness] });
      expect(await readFile(file, 'utf8').catch(() => '')).toContain(variant!.mine);
    });
  }
});
