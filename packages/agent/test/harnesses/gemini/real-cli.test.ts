/**
 * Gemini CLI's real CLI, offline against the model stub (test/support/real-cli.ts): a headless session fires a user
 * SessionEnd hook; reconcile's managed hook fires beside it (with the enabling switch an old version needs); the
 * capture becomes a ready, verified bundle; a restored session resumes in another HOME and directory, also when it was
 * captured by the oldest locked version and resumed by the newest; and the whole round trip through the Control API.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGeminiChat } from '@blue-agent/contract/harnesses/gemini/chat.js';
import { projectHash, slugify } from '../../../src/harnesses/gemini/projects.js';
import { requireProfiles, selectInterval } from '@blue-agent/contract/profiles/index.js';
import { captureLog } from '../../../../../test/support/cli-process.js';
import { shippedProfiles } from '../../../../../test/support/restore-homes.js';
import { harnessBin, lockedVersions } from '../../../../../test/support/harness-bins.js';
import {
  type SessionRun,
  useCaptureHome,
  useOfflineSession,
  useReconcileHome,
} from '../../../../../test/support/real-cli.js';
import { useRestoreRoundTrip, useResumeRoundTrip } from '../../../../../test/support/real-cli-round-trips.js';
import { appendStdinCommand, harnessEnv } from '../../../../../test/support/run-harness.js';
import {
  addGeminiUserHook,
  GEMINI_MODEL_PATH,
  geminiDir,
  geminiVersionOf,
  runGemini,
  writeGeminiSettings,
} from './rig.js';

const OLDEST = lockedVersions('gemini')[0]!;
/** The oldest and the newest locked version (the certification runs every one). */
const ENDS = [OLDEST, lockedVersions('gemini').at(-1)!];
/** `gemini -p` of `bin`, on the settings the step wrote (a runner without them writes its own). */
const geminiRun =
  (bin: string): SessionRun =>
  (place) =>
    runGemini({ bin, ...place, writeSettings: false });

describe('Gemini CLI offline session', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'runs `gemini -p` against the stub and fires a user SessionEnd hook naming its chat',
    async () => {
      const { t, stub, cwd, hookOut, explain, expectSessionOk, session, userHookPayload } = w;
      const dir = geminiDir(harnessEnv(t.home));
      await addGeminiUserHook(dir, 'SessionEnd', appendStdinCommand(hookOut));

      const result = await session((place) => runGemini({ bin: harnessBin('gemini'), ...place }));
      expectSessionOk(result);
      expect(stub.requestsTo(GEMINI_MODEL_PATH, 'POST').length, explain(result)).toBeGreaterThan(0);

      const end = await userHookPayload();
      expect(end).toMatchObject({ cwd, hook_event_name: 'SessionEnd', reason: 'exit' });
      expect(end.session_id).toMatch(/^[0-9a-f-]{36}$/);
      const chats = path.join(dir, 'tmp', slugify(path.basename(cwd)), 'chats');
      expect(path.dirname(end.transcript_path as string)).toBe(chats);
      expect(path.basename(end.transcript_path as string)).toMatch(
        new RegExp(`^session-.*-${(end.session_id as string).slice(0, 8)}\\.jsonl$`),
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
      `Gemini CLI ${version} fires the managed SessionEnd hook and the user hook`,
      async () => {
        const { t, userOut, reconcileHarness, session, expectBothHooksRan, explain, REPLY } = w;
        const bin = harnessBin('gemini', version);
        const dir = geminiDir(harnessEnv(t.home));
        await writeGeminiSettings(dir, version);
        await addGeminiUserHook(dir, 'SessionEnd', appendStdinCommand(userOut));

        const report = await reconcileHarness(bin, 'gemini');
        expect(report).toMatchObject({ state: 'active', action: 'create' });
        const profile = report.profile!;
        const settings = JSON.parse(await readFile(path.join(dir, 'settings.json'), 'utf8')) as Record<string, any>;
        // The switch this version needs before it runs any hook comes with the managed one; newer ones need none.
        expect(settings.tools?.enableHooks === true).toBe(profile === 'gemini-v0_21_0');

        const result = await session(geminiRun(bin), { timeoutMs: 90_000 });
        expect(result.stdout, explain(result)).toContain(REPLY);

        // Gemini CLI before 0.37 fires SessionEnd twice in -p mode; each capture call names the same session.
        await expectBothHooksRan(result, 'gemini', profile, { allowRepeats: true });
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe('capture with the real CLI', () => {
  const w = useCaptureHome();
  const { TEST_TIMEOUT_MS } = w;

  for (const version of ENDS) {
    it(
      `Gemini CLI ${version}: SessionEnd -> capture -> worker -> one ready, verified bundle`,
      async () => {
        const { t, cwd, stateDir, reconcileHarness, session, explain, finishedCaptures, expectVerifiedBundle, REPLY } =
          w;
        const bin = harnessBin('gemini', version);
        await writeGeminiSettings(geminiDir(harnessEnv(t.home)), version);
        const report = await reconcileHarness(bin, 'gemini');
        expect(report).toMatchObject({ state: 'active' });
        const profile = report.profile!;

        const prompt = 'Summarise the README in one line.';
        const result = await session(geminiRun(bin), { prompt, timeoutMs: 90_000 });
        expect(result.exitCode, explain(result)).toBe(0);
        expect(result.stdout, explain(result)).toContain(REPLY);

        // A hook that fires twice gives one bundle: the second capture holds nothing new.
        const captures = await finishedCaptures();
        const ready = captures.filter((c) => c.state === 'ready');
        expect(ready, JSON.stringify(captures)).toHaveLength(1);
        expect(ready[0]!.record).toMatchObject({
          harness: 'gemini',
          profile,
          payload: { cwd, hook_event_name: 'SessionEnd' },
        });
        await expectVerifiedBundle(ready[0]!.record, 'gemini', profile, { title: prompt, summary: prompt });
        const events = captureLog(stateDir).map((l) => l.event);
        expect(events.filter((e) => e === 'built')).toEqual(['built']);
        expect(events.filter((e) => e !== 'built' && e !== 'spooled' && e !== 'unchanged')).toEqual([]);
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe('restore with the real CLI, resumed in another HOME and directory', () => {
  const w = useRestoreRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  for (const [from, to] of [
    [undefined, undefined],
    [OLDEST, undefined],
  ] as const) {
    const captured = from ?? lockedVersions('gemini').at(-1)!;
    it(
      `Gemini CLI: captured by ${captured}, gemini --resume <id> -p by the newest in the destination continues the ` +
        `conversation`,
      async () => {
        const { a, b, sourceCwd, destination, agentContext, firstOnA, resumedOnB, bundleFromA, restoreIntoB } = w;
        const binA = harnessBin('gemini', captured);
        const binB = harnessBin('gemini', to);
        await firstOnA((place) => runGemini({ bin: binA, ...place }));
        const tmp = path.join(geminiDir(harnessEnv(a.home)), 'tmp');
        const folder = (await readdir(tmp)).find((n) => existsSync(path.join(tmp, n, 'chats')))!;
        const chats = await readdir(path.join(tmp, folder, 'chats'));
        expect(chats).toHaveLength(1);
        const id = readGeminiChat(await readFile(path.join(tmp, folder, 'chats', chats[0]!), 'utf8')).sessionId!;
        const profile = selectInterval(requireProfiles(await shippedProfiles(), 'gemini').doc, captured)!.interval
          .profile;
        const bundle = await bundleFromA(
          'gemini',
          agentContext(a, binA),
          { session_id: id, cwd: sourceCwd, transcript_path: path.join(tmp, folder, 'chats', chats[0]!) },
          profile,
        );

        await writeGeminiSettings(geminiDir(harnessEnv(b.home)), geminiVersionOf(binB));
        const restored = await restoreIntoB(agentContext(b, binB), bundle, { installedVersion: geminiVersionOf(binB) });
        expect(restored).toEqual({ sessionId: id, resumeArgv: ['gemini', '--resume', id] });
        // Into the folder the resuming version reads: the destination's registry folder, marked as its own.
        const slug = slugify(path.basename(destination));
        expect(await readdir(path.join(geminiDir(harnessEnv(b.home)), 'tmp', slug, 'chats'))).toEqual([chats[0]]);
        expect(await readFile(path.join(geminiDir(harnessEnv(b.home)), 'tmp', slug, '.project_root'), 'utf8')).toBe(
          destination,
        );
        expect(existsSync(path.join(geminiDir(harnessEnv(b.home)), 'tmp', projectHash(destination)))).toBe(false);

        await resumedOnB(restored.resumeArgv.slice(1), GEMINI_MODEL_PATH, geminiRun(binB));
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe('capture on machine A, upload, resume on machine B with the real CLI', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Gemini CLI',
    async () => {
      const { a, b, expectRoundTrip } = w;
      const bin = harnessBin('gemini');
      const version = geminiVersionOf(bin);
      await writeGeminiSettings(geminiDir(harnessEnv(a.home)), version);
      await expectRoundTrip('gemini', bin, {
        first: geminiRun(bin),
        prepareB: () => writeGeminiSettings(geminiDir(harnessEnv(b.home)), version),
        command: (id) => ['gemini', '--resume', id],
        resume: geminiRun(bin),
        modelPath: GEMINI_MODEL_PATH,
      });
    },
    TEST_TIMEOUT_MS,
  );
});
