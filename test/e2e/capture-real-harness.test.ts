/**
 * Capture end to end with the real harness CLIs, offline against the model stub: reconcile installs the managed hook
 * with the real built agent entry, a real session ends, the harness runs `blue-agent capture`, the detached worker
 * builds the bundle, and the spool ends up with a ready bundle that `bundle verify` accepts, titled with the prompt.
 */
import { mkdir, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { verifyBundle } from '../../src/bundle/index.js';
import type { Context } from '../../src/context.js';
import { loadProfiles } from '../../src/profiles/index.js';
import { reconcile } from '../../src/reconcile/index.js';
import type { SpoolRecord } from '../../src/spool/index.js';
import { captureLog, readJson, runCli, spoolFiles, waitForWorkers } from '../support/cli-process.js';
import { makeTestHome, type TestHome } from '../support/context.js';
import { harnessBin } from '../support/harness-bins.js';
import { startModelStub, type ModelStub } from '../support/model-stub.js';
import { describeRun, runClaude, runCodex, runOpencode, waitFor, writeCodexProviderConfig, harnessDirs, harnessEnv, type HarnessRunResult } from '../support/run-harness.js';

const REPLY = 'Offline stub reply for the capture test.';
const TEST_TIMEOUT_MS = 150_000;

let t: TestHome;
let stub: ModelStub;
let cwd: string;
let policy: string;
let stateDir: string;

beforeEach(async () => {
  t = await makeTestHome();
  stateDir = t.env.BLUE_AGENT_HOME!;
  stub = await startModelStub({ reply: REPLY });
  cwd = path.join(t.root, 'work', 'project');
  await mkdir(cwd, { recursive: true });
  cwd = await realpath(cwd);
  policy = path.join(t.root, 'policy.yaml');
  await writeFile(policy, 'revision: 1\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n');
});

afterEach(async () => {
  await waitForWorkers(stateDir, 60_000).catch(() => undefined);
  await stub.close();
  await t.cleanup();
});

/** The agent as installed: `self` is the real built entry (the Context default), the harness found on PATH. */
function agentContext(harnessBinary: string): Context {
  return t.context({ env: { PATH: `${path.dirname(harnessBinary)}:${path.dirname(process.execPath)}:/usr/bin:/bin` } });
}

function explain(result: HarnessRunResult): string {
  return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}\n--- capture.log\n${JSON.stringify(captureLog(stateDir), null, 1)}`);
}

/** Waits for the one capture of this run to reach a final state; returns its record. */
async function oneFinishedCapture(timeoutMs = 60_000): Promise<{ state: string; record: SpoolRecord }> {
  const done = await waitFor(
    'a finished capture in the spool',
    () => {
      const files = spoolFiles(stateDir);
      const finished = [...files.ready.map((n) => ['ready', n] as const), ...files.failed.map((n) => ['failed', n] as const)];
      return finished.length > 0 && files.intake.length === 0 && files.building.length === 0 ? finished : undefined;
    },
    timeoutMs,
    100,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n--- spool ${JSON.stringify(spoolFiles(stateDir))}\n--- capture.log\n${JSON.stringify(captureLog(stateDir), null, 1)}\n--- model stub\n${stub.summary()}`);
  });
  expect(done, JSON.stringify(captureLog(stateDir))).toHaveLength(1);
  const [state, name] = done[0]!;
  return { state, record: readJson<SpoolRecord>(path.join(stateDir, 'spool', state, name)) };
}

/** The ready bundle verifies, in process and through the CLI, and carries the session, its title and preview. */
async function expectVerifiedBundle(record: SpoolRecord, harness: string, profile: string, text: { title: string; summary?: string }): Promise<void> {
  const bundle = path.join(stateDir, 'spool', 'bundles', `${record.id}.bundle`);
  const verified = await verifyBundle(bundle, { profiles: await loadProfiles(t.ctx.paths.profilesDir) });
  expect(record.bundle).toMatchObject({ size: verified.size, sha256: verified.sha256 });
  expect(verified.manifest).toMatchObject({
    harness,
    compatibility_profile: profile,
    native_session_id: record.payload.session_id,
    captured_at_unix_ms: record.created_at_unix_ms,
    cwd,
    title: text.title,
  });
  if (text.summary !== undefined) expect(verified.manifest.summary).toContain(text.summary);
  const cli = await runCli(['bundle', 'verify', bundle, '--json'], { env: t.env });
  expect(cli.code, cli.stderr).toBe(0);
  // Nothing half-done is left behind.
  expect(spoolFiles(stateDir)).toMatchObject({ intake: [], building: [], failed: [], tmp: [] });
}

describe('capture with the real harness CLIs', () => {
  it(
    'Claude Code: SessionEnd -> capture -> worker -> a ready, verified bundle',
    async () => {
      const bin = harnessBin('claude');
      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['claude'] });
      expect(report.harnesses[0]).toMatchObject({ state: 'active', profile: 'claude-v2_0_12' });

      const prompt = 'Summarise the README in one line.';
      const result = await runClaude({ bin, home: t.home, cwd, prompt, stubUrl: stub.url, env: t.env, timeoutMs: 60_000 });
      expect(result.exitCode, explain(result)).toBe(0);
      expect(result.stdout, explain(result)).toContain(REPLY);

      const { state, record } = await oneFinishedCapture();
      expect(state, explain(result)).toBe('ready');
      expect(record).toMatchObject({ harness: 'claude', profile: 'claude-v2_0_12', payload: { cwd, hook_event_name: 'SessionEnd' } });
      expect(record.payload.transcript_path).toContain(path.join(harnessDirs(harnessEnv(t.home)).claude, 'projects'));
      await expectVerifiedBundle(record, 'claude', 'claude-v2_0_12', { title: prompt, summary: prompt });
      expect(captureLog(stateDir).map((l) => l.event)).toEqual(['spooled', 'built']);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'Codex: SessionEnd -> capture -> worker -> a ready, verified bundle',
    async () => {
      const bin = harnessBin('codex');
      const dirs = harnessDirs(harnessEnv(t.home));
      await writeCodexProviderConfig(dirs.codex, stub.url);
      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['codex'] });
      expect(report.harnesses[0]).toMatchObject({ profile: 'codex-v0_145_0' });

      const prompt = 'List three prime numbers.';
      const result = await runCodex({ bin, home: t.home, cwd, prompt, stubUrl: stub.url, env: t.env, bypassHookTrust: true, writeConfig: false, timeoutMs: 60_000 });
      expect(result.exitCode, explain(result)).toBe(0);

      const { state, record } = await oneFinishedCapture();
      expect(state, JSON.stringify(record)).toBe('ready');
      expect(record).toMatchObject({ harness: 'codex', profile: 'codex-v0_145_0', payload: { cwd, hook_event_name: 'SessionEnd' } });
      await expectVerifiedBundle(record, 'codex', 'codex-v0_145_0', { title: prompt, summary: prompt });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'OpenCode: session.idle plugin -> capture -> worker (opencode export) -> a ready, verified bundle',
    async () => {
      const bin = harnessBin('opencode');
      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['opencode'] });
      expect(report.harnesses[0]).toMatchObject({ state: 'active', profile: 'opencode-v1_2_0' });

      const prompt = 'Name a colour of the rainbow.';
      // The worker runs `opencode export`, so OpenCode must be on the PATH the plugin passes down.
      const env = { ...t.env, PATH: `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin` };
      const result = await runOpencode({ bin, home: t.home, cwd, prompt, stubUrl: stub.url, env, timeoutMs: 60_000 });
      expect(result.exitCode, explain(result)).toBe(0);

      const { state, record } = await oneFinishedCapture(90_000);
      expect(state, JSON.stringify(record)).toBe('ready');
      expect(record).toMatchObject({ harness: 'opencode', profile: 'opencode-v1_2_0', payload: { cwd, hook_event_name: 'session.idle' } });
      expect(record.payload.session_id).toMatch(/^ses_/);
      // OpenCode asks its (stub) model for a session title: that native title wins; the prompt is the preview.
      await expectVerifiedBundle(record, 'opencode', 'opencode-v1_2_0', { title: REPLY, summary: prompt });
    },
    TEST_TIMEOUT_MS,
  );
});
