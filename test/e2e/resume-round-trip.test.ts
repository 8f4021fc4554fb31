/**
 * The round trip people rely on, with the real harness CLIs offline against the model stub and the real Control API:
 * on machine A (one HOME) reconcile installs the managed hook, a real session ends, the hook captures it and the
 * worker uploads it; on machine B (another HOME, another directory) `blue-agent resume ID --dest DIR --yes
 * --no-launch` downloads, verifies and restores it and prints the native resume command; that command, run headless
 * in B, sends the earlier turn to the model: the history came along. Kimi CLI cannot be installed here: its session
 * is a fixture that follows its source, captured by the real hook and drain, and restored into Kimi's native layout.
 */
import { readdirSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { kimiWorkDirHash } from '../../src/harnesses/kimi/session.js';
import { reconcile } from '../../src/reconcile/index.js';
import { fixtureBundle } from '../support/restore-homes.js';
import { captureLog, runCli, waitForWorkers } from '../support/cli-process.js';
import { makeTestHome, type TestHome } from '../support/context.js';
import { harnessBin } from '../support/harness-bins.js';
import { startModelStub, type ModelStub } from '../support/model-stub.js';
import {
  describeRun,
  harnessDirs,
  harnessEnv,
  opencodeDepsFor,
  runClaude,
  runCodex,
  runOpencode,
  seedOpencodeConfigDeps,
  waitFor,
  writeCodexProviderConfig,
  writeOpencodeProviderConfig,
  type HarnessRunResult,
} from '../support/run-harness.js';
import { startUploadStack, type UploadStack } from '../support/fault-proxy.js';

const CODE_WORD = 'HERON-4410-WOMBAT';
const FIRST_PROMPT = `Keep this code word in mind: ${CODE_WORD}. Answer OK.`;
const SECOND_PROMPT = 'What was the code word?';
const TEST_TIMEOUT_MS = 300_000;
const OPENCODE_ENV = { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1' };

let stack: UploadStack;
let a: TestHome;
let b: TestHome;
let stub: ModelStub;
let sourceCwd: string;
let destination: string;

beforeEach(async () => {
  stack = await startUploadStack();
  const control = { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token };
  a = await makeTestHome(control);
  b = await makeTestHome(control);
  stub = await startModelStub({ reply: 'OK.' });
  await mkdir(path.join(a.root, 'src', 'shop'), { recursive: true });
  sourceCwd = await realpath(path.join(a.root, 'src', 'shop'));
  await mkdir(path.join(b.root, 'elsewhere', 'shop-copy'), { recursive: true });
  destination = await realpath(path.join(b.root, 'elsewhere', 'shop-copy'));
});

afterEach(async () => {
  await waitForWorkers(a.env.BLUE_AGENT_HOME!, 60_000).catch(() => undefined);
  await stub.close();
  await stack.close();
  await a.cleanup();
  await b.cleanup();
});

function pathWith(bin: string): string {
  return `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin`;
}

function agentOn(home: TestHome, bin: string): Context {
  return home.context({ env: { PATH: pathWith(bin) } });
}

function explain(result: HarnessRunResult): string {
  return describeRun(result, `--- model stub\n${stub.summary() || '(none)'}\n--- capture.log A\n${JSON.stringify(captureLog(a.env.BLUE_AGENT_HOME!), null, 1)}`);
}

/** Waits until machine A's session is listed complete on the Control API; returns it. */
async function uploadedFromA(harness: string): Promise<{ upload_id: string; session_id: string }> {
  try {
    return await waitFor(
      `the ${harness} session uploaded from machine A`,
      async () => (await stack.listUploads()).find((i) => i.harness === harness && i.status === 'complete'),
      90_000,
      200,
    );
  } catch (error) {
    const state = a.env.BLUE_AGENT_HOME!;
    const spool = Object.fromEntries(['intake', 'building', 'ready', 'uploading', 'failed'].map((d) => [d, readdirSync(path.join(state, 'spool', d), { withFileTypes: false }).length]));
    throw new Error(`${(error as Error).message}\n--- spool A ${JSON.stringify(spool)}\n--- capture.log A\n${JSON.stringify(captureLog(state), null, 1)}\n--- uploads ${JSON.stringify(await stack.listUploads())}`);
  }
}

/** `blue-agent resume ID --dest DIR --yes --no-launch --json` on machine B; returns the native resume command. */
async function resumeOnB(uploadId: string, bin: string, extraEnv: Record<string, string> = {}): Promise<string[]> {
  const env = { ...harnessEnv(b.home, { ...b.env, ...extraEnv, PATH: pathWith(bin) }) };
  // An unambiguous prefix is enough.
  const result = await runCli(['resume', uploadId.slice(0, 13), '--dest', destination, '--yes', '--no-launch', '--json'], { env, cwd: destination, timeoutMs: 120_000 });
  expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
  const report = JSON.parse(result.stdout) as { ok: boolean; dry_run: boolean; upload_id: string; destination: string; restored: string[]; command: string[] };
  expect(report).toMatchObject({ ok: true, dry_run: false, upload_id: uploadId, destination });
  return report.command;
}

describe('capture on machine A, upload, resume on machine B with the real CLIs', () => {
  it(
    'Claude Code',
    async () => {
      const bin = harnessBin('claude');
      expect((await reconcile(agentOn(a, bin), { dryRun: false, harnesses: ['claude'] })).harnesses[0]).toMatchObject({ state: 'active' });
      const first = await runClaude({ bin, home: a.home, cwd: sourceCwd, prompt: FIRST_PROMPT, stubUrl: stub.url, env: a.env, timeoutMs: 90_000 });
      expect(first.exitCode, explain(first)).toBe(0);
      const upload = await uploadedFromA('claude');

      const command = await resumeOnB(upload.upload_id, bin);
      expect(command).toEqual(['claude', '--resume', upload.session_id]);

      stub.clear();
      const resumed = await runClaude({ bin, home: b.home, cwd: destination, prompt: SECOND_PROMPT, args: command.slice(1), stubUrl: stub.url, env: b.env, timeoutMs: 90_000 });
      expect(resumed.exitCode, explain(resumed)).toBe(0);
      expect(stub.textSentTo('/v1/messages'), explain(resumed)).toContain(CODE_WORD);
      expect(stub.textSentTo('/v1/messages'), explain(resumed)).toContain(SECOND_PROMPT);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'Codex',
    async () => {
      const bin = harnessBin('codex');
      await writeCodexProviderConfig(harnessDirs(harnessEnv(a.home)).codex, stub.url);
      expect((await reconcile(agentOn(a, bin), { dryRun: false, harnesses: ['codex'] })).harnesses[0]).toMatchObject({ profile: 'codex-v0_145_0' });
      // The managed hook is not trusted in this fresh CODEX_HOME: the run bypasses trust, as a user who trusted it.
      const first = await runCodex({ bin, home: a.home, cwd: sourceCwd, prompt: FIRST_PROMPT, stubUrl: stub.url, env: a.env, bypassHookTrust: true, writeConfig: false, timeoutMs: 90_000 });
      expect(first.exitCode, explain(first)).toBe(0);
      const upload = await uploadedFromA('codex');

      await writeCodexProviderConfig(harnessDirs(harnessEnv(b.home)).codex, stub.url);
      const command = await resumeOnB(upload.upload_id, bin);
      expect(command).toEqual(['codex', 'resume', upload.session_id]);

      stub.clear();
      // Headless, `codex exec resume <id>` is the same resume the command names.
      const resumed = await runCodex({ bin, home: b.home, cwd: destination, prompt: SECOND_PROMPT, args: command.slice(1), stubUrl: stub.url, env: b.env, writeConfig: false, timeoutMs: 90_000 });
      expect(resumed.exitCode, explain(resumed)).toBe(0);
      expect(stub.textSentTo('/v1/responses'), explain(resumed)).toContain(CODE_WORD);
      expect(stub.textSentTo('/v1/responses'), explain(resumed)).toContain(SECOND_PROMPT);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'OpenCode',
    async () => {
      const bin = harnessBin('opencode');
      expect((await reconcile(agentOn(a, bin), { dryRun: false, harnesses: ['opencode'] })).harnesses[0]).toMatchObject({ state: 'active' });
      // The capture worker runs `opencode export`: OpenCode must be on the PATH the plugin passes down.
      const first = await runOpencode({ bin, home: a.home, cwd: sourceCwd, prompt: FIRST_PROMPT, stubUrl: stub.url, env: { ...a.env, PATH: pathWith(bin) }, timeoutMs: 90_000 });
      expect(first.exitCode, explain(first)).toBe(0);
      const upload = await uploadedFromA('opencode');

      const configDir = harnessDirs(harnessEnv(b.home)).opencodeConfig;
      await writeOpencodeProviderConfig(configDir, stub.url);
      await seedOpencodeConfigDeps(configDir, opencodeDepsFor(bin));
      const command = await resumeOnB(upload.upload_id, bin, OPENCODE_ENV);
      expect(command).toEqual(['opencode', '--session', upload.session_id]);

      stub.clear();
      const resumed = await runOpencode({ bin, home: b.home, cwd: destination, prompt: SECOND_PROMPT, args: command.slice(1), stubUrl: stub.url, env: b.env, timeoutMs: 90_000 });
      expect(resumed.exitCode, explain(resumed)).toBe(0);
      expect(stub.textSentTo('/v1/chat/completions'), explain(resumed)).toContain(CODE_WORD);
      expect(stub.textSentTo('/v1/chat/completions'), explain(resumed)).toContain(SECOND_PROMPT);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'Kimi CLI (a fixture session; no CLI to resume with)',
    async () => {
      // Machine A: the session's files where Kimi keeps them, captured by the real hook and uploaded by the drain.
      const fixture = await fixtureBundle('kimi', a, path.join(a.root, 'unused.bundle'));
      const payload = JSON.stringify({ session_id: fixture.sessionId, cwd: fixture.cwd, hook_event_name: 'SessionEnd' });
      const captured = await runCli(['capture', '--harness', 'kimi', '--profile', 'kimi-v1_28_0'], { env: a.env, input: payload });
      expect(captured.code, captured.stderr).toBe(0);
      await waitForWorkers(a.env.BLUE_AGENT_HOME!, 60_000);
      const drained = await runCli(['drain', '--json'], { env: a.env, timeoutMs: 60_000 });
      expect(drained.code, drained.stdout).toBe(0);
      const upload = await uploadedFromA('kimi');

      // Machine B: a Kimi CLI (a stand-in that reports its version; the policy also allows unverified ones).
      stack.server.store.publishPolicy(
        { session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign` }, harnesses: { kimi: { allow_unverified_versions: true } } },
        Date.now(),
      );
      const bin = path.join(b.root, 'bin', 'kimi');
      await mkdir(path.dirname(bin), { recursive: true });
      await writeFile(bin, '#!/bin/sh\necho "kimi, version 1.49.0"\n');
      await chmod(bin, 0o755);
      const share = path.join(b.home, '.kimi');
      await mkdir(share, { recursive: true });
      await writeFile(path.join(share, 'kimi.json'), '{"work_dirs": [{"path": "/srv/other", "kaos": "local", "last_session_id": "keep-me"}]}\n');

      const command = await resumeOnB(upload.upload_id, bin);
      expect(command).toEqual(['kimi', '--session', upload.session_id]);
      const folder = path.join(share, 'sessions', kimiWorkDirHash(destination), upload.session_id);
      expect(await readdir(folder)).toEqual(expect.arrayContaining(['context.jsonl', 'wire.jsonl']));
      // Kimi finds a session through its work_dirs entry: added, the user's own entry kept.
      const index = JSON.parse(await readFile(path.join(share, 'kimi.json'), 'utf8')) as { work_dirs: { path: string; last_session_id?: string }[] };
      expect(index.work_dirs).toEqual(
        expect.arrayContaining([
          { path: '/srv/other', kaos: 'local', last_session_id: 'keep-me' },
          expect.objectContaining({ path: destination, kaos: 'local', last_session_id: upload.session_id }),
        ]),
      );
    },
    TEST_TIMEOUT_MS,
  );
});
