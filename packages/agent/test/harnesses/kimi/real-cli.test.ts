/**
 * Kimi Code's real CLI, offline against the model stub (test/support/real-cli.ts), interactive in a pseudo-terminal
 * and headless (`-p`): the events its profiles are built on (Stop after every turn and at the end of a headless run,
 * SessionEnd only when an interactive session closes — at every end before 0.33); reconcile's managed hook on the
 * profile's event beside the user's, and the table `kimi migrate` copied repaired in place; capture on Stop waiting
 * for Kimi to exit (one bundle of the session's last state however many turns), and on SessionEnd at once before
 * 0.33; a restored session, its directory, agent homes and bindings rewritten, resumed in another HOME and directory;
 * and the whole round trip through the Control API.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { kimiCodeWorkDirKey } from '../../../src/harnesses/kimi/workdir.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import { captureLog, spoolFiles } from '../../../../../test/support/cli-process.js';
import { harnessBin } from '../../../../../test/support/harness-bins.js';
import {
  type Payload,
  type SessionRun,
  useCaptureHome,
  useOfflineSession,
  useReconcileHome,
} from '../../../../../test/support/real-cli.js';
import { useRestoreRoundTrip, useResumeRoundTrip } from '../../../../../test/support/real-cli-round-trips.js';
import {
  appendStdinCommand,
  harnessEnv,
  readJsonLines,
  runProcess,
  waitFor,
} from '../../../../../test/support/run-harness.js';
import { appendKimiHook, KIMI_MODEL_PATH, kimiCodeHome, runKimi, runKimiHeadless, writeKimiCodeConfig } from './rig.js';

const OLDEST = '0.10.0';
const NEWEST = '2.1.0';
const SESSION_ID = /^session_[0-9a-f-]{36}$/;
/** The profile and capture event of each end of the locked versions. */
const ENDS = [
  { version: OLDEST, profile: 'kimi-v0_10_0', event: 'SessionEnd' },
  { version: NEWEST, profile: 'kimi-v2_0_2', event: 'Stop' },
] as const;

/** `kimi -p` of `bin`, on the config the step wrote. */
const kimiHeadless =
  (bin: string): SessionRun =>
  (place) =>
    runKimiHeadless({ bin, ...place, writeConfig: false });

const events = async (file: string) => ((await readJsonLines(file)) as Payload[]).map((p) => p.hook_event_name);

describe('Kimi Code offline session: the events', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    `${NEWEST}: Stop after each interactive turn and SessionEnd when the session closes; \`kimi -p\` fires Stop only`,
    async () => {
      const { t, stub, cwd, hookOut, explain, SESSION_TIMEOUT_MS } = w;
      const env = harnessEnv(t.home);
      await writeKimiCodeConfig(kimiCodeHome(env), stub.url);
      for (const event of ['Stop', 'SessionEnd'])
        await appendKimiHook(kimiCodeHome(env), event, appendStdinCommand(hookOut));
      const bin = harnessBin('kimi', NEWEST);

      const headless = await runKimiHeadless({
        bin,
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        timeoutMs: SESSION_TIMEOUT_MS,
        writeConfig: false,
      });
      expect(headless.exitCode, explain(headless)).toBe(0);
      expect(await events(hookOut)).toEqual(['Stop']);

      const result = await runKimi({
        bin,
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        more: ['And once more.'],
        stubUrl: stub.url,
        timeoutMs: SESSION_TIMEOUT_MS,
        writeConfig: false,
      });
      expect(result.exitCode, explain(result)).toBe(0);
      const all = (await waitFor('SessionEnd', async () =>
        (await events(hookOut)).includes('SessionEnd') ? readJsonLines(hookOut) : undefined,
      )) as Payload[];
      expect(all.map((p) => p.hook_event_name)).toEqual(['Stop', 'Stop', 'Stop', 'SessionEnd']);
      // No payload says whether the run was headless: the same keys either way.
      expect(all[0]).toMatchObject({ cwd, client_type: 'kimi_code_cli', stop_hook_active: false });
      expect(new Set(all.slice(1).map((p) => p.session_id)).size).toBe(1);
      expect(all[1]!.session_id).toMatch(SESSION_ID);
    },
    TEST_TIMEOUT_MS * 2,
  );

  it(
    `${OLDEST}: \`kimi -p\` fires SessionEnd at its end too`,
    async () => {
      const { t, stub, cwd, hookOut, explain, SESSION_TIMEOUT_MS } = w;
      const env = harnessEnv(t.home);
      await writeKimiCodeConfig(kimiCodeHome(env), stub.url);
      await appendKimiHook(kimiCodeHome(env), 'SessionEnd', appendStdinCommand(hookOut));
      const headless = await runKimiHeadless({
        bin: harnessBin('kimi', OLDEST),
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        timeoutMs: SESSION_TIMEOUT_MS,
        writeConfig: false,
      });
      expect(headless.exitCode, explain(headless)).toBe(0);
      expect(await readJsonLines(hookOut)).toEqual([
        expect.objectContaining({ hook_event_name: 'SessionEnd', cwd, reason: 'exit' }),
      ]);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('reconcile with the real CLI', () => {
  const w = useReconcileHome();
  const { TEST_TIMEOUT_MS } = w;

  for (const { version, profile, event } of ENDS) {
    it(
      `Kimi Code ${version} fires the managed ${event} hook and the user's when an interactive session ends`,
      async () => {
        const { t, stub, cwd, userOut, reconcileHarness, expectBothHooksRan } = w;
        const bin = harnessBin('kimi', version);
        const home = kimiCodeHome(harnessEnv(t.home));
        await writeKimiCodeConfig(home, stub.url);
        await appendKimiHook(home, event, appendStdinCommand(userOut));

        expect(await reconcileHarness(bin, 'kimi')).toMatchObject({
          state: 'active',
          action: 'create',
          profile,
          version,
        });

        const result = await runKimi({
          bin,
          home: t.home,
          cwd,
          prompt: 'Say hello.',
          stubUrl: stub.url,
          timeoutMs: 120_000,
          writeConfig: false,
        });
        await expectBothHooksRan(result, 'kimi', profile, { event, sessionId: SESSION_ID });
      },
      TEST_TIMEOUT_MS,
    );
  }

  it(
    `Kimi Code ${NEWEST}: the table \`kimi migrate\` copied from kimi-cli is repaired in place, and kimi-cli's goes`,
    async () => {
      const { t, stub, cwd, recorder, reconcileHarness, managedCallsSeen, explain } = w;
      const bin = harnessBin('kimi', NEWEST);
      const env = harnessEnv(t.home);
      // kimi-cli's config, as reconcile left it there, with the user's own hook.
      const share = env.KIMI_SHARE_DIR!;
      await mkdir(share, { recursive: true });
      const cliHook = buildManagedHook(
        { node: process.execPath, entry: recorder },
        'kimi',
        'kimi-v1_28_0',
        'SessionEnd',
        5,
      );
      const userTable = '[[hooks]]\nevent = "PreToolUse"\nmatcher = "Shell"\ncommand = "true"\ntimeout = 10\n';
      await writeFile(
        path.join(share, 'config.toml'),
        `default_model = ""\n\n${userTable}\n[[hooks]] # managed by blue-agent\nevent = "SessionEnd"\nmatcher = ` +
          `""\ncommand = ${JSON.stringify(cliHook.command)}\ntimeout = 5\n`,
      );
      const migrated = await runProcess(bin, ['migrate', '--run'], { env, cwd, timeoutMs: 60_000 });
      expect(migrated.exitCode, migrated.stdout + migrated.stderr).toBe(0);
      const home = kimiCodeHome(env);
      const copied = await readFile(path.join(home, 'config.toml'), 'utf8');
      expect(copied).not.toContain('# managed by blue-agent');
      expect(copied).toContain('kimi-v1_28_0');
      await writeKimiCodeConfig(home, stub.url);

      expect(await reconcileHarness(bin, 'kimi')).toMatchObject({ state: 'active', profile: 'kimi-v2_0_2' });
      const hooks = (
        parseToml(await readFile(path.join(home, 'config.toml'), 'utf8')) as {
          hooks: { event: string; command: string }[];
        }
      ).hooks;
      expect(hooks.map((h) => [h.event, h.command.includes('capture --harness kimi')])).toEqual([
        ['PreToolUse', false],
        ['Stop', true],
      ]);
      expect(hooks[1]!.command).toContain('--profile kimi-v2_0_2');
      expect(await readFile(path.join(share, 'config.toml'), 'utf8')).toBe(`default_model = ""\n\n${userTable}`);

      const result = await runKimi({
        bin,
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        timeoutMs: 120_000,
        writeConfig: false,
      });
      expect(result.exitCode, explain(result)).toBe(0);
      const calls = await managedCallsSeen('the managed hook', 10_000);
      expect(calls.map((c) => [c.argv.at(-1), c.payload.hook_event_name])).toEqual([['kimi-v2_0_2', 'Stop']]);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('capture with the real CLI', () => {
  const w = useCaptureHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    `Kimi Code ${NEWEST}, two interactive turns: each Stop spools a capture that waits while Kimi runs; once it ` +
      `exits, one bundle of the last state`,
    async () => {
      const { t, stub, cwd, stateDir, reconcileHarness, explain, finishedCaptures, expectVerifiedBundle } = w;
      const bin = harnessBin('kimi', NEWEST);
      await writeKimiCodeConfig(kimiCodeHome(harnessEnv(t.home)), stub.url);
      expect(await reconcileHarness(bin, 'kimi')).toMatchObject({ state: 'active', profile: 'kimi-v2_0_2' });

      const prompt = 'Summarise the README in one line.';
      const seen: string[][] = [];
      const result = await runKimi({
        bin,
        home: t.home,
        cwd,
        prompt,
        more: ['Now in French.'],
        stubUrl: stub.url,
        timeoutMs: 120_000,
        writeConfig: false,
        onAnswered: async (index) => {
          // Kimi still runs: its captures are spooled and wait, none is built.
          await waitFor(
            `capture ${index + 1} spooled`,
            async () => (captureLog(stateDir).filter((l) => l.event === 'spooled').length > index ? true : undefined),
            15_000,
          );
          seen.push(captureLog(stateDir).map((l) => String(l.event)));
          expect(spoolFiles(stateDir).ready).toEqual([]);
        },
      });
      expect(result.exitCode, explain(result)).toBe(0);
      expect(seen).toEqual([['spooled'], ['spooled', 'spooled']]);

      const finished = await finishedCaptures();
      expect(
        finished.map((f) => f.state),
        JSON.stringify(captureLog(stateDir)),
      ).toEqual(['ready']);
      const record = finished[0]!.record;
      expect(record).toMatchObject({
        harness: 'kimi',
        profile: 'kimi-v2_0_2',
        payload: { cwd, hook_event_name: 'Stop' },
      });
      await expectVerifiedBundle(record, 'kimi', 'kimi-v2_0_2', { title: prompt, summary: prompt });
      // One bundle: the other capture is dropped, as superseded by the newer record when both are still spooled, or as
      // unchanged when the newer one was built first (the two workers race once Kimi exits).
      const events = captureLog(stateDir)
        .map((l) => String(l.event))
        .sort();
      expect(events.slice(0, 3)).toEqual(['built', 'spooled', 'spooled']);
      expect(['superseded', 'unchanged']).toContain(events[3]);
      expect(events).toHaveLength(4);
      // The bundle holds the whole session: both turns.
      const wire = await readFile(
        path.join(
          kimiCodeHome(harnessEnv(t.home)),
          'sessions',
          kimiCodeWorkDirKey(cwd),
          record.payload.session_id,
          'agents',
          'main',
          'wire.jsonl',
        ),
        'utf8',
      );
      expect(wire).toContain('Now in French.');
      expect(record.bundle!.size).toBeGreaterThan(0);
    },
    TEST_TIMEOUT_MS,
  );

  for (const { version, profile, event } of ENDS) {
    it(
      `Kimi Code ${version} headless: \`kimi -p\` fires ${event}, and the session is captured once`,
      async () => {
        const { t, stub, cwd, stateDir, reconcileHarness, explain, expectOneReadyBundle } = w;
        const bin = harnessBin('kimi', version);
        await writeKimiCodeConfig(kimiCodeHome(harnessEnv(t.home)), stub.url);
        expect(await reconcileHarness(bin, 'kimi')).toMatchObject({ state: 'active', profile });
        const prompt = 'List the build steps.';
        const result = await runKimiHeadless({
          bin,
          home: t.home,
          cwd,
          prompt,
          stubUrl: stub.url,
          timeoutMs: 90_000,
          writeConfig: false,
        });
        expect(result.exitCode, explain(result)).toBe(0);
        await expectOneReadyBundle(result, { harness: 'kimi', profile, event }, { title: prompt, summary: prompt });
        expect(captureLog(stateDir).map((l) => l.event)).toEqual(['spooled', 'built']);
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe('restore with the real CLI, resumed in another HOME and directory', () => {
  const w = useRestoreRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  for (const { version, profile } of ENDS) {
    it(
      `Kimi Code ${version}: the directory, agent homes and bindings rewritten, \`kimi --session <id> -p\` ` +
        `continues it`,
      async () => {
        const { a, b, stub, sourceCwd, destination, agentContext, firstOnA, resumedOnB, bundleFromA, restoreIntoB } = w;
        const bin = harnessBin('kimi', version);
        await firstOnA((place) => runKimiHeadless({ bin, ...place }));
        const folder = path.join(kimiCodeHome(harnessEnv(a.home)), 'sessions', kimiCodeWorkDirKey(sourceCwd));
        const [id] = await readdir(folder);
        expect(id).toMatch(SESSION_ID);
        const bundle = await bundleFromA('kimi', agentContext(a, bin), { session_id: id!, cwd: sourceCwd }, profile);

        const homeB = kimiCodeHome(harnessEnv(b.home));
        await writeKimiCodeConfig(homeB, stub.url);
        const restored = await restoreIntoB(agentContext(b, bin), bundle, { installedVersion: version });
        expect(restored).toEqual({ sessionId: id, resumeArgv: ['kimi', '--session', id] });
        const sessionDir = path.join(homeB, 'sessions', kimiCodeWorkDirKey(destination), id!);
        const state = JSON.parse(await readFile(path.join(sessionDir, 'state.json'), 'utf8')) as Record<
          string,
          unknown
        >;
        expect(state.version === 2 ? state.cwd : (state.workDir ?? destination)).toBe(destination);
        expect(existsSync(path.join(homeB, 'session_index.jsonl'))).toBe(true);

        await resumedOnB(restored.resumeArgv.slice(1), KIMI_MODEL_PATH, kimiHeadless(bin));
      },
      TEST_TIMEOUT_MS,
    );
  }
});

describe('capture on machine A, upload, resume on machine B with the real CLI', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    `Kimi Code ${NEWEST}`,
    async () => {
      const { a, b, stub, expectRoundTrip } = w;
      const bin = harnessBin('kimi', NEWEST);
      await writeKimiCodeConfig(kimiCodeHome(harnessEnv(a.home)), stub.url);
      await expectRoundTrip('kimi', bin, {
        first: (place) => runKimi({ bin, ...place, timeoutMs: 120_000, writeConfig: false }),
        prepareB: () => writeKimiCodeConfig(kimiCodeHome(harnessEnv(b.home)), stub.url),
        command: (id) => ['kimi', '--session', id],
        resume: kimiHeadless(bin),
        modelPath: KIMI_MODEL_PATH,
      });
    },
    TEST_TIMEOUT_MS,
  );
});
