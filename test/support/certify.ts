/**
 * The certification run's shared parts (test/certify/certify.test.ts): the steps and their results, the recorder
 * that runs them in order, and the two machines (HOMEs) with the reference Control API and the model stub that one
 * target runs on. A harness certified on fixtures runs the same steps from its rig (`certifyOnFixtures`).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../../packages/agent/src/context.js';
import { loadProfiles, selectInterval, type ProfileSet } from '../../packages/contract/src/profiles/index.js';
import type { HarnessName, Interval } from '../../packages/contract/src/schema/index.js';
import { targetLabel } from '../../scripts/certify-plan.mjs';
import { captureLog, runCli, waitForWorkers } from './cli-process.js';
import { agentRoot, makeTestHome, type TestHome } from './context.js';
import { startUploadStack, type UploadStack } from './fault-proxy.js';
import { startModelStub, type ModelStub } from './model-stub.js';
import { describeRun, harnessEnv, readJsonLines, waitFor, type HarnessRunResult } from './run-harness.js';

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
  method: Method;
  profile: string | null;
  steps: Record<StepName, StepResult>;
  ms: number;
}

const resultsFile = process.env.BLUE_AGENT_CERTIFY_RESULTS || undefined;

/** `cli`: one version's real CLI; `fixtures`: fixtures that follow its source; `cross`: captured by `from`, resumed by
 * `version`. */
export type Method = 'cli' | 'fixtures' | 'cross';

export interface Target {
  harness: HarnessName;
  version: string;
  method: Method;
  /** A cross-version target's capturing version (`version` restores and resumes). */
  from?: string;
}

function record(result: TargetResult): void {
  if (resultsFile === undefined) return;
  const all = existsSync(resultsFile) ? (JSON.parse(readFileSync(resultsFile, 'utf8')) as TargetResult[]) : [];
  const rest = all.filter((r) => !(r.harness === result.harness && r.version === result.version));
  writeFileSync(resultsFile, `${JSON.stringify([...rest, result], null, 2)}\n`);
}

/** Runs the steps in order; after a failure the remaining steps are `skipped` (never passed). */
export class Recorder {
  readonly result: TargetResult;
  private failed = false;
  private readonly started = Date.now();
  constructor(target: Target) {
    const steps = Object.fromEntries(
      STEPS.map((s) => [s, { status: 'skipped', ms: 0 } satisfies StepResult]),
    ) as Record<StepName, StepResult>;
    this.result = {
      harness: target.harness,
      version: targetLabel(target),
      method: target.method,
      profile: null,
      steps,
      ms: 0,
    };
  }
  async step(name: StepName, fn: () => Promise<string | void>): Promise<void> {
    if (this.failed) return;
    const t0 = Date.now();
    try {
      const detail = await fn();
      this.result.steps[name] = { status: 'passed', ms: Date.now() - t0, ...(detail ? { detail } : {}) };
    } catch (error) {
      this.failed = true;
      this.result.steps[name] = {
        status: 'failed',
        ms: Date.now() - t0,
        detail: firstLines((error as Error).message, 60),
      };
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
export async function intervalFor(harness: HarnessName, version: string): Promise<Interval> {
  profileSet ??= await loadProfiles(path.join(agentRoot, 'profiles'));
  const choice = selectInterval(profileSet.get(harness)!.doc, version);
  if (choice === undefined)
    throw new Error(`${harness} ${version} is outside every profile in profiles/${harness}.yaml`);
  return choice.interval;
}

/** Two machines (HOMEs), the Control API and the model stub, for one target. */
export interface Machines {
  stack: UploadStack;
  a: TestHome;
  b: TestHome;
  stub: ModelStub;
  sourceCwd: string;
  destination: string;
  userOut: string;
  close(): Promise<void>;
}

export async function startMachines(harness: HarnessName): Promise<Machines> {
  const stack = await startUploadStack();
  // Certification runs versions past today's ceilings too: the policy lets them capture and resume.
  await stack.server.store.publishPolicy(
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

export function pathWith(bin: string): string {
  return `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin`;
}

export function explain(r: Machines, result: HarnessRunResult): string {
  return describeRun(
    result,
    `--- model stub\n${r.stub.summary() || '(none)'}\n--- capture.log A\n` +
      `${JSON.stringify(captureLog(r.a.env.BLUE_AGENT_HOME!), null, 1)}`,
  );
}

export function check(condition: boolean, message: () => string): void {
  if (!condition) throw new Error(message());
}

/** The sessions the user hook (or plugin) saw end, read from its lines by `sessionsOf`; waits for one. */
export async function userHookSessions(
  r: Machines,
  sessionsOf: (lines: readonly Record<string, any>[]) => string[],
): Promise<string[]> {
  return waitFor(
    'the user hook',
    async () => {
      const sessions = sessionsOf((await readJsonLines(r.userOut)) as Record<string, any>[]);
      return sessions.length > 0 ? sessions : undefined;
    },
    15_000,
  );
}

/** The capture log's `spooled` and `built` events for this harness; waits for both. */
export async function captured(r: Machines, harness: string): Promise<string> {
  return waitFor(
    'the managed hook to capture the session (spooled, then built)',
    () => {
      const log = captureLog(r.a.env.BLUE_AGENT_HOME!);
      const spooled =
        log.find((l) => l.event === 'spooled' && l.harness === harness) ?? log.find((l) => l.event === 'spooled');
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
export async function drained(
  r: Machines,
  harness: string,
  sessionId: string,
): Promise<{ id: string; native_session_id: string }> {
  await waitForWorkers(r.a.env.BLUE_AGENT_HOME!, 60_000);
  const result = await runCli(['drain', '--json'], { env: r.a.env, timeoutMs: 90_000 });
  check(result.code === 0, () => `blue-agent drain exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  const upload = await waitFor(
    `the ${harness} session listed complete on the Control API`,
    async () => (await r.stack.listUploads()).find((i) => i.harness === harness && i.status === 'complete'),
    60_000,
    200,
  );
  check(
    upload.native_session_id === sessionId,
    () => `the Control API holds session ${upload.native_session_id}, the hook captured ${sessionId}`,
  );
  return upload;
}

/** `blue-agent resume ID --dest DIR --yes --no-launch --json` on machine B; returns the native resume command. */
export async function restoredOnB(
  r: Machines,
  id: string,
  bin: string,
  extraEnv: Record<string, string> = {},
): Promise<string[]> {
  const env = { ...harnessEnv(r.b.home, { ...r.b.env, ...extraEnv, PATH: pathWith(bin) }) };
  const result = await runCli(['resume', id, '--dest', r.destination, '--yes', '--no-launch', '--json'], {
    env,
    cwd: r.destination,
    timeoutMs: 120_000,
  });
  check(result.code === 0, () => `blue-agent resume exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  const report = JSON.parse(result.stdout) as {
    ok: boolean;
    dry_run: boolean;
    id: string;
    destination: string;
    command: string[];
  };
  check(
    report.ok && !report.dry_run && report.id === id && report.destination === r.destination,
    () => `unexpected resume report: ${result.stdout}`,
  );
  return report.command;
}

export function agentOn(home: TestHome, bin: string): Context {
  return home.context({ env: { PATH: pathWith(bin) } });
}

/** Runs a hook command the way a harness that runs `sh -c COMMAND` with the payload on stdin does. */
export function shell(
  command: string,
  input: string,
  env: Record<string, string>,
  cwd: string,
): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { env, cwd, stdio: ['pipe', 'ignore', 'ignore'] });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code));
    child.stdin.end(input);
  });
}
