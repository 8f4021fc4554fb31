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
import { captureLog } from '../../../../../test/support/cli-process.js';
import { harnessBin, lockedVersions } from '../../../../../test/support/harness-bins.js';
import {
  type SessionRun,
  useCaptureHome,
  useOfflineSession,
  useReconcileHome,
} from '../../../../../test/support/real-cli.js';
import { useRestoreRoundTrip, useResumeRoundTrip } from '../../../../../test/support/real-cli-round-trips.js';
import { appendStdinCommand, harnessEnv, readJsonLines } from '../../../../../test/support/run-harness.js';
import { addQwenUserHook, QWEN_MODEL_PATH, qwenHome, runQwen, runQwenHeadless, writeQwenSettings } from './rig.js';

const ENDS = [lockedVersions('qwen')[0]!, lockedVersions('qwen').at(-1)!];
/** `qwen -p` of `bin`, on the settings the step wrote. */
const qwenHeadless =
  (bin: string): SessionRun =>
  (place) =>
    runQwenHeadless({ bin, ...place, writeSettings: false });
/** An interactive `qwen` of `bin` closed with /quit (what fires its end hook), on the settings the step wrote. */
const qwenInteractive =
  (bin: string): SessionRun =>
  (place) =>
    runQwen({ bin, ...place, writeSettings: false });

describe('Qwen Code offline session', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'an interactive session closed with /quit fires a user SessionEnd hook naming its transcript; `qwen -p` fires none',
    async () => {
      const { t, stub, cwd, hookOut, explain, session, userHookPayload } = w;
      const home = qwenHome(harnessEnv(t.home));
      await writeQwenSettings(home);
      await addQwenUserHook(home, 'SessionEnd', appendStdinCommand(hookOut));

      const headless = await session(qwenHeadless(harnessBin('qwen')));
      expect(headless.exitCode, explain(headless)).toBe(0);
      expect(await readJsonLines(hookOut)).toEqual([]);

      const result = await session(qwenInteractive(harnessBin('qwen')));
      expect(result.exitCode, explain(result)).toBe(0);
      expect(stub.requestsTo(QWEN_MODEL_PATH, 'POST').length, explain(result)).toBeGreaterThan(0);
      const end = await userHookPayload();
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
        const { t, userOut, reconcileHarness, session, expectBothHooksRan } = w;
        const bin = harnessBin('qwen', version);
        const home = qwenHome(harnessEnv(t.home));
        await writeQwenSettings(home);
        await addQwenUserHook(home, 'SessionEnd', appendStdinCommand(userOut));
        const before = await readFile(path.join(home, 'settings.json'), 'utf8');

        const report = await reconcileHarness(bin, 'qwen');
        expect(report).toMatchObject({ state: 'active', action: 'create', profile: 'qwen-v0_15_6' });
        expect(report.reason).toContain('headless runs');

        const result = await session(qwenInteractive(bin), { timeoutMs: 120_000 });
        await expectBothHooksRan(result, 'qwen', 'qwen-v0_15_6');

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
      const { t, stateDir, reconcileHarness, session, explain, expectOneReadyBundle } = w;
      const bin = harnessBin('qwen');
      await writeQwenSettings(qwenHome(harnessEnv(t.home)));
      expect(await reconcileHarness(bin, 'qwen')).toMatchObject({ state: 'active', profile: 'qwen-v0_15_6' });

      const prompt = 'Summarise the README in one line.';
      const result = await session(qwenInteractive(bin), { prompt, timeoutMs: 120_000 });
      expect(result.exitCode, explain(result)).toBe(0);

      await expectOneReadyBundle(
        result,
        { harness: 'qwen', profile: 'qwen-v0_15_6' },
        { title: prompt, summary: prompt },
      );
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
        const { a, b, sourceCwd, destination, agentContext, firstOnA, resumedOnB, bundleFromA, restoreIntoB } = w;
        const binA = harnessBin('qwen', captured);
        const binB = harnessBin('qwen');
        await firstOnA((place) => runQwenHeadless({ bin: binA, ...place }));
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

        await resumedOnB(restored.resumeArgv.slice(1), QWEN_MODEL_PATH, qwenHeadless(binB));
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
      const { a, b, expectRoundTrip } = w;
      const bin = harnessBin('qwen');
      await writeQwenSettings(qwenHome(harnessEnv(a.home)));
      await expectRoundTrip('qwen', bin, {
        // Interactive, closed with /quit: a headless run fires no hook.
        first: (place) => qwenInteractive(bin)({ ...place, timeoutMs: 120_000 }),
        prepareB: () => writeQwenSettings(qwenHome(harnessEnv(b.home))),
        command: (id) => ['qwen', '--resume', id],
        resume: qwenHeadless(bin),
        modelPath: QWEN_MODEL_PATH,
      });
    },
    TEST_TIMEOUT_MS,
  );
});
