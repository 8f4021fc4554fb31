/**
 * The settings of the suites that run the real harness CLIs (each harness's `real-cli.test.ts` in its test folder):
 * one `use…()` per suite registers its hooks in the calling describe block and returns the suite's world (the HOMEs,
 * the model stub, the Control API, and the steps and checks every harness's suite shares). Read the world's fields
 * inside a test: they are fresh for each one. A step that runs the harness takes a `SessionRun`, the harness's own
 * runner with its particulars, and gives it where the session runs. The round trips across two HOMEs are in
 * real-cli-round-trips.ts.
 */
import { chmod, mkdir, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { verifyBundle } from '../../packages/contract/src/bundle/index.js';
import type { Context } from '../../packages/agent/src/context.js';
import { loadProfiles, type ProfileSet } from '../../packages/contract/src/profiles/index.js';
import { reconcile } from '../../packages/agent/src/reconcile/index.js';
import type { HarnessName } from '../../packages/contract/src/schema/index.js';
import type { SpoolRecord } from '../../packages/agent/src/spool/index.js';
import { captureLog, readJson, runCli, spoolFiles, waitForWorkers } from './cli-process.js';
import { agentRoot, makeTestHome, type TestHome } from './context.js';
import { startModelStub, type ModelStub } from './model-stub.js';
import { describeRun, readJsonLines, waitFor, type HarnessRunOptions, type HarnessRunResult } from './run-harness.js';

/** A session-end hook's payload, as a user hook receives it. */
export interface Payload {
  session_id?: unknown;
  transcript_path?: unknown;
  cwd?: unknown;
  hook_event_name?: unknown;
  reason?: unknown;
}

/** Where a step runs a session: everything of a harness run but the binary (the runner holds it). */
export type SessionPlace = Omit<HarnessRunOptions, 'bin'>;

/** The harness's runner with its particulars, e.g. `(o) => runClaude({ bin, ...o })`. */
export type SessionRun = (place: SessionPlace) => Promise<HarnessRunResult>;

/** Waits (up to `timeoutMs`) for the line of `event` a user's hook appended to `file`; returns its payload. */
export function userHookPayloadIn(file: string, event = 'SessionEnd', timeoutMs = 60_000): Promise<Payload> {
  return waitFor(
    `the ${event} hook output`,
    async () => ((await readJsonLines(file)) as Payload[]).find((p) => p.hook_event_name === event),
    timeoutMs,
  );
}

/** What reconcile reports of the one harness it was asked about. */
export type HarnessReport = Awaited<ReturnType<typeof reconcile>>['harnesses'][number];

/** PATH for the agent and for what its hooks start: the harness's folder, Node.js's, and the system's. */
export function pathWith(bin: string): string {
  return `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin`;
}

/** Makes the folder `parts` and returns its real path (the harnesses report it resolved: /var is /private/var). */
export async function madeDir(...parts: string[]): Promise<string> {
  await mkdir(path.join(...parts), { recursive: true });
  return realpath(path.join(...parts));
}

/** A run's account plus what the stub saw (and `extra`), for assertion messages. */
export function explainRun(stub: ModelStub, result: HarnessRunResult, extra = ''): string {
  return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}${extra}`);
}

/** The policy file of a HOME that captures: uploads go to a Control API that is never reached. */
async function writePolicy(root: string): Promise<string> {
  const policy = path.join(root, 'policy.yaml');
  await writeFile(
    policy,
    'revision: 1\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n',
  );
  return policy;
}

/** `reconcile` of one harness, applied; returns its report. */
export async function reconcileOne(ctx: Context, harness: HarnessName, policyFile?: string): Promise<HarnessReport> {
  const report = await reconcile(ctx, { dryRun: false, harnesses: [harness], ...(policyFile ? { policyFile } : {}) });
  return report.harnesses[0]!;
}

/** One HOME with a model stub and a working directory, made before each test and removed after it. */
interface OneMachine {
  t: TestHome;
  stub: ModelStub;
  cwd: string;
}

async function oneMachine(reply: string, ...cwd: string[]): Promise<OneMachine> {
  const t = await makeTestHome();
  const stub = await startModelStub({ reply });
  return { t, stub, cwd: await madeDir(t.root, ...cwd) };
}

/** How a step runs a session: its prompt (`Say hello.` unless said) and limit (60 s unless said). */
export interface SessionOptions {
  prompt?: string;
  timeoutMs?: number;
}

/** A session on the machine, in its working directory with its HOME's environment. */
function sessionOn(machine: OneMachine, run: SessionRun, options: SessionOptions = {}): Promise<HarnessRunResult> {
  const { t, stub, cwd } = machine;
  const { prompt = 'Say hello.', timeoutMs = 60_000 } = options;
  return run({ home: t.home, cwd, prompt, stubUrl: stub.url, env: t.env, timeoutMs });
}

/**
 * A real CLI run offline against the model stub in an isolated HOME, with a file for a user hook's output: the
 * machinery the capture tests build on (each CLI completes a headless session and runs a user's session-end hook).
 */
export function useOfflineSession() {
  const REPLY = 'Offline stub reply: the session works.';
  const SESSION_TIMEOUT_MS = 60_000;
  const TEST_TIMEOUT_MS = 90_000;

  const world = {} as OneMachine & { profiles: ProfileSet; hookOut: string };

  beforeAll(async () => {
    world.profiles = await loadProfiles(path.join(agentRoot, 'profiles'));
  });

  beforeEach(async () => {
    Object.assign(world, await oneMachine(REPLY, 'work', 'my_project'));
    world.hookOut = path.join(world.t.root, 'hook-out.jsonl');
  });

  afterEach(async () => {
    await world.stub.close();
    await world.t.cleanup();
  });

  /** A run's account plus what the stub saw, for assertion messages. */
  function explain(result: HarnessRunResult): string {
    return explainRun(world.stub, result);
  }

  function expectSessionOk(result: HarnessRunResult): void {
    expect(result.timedOut, explain(result)).toBe(false);
    expect(result.exitCode, explain(result)).toBe(0);
    expect(result.stdout, explain(result)).toContain(REPLY);
  }

  /** A session in the working directory of this HOME, with its environment, bounded as a headless session is. */
  function session(run: SessionRun, prompt = 'Say hello.'): Promise<HarnessRunResult> {
    return sessionOn(world, run, { prompt, timeoutMs: SESSION_TIMEOUT_MS });
  }

  /** Waits for the user hook's line of `event` (SessionEnd unless said); returns its payload. */
  function userHookPayload(event = 'SessionEnd'): Promise<Payload> {
    return userHookPayloadIn(world.hookOut, event);
  }

  return Object.assign(world, {
    REPLY,
    SESSION_TIMEOUT_MS,
    TEST_TIMEOUT_MS,
    explain,
    expectSessionOk,
    session,
    userHookPayload,
  });
}

/**
 * Capture end to end with a real CLI: reconcile installs the managed hook with the real built agent entry, a real
 * session ends, the harness runs `blue-agent capture`, the detached worker builds the bundle, and the spool ends up
 * with a ready bundle that `bundle verify` accepts.
 */
export function useCaptureHome() {
  const REPLY = 'Offline stub reply for the capture test.';
  const TEST_TIMEOUT_MS = 150_000;

  const world = {} as OneMachine & { policy: string; stateDir: string };

  beforeEach(async () => {
    Object.assign(world, await oneMachine(REPLY, 'work', 'project'));
    world.stateDir = world.t.env.BLUE_AGENT_HOME!;
    world.policy = await writePolicy(world.t.root);
  });

  afterEach(async () => {
    await waitForWorkers(world.stateDir, 60_000).catch(() => undefined);
    await world.stub.close();
    await world.t.cleanup();
  });

  /** The agent as installed: `self` is the real built entry (the Context default), the harness found on PATH. */
  function agentContext(harnessBinary: string): Context {
    return world.t.context({ env: { PATH: pathWith(harnessBinary) } });
  }

  /** Reconcile of `harness` under the test's policy, by the agent as installed; returns its report. */
  function reconcileHarness(bin: string, harness: HarnessName): Promise<HarnessReport> {
    return reconcileOne(agentContext(bin), harness, world.policy);
  }

  /** A session in the working directory of this HOME, with its environment (the hook's state is there). */
  function session(run: SessionRun, options?: SessionOptions): Promise<HarnessRunResult> {
    return sessionOn(world, run, options);
  }

  function explain(result: HarnessRunResult): string {
    return explainRun(world.stub, result, `\n--- capture.log\n${JSON.stringify(captureLog(world.stateDir), null, 1)}`);
  }

  /**
   * Waits until every capture of this run reached a final state (ready, failed, or left the spool unchanged); returns
   * the records still in the spool.
   */
  async function finishedCaptures(timeoutMs = 60_000): Promise<{ state: string; record: SpoolRecord }[]> {
    const { stateDir, stub } = world;
    const done = await waitFor(
      'finished captures in the spool',
      () => {
        const files = spoolFiles(stateDir);
        const finished = [
          ...files.ready.map((n) => ['ready', n] as const),
          ...files.failed.map((n) => ['failed', n] as const),
        ];
        return finished.length > 0 && files.intake.length === 0 && files.building.length === 0 ? finished : undefined;
      },
      timeoutMs,
      100,
    ).catch((error: Error) => {
      throw new Error(
        `${error.message}\n--- spool ${JSON.stringify(spoolFiles(stateDir))}\n--- capture.log\n` +
          `${JSON.stringify(captureLog(stateDir), null, 1)}\n--- model stub\n${stub.summary()}`,
      );
    });
    return done.map(([state, name]) => ({
      state,
      record: readJson<SpoolRecord>(path.join(stateDir, 'spool', state, name)),
    }));
  }

  /** Waits for the one capture of this run to reach a final state; returns its record. */
  async function oneFinishedCapture(timeoutMs = 60_000): Promise<{ state: string; record: SpoolRecord }> {
    const done = await finishedCaptures(timeoutMs);
    expect(done, JSON.stringify(captureLog(world.stateDir))).toHaveLength(1);
    return done[0]!;
  }

  /** The ready bundle verifies, in process and through the CLI, and carries the session, its title and preview. */
  async function expectVerifiedBundle(
    record: SpoolRecord,
    harness: string,
    profile: string,
    text: { title: string; summary?: string },
  ): Promise<void> {
    const { t, stateDir, cwd } = world;
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

  /**
   * The session `result` ran is the run's one capture: ready, of this harness and profile, from the hook's `event`
   * (SessionEnd unless said) in the working directory, its bundle verified with the title and preview `text`. Returns
   * its record.
   */
  async function expectOneReadyBundle(
    result: HarnessRunResult,
    capture: { harness: string; profile: string; event?: string; timeoutMs?: number },
    text: { title: string; summary?: string },
  ): Promise<SpoolRecord> {
    const { harness, profile, event = 'SessionEnd', timeoutMs } = capture;
    const { state, record } = await oneFinishedCapture(timeoutMs);
    expect(state, `${JSON.stringify(record)}\n${explain(result)}`).toBe('ready');
    expect(record).toMatchObject({ harness, profile, payload: { cwd: world.cwd, hook_event_name: event } });
    await expectVerifiedBundle(record, harness, profile, text);
    return record;
  }

  return Object.assign(world, {
    REPLY,
    TEST_TIMEOUT_MS,
    agentContext,
    reconcileHarness,
    session,
    explain,
    oneFinishedCapture,
    finishedCaptures,
    expectVerifiedBundle,
    expectOneReadyBundle,
  });
}

/**
 * Reconcile against a real CLI: the managed hook is fired at the end of a real (offline) session with the native
 * payload, beside the user's own hook. The agent entry is a recorder named like the agent, so the hook's arguments
 * and stdin are checked.
 */
export function useReconcileHome() {
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

  const world = {} as OneMachine & { userOut: string; managedOut: string; recorder: string; policy: string };

  beforeEach(async () => {
    Object.assign(world, await oneMachine(REPLY, 'work', 'project'));
    const { root } = world.t;
    world.userOut = path.join(root, 'user-hook.jsonl');
    world.managedOut = path.join(root, 'managed-hook.jsonl');
    // Stands in for the agent's entry: records how the harness called `capture`.
    world.recorder = path.join(root, 'agent', 'bin', 'blue-agent.js');
    await mkdir(path.dirname(world.recorder), { recursive: true });
    await writeFile(
      world.recorder,
      [
        `import { appendFileSync } from 'node:fs';`,
        `const chunks = [];`,
        `for await (const chunk of process.stdin) chunks.push(chunk);`,
        `appendFileSync(${JSON.stringify(world.managedOut)}, JSON.stringify({ argv: process.argv.slice(2), stdin: ` +
          `Buffer.concat(chunks).toString('utf8') }) + '\\n');`,
        '',
      ].join('\n'),
    );
    await chmod(world.recorder, 0o755);
    world.policy = await writePolicy(root);
  });

  afterEach(async () => {
    await world.stub.close();
    await world.t.cleanup();
  });

  function agentContext(harnessBinary: string): Context {
    return world.t.context({
      env: { PATH: pathWith(harnessBinary) },
      self: { node: process.execPath, entry: world.recorder },
    });
  }

  /** Reconcile of `harness` under the test's policy, its hook calling the recorder; returns its report. */
  function reconcileHarness(bin: string, harness: HarnessName): Promise<HarnessReport> {
    return reconcileOne(agentContext(bin), harness, world.policy);
  }

  /** A session in the working directory of this HOME, with its environment. */
  function session(run: SessionRun, options?: SessionOptions): Promise<HarnessRunResult> {
    return sessionOn(world, run, options);
  }

  async function managedCalls(): Promise<{ argv: string[]; payload: Payload }[]> {
    const lines = (await readJsonLines(world.managedOut)) as Recorded[];
    return lines.map((line) => ({ argv: line.argv, payload: JSON.parse(line.stdin) as Payload }));
  }

  /** Waits (up to `timeoutMs`) until the managed hook (`what`) ran at least once; returns its calls. */
  function managedCallsSeen(what = 'the managed hook', timeoutMs?: number) {
    return waitFor(what, async () => ((await managedCalls()).length > 0 ? managedCalls() : undefined), timeoutMs);
  }

  /**
   * The managed hook ran exactly once (or, with `allowRepeats`, one or more times for one session: a harness that
   * fires its end hook twice), as `capture` for this harness and profile, with a payload of the profile's capture
   * event (`event`, SessionEnd unless said) naming a session id of the harness's shape (`sessionId`, a UUID unless
   * said).
   */
  async function expectOneSessionEnd(
    harness: string,
    profile: string,
    options: { allowRepeats?: boolean; event?: string; sessionId?: RegExp } = {},
  ): Promise<{ argv: string[]; payload: Payload }[]> {
    const calls = await managedCallsSeen();
    if (options.allowRepeats !== true) expect(calls).toHaveLength(1);
    for (const call of calls) {
      expect(call.argv).toEqual(['capture', '--harness', harness, '--profile', profile]);
      expect(call.payload).toMatchObject({ hook_event_name: options.event ?? 'SessionEnd', cwd: world.cwd });
      expect(call.payload.session_id).toMatch(options.sessionId ?? /^[0-9a-f-]{36}$/);
      expect(call.payload.session_id).toBe(calls[0]!.payload.session_id);
    }
    return calls;
  }

  /** The user's own SessionEnd hook (or one on `event`) in the same file ran for the same session. */
  async function expectUserHookFor(sessionId: string, event = 'SessionEnd'): Promise<void> {
    const user = (await waitFor('the user hook', async () => {
      const lines = (await readJsonLines(world.userOut)) as Payload[];
      return lines.length > 0 ? lines : undefined;
    })) as Payload[];
    expect(user[0]).toMatchObject({ hook_event_name: event, session_id: sessionId });
  }

  /**
   * The session `result` ran ended well, and fired both hooks for it: the managed one as `expectOneSessionEnd` says
   * (with its `options`), and the user's on the same event. Returns the managed hook's calls.
   */
  async function expectBothHooksRan(
    result: HarnessRunResult,
    harness: string,
    profile: string,
    options: { allowRepeats?: boolean; event?: string; sessionId?: RegExp } = {},
  ): Promise<{ argv: string[]; payload: Payload }[]> {
    expect(result.exitCode, explain(result)).toBe(0);
    const calls = await expectOneSessionEnd(harness, profile, options);
    await expectUserHookFor(calls[0]!.payload.session_id!, options.event);
    return calls;
  }

  function explain(result: HarnessRunResult): string {
    return explainRun(world.stub, result);
  }

  return Object.assign(world, {
    REPLY,
    TEST_TIMEOUT_MS,
    agentContext,
    reconcileHarness,
    session,
    managedCalls,
    managedCallsSeen,
    expectOneSessionEnd,
    expectUserHookFor,
    expectBothHooksRan,
    explain,
  });
}
