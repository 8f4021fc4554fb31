/**
 * Reconcile against the real harness CLIs: the managed hook that reconcile writes is accepted by the real CLI and
 * fired at the end of a real (offline) session with the native payload, while the user's own hook in the same file
 * still fires too. The agent entry is a recorder named like the agent, so the hook's arguments and stdin are checked.
 */
import { chmod, mkdir, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { reconcile } from '../../src/reconcile/index.js';
import { makeTestHome, type TestHome } from '../support/context.js';
import { harnessBin } from '../support/harness-bins.js';
import { startModelStub, type ModelStub } from '../support/model-stub.js';
import {
  addClaudeUserHook,
  appendCodexHook,
  appendStdinCommand,
  describeRun,
  harnessDirs,
  harnessEnv,
  readJsonLines,
  runClaude,
  runCodex,
  runOpencode,
  waitFor,
  writeCodexProviderConfig,
  writeOpencodeUserPlugin,
  type HarnessRunResult,
} from '../support/run-harness.js';

const REPLY = 'Offline stub reply for the managed hook test.';
const TEST_TIMEOUT_MS = 120_000;

interface Recorded {
  argv: string[];
  stdin: string;
}
interface Payload {
  session_id?: string;
  cwd?: string;
  hook_event_name?: string;
  transcript_path?: string | null;
  reason?: string;
}

let t: TestHome;
let stub: ModelStub;
let cwd: string;
let userOut: string;
let managedOut: string;
let recorder: string;
let policy: string;

beforeEach(async () => {
  t = await makeTestHome();
  stub = await startModelStub({ reply: REPLY });
  cwd = path.join(t.root, 'work', 'project');
  await mkdir(cwd, { recursive: true });
  cwd = await realpath(cwd);
  userOut = path.join(t.root, 'user-hook.jsonl');
  managedOut = path.join(t.root, 'managed-hook.jsonl');
  // Stands in for the agent's entry: records how the harness called `capture`.
  recorder = path.join(t.root, 'agent', 'bin', 'blue-agent.js');
  await mkdir(path.dirname(recorder), { recursive: true });
  await writeFile(
    recorder,
    [
      `import { appendFileSync } from 'node:fs';`,
      `const chunks = [];`,
      `for await (const chunk of process.stdin) chunks.push(chunk);`,
      `appendFileSync(${JSON.stringify(managedOut)}, JSON.stringify({ argv: process.argv.slice(2), stdin: Buffer.concat(chunks).toString('utf8') }) + '\\n');`,
      '',
    ].join('\n'),
  );
  await chmod(recorder, 0o755);
  policy = path.join(t.root, 'policy.yaml');
  await writeFile(policy, 'revision: 1\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n');
});

afterEach(async () => {
  await stub.close();
  await t.cleanup();
});

function agentContext(harnessBinary: string): Context {
  return t.context({
    env: { PATH: `${path.dirname(harnessBinary)}:${path.dirname(process.execPath)}:/usr/bin:/bin` },
    self: { node: process.execPath, entry: recorder },
  });
}

async function managedCalls(): Promise<{ argv: string[]; payload: Payload }[]> {
  const lines = (await readJsonLines(managedOut)) as Recorded[];
  return lines.map((line) => ({ argv: line.argv, payload: JSON.parse(line.stdin) as Payload }));
}

/** The managed hook ran exactly once, as `capture` for this harness and profile, with a SessionEnd payload. */
async function expectOneSessionEnd(harness: string, profile: string): Promise<{ argv: string[]; payload: Payload }[]> {
  const calls = await waitFor('the managed hook', async () => ((await managedCalls()).length > 0 ? managedCalls() : undefined), 10_000);
  expect(calls).toHaveLength(1);
  expect(calls[0]!.argv).toEqual(['capture', '--harness', harness, '--profile', profile]);
  expect(calls[0]!.payload).toMatchObject({ hook_event_name: 'SessionEnd', cwd });
  expect(calls[0]!.payload.session_id).toMatch(/^[0-9a-f-]{36}$/);
  return calls;
}

/** The user's own SessionEnd hook in the same file ran for the same session. */
async function expectUserHookFor(sessionId: string): Promise<void> {
  const user = (await waitFor('the user hook', async () => {
    const lines = (await readJsonLines(userOut)) as Payload[];
    return lines.length > 0 ? lines : undefined;
  })) as Payload[];
  expect(user[0]).toMatchObject({ hook_event_name: 'SessionEnd', session_id: sessionId });
}

function explain(result: HarnessRunResult): string {
  return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}`);
}

describe('reconcile with the real harness CLIs', () => {
  it(
    'Claude Code fires the managed SessionEnd hook and the user hook',
    async () => {
      const bin = harnessBin('claude');
      const dirs = harnessDirs(harnessEnv(t.home));
      await addClaudeUserHook(dirs.claude, 'SessionEnd', appendStdinCommand(userOut), 10);

      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['claude'] });
      expect(report.harnesses[0]).toMatchObject({ state: 'active', action: 'create', profile: 'claude-v2_0_12' });

      const result = await runClaude({ bin, home: t.home, cwd, prompt: 'Say hello.', stubUrl: stub.url, env: t.env, timeoutMs: 60_000 });
      expect(result.exitCode, explain(result)).toBe(0);
      expect(result.stdout, explain(result)).toContain(REPLY);

      const calls = await expectOneSessionEnd('claude', 'claude-v2_0_12');
      expect(calls[0]!.payload.transcript_path).toContain(path.join(dirs.claude, 'projects'));

      await expectUserHookFor(calls[0]!.payload.session_id!);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'Codex fires the managed SessionEnd hook and the user hook (trust bypassed), and reports awaiting_trust until then',
    async () => {
      const bin = harnessBin('codex');
      const dirs = harnessDirs(harnessEnv(t.home));
      await writeCodexProviderConfig(dirs.codex, stub.url);
      await appendCodexHook(dirs.codex, 'SessionEnd', appendStdinCommand(userOut), 3);

      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['codex'] });
      expect(report.harnesses[0]).toMatchObject({ state: 'awaiting_trust', action: 'create', profile: 'codex-v0_145_0' });

      const result = await runCodex({
        bin,
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        env: t.env,
        bypassHookTrust: true,
        writeConfig: false,
        timeoutMs: 60_000,
      });
      expect(result.exitCode, explain(result)).toBe(0);

      const calls = await expectOneSessionEnd('codex', 'codex-v0_145_0');

      await expectUserHookFor(calls[0]!.payload.session_id!);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'OpenCode loads the managed plugin, which calls capture once for the top-level session, beside a user plugin',
    async () => {
      const bin = harnessBin('opencode');
      const dirs = harnessDirs(harnessEnv(t.home));
      await writeOpencodeUserPlugin(dirs.opencodeConfig, userOut);

      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['opencode'] });
      expect(report.harnesses[0]).toMatchObject({ state: 'active', action: 'create', profile: 'opencode-v1_2_0' });

      const result = await runOpencode({ bin, home: t.home, cwd, prompt: 'Say hello.', stubUrl: stub.url, env: t.env, timeoutMs: 60_000 });
      expect(result.exitCode, explain(result)).toBe(0);

      const calls = await waitFor('the managed plugin', async () => ((await managedCalls()).length > 0 ? managedCalls() : undefined), 15_000);
      expect(calls[0]!.argv).toEqual(['capture', '--harness', 'opencode', '--profile', 'opencode-v1_2_0']);
      expect(calls[0]!.payload).toMatchObject({ hook_event_name: 'session.idle', cwd });
      expect(calls[0]!.payload.session_id).toMatch(/^ses_/);
      expect(new Set((await managedCalls()).map((c) => c.payload.session_id)).size).toBe(1);

      const events = (await waitFor('the user plugin', async () => {
        const lines = (await readJsonLines(userOut)) as { type: string; properties?: { sessionID?: string } }[];
        return lines.some((e) => e.type === 'session.idle') ? lines : undefined;
      })) as { type: string; properties?: { sessionID?: string } }[];
      expect(events.find((e) => e.type === 'session.idle')!.properties?.sessionID).toBe(calls[0]!.payload.session_id);
    },
    TEST_TIMEOUT_MS,
  );
});
