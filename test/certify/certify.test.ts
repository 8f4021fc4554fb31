/**
 * Certification: the whole loop against every CLI version pinned in harness-versions.lock.json, offline, each in
 * temporary HOMEs, with the loopback model stub and the reference Control API in process.
 *
 *   install   the locked version is in the harness cache and `--version` selects the expected profile
 *   reconcile reconcile installs the managed hook beside a user hook in the same native file; both fire on a real run
 *   session   a real headless session ends normally
 *   capture   the managed hook captured that session (spooled, then built into a bundle)
 *   drain     `blue-agent drain` leaves nothing waiting and the Control API lists the session complete
 *   restore   `blue-agent resume ID --dest DIR --yes --no-launch --json` on a second HOME restores it
 *   resume    the native resume command, run headless on the second HOME, sends the earlier turns to the model
 *
 * A profile without `session_resume` has `n/a` for restore and resume. Kimi CLI cannot be installed here: its target
 * runs the same steps on the fixture session that follows its source (fixtures/sessions/kimi/<version>/), with the
 * hook commands run as Kimi runs them (`sh -c`, the payload on stdin), and has `n/a` for the native resume.
 *
 * Run by `npm run certify` (scripts/certify.mjs), never by plain `npm test`. Filters and the result file come from:
 *   BLUE_AGENT_CERTIFY_HARNESS, BLUE_AGENT_CERTIFY_VERSION, BLUE_AGENT_CERTIFY_RESULTS (JSON, one record per target).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { kimiWorkDirHash } from '../../src/harnesses/kimi/session.js';
import { loadProfiles, selectInterval, type ProfileSet } from '../../src/profiles/index.js';
import { reconcile } from '../../src/reconcile/index.js';
import type { HarnessName, Interval } from '../../src/schema/index.js';
import { fixtureBundle } from '../support/restore-homes.js';
import { captureLog, runCli, waitForWorkers } from '../support/cli-process.js';
import { makeTestHome, repoRoot, type TestHome } from '../support/context.js';
import { installCommand, installedHarness } from '../../scripts/install-harnesses.mjs';
import { harnessCacheDir, lockedVersions } from '../support/harness-bins.js';
import { startModelStub, type ModelStub } from '../support/model-stub.js';
import {
  addClaudeUserHook,
  appendCodexHook,
  appendStdinCommand,
  describeRun,
  harnessDirs,
  harnessEnv,
  opencodeDepsFor,
  readJsonLines,
  runClaude,
  runCodex,
  runOpencode,
  seedOpencodeConfigDeps,
  waitFor,
  writeCodexProviderConfig,
  writeOpencodeProviderConfig,
  writeOpencodeUserPlugin,
  type HarnessRunResult,
} from '../support/run-harness.js';
import { startUploadStack, type UploadStack } from '../support/fault-proxy.js';

export const STEPS = ['install', 'reconcile', 'session', 'capture', 'drain', 'restore', 'resume'] as const;
export type StepName = (typeof STEPS)[number];
export type StepStatus = 'passed' | 'failed' | 'n/a' | 'skipped';
export interface StepResult {
  status: StepStatus;
  ms: number;
  detail?: string;
}
export interface TargetResult {
  harness: string;
  version: string;
  method: 'cli' | 'fixtures';
  profile: string | null;
  steps: Record<StepName, StepResult>;
  ms: number;
}

const CODE_WORD = 'HERON-4410-WOMBAT';
const FIRST_PROMPT = `Keep this code word in mind: ${CODE_WORD}. Answer OK.`;
const SECOND_PROMPT = 'What was the code word?';
const RUN_TIMEOUT_MS = 120_000;
const TARGET_TIMEOUT_MS = 420_000;
const OPENCODE_ENV = { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1' };
const CLI_HARNESSES = ['claude', 'codex', 'opencode'] as const;
type CliHarness = (typeof CLI_HARNESSES)[number];
/** The model API path each harness posts its conversation to. */
const MODEL_PATH: Record<CliHarness, string> = { claude: '/v1/messages', codex: '/v1/responses', opencode: '/v1/chat/completions' };

const onlyHarness = process.env.BLUE_AGENT_CERTIFY_HARNESS || undefined;
const onlyVersion = process.env.BLUE_AGENT_CERTIFY_VERSION || undefined;
const resultsFile = process.env.BLUE_AGENT_CERTIFY_RESULTS || undefined;

interface Target {
  harness: HarnessName;
  version: string;
  method: 'cli' | 'fixtures';
}

function targets(): Target[] {
  const list: Target[] = [];
  for (const harness of CLI_HARNESSES) {
    const versions = lockedVersions(harness);
    // `npm run certify -- --harness H --version X` of a version not locked yet: certified too (added to the lock
    // file by scripts/certify.mjs when it passes).
    if (onlyHarness === harness && onlyVersion !== undefined && !versions.includes(onlyVersion)) versions.push(onlyVersion);
    for (const version of versions) list.push({ harness, version, method: 'cli' });
  }
  // Kimi: one target per fixture version (the folder names of fixtures/sessions/kimi/).
  for (const version of readdirSync(path.join(repoRoot, 'fixtures', 'sessions', 'kimi')).filter((v) => /^\d+\.\d+\.\d+/.test(v))) {
    list.push({ harness: 'kimi', version, method: 'fixtures' });
  }
  return list.filter((t) => (onlyHarness === undefined || t.harness === onlyHarness) && (onlyVersion === undefined || t.version === onlyVersion));
}

function record(result: TargetResult): void {
  if (resultsFile === undefined) return;
  const all = existsSync(resultsFile) ? (JSON.parse(readFileSync(resultsFile, 'utf8')) as TargetResult[]) : [];
  const rest = all.filter((r) => !(r.harness === result.harness && r.version === result.version));
  writeFileSync(resultsFile, `${JSON.stringify([...rest, result], null, 2)}\n`);
}

/** Runs the steps in order; after a failure the remaining steps are `skipped` (never passed). */
class Recorder {
  readonly result: TargetResult;
  private failed = false;
  private readonly started = Date.now();
  constructor(target: Target) {
    const steps = Object.fromEntries(STEPS.map((s) => [s, { status: 'skipped', ms: 0 } satisfies StepResult])) as Record<StepName, StepResult>;
    this.result = { harness: target.harness, version: target.version, method: target.method, profile: null, steps, ms: 0 };
  }
  async step(name: StepName, fn: () => Promise<string | void>): Promise<void> {
    if (this.failed) return;
    const t0 = Date.now();
    try {
      const detail = await fn();
      this.result.steps[name] = { status: 'passed', ms: Date.now() - t0, ...(detail ? { detail } : {}) };
    } catch (error) {
      this.failed = true;
      this.result.steps[name] = { status: 'failed', ms: Date.now() - t0, detail: firstLines((error as Error).message, 60) };
    }
  }
  notApplicable(name: StepName, why: string): void {
    if (!this.failed) this.result.steps[name] = { status: 'n/a', ms: 0, detail: why };
  }
  finish(): TargetResult {
    this.result.ms = Date.now() - this.started;
    record(this.result);
    return this.result;
  }
}

function firstLines(text: string, n: number): string {
  return text.split('\n').slice(0, n).join('\n');
}

let profileSet: ProfileSet | undefined;
async function intervalFor(harness: HarnessName, version: string): Promise<Interval> {
  profileSet ??= await loadProfiles(path.join(repoRoot, 'profiles'));
  const choice = selectInterval(profileSet.get(harness)!.doc, version);
  if (choice === undefined) throw new Error(`${harness} ${version} is outside every profile in profiles/${harness}.yaml`);
  return choice.interval;
}

/** Two machines (HOMEs), the Control API and the model stub, for one target. */
interface Rig {
  stack: UploadStack;
  a: TestHome;
  b: TestHome;
  stub: ModelStub;
  sourceCwd: string;
  destination: string;
  userOut: string;
  close(): Promise<void>;
}

async function rig(harness: HarnessName): Promise<Rig> {
  const stack = await startUploadStack();
  // Certification runs versions past today's ceilings too: the policy lets them capture and resume.
  stack.server.store.publishPolicy(
    {
      session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign` },
      harnesses: { [harness]: { allow_unverified_versions: true } },
    },
    Date.now(),
  );
  const control = { BLUE_AGENT_CONTROL_URL: stack.proxy.url, BLUE_AGENT_TOKEN: stack.token };
  const a = await makeTestHome(control);
  const b = await makeTestHome(control);
  const stub = await startModelStub({ reply: 'OK.' });
  await mkdir(path.join(a.root, 'src', 'shop'), { recursive: true });
  const sourceCwd = await realpath(path.join(a.root, 'src', 'shop'));
  await mkdir(path.join(b.root, 'elsewhere', 'shop-copy'), { recursive: true });
  const destination = await realpath(path.join(b.root, 'elsewhere', 'shop-copy'));
  return {
    stack,
    a,
    b,
    stub,
    sourceCwd,
    destination,
    userOut: path.join(a.root, 'user-hook.jsonl'),
    async close() {
      await waitForWorkers(a.env.BLUE_AGENT_HOME!, 60_000).catch(() => undefined);
      await stub.close();
      await stack.close();
      await a.cleanup();
      await b.cleanup();
    },
  };
}

function pathWith(bin: string): string {
  return `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin`;
}

function explain(r: Rig, result: HarnessRunResult): string {
  return describeRun(result, `--- model stub\n${r.stub.summary() || '(none)'}\n--- capture.log A\n${JSON.stringify(captureLog(r.a.env.BLUE_AGENT_HOME!), null, 1)}`);
}

function check(condition: boolean, message: () => string): void {
  if (!condition) throw new Error(message());
}

/** The user hook's payloads (Claude, Codex, Kimi) or the user plugin's events (OpenCode). */
async function userHookSessions(r: Rig, harness: HarnessName): Promise<string[]> {
  const lines = (await waitFor(
    'the user hook',
    async () => {
      const all = (await readJsonLines(r.userOut)) as Record<string, any>[];
      const hits = harness === 'opencode' ? all.filter((e) => e.type === 'session.idle') : all.filter((e) => e.hook_event_name === 'SessionEnd');
      return hits.length > 0 ? hits : undefined;
    },
    15_000,
  )) as Record<string, any>[];
  return lines.map((l) => (harness === 'opencode' ? l.properties?.sessionID : l.session_id) as string);
}

/** The capture log's `spooled` and `built` events for this harness; waits for both. */
async function captured(r: Rig, harness: string): Promise<string> {
  return waitFor(
    'the managed hook to capture the session (spooled, then built)',
    () => {
      const log = captureLog(r.a.env.BLUE_AGENT_HOME!);
      const spooled = log.find((l) => l.event === 'spooled' && l.harness === harness) ?? log.find((l) => l.event === 'spooled');
      const built = log.find((l) => l.event === 'built');
      const failed = log.find((l) => l.event === 'build_failed' || l.event === 'refused' || l.event === 'failed');
      if (failed !== undefined) throw new Error(`capture failed: ${JSON.stringify(failed)}`);
      return spooled !== undefined && built !== undefined ? String(spooled.session_id ?? built.session_id) : undefined;
    },
    60_000,
    100,
  );
}

/** `blue-agent drain --json` on machine A, then the session listed complete on the Control API. */
async function drained(r: Rig, harness: string, sessionId: string): Promise<{ upload_id: string; session_id: string }> {
  await waitForWorkers(r.a.env.BLUE_AGENT_HOME!, 60_000);
  const result = await runCli(['drain', '--json'], { env: r.a.env, timeoutMs: 90_000 });
  check(result.code === 0, () => `blue-agent drain exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  const upload = await waitFor(
    `the ${harness} session listed complete on the Control API`,
    async () => (await r.stack.listUploads()).find((i) => i.harness === harness && i.status === 'complete'),
    60_000,
    200,
  );
  check(upload.session_id === sessionId, () => `the Control API holds session ${upload.session_id}, the hook captured ${sessionId}`);
  return upload;
}

/** `blue-agent resume ID --dest DIR --yes --no-launch --json` on machine B; returns the native resume command. */
async function restoredOnB(r: Rig, uploadId: string, bin: string, extraEnv: Record<string, string> = {}): Promise<string[]> {
  const env = { ...harnessEnv(r.b.home, { ...r.b.env, ...extraEnv, PATH: pathWith(bin) }) };
  const result = await runCli(['resume', uploadId, '--dest', r.destination, '--yes', '--no-launch', '--json'], { env, cwd: r.destination, timeoutMs: 120_000 });
  check(result.code === 0, () => `blue-agent resume exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  const report = JSON.parse(result.stdout) as { ok: boolean; dry_run: boolean; upload_id: string; destination: string; command: string[] };
  check(report.ok && !report.dry_run && report.upload_id === uploadId && report.destination === r.destination, () => `unexpected resume report: ${result.stdout}`);
  return report.command;
}

function agentOn(home: TestHome, bin: string): Context {
  return home.context({ env: { PATH: pathWith(bin) } });
}

// ---------------------------------------------------------------------------------------------------------------

async function certifyCli(target: Target & { harness: CliHarness }): Promise<TargetResult> {
  const rec = new Recorder(target);
  const { harness, version } = target;
  let bin = '';
  let interval: Interval | undefined;
  let r: Rig | undefined;
  try {
    await rec.step('install', async () => {
      const installed = installedHarness(harnessCacheDir(), harness, version);
      check(installed !== undefined, () => `${harness} ${version} is not installed in ${harnessCacheDir()}: run \`${installCommand(harness, version)}\``);
      bin = installed!.bin;
      interval = await intervalFor(harness, version);
      rec.result.profile = interval.profile;
      return bin;
    });
    if (interval === undefined) return rec.result;
    r = await rig(harness);
    const rr = r;
    const dirsA = harnessDirs(harnessEnv(rr.a.home));
    let first: HarnessRunResult | undefined;

    await rec.step('reconcile', async () => {
      if (harness === 'claude') await addClaudeUserHook(dirsA.claude, 'SessionEnd', appendStdinCommand(rr.userOut), 10);
      if (harness === 'codex') {
        await writeCodexProviderConfig(dirsA.codex, rr.stub.url);
        await appendCodexHook(dirsA.codex, 'SessionEnd', appendStdinCommand(rr.userOut), 3);
      }
      if (harness === 'opencode') await writeOpencodeUserPlugin(dirsA.opencodeConfig, rr.userOut);
      const report = (await reconcile(agentOn(rr.a, bin), { dryRun: false, harnesses: [harness] })).harnesses[0]!;
      const expected = harness === 'codex' ? ['active', 'awaiting_trust'] : ['active'];
      check(expected.includes(report.state), () => `reconcile: ${report.state}: ${report.reason}`);
      check(report.version === version, () => `reconcile read version ${report.version} (raw ${JSON.stringify(report.raw_version)}), expected ${version}`);
      check(report.profile === interval!.profile, () => `reconcile chose ${report.profile}, expected ${interval!.profile}`);
      // The real CLI accepts the config and fires both hooks: checked on the session below (the managed hook's
      // capture and the user hook's payload for the same session id).
      const env = { ...rr.a.env, PATH: pathWith(bin) };
      if (report.state === 'awaiting_trust') {
        // What awaiting_trust claims: until the user trusts the hook, this version does not run it.
        const untrusted = await runCodex({ bin, home: rr.a.home, cwd: rr.sourceCwd, prompt: 'Say hello.', stubUrl: rr.stub.url, env, writeConfig: false, timeoutMs: RUN_TIMEOUT_MS });
        check(untrusted.exitCode === 0, () => explain(rr, untrusted));
        const log = captureLog(rr.a.env.BLUE_AGENT_HOME!);
        check(log.length === 0, () => `reconcile said awaiting_trust, yet ${harness} ${version} ran the untrusted hook: ${JSON.stringify(log)}`);
        rr.stub.clear();
      }
      if (harness === 'claude') first = await runClaude({ bin, home: rr.a.home, cwd: rr.sourceCwd, prompt: FIRST_PROMPT, stubUrl: rr.stub.url, env, timeoutMs: RUN_TIMEOUT_MS });
      // The managed hook is not trusted in this fresh CODEX_HOME: the run bypasses trust, as a user who trusted it.
      if (harness === 'codex') first = await runCodex({ bin, home: rr.a.home, cwd: rr.sourceCwd, prompt: FIRST_PROMPT, stubUrl: rr.stub.url, env, bypassHookTrust: true, writeConfig: false, timeoutMs: RUN_TIMEOUT_MS });
      if (harness === 'opencode') first = await runOpencode({ bin, home: rr.a.home, cwd: rr.sourceCwd, prompt: FIRST_PROMPT, stubUrl: rr.stub.url, env, timeoutMs: RUN_TIMEOUT_MS });
      check(first!.exitCode === 0, () => explain(rr, first!));
      const sessions = await userHookSessions(rr, harness);
      const managed = await captured(rr, harness);
      check(sessions.includes(managed), () => `the user hook saw ${sessions.join(', ')}, the managed hook ${managed}`);
      return `${report.state}; managed + user hook fired for ${managed}`;
    });

    let sessionId = '';
    await rec.step('session', async () => {
      check(first!.exitCode === 0, () => explain(rr, first!));
      check(rr.stub.textSentTo(MODEL_PATH[harness]).includes(CODE_WORD), () => `the model stub never saw the prompt\n${explain(rr, first!)}`);
      return `${first!.durationMs} ms`;
    });

    await rec.step('capture', async () => {
      sessionId = await captured(rr, harness);
      return sessionId;
    });

    let upload: { upload_id: string; session_id: string } | undefined;
    await rec.step('drain', async () => {
      upload = await drained(rr, harness, sessionId);
      return upload.upload_id;
    });

    if (!interval.operations.includes('session_resume')) {
      rec.notApplicable('restore', `${interval.profile} has no session_resume`);
      rec.notApplicable('resume', `${interval.profile} has no session_resume`);
      return rec.result;
    }

    let command: string[] = [];
    await rec.step('restore', async () => {
      const dirsB = harnessDirs(harnessEnv(rr.b.home));
      if (harness === 'codex') await writeCodexProviderConfig(dirsB.codex, rr.stub.url);
      if (harness === 'opencode') {
        await writeOpencodeProviderConfig(dirsB.opencodeConfig, rr.stub.url);
        await seedOpencodeConfigDeps(dirsB.opencodeConfig, opencodeDepsFor(bin));
      }
      command = await restoredOnB(rr, upload!.upload_id, bin, harness === 'opencode' ? OPENCODE_ENV : {});
      const expected = { claude: ['claude', '--resume', sessionId], codex: ['codex', 'resume', sessionId], opencode: ['opencode', '--session', sessionId] }[harness];
      check(JSON.stringify(command) === JSON.stringify(expected), () => `resume command ${JSON.stringify(command)}, expected ${JSON.stringify(expected)}`);
      return command.join(' ');
    });

    await rec.step('resume', async () => {
      rr.stub.clear();
      const opts = { bin, home: rr.b.home, cwd: rr.destination, prompt: SECOND_PROMPT, args: command.slice(1), stubUrl: rr.stub.url, env: rr.b.env, timeoutMs: RUN_TIMEOUT_MS };
      // Headless forms of the same resume: `claude --resume ID -p`, `codex exec resume ID`, `opencode run --session ID`.
      const resumed = harness === 'claude' ? await runClaude(opts) : harness === 'codex' ? await runCodex({ ...opts, writeConfig: false }) : await runOpencode(opts);
      check(resumed.exitCode === 0, () => explain(rr, resumed));
      const sent = rr.stub.textSentTo(MODEL_PATH[harness]);
      check(sent.includes(CODE_WORD) && sent.includes(SECOND_PROMPT), () => `the resumed request did not carry the earlier turn\n${explain(rr, resumed)}`);
      return `${resumed.durationMs} ms`;
    });
    return rec.result;
  } finally {
    rec.finish();
    await r?.close();
  }
}

/**
 * Kimi, from fixtures that follow its source: the session folder and kimi.json as Kimi writes them, the hook
 * commands run the way Kimi runs them, the real capture, drain and restore; no CLI to resume with.
 */
async function certifyKimiFixtures(target: Target): Promise<TargetResult> {
  const rec = new Recorder(target);
  const { version } = target;
  let interval: Interval | undefined;
  let r: Rig | undefined;
  try {
    let bin = '';
    await rec.step('install', async () => {
      interval = await intervalFor('kimi', version);
      rec.result.profile = interval.profile;
      r = await rig('kimi');
      // No Kimi CLI can be installed here: a stand-in that prints Kimi's `--version` line, for detection only.
      bin = path.join(r.a.root, 'bin', 'kimi');
      await mkdir(path.dirname(bin), { recursive: true });
      await writeFile(bin, `#!/bin/sh\necho "kimi, version ${version}"\n`);
      await chmod(bin, 0o755);
      return 'fixtures (no CLI)';
    });
    if (r === undefined || interval === undefined) return rec.result;
    const rr = r;
    const share = path.join(rr.a.home, '.kimi');
    const config = path.join(share, 'config.toml');
    let sessionId = '';
    let cwd = '';

    await rec.step('reconcile', async () => {
      await mkdir(share, { recursive: true });
      await writeFile(config, `default_model = "kimi-k2"\n\n[[hooks]]\nevent = "SessionEnd"\nmatcher = ""\ncommand = ${JSON.stringify(appendStdinCommand(rr.userOut))}\ntimeout = 5\n`);
      const report = (await reconcile(agentOn(rr.a, bin), { dryRun: false, harnesses: ['kimi'] })).harnesses[0]!;
      check(report.state === 'active', () => `reconcile: ${report.state}: ${report.reason}`);
      check(report.version === version && report.profile === interval!.profile, () => `reconcile read ${report.version} / ${report.profile}`);
      const hooks = (parseToml(await readFile(config, 'utf8')) as { hooks?: { event: string; command: string; timeout?: number }[] }).hooks ?? [];
      const sessionEnd = hooks.filter((h) => h.event === 'SessionEnd');
      check(sessionEnd.length === 2, () => `config.toml holds ${sessionEnd.length} SessionEnd hooks, expected the user's and the managed one`);
      // The fixture session, as Kimi 1.49 leaves it when a session ends.
      const fixture = await fixtureBundle('kimi', rr.a, path.join(rr.a.root, 'unused.bundle'));
      sessionId = fixture.sessionId;
      cwd = fixture.cwd;
      // Kimi runs each matching hook with `sh -c COMMAND`, the payload as JSON on stdin (kimi_cli/hooks).
      const payload = JSON.stringify({ hook_event_name: 'SessionEnd', session_id: sessionId, cwd, reason: 'exit' });
      for (const hook of sessionEnd) {
        const code = await shell(hook.command, payload, { ...rr.a.env, PATH: pathWith(bin) }, cwd);
        check(code === 0, () => `hook ${hook.command} exited ${code}`);
      }
      const sessions = await userHookSessions(rr, 'kimi');
      check(sessions.includes(sessionId), () => `the user hook saw ${sessions.join(', ')}`);
      return 'active; managed + user hook run as Kimi runs them';
    });

    await rec.step('session', async () => {
      check(existsSync(path.join(share, 'sessions', kimiWorkDirHash(cwd), sessionId, 'context.jsonl')), () => 'the fixture session folder is missing');
      return `fixture ${version}`;
    });

    await rec.step('capture', async () => {
      const id = await captured(rr, 'kimi');
      check(id === sessionId, () => `captured ${id}, expected ${sessionId}`);
      return sessionId;
    });

    let upload: { upload_id: string; session_id: string } | undefined;
    await rec.step('drain', async () => {
      upload = await drained(rr, 'kimi', sessionId);
      return upload.upload_id;
    });

    await rec.step('restore', async () => {
      const binB = path.join(rr.b.root, 'bin', 'kimi');
      await mkdir(path.dirname(binB), { recursive: true });
      await writeFile(binB, `#!/bin/sh\necho "kimi, version ${version}"\n`);
      await chmod(binB, 0o755);
      const shareB = path.join(rr.b.home, '.kimi');
      await mkdir(shareB, { recursive: true });
      await writeFile(path.join(shareB, 'kimi.json'), '{"work_dirs": [{"path": "/srv/other", "kaos": "local", "last_session_id": "keep-me"}]}\n');
      const command = await restoredOnB(rr, upload!.upload_id, binB);
      check(JSON.stringify(command) === JSON.stringify(['kimi', '--session', sessionId]), () => `resume command ${JSON.stringify(command)}`);
      const folder = path.join(shareB, 'sessions', kimiWorkDirHash(rr.destination), sessionId);
      check(existsSync(path.join(folder, 'context.jsonl')) && existsSync(path.join(folder, 'wire.jsonl')), () => `${folder} lacks context.jsonl / wire.jsonl`);
      const index = JSON.parse(await readFile(path.join(shareB, 'kimi.json'), 'utf8')) as { work_dirs: { path: string; last_session_id?: string }[] };
      check(index.work_dirs.some((w) => w.path === '/srv/other' && w.last_session_id === 'keep-me'), () => 'the user work_dirs entry was lost');
      check(index.work_dirs.some((w) => w.path === rr.destination && w.last_session_id === sessionId), () => 'no work_dirs entry for the destination');
      return command.join(' ');
    });
    rec.notApplicable('resume', 'Kimi CLI cannot be installed here (PyPI unreachable): no native resume run');
    return rec.result;
  } finally {
    rec.finish();
    await r?.close();
  }
}

function shell(command: string, input: string, env: Record<string, string>, cwd: string): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { env, cwd, stdio: ['pipe', 'ignore', 'ignore'] });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code));
    child.stdin.end(input);
  });
}

// ---------------------------------------------------------------------------------------------------------------

const list = targets();
if (list.length === 0) {
  it('has something to certify', () => {
    throw new Error(`no locked version matches harness=${onlyHarness ?? '*'} version=${onlyVersion ?? '*'} (see harness-versions.lock.json)`);
  });
}
for (const target of list) {
  describe(`${target.harness} ${target.version}`, () => {
    it(
      target.method === 'cli' ? 'the whole loop with the real CLI' : 'the whole loop on fixtures that follow its source',
      async () => {
        const result = target.method === 'cli' ? await certifyCli(target as Target & { harness: CliHarness }) : await certifyKimiFixtures(target);
        const failed = Object.entries(result.steps).filter(([, s]) => s.status === 'failed');
        expect(failed.map(([name, s]) => `${name}: ${s.detail}`)).toEqual([]);
      },
      TARGET_TIMEOUT_MS,
    );
  });
}
