/**
 * Qwen Code's real CLI, offline against the model stub (test/support/real-cli.ts), in a pseudo-terminal: an
 * interactive session closed with `/quit` fires a user SessionEnd hook (a headless `-p` run fires none); reconcile's
 * managed hook fires beside it; the capture becomes a ready, verified bundle; a restored session, its first record's
 * cwd rewritten, resumes in another HOME and directory with the earlier turns; and the whole round trip through the
 * Control API.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { qwenProjectKey } from '../../../src/harnesses/qwen/session.js';
import { reconcile } from '../../../src/reconcile/index.js';
import { captureLog } from '../../../../../test/support/cli-process.js';
import { harnessBin, lockedVersions } from '../../../../../test/support/harness-bins.js';
import {
  useCaptureHome,
  useOfflineSession,
  type Payload,
  useReconcileHome,
  useRestoreRoundTrip,
  useResumeRoundTrip,
} from '../../../../../test/support/real-cli.js';
import { appendStdinCommand, harnessEnv, readJsonLines, waitFor } from '../../../../../test/support/run-harness.js';
import { addQwenUserHook, QWEN_MODEL_PATH, qwenHome, runQwen, runQwenHeadless, writeQwenSettings } from './rig.js';

const ENDS = [lockedVersions('qwen')[0]!, lockedVersions('qwen').at(-1)!];

describe('Qwen Code offline session', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'an interactive session closed with /quit fires a user SessionEnd hook naming its transcript; `qwen -p` fires none',
    async () => {
      const { t, stub, cwd, hookOut, explain, SESSION_TIMEOUT_MS } = w;
      const home = qwenHome(harnessEnv(t.home));
      await writeQwenSettings(home);
      await addQwenUserHook(home, 'SessionEnd', appendStdinCommand(hookOut));

      const headless = await runQwenHeadless({
        bin: harnessBin('qwen'),
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        env: t.env,
        timeoutMs: SESSION_TIMEOUT_MS,
        writeSettings: false,
      });
      expect(headless.exitCode, explain(headless)).toBe(0);
      expect(await readJsonLines(hookOut)).toEqual([]);

      const result = await runQwen({
        bin: harnessBin('qwen'),
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        env: t.env,
        timeoutMs: SESSION_TIMEOUT_MS,
        writeSettings: false,
      });
      expect(result.exitCode, explain(result)).toBe(0);
      expect(stub.requestsTo(QWEN_MODEL_PATH, 'POST').length, explain(result)).toBeGreaterThan(0);
      const end = (await waitFor('the SessionEnd hook output', async () =>
        ((await readJsonLines(hookOut)) as Payload[]).find((p) => p.hook_event_name === 'SessionEnd'),
      ))!;
      expect(end).toMatchObject({ cwd, hook_event_name: 'SessionEnd', reason: 'prompt_input_exit' });
      expect(end.transcript_path).toBe(
        path.join(home, 'projects', qwenProjectKey(cwd), 'chats', `${end.session_id as string}.jsonl`),
      );
      expect(existsSync(end.transcript_path as string)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('reconcile with the real CLI', () => {
  const w = useReconcileHome();
  const { TEST_TIMEOUT_MS } = w;

  for (const version of ENDS) {
    it(
      `Qwen Code ${version} fires the managed SessionEnd hook and the user hook when the session closes`,
      async () => {
        const { t, stub, cwd, userOut, policy, agentContext, expectOneSessionEnd, expectUserHookFor, explain } = w;
        const bin = harnessBin('qwen', version);
        const home = qwenHome(harnessEnv(t.home));
        await writeQwenSettings(home);
        await addQwenUserHook(home, 'SessionEnd', appendStdinCommand(userOut));
        const before = await readFile(path.join(home, 'settings.json'), 'utf8');

        const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['qwen'] });
        expect(report.harnesses[0]).toMatchObject({ state: 'active', action: 'create', profile: 'qwen-v0_15_6' });
        expect(report.harnesses[0]!.reason).toContain('headless runs');

        const result = await runQwen({
          bin,
          home: t.home,
          cwd,
          prompt: 'Say hello.',
          stubUrl: stub.url,
          env: t.env,
          timeoutMs: 120_000,
          writeSettings: false,
        });
        expect(result.exitCode, explain(result)).toBe(0);
        const calls = await expectOneSessionEnd('qwen', 'qwen-v0_15_6');
        await expectUserHookFor(calls[0]!.payload.session_id!);

        // Qwen Code left the file as reconcile wrote it (no `$version` migration of its own).
        await writeFileUnchanged(path.join(home, 'settings.json'), before);
      },
      TEST_TIMEOUT_MS,
    );
  }

  async function writeFileUnchanged(file: string, userBefore: string): Promise<void> {
    const after = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    expect({ ...after, hooks: undefined }).toEqual({
      ...(JSON.parse(userBefore) as Record<string, unknown>),
      hooks: undefined,
    });
  }
});

describe('capture with the real CLI', () => {
  const w = useCaptureHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Qwen Code: SessionEnd -> capture -> worker -> a ready, verified bundle',
    async () => {
      const { t, stub, cwd, policy, stateDir, agentContext, explain, oneFinishedCapture, expectVerifiedBundle } = w;
      const bin = harnessBin('qwen');
      await writeQwenSettings(qwenHome(harnessEnv(t.home)));
      expect(
        (await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['qwen'] })).harnesses[0],
      ).toMatchObject({ state: 'active', profile: 'qwen-v0_15_6' });

      const prompt = 'Summarise the README in one line.';
      const result = await runQwen({
        bin,
        home: t.home,
        cwd,
        prompt,
        stubUrl: stub.url,
        env: t.env,
        timeoutMs: 120_000,
        writeSettings: false,
      });
      expect(result.exitCode, explain(result)).toBe(0);

      const { state, record } = await oneFinishedCapture();
      expect(state, explain(result)).toBe('ready');
      expect(record).toMatchObject({
        harness: 'qwen',
        profile: 'qwen-v0_15_6',
        payload: { cwd, hook_event_name: 'SessionEnd' },
      });
      await expectVerifiedBundle(record, 'qwen', 'qwen-v0_15_6', { title: prompt, summary: prompt });
      expect(captureLog(stateDir).map((l) => l.event)).toEqual(['spooled', 'built']);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('restore with the real CLI, resumed in another HOME and directory', () => {
  const w = useRestoreRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  for (const captured of ENDS) {
    it(
      `Qwen Code ${captured}'s session: the first record's cwd rewritten, qwen --resume <id> -p by the newest ` +
        `continues it`,
      async () => {
        const {
          a,
          b,
          stub,
          sourceCwd,
          destination,
          agentContext,
          explain,
          expectResumedWithHistory,
          bundleFromA,
          restoreIntoB,
          FIRST_PROMPT,
          SECOND_PROMPT,
        } = w;
        const binA = harnessBin('qwen', captured);
        const binB = harnessBin('qwen');
        const first = await runQwenHeadless({
          bin: binA,
          home: a.home,
          cwd: sourceCwd,
          prompt: FIRST_PROMPT,
          stubUrl: stub.url,
          timeoutMs: 90_000,
        });
        expect(first.exitCode, explain(first)).toBe(0);
        const chats = path.join(qwenHome(harnessEnv(a.home)), 'projects', qwenProjectKey(sourceCwd), 'chats');
        const names = (await readdir(chats)).filter((n) => n.endsWith('.jsonl'));
        expect(names).toHaveLength(1);
        const id = names[0]!.replace(/\.jsonl$/, '');
        const original = await readFile(path.join(chats, names[0]!), 'utf8');
        const bundle = await bundleFromA('qwen', agentContext(a, binA), {
          session_id: id,
          cwd: sourceCwd,
          transcript_path: path.join(chats, names[0]!),
        });

        await writeQwenSettings(qwenHome(harnessEnv(b.home)));
        const restored = await restoreIntoB(agentContext(b, binB), bundle);
        expect(restored).toEqual({ sessionId: id, resumeArgv: ['qwen', '--resume', id] });
        const placed = await readFile(
          path.join(qwenHome(harnessEnv(b.home)), 'projects', qwenProjectKey(destination), 'chats', `${id}.jsonl`),
          'utf8',
        );
        // Only the first record's cwd differs.
        expect(placed).toBe(original.replace(JSON.stringify(sourceCwd), JSON.stringify(destination)));
        expect(placed.split('\n').slice(1).join('\n')).toBe(original.split('\n').slice(1).join('\n'));

        stub.clear();
        const resumed = await runQwenHeadless({
          bin: binB,
          home: b.home,
          cwd: destination,
          prompt: SECOND_PROMPT,
          args: restored.resumeArgv.slice(1),
          stubUrl: stub.url,
          timeoutMs: 90_000,
          writeSettings: false,
        });
        expectResumedWithHistory(resumed, QWEN_MODEL_PATH);
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe('capture on machine A, upload, resume on machine B with the real CLI', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Qwen Code',
    async () => {
      const {
        a,
        b,
        stub,
        sourceCwd,
        destination,
        agentOn,
        explain,
        expectResumedWithHistory,
        uploadedFromA,
        resumeOnB,
        FIRST_PROMPT,
        SECOND_PROMPT,
      } = w;
      const bin = harnessBin('qwen');
      await writeQwenSettings(qwenHome(harnessEnv(a.home)));
      expect((await reconcile(agentOn(a, bin), { dryRun: false, harnesses: ['qwen'] })).harnesses[0]).toMatchObject({
        state: 'active',
      });
      const first = await runQwen({
        bin,
        home: a.home,
        cwd: sourceCwd,
        prompt: FIRST_PROMPT,
        stubUrl: stub.url,
        env: a.env,
        timeoutMs: 120_000,
        writeSettings: false,
      });
      expect(first.exitCode, explain(first)).toBe(0);
      const upload = await uploadedFromA('qwen');

      await writeQwenSettings(qwenHome(harnessEnv(b.home)));
      const command = await resumeOnB(upload.id, bin);
      expect(command).toEqual(['qwen', '--resume', upload.native_session_id]);

      stub.clear();
      const resumed = await runQwenHeadless({
        bin,
        home: b.home,
        cwd: destination,
        prompt: SECOND_PROMPT,
        args: command.slice(1),
        stubUrl: stub.url,
        env: b.env,
        timeoutMs: 90_000,
        writeSettings: false,
      });
      expectResumedWithHistory(resumed, QWEN_MODEL_PATH);
    },
    TEST_TIMEOUT_MS,
  );
});
