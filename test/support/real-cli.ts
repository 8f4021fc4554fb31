/**
 * The settings of the suites that run the real harness CLIs (each harness's `real-cli.test.ts` in its test folder):
 * one `use…()` per suite registers its hooks in the calling describe block and returns the suite's world (the HOMEs,
 * the model stub, the Control API, and the helpers that check them). Read the world's fields inside a test: they are
 * fresh for each one.
 */
import { existsSync, readdirSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { verifyBundle } from '../../packages/contract/src/bundle/index.js';
import { bufferOutput, type Context } from '../../packages/agent/src/context.js';
import { Daemon } from '../../packages/agent/src/daemon/index.js';
import { assembleBundle } from '../../packages/agent/src/drain/assemble.js';
import { findInterval, loadProfiles, type ProfileSet } from '../../packages/contract/src/profiles/index.js';
import { applyRestore, prepareRestore, recoverRestores } from '../../packages/agent/src/restore/index.js';
import type { HarnessName } from '../../packages/contract/src/schema/index.js';
import type { SpoolRecord } from '../../packages/agent/src/spool/index.js';
import { captureLog, readJson, runCli, spoolFiles, waitForWorkers } from './cli-process.js';
import { agentRoot, makeTestHome, type TestHome } from './context.js';
import { startUploadStack, type UploadStack } from './fault-proxy.js';
import { startModelStub, type ModelStub } from './model-stub.js';
import { fixtureProfile, restoreHome, shippedProfiles } from './restore-homes.js';
import { describeRun, harnessEnv, readJsonLines, waitFor, type HarnessRunResult } from './run-harness.js';

/** A session-end hook's payload, as a user hook receives it. */
export interface Payload {
  session_id?: unknown;
  transcript_path?: unknown;
  cwd?: unknown;
  hook_event_name?: unknown;
  reason?: unknown;
}

/**
 * A real CLI run offline against the model stub in an isolated HOME, with a file for a user hook's output: the
 * machinery the capture tests build on (each CLI completes a headless session and runs a user's session-end hook).
 */
export function useOfflineSession() {
  const REPLY = 'Offline stub reply: the session works.';
  const SESSION_TIMEOUT_MS = 60_000;
  const TEST_TIMEOUT_MS = 90_000;

  let profiles: ProfileSet;
  let t: TestHome;
  let stub: ModelStub;
  let cwd: string;
  let hookOut: string;

  beforeAll(async () => {
    profiles = await loadProfiles(path.join(agentRoot, 'profiles'));
  });

  beforeEach(async () => {
    t = await makeTestHome();
    stub = await startModelStub({ reply: REPLY });
    cwd = path.join(t.root, 'work', 'my_project');
    await mkdir(cwd, { recursive: true });
    // Realpath: the harnesses report the resolved working directory (on macOS /var is /private/var).
    cwd = await realpath(cwd);
    hookOut = path.join(t.root, 'hook-out.jsonl');
  });

  afterEach(async () => {
    await stub.close();
    await t.cleanup();
  });

  /** A run's account plus what the stub saw, for assertion messages. */
  function explain(result: HarnessRunResult): string {
    return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}`);
  }

  function expectSessionOk(result: HarnessRunResult): void {
    expect(result.timedOut, explain(result)).toBe(false);
    expect(result.exitCode, explain(result)).toBe(0);
    expect(result.stdout, explain(result)).toContain(REPLY);
  }

  return {
    get profiles() {
      return profiles;
    },
    get t() {
      return t;
    },
    get stub() {
      return stub;
    },
    get cwd() {
      return cwd;
    },
    get hookOut() {
      return hookOut;
    },
    REPLY,
    SESSION_TIMEOUT_MS,
    TEST_TIMEOUT_MS,
    explain,
    expectSessionOk,
  };
}

/**
 * Capture end to end with a real CLI: reconcile installs the managed hook with the real built agent entry, a real
 * session ends, the harness runs `blue-agent capture`, the detached worker builds the bundle, and the spool ends up
 * with a ready bundle that `bundle verify` accepts.
 */
export function useCaptureHome() {
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
    await writeFile(
      policy,
      'revision: 1\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n',
    );
  });

  afterEach(async () => {
    await waitForWorkers(stateDir, 60_000).catch(() => undefined);
    await stub.close();
    await t.cleanup();
  });

  /** The agent as installed: `self` is the real built entry (the Context default), the harness found on PATH. */
  function agentContext(harnessBinary: string): Context {
    return t.context({
      env: { PATH: `${path.dirname(harnessBinary)}:${path.dirname(process.execPath)}:/usr/bin:/bin` },
    });
  }

  function explain(result: HarnessRunResult): string {
    return describeRun(
      result,
      `--- model stub requests\n${stub.summary() || '(none)'}\n--- capture.log\n` +
        `${JSON.stringify(captureLog(stateDir), null, 1)}`,
    );
  }

  /**
   * Waits until every capture of this run reached a final state (ready, failed, or left the spool unchanged); returns
   * the records still in the spool.
   */
  async function finishedCaptures(timeoutMs = 60_000): Promise<{ state: string; record: SpoolRecord }[]> {
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
    const done = await waitFor(
      'a finished capture in the spool',
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
    expect(done, JSON.stringify(captureLog(stateDir))).toHaveLength(1);
    const [state, name] = done[0]!;
    return { state, record: readJson<SpoolRecord>(path.join(stateDir, 'spool', state, name)) };
  }

  /** The ready bundle verifies, in process and through the CLI, and carries the session, its title and preview. */
  async function expectVerifiedBundle(
    record: SpoolRecord,
    harness: string,
    profile: string,
    text: { title: string; summary?: string },
  ): Promise<void> {
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

  return {
    get t() {
      return t;
    },
    get stub() {
      return stub;
    },
    get cwd() {
      return cwd;
    },
    get policy() {
      return policy;
    },
    get stateDir() {
      return stateDir;
    },
    REPLY,
    TEST_TIMEOUT_MS,
    agentContext,
    explain,
    oneFinishedCapture,
    finishedCaptures,
    expectVerifiedBundle,
  };
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
        `appendFileSync(${JSON.stringify(managedOut)}, JSON.stringify({ argv: process.argv.slice(2), stdin: ` +
          `Buffer.concat(chunks).toString('utf8') }) + '\\n');`,
        '',
      ].join('\n'),
    );
    await chmod(recorder, 0o755);
    policy = path.join(t.root, 'policy.yaml');
    await writeFile(
      policy,
      'revision: 1\nsession_upload: { presign_url: "https://control.example/session-uploads/presign" }\n',
    );
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
    const calls = await waitFor('the managed hook', async () =>
      (await managedCalls()).length > 0 ? managedCalls() : undefined,
    );
    if (options.allowRepeats !== true) expect(calls).toHaveLength(1);
    for (const call of calls) {
      expect(call.argv).toEqual(['capture', '--harness', harness, '--profile', profile]);
      expect(call.payload).toMatchObject({ hook_event_name: options.event ?? 'SessionEnd', cwd });
      expect(call.payload.session_id).toMatch(options.sessionId ?? /^[0-9a-f-]{36}$/);
      expect(call.payload.session_id).toBe(calls[0]!.payload.session_id);
    }
    return calls;
  }

  /** The user's own SessionEnd hook (or one on `event`) in the same file ran for the same session. */
  async function expectUserHookFor(sessionId: string, event = 'SessionEnd'): Promise<void> {
    const user = (await waitFor('the user hook', async () => {
      const lines = (await readJsonLines(userOut)) as Payload[];
      return lines.length > 0 ? lines : undefined;
    })) as Payload[];
    expect(user[0]).toMatchObject({ hook_event_name: event, session_id: sessionId });
  }

  function explain(result: HarnessRunResult): string {
    return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}`);
  }

  return {
    get t() {
      return t;
    },
    get stub() {
      return stub;
    },
    get cwd() {
      return cwd;
    },
    get userOut() {
      return userOut;
    },
    get managedOut() {
      return managedOut;
    },
    get recorder() {
      return recorder;
    },
    get policy() {
      return policy;
    },
    REPLY,
    TEST_TIMEOUT_MS,
    agentContext,
    managedCalls,
    expectOneSessionEnd,
    expectUserHookFor,
    explain,
  };
}

/** Files below `dir` (at most 8 levels, each read up to 4 MiB) whose bytes contain `word`. */
async function filesMentioning(dir: string, word: string, depth = 0): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory() && depth < 8) found.push(...(await filesMentioning(file, word, depth + 1)));
    else if (entry.isFile()) {
      const bytes = await readFile(file).catch(() => Buffer.alloc(0));
      if (bytes.length <= 4 * 1024 * 1024 && bytes.includes(word)) found.push(file);
    }
  }
  return found;
}

/**
 * The round trip people rely on, with the real Control API: on machine A (one HOME) reconcile installs the managed
 * hook, a session ends, the hook captures it and the worker uploads it; on machine B (another HOME, another
 * directory) `blue-agent resume ID --dest DIR --yes --no-launch` downloads, verifies and restores it and prints the
 * native resume command, which, run headless in B, sends the earlier turn to the model.
 */
export function useResumeRoundTrip() {
  const CODE_WORD = 'HERON-4410-WOMBAT';
  const FIRST_PROMPT = `Keep this code word in mind: ${CODE_WORD}. Answer OK.`;
  const SECOND_PROMPT = 'What was the code word?';
  const TEST_TIMEOUT_MS = 300_000;

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

  let agent: Daemon | undefined;
  let agentOut: ReturnType<typeof bufferOutput> | undefined;

  afterEach(async () => {
    await agent?.stop('test-end');
    agent = undefined;
    await waitForWorkers(a.env.BLUE_AGENT_HOME!, 60_000).catch(() => undefined);
    await stub.close();
    await stack.close();
    await a.cleanup();
    await b.cleanup();
  });

  /**
   * `blue-agent run` on machine A, in this process (its steps and drains as child processes, as always), with the idle
   * time shortened to `idleMs` and a sweep every second; stopped after the test.
   */
  async function startAgentOnA(bin: string, idleMs: number): Promise<Daemon> {
    agentOut = bufferOutput();
    agent = await Daemon.start(a.context({ env: { PATH: pathWith(bin) }, stdout: agentOut }), {
      idleCaptureMs: idleMs,
      sweepMs: 1_000,
      intakeDelayMs: 100,
      drainSchedule: '0 0 1 1 *',
      logTarget: { kind: 'stdout' },
      policyPush: false,
    });
    // Sessions are followed from the agent's first sweep on (older ones are backfill's): wait for it.
    await waitFor(
      "the agent's first sweep",
      () =>
        agentOut!.text().includes('"msg":"reconciled"') && existsSync(path.join(a.env.BLUE_AGENT_HOME!, 'cursors'))
          ? true
          : undefined,
      60_000,
      100,
    );
    return agent;
  }

  /**
   * Runs a session on A whose first turn hangs (the model never answers the prompt with `word`), and SIGKILLs the
   * harness's process group once the turn is under way: no end hook can run. Resolves once it is gone.
   */
  async function killedMidTurn(
    word: string,
    run: (onSpawn: (pid: number) => void) => Promise<HarnessRunResult>,
  ): Promise<HarnessRunResult> {
    stub.hold = (r) => JSON.stringify(r.body ?? '').includes(word);
    let pid: number | undefined;
    const running = run((p) => (pid = p));
    await waitFor('the turn under way (the model asked)', () => (stub.held.length > 0 ? true : undefined), 60_000, 50);
    // The harness has written the prompt to its session (it may buffer a write briefly): only then is it killed.
    await waitFor(
      'the prompt in a session file on machine A',
      async () => ((await filesMentioning(a.home, word)).length > 0 ? true : undefined),
      30_000,
      100,
    );
    process.kill(-pid!, 'SIGKILL');
    const result = await running;
    stub.hold = undefined;
    return result;
  }

  function agentLog(): string {
    return agentOut?.text() ?? '';
  }

  function pathWith(bin: string): string {
    return `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin`;
  }

  function agentOn(home: TestHome, bin: string): Context {
    return home.context({ env: { PATH: pathWith(bin) } });
  }

  function explain(result: HarnessRunResult): string {
    return describeRun(
      result,
      `--- model stub\n${stub.summary() || '(none)'}\n--- capture.log A\n` +
        `${JSON.stringify(captureLog(a.env.BLUE_AGENT_HOME!), null, 1)}`,
    );
  }

  /** The native resume ran, and the model was sent the new prompt with the earlier turn (the code word) at `modelPath`.
   * */
  function expectResumedWithHistory(resumed: HarnessRunResult, modelPath: string): void {
    expect(resumed.exitCode, explain(resumed)).toBe(0);
    const sent = stub.textSentTo(modelPath);
    expect(sent, explain(resumed)).toContain(SECOND_PROMPT);
    expect(sent, explain(resumed)).toContain(CODE_WORD);
  }

  /** Waits until machine A's session is listed complete on the Control API; returns it. */
  async function uploadedFromA(harness: string): Promise<{ id: string; native_session_id: string }> {
    try {
      return await waitFor(
        `the ${harness} session uploaded from machine A`,
        async () => (await stack.listUploads()).find((i) => i.harness === harness && i.status === 'complete'),
        90_000,
        200,
      );
    } catch (error) {
      const state = a.env.BLUE_AGENT_HOME!;
      const spool = Object.fromEntries(
        ['intake', 'building', 'ready', 'uploading', 'failed'].map((d) => [
          d,
          readdirSync(path.join(state, 'spool', d), { withFileTypes: false }).length,
        ]),
      );
      throw new Error(
        `${(error as Error).message}\n--- spool A ${JSON.stringify(spool)}\n--- capture.log A\n` +
          `${JSON.stringify(captureLog(state), null, 1)}\n--- uploads ${JSON.stringify(await stack.listUploads())}`,
      );
    }
  }

  /** `blue-agent resume ID --dest DIR --yes --no-launch --json` on machine B; returns the native resume command. */
  async function resumeOnB(id: string, bin: string, extraEnv: Record<string, string> = {}): Promise<string[]> {
    const env = { ...harnessEnv(b.home, { ...b.env, ...extraEnv, PATH: pathWith(bin) }) };
    // An unambiguous prefix is enough.
    const result = await runCli(['resume', id.slice(0, 13), '--dest', destination, '--yes', '--no-launch', '--json'], {
      env,
      cwd: destination,
      timeoutMs: 120_000,
    });
    expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
    const report = JSON.parse(result.stdout) as {
      ok: boolean;
      dry_run: boolean;
      id: string;
      destination: string;
      restored: string[];
      command: string[];
    };
    expect(report).toMatchObject({ ok: true, dry_run: false, id, destination });
    return report.command;
  }

  return {
    get stack() {
      return stack;
    },
    get a() {
      return a;
    },
    get b() {
      return b;
    },
    get stub() {
      return stub;
    },
    get sourceCwd() {
      return sourceCwd;
    },
    get destination() {
      return destination;
    },
    CODE_WORD,
    FIRST_PROMPT,
    SECOND_PROMPT,
    TEST_TIMEOUT_MS,
    pathWith,
    agentOn,
    explain,
    expectResumedWithHistory,
    uploadedFromA,
    resumeOnB,
    startAgentOnA,
    killedMidTurn,
    agentLog,
  };
}

/**
 * The restore round trip with a real CLI: a real session runs in HOME A, is bundled the way the capture worker
 * bundles it, is restored into HOME B under a different destination with prepareRestore + applyRestore, and the CLI's
 * own headless resume runs there; the stub's request proves the resumed conversation carries the earlier turn.
 */
export function useRestoreRoundTrip() {
  const CODE_WORD = 'PELICAN-7731-QUOKKA';
  const FIRST_PROMPT = `Remember this code word for later: ${CODE_WORD}. Reply with OK.`;
  const SECOND_PROMPT = 'Which code word did I ask you to remember?';
  const TEST_TIMEOUT_MS = 240_000;

  let a: TestHome;
  let b: TestHome;
  let stub: ModelStub;
  let sourceCwd: string;
  let destination: string;

  beforeEach(async () => {
    a = await restoreHome();
    b = await restoreHome();
    stub = await startModelStub({ reply: 'OK, noted.' });
    await mkdir(path.join(a.root, 'work', 'original-project'), { recursive: true });
    sourceCwd = await realpath(path.join(a.root, 'work', 'original-project'));
    await mkdir(path.join(b.root, 'checkouts', 'restored_here'), { recursive: true });
    destination = await realpath(path.join(b.root, 'checkouts', 'restored_here'));
  });

  afterEach(async () => {
    await stub.close();
    await a.cleanup();
    await b.cleanup();
  });

  /** The agent's Context on a home, with the harness on PATH (a capture or a restore may run the CLI). */
  function agentContext(home: TestHome, bin: string, extra: Record<string, string> = {}): Context {
    return home.context({
      env: { PATH: `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin`, ...extra },
    });
  }

  function explain(result: HarnessRunResult): string {
    return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}`);
  }

  /** The native resume ran, and the model was sent the new prompt with the earlier turn (the code word) at `modelPath`.
   * */
  function expectResumedWithHistory(resumed: HarnessRunResult, modelPath: string): void {
    expect(resumed.exitCode, explain(resumed)).toBe(0);
    const sent = stub.textSentTo(modelPath);
    expect(sent, explain(resumed)).toContain(SECOND_PROMPT);
    expect(sent, explain(resumed)).toContain(CODE_WORD);
  }

  /** Bundles a session of HOME A exactly as the capture worker does (by the fixture's profile unless `profile` names
   * one). */
  async function bundleFromA(
    harness: HarnessName,
    ctx: Context,
    payload: { session_id: string; cwd: string; transcript_path?: string },
    profile = fixtureProfile(harness),
  ): Promise<string> {
    const profiles = await shippedProfiles();
    const interval = findInterval(profiles, profile)!.interval;
    const out = path.join(a.root, `${harness}.bundle`);
    await assembleBundle(
      ctx,
      { harness, interval, payload: { ...payload, hook_event_name: 'SessionEnd' }, capturedAtUnixMs: Date.now() },
      out,
      profiles,
    );
    return out;
  }

  /** Restores into HOME B under the other destination; returns the native id and the resume command. */
  async function restoreIntoB(
    ctx: Context,
    bundle: string,
    options: { installedVersion?: string } = {},
  ): Promise<{ sessionId: string; resumeArgv: string[] }> {
    expect(await recoverRestores(ctx)).toEqual({ rolledBack: [], completed: [] });
    const prepared = await prepareRestore(ctx, {
      bundleFile: bundle,
      destination,
      profiles: await shippedProfiles(),
      ...options,
    });
    try {
      expect(prepared.collision).toBe('none');
      const result = await applyRestore(ctx, prepared);
      return { sessionId: result.sessionId, resumeArgv: result.resumeArgv };
    } finally {
      await prepared.dispose();
    }
  }

  return {
    get a() {
      return a;
    },
    get b() {
      return b;
    },
    get stub() {
      return stub;
    },
    get sourceCwd() {
      return sourceCwd;
    },
    get destination() {
      return destination;
    },
    CODE_WORD,
    FIRST_PROMPT,
    SECOND_PROMPT,
    TEST_TIMEOUT_MS,
    agentContext,
    explain,
    expectResumedWithHistory,
    bundleFromA,
    restoreIntoB,
  };
}
