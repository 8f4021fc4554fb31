/**
 * Claude Code's real CLI, offline against the model stub (test/support/real-cli.ts): a headless session fires a user
 * SessionEnd hook; reconcile's managed hook fires beside it; the capture becomes a ready, verified bundle; a restored
 * session resumes in another HOME; and the whole round trip through the Control API.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { claudeProjectKey } from '../../../src/harnesses/claude/session.js';
import { agentRoot } from '../../../../../test/support/context.js';
import { captureLog } from '../../../../../test/support/cli-process.js';
import { harnessBin } from '../../../../../test/support/harness-bins.js';
import {
  type SessionRun,
  useCaptureHome,
  useOfflineSession,
  useReconcileHome,
} from '../../../../../test/support/real-cli.js';
import { useRestoreRoundTrip, useResumeRoundTrip } from '../../../../../test/support/real-cli-round-trips.js';
import { appendStdinCommand, harnessEnv } from '../../../../../test/support/run-harness.js';
import { addClaudeUserHook, claudeDir, runClaude } from './rig.js';

const MODEL_PATH = '/v1/messages';
/** `claude -p` of the locked version (or `bin`), as the step says. */
const claudeRun =
  (bin = harnessBin('claude')): SessionRun =>
  (place) =>
    runClaude({ bin, ...place });

describe('Claude Code offline session', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'runs `claude -p` against the stub and fires a user SessionEnd hook',
    async () => {
      const { t, stub, cwd, hookOut, explain, expectSessionOk, session, userHookPayload } = w;
      const dir = claudeDir(harnessEnv(t.home));
      await addClaudeUserHook(dir, 'SessionEnd', appendStdinCommand(hookOut), 10);

      const result = await session(claudeRun());
      expectSessionOk(result);

      const calls = stub.requestsTo(MODEL_PATH, 'POST');
      expect(calls.length, explain(result)).toBeGreaterThan(0);

      const end = await userHookPayload();
      expect(end).toMatchObject({ cwd, hook_event_name: 'SessionEnd' });
      expect(end.session_id).toMatch(/^[0-9a-f-]{36}$/);
      // The hook speaks of the session the stub served.
      expect(calls.map((c) => c.headers['x-claude-code-session-id'])).toContain(end.session_id);
      expect(typeof end.transcript_path).toBe('string');
      const encoded = cwd.replace(/[^A-Za-z0-9]/g, '-');
      expect(end.transcript_path).toBe(path.join(dir, 'projects', encoded, `${end.session_id as string}.jsonl`));
      expect(existsSync(end.transcript_path as string)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('reconcile with the real CLI', () => {
  const w = useReconcileHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Claude Code fires the managed SessionEnd hook and the user hook',
    async () => {
      const { t, userOut, reconcileHarness, session, expectBothHooksRan, explain, REPLY } = w;
      const bin = harnessBin('claude');
      const dir = claudeDir(harnessEnv(t.home));
      await addClaudeUserHook(dir, 'SessionEnd', appendStdinCommand(userOut), 10);

      expect(await reconcileHarness(bin, 'claude')).toMatchObject({
        state: 'active',
        action: 'create',
        profile: 'claude-v2_0_12',
      });

      const result = await session(claudeRun(bin));
      expect(result.stdout, explain(result)).toContain(REPLY);

      const calls = await expectBothHooksRan(result, 'claude', 'claude-v2_0_12');
      expect(calls[0]!.payload.transcript_path).toContain(path.join(dir, 'projects'));
    },
    TEST_TIMEOUT_MS,
  );
});

describe('capture with the real CLI', () => {
  const w = useCaptureHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Claude Code: SessionEnd -> capture -> worker -> a ready, verified bundle',
    async () => {
      const { t, stateDir, reconcileHarness, session, explain, expectOneReadyBundle, REPLY } = w;
      const bin = harnessBin('claude');
      expect(await reconcileHarness(bin, 'claude')).toMatchObject({ state: 'active', profile: 'claude-v2_0_12' });
      // The hook Claude Code runs is the sh hook: it hands the payload over, and the drain it starts admits it.
      expect(await readFile(path.join(claudeDir(harnessEnv(t.home)), 'settings.json'), 'utf8')).toContain(
        `'/bin/sh' '${path.join(agentRoot, 'bin', 'blue-agent-hook')}' `,
      );

      const prompt = 'Summarise the README in one line.';
      const result = await session(claudeRun(bin), { prompt });
      expect(result.exitCode, explain(result)).toBe(0);
      expect(result.stdout, explain(result)).toContain(REPLY);

      const capture = { harness: 'claude', profile: 'claude-v2_0_12' };
      const record = await expectOneReadyBundle(result, capture, { title: prompt, summary: prompt });
      expect(record.payload.transcript_path).toContain(path.join(claudeDir(harnessEnv(t.home)), 'projects'));
      expect(captureLog(stateDir).map((l) => l.event)).toEqual(['spooled', 'built']);
      expect(captureLog(stateDir)[0]).toMatchObject({ hook_pid: expect.any(Number) });
    },
    TEST_TIMEOUT_MS,
  );
});

describe('restore with the real CLI, resumed in another HOME and directory', () => {
  const w = useRestoreRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Claude Code: claude --resume <id> -p in the destination continues the restored conversation',
    async () => {
      const { a, b, stub, sourceCwd, destination, agentContext, explain, firstOnA, resumedOnB } = w;
      const { bundleFromA, restoreIntoB, CODE_WORD, SECOND_PROMPT } = w;
      const bin = harnessBin('claude');
      await firstOnA(claudeRun(bin));
      const projectDir = path.join(claudeDir(harnessEnv(a.home)), 'projects', claudeProjectKey(sourceCwd));
      const transcripts = (await readdir(projectDir)).filter((n) => n.endsWith('.jsonl'));
      expect(transcripts).toHaveLength(1);
      const id = transcripts[0]!.replace(/\.jsonl$/, '');
      const bundle = await bundleFromA('claude', agentContext(a, bin), {
        session_id: id,
        cwd: sourceCwd,
        transcript_path: path.join(projectDir, transcripts[0]!),
      });

      const ctx = agentContext(b, bin);
      const restored = await restoreIntoB(ctx, bundle);
      expect(restored).toEqual({ sessionId: id, resumeArgv: ['claude', '--resume', id] });
      expect(await readdir(path.join(b.home, '.claude', 'projects', claudeProjectKey(destination)))).toContain(
        `${id}.jsonl`,
      );

      await resumedOnB(restored.resumeArgv.slice(1), MODEL_PATH, claudeRun(bin));

      // Claude Code finds a session by its id in any project folder, also from another directory: why the restore
      // refuses to write a second copy of a session that is already in another project folder.
      const third = path.join(path.dirname(destination), 'third_dir');
      await mkdir(third, { recursive: true });
      stub.clear();
      const elsewhere = await runClaude({
        bin,
        home: b.home,
        cwd: third,
        prompt: SECOND_PROMPT,
        args: restored.resumeArgv.slice(1),
        stubUrl: stub.url,
        timeoutMs: 90_000,
      });
      expect(elsewhere.exitCode, explain(elsewhere)).toBe(0);
      expect(stub.textSentTo(MODEL_PATH), explain(elsewhere)).toContain(CODE_WORD);
      expect(
        (await readdir(path.join(b.home, '.claude', 'projects'), { recursive: true })).filter((n) =>
          n.endsWith(`${id}.jsonl`),
        ),
      ).toEqual([path.join(claudeProjectKey(destination), `${id}.jsonl`)]);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('capture on machine A, upload, resume on machine B with the real CLI', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Claude Code',
    async () => {
      const bin = harnessBin('claude');
      await w.expectRoundTrip('claude', bin, {
        first: claudeRun(bin),
        command: (id) => ['claude', '--resume', id],
        resume: claudeRun(bin),
        modelPath: MODEL_PATH,
      });
    },
    TEST_TIMEOUT_MS,
  );
});

describe('a session killed mid-turn, so no end hook runs, is captured once idle and resumes on machine B', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Claude Code',
    async () => {
      const { a, stub, sourceCwd, explain, uploadedFromA, resumeOnB, resumedOnB, startAgentOnA } = w;
      const { managedHookInstalled, killedMidTurn, expectCapturedOnceIdle, CODE_WORD, FIRST_PROMPT } = w;
      const bin = harnessBin('claude');
      await startAgentOnA(bin, 4_000);
      await managedHookInstalled(path.join(claudeDir(harnessEnv(a.home)), 'settings.json'), 'claude');

      const killed = await killedMidTurn(CODE_WORD, (onSpawn) =>
        runClaude({
          bin,
          home: a.home,
          cwd: sourceCwd,
          prompt: FIRST_PROMPT,
          stubUrl: stub.url,
          env: a.env,
          timeoutMs: 90_000,
          onSpawn,
        }),
      );
      expect(killed.signal, explain(killed)).toBe('SIGKILL');
      const upload = await uploadedFromA('claude');

      // Captured by the agent's sweep, never by the hook (which could not run).
      const log = expectCapturedOnceIdle(upload);
      expect(log.find((e) => e.event === 'built')).toMatchObject({ capture_reason: 'idle' });

      const command = await resumeOnB(upload.id, bin);
      await resumedOnB(command.slice(1), MODEL_PATH, claudeRun(bin));
    },
    TEST_TIMEOUT_MS,
  );
});

describe('a session captured under `redact: secrets` restores and resumes with the real CLI, secret replaced', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Claude Code',
    async () => {
      const { stack, stub, reconcileOnA, firstOnA, uploadedFromA, resumeOnB, resumedOnB } = w;
      const token = 'ghp_R8d3Kq9Lm2Xv7Zt4Wp6Yb1Nc5Hs0Gj3Fa8Ue';
      stack.server.store.publishPolicy(
        { session_upload: { presign_url: `${stack.proxy.url}/session-uploads/presign`, redact: 'secrets' } },
        Date.now(),
      );
      const bin = harnessBin('claude');
      expect(await reconcileOnA(bin, 'claude')).toMatchObject({ state: 'active' });
      await firstOnA((place) => runClaude({ bin, ...place, prompt: `${place.prompt} My token is ${token}.` }));
      const upload = await uploadedFromA('claude');
      expect(gunzipSync(await stack.download(upload.id)).includes(token)).toBe(false);

      const command = await resumeOnB(upload.id, bin);
      await resumedOnB(command.slice(1), MODEL_PATH, claudeRun(bin));
      const sent = stub.textSentTo(MODEL_PATH);
      expect(sent).toContain('[REDACTED:GITHUB_TOKEN]');
      expect(sent).not.toContain(token);
    },
    TEST_TIMEOUT_MS,
  );
});
