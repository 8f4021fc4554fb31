/**
 * The round trips of the real-CLI suites (each harness's `real-cli.test.ts`), on two HOMEs, machine A where a session
 * runs and machine B where it resumes in another directory: through the Control API (`useResumeRoundTrip`), or
 * bundled and restored in process (`useRestoreRoundTrip`). Like the worlds of real-cli.ts, each `use…()` registers
 * its hooks in the calling describe block and returns the suite's world, fresh for each test.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, expect } from 'vitest';
import { bufferOutput, type Context } from '../../packages/agent/src/context.js';
import { Daemon } from '../../packages/agent/src/daemon/index.js';
import { assembleBundle } from '../../packages/agent/src/drain/assemble.js';
import { findInterval } from '../../packages/contract/src/profiles/index.js';
import { applyRestore, prepareRestore, recoverRestores } from '../../packages/agent/src/restore/index.js';
import type { HarnessName } from '../../packages/contract/src/schema/index.js';
import { captureLog, runCli, waitForWorkers } from './cli-process.js';
import { makeTestHome, type TestHome } from './context.js';
import { startUploadStack, type UploadStack } from './fault-proxy.js';
import { startModelStub, type ModelStub } from './model-stub.js';
import { explainRun, type HarnessReport, madeDir, pathWith, reconcileOne, type SessionRun } from './real-cli.js';
import { fixtureProfile, restoreHome, shippedProfiles } from './restore-homes.js';
import { harnessEnv, waitFor, type HarnessRunResult } from './run-harness.js';

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

/** Machine A, where a session runs, and machine B, where it resumes in another directory; one model stub. */
interface TwoMachines {
  a: TestHome;
  b: TestHome;
  stub: ModelStub;
  sourceCwd: string;
  destination: string;
}

/** A round trip's conversation: the first prompt gives the code word, the second (after the resume) asks for it. */
interface Conversation {
  CODE_WORD: string;
  FIRST_PROMPT: string;
  SECOND_PROMPT: string;
}

/**
 * The steps both round trips share: the first session on A, and the native resume on B with its check that the model
 * was sent the earlier turn. `withEnv` gives each machine's session its TestHome's environment (the agent's hooks
 * need it to find their state).
 */
function conversationSteps(
  world: TwoMachines & Conversation,
  explain: (result: HarnessRunResult) => string,
  withEnv: boolean,
) {
  const envOf = (home: TestHome) => (withEnv ? { env: home.env } : {});

  /**
   * The native resume ran, and the model at `modelPath` was sent the new prompt with the earlier turn (the code word).
   */
  function expectResumedWithHistory(resumed: HarnessRunResult, modelPath: string): void {
    expect(resumed.exitCode, explain(resumed)).toBe(0);
    const sent = world.stub.textSentTo(modelPath);
    expect(sent, explain(resumed)).toContain(world.SECOND_PROMPT);
    expect(sent, explain(resumed)).toContain(world.CODE_WORD);
  }

  /** The first session, on A in the source directory with the first prompt; it succeeded. */
  async function firstOnA(run: SessionRun): Promise<HarnessRunResult> {
    const { a, stub, sourceCwd, FIRST_PROMPT } = world;
    const first = await run({
      home: a.home,
      cwd: sourceCwd,
      prompt: FIRST_PROMPT,
      stubUrl: stub.url,
      ...envOf(a),
      timeoutMs: 90_000,
    });
    expect(first.exitCode, explain(first)).toBe(0);
    return first;
  }

  /**
   * The native resume (its arguments `args`) on B in the destination with the second prompt, the stub's earlier
   * requests forgotten first: it ran, and the model at `modelPath` was sent the earlier turn. Returns the run.
   */
  async function resumedOnB(args: readonly string[], modelPath: string, run: SessionRun): Promise<HarnessRunResult> {
    const { b, stub, destination, SECOND_PROMPT } = world;
    stub.clear();
    const resumed = await run({
      home: b.home,
      cwd: destination,
      prompt: SECOND_PROMPT,
      args,
      stubUrl: stub.url,
      ...envOf(b),
      timeoutMs: 90_000,
    });
    expectResumedWithHistory(resumed, modelPath);
    return resumed;
  }

  return { expectResumedWithHistory, firstOnA, resumedOnB };
}

/** Machines A and B (made by `makeHome`), the stub answering `reply`, and the two directories below their roots. */
async function twoMachines(
  makeHome: () => Promise<TestHome>,
  reply: string,
  source: string[],
  destination: string[],
): Promise<TwoMachines> {
  const a = await makeHome();
  const b = await makeHome();
  const stub = await startModelStub({ reply });
  return {
    a,
    b,
    stub,
    sourceCwd: await madeDir(a.root, ...source),
    destination: await madeDir(b.root, ...destination),
  };
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

  const world = { CODE_WORD, FIRST_PROMPT, SECOND_PROMPT } as TwoMachines & Conversation & { stack: UploadStack };

  beforeEach(async () => {
    world.stack = await startUploadStack();
    const control = { BLUE_AGENT_CONTROL_URL: world.stack.proxy.url, BLUE_AGENT_TOKEN: world.stack.token };
    Object.assign(
      world,
      await twoMachines(() => makeTestHome(control), 'OK.', ['src', 'shop'], ['elsewhere', 'shop-copy']),
    );
  });

  let agent: Daemon | undefined;
  let agentOut: ReturnType<typeof bufferOutput> | undefined;

  afterEach(async () => {
    await agent?.stop('test-end');
    agent = undefined;
    await waitForWorkers(world.a.env.BLUE_AGENT_HOME!, 60_000).catch(() => undefined);
    await world.stub.close();
    await world.stack.close();
    await world.a.cleanup();
    await world.b.cleanup();
  });

  /**
   * `blue-agent run` on machine A, in this process (its steps and drains as child processes, as always), with the idle
   * time shortened to `idleMs` and a sweep every second; stopped after the test.
   */
  async function startAgentOnA(bin: string, idleMs: number): Promise<Daemon> {
    const { a } = world;
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

  const conversation = conversationSteps(world, explain, true);

  /** Waits until the agent on A installed the managed hook of `harness` in its native `file`. */
  async function managedHookInstalled(file: string, harness: HarnessName): Promise<void> {
    await waitFor(
      'the managed hook, installed by the agent',
      async () => (await readFile(file, 'utf8').catch(() => '')).includes(`capture --harness ${harness}`) || undefined,
      60_000,
      100,
    );
  }

  /**
   * Runs a session on A whose first turn hangs (the model never answers the prompt with `word`), and SIGKILLs the
   * harness's process group once the turn is under way: no end hook can run. Resolves once it is gone.
   */
  async function killedMidTurn(
    word: string,
    run: (onSpawn: (pid: number) => void) => Promise<HarnessRunResult>,
  ): Promise<HarnessRunResult> {
    const { a, stub } = world;
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

  /** The session `upload` was captured once on A, by the agent's idle sweep, never by the hook; returns A's log. */
  function expectCapturedOnceIdle(upload: { native_session_id: string }): Record<string, unknown>[] {
    const log = captureLog(world.a.env.BLUE_AGENT_HOME!);
    const spooled = log.filter((e) => e.event === 'spooled');
    expect(spooled, `${JSON.stringify(log)}\n${agentLog()}`).toEqual([
      expect.objectContaining({ session_id: upload.native_session_id, capture_reason: 'idle' }),
    ]);
    return log;
  }

  function agentLog(): string {
    return agentOut?.text() ?? '';
  }

  function agentOn(home: TestHome, bin: string): Context {
    return home.context({ env: { PATH: pathWith(bin) } });
  }

  /** Reconcile of `harness` on A, under the policy the Control API publishes; returns its report. */
  function reconcileOnA(bin: string, harness: HarnessName): Promise<HarnessReport> {
    return reconcileOne(agentOn(world.a, bin), harness);
  }

  /**
   * The round trip of `harness` (its CLI `bin`) through the Control API, the hook installed on A by a reconcile that
   * reports `reconciled` (the hook active unless said): the first session (`first`) captured and uploaded; on B,
   * once `prepareB` ran, `blue-agent resume` (with `resumeEnv`) names the native `command` of the session, and its
   * resume (`resume`) sends the earlier turn to the model at `modelPath`.
   */
  async function expectRoundTrip(
    harness: HarnessName,
    bin: string,
    steps: {
      reconciled?: Partial<HarnessReport>;
      first: SessionRun;
      prepareB?: () => Promise<unknown>;
      resumeEnv?: Record<string, string>;
      command: (nativeId: string) => string[];
      resume: SessionRun;
      modelPath: string;
    },
  ): Promise<void> {
    expect(await reconcileOnA(bin, harness)).toMatchObject(steps.reconciled ?? { state: 'active' });
    await conversation.firstOnA(steps.first);
    const upload = await uploadedFromA(harness);

    await steps.prepareB?.();
    const command = await resumeOnB(upload.id, bin, steps.resumeEnv);
    expect(command).toEqual(steps.command(upload.native_session_id));
    await conversation.resumedOnB(command.slice(1), steps.modelPath, steps.resume);
  }

  function explain(result: HarnessRunResult): string {
    const log = JSON.stringify(captureLog(world.a.env.BLUE_AGENT_HOME!), null, 1);
    return explainRun(world.stub, result, `\n--- capture.log A\n${log}`);
  }

  /** Waits until machine A's session is listed complete on the Control API; returns it. */
  async function uploadedFromA(harness: string): Promise<{ id: string; native_session_id: string }> {
    const { stack } = world;
    try {
      return await waitFor(
        `the ${harness} session uploaded from machine A`,
        async () => (await stack.listUploads()).find((i) => i.harness === harness && i.status === 'complete'),
        90_000,
        200,
      );
    } catch (error) {
      const state = world.a.env.BLUE_AGENT_HOME!;
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
    const { b, destination } = world;
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

  return Object.assign(world, {
    TEST_TIMEOUT_MS,
    pathWith,
    agentOn,
    reconcileOnA,
    explain,
    ...conversation,
    expectRoundTrip,
    uploadedFromA,
    resumeOnB,
    startAgentOnA,
    managedHookInstalled,
    killedMidTurn,
    expectCapturedOnceIdle,
    agentLog,
  });
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

  const world = { CODE_WORD, FIRST_PROMPT, SECOND_PROMPT } as TwoMachines & Conversation;

  beforeEach(async () => {
    Object.assign(
      world,
      await twoMachines(restoreHome, 'OK, noted.', ['work', 'original-project'], ['checkouts', 'restored_here']),
    );
  });

  afterEach(async () => {
    await world.stub.close();
    await world.a.cleanup();
    await world.b.cleanup();
  });

  /** The agent's Context on a home, with the harness on PATH (a capture or a restore may run the CLI). */
  function agentContext(home: TestHome, bin: string, extra: Record<string, string> = {}): Context {
    return home.context({ env: { PATH: pathWith(bin), ...extra } });
  }

  function explain(result: HarnessRunResult): string {
    return explainRun(world.stub, result);
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
    const out = path.join(world.a.root, `${harness}.bundle`);
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
      destination: world.destination,
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

  return Object.assign(world, {
    TEST_TIMEOUT_MS,
    agentContext,
    explain,
    ...conversationSteps(world, explain, false),
    bundleFromA,
    restoreIntoB,
  });
}
