/**
 * OpenCode's real CLI, offline against the model stub (test/support/real-cli.ts): `opencode run` delivers
 * session.idle to a user plugin; reconcile's managed plugin calls capture beside it; the capture (through `opencode
 * export`) becomes a ready, verified bundle; a restored session is imported and resumed in another HOME; and the
 * whole round trip through the Control API.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyRestore, prepareRestore } from '../../../src/restore/index.js';
import { harnessBin, harnessInstall } from '../../../../../test/support/harness-bins.js';
import {
  pathWith,
  type SessionRun,
  useCaptureHome,
  useOfflineSession,
  useReconcileHome,
} from '../../../../../test/support/real-cli.js';
import { useRestoreRoundTrip, useResumeRoundTrip } from '../../../../../test/support/real-cli-round-trips.js';
import { harnessEnv, readJsonLines, runProcess, waitFor } from '../../../../../test/support/run-harness.js';
import { shippedProfiles, snapshot } from '../../../../../test/support/restore-homes.js';
import {
  OPENCODE_ENV,
  opencodeConfigDir,
  opencodeDepsFor,
  runOpencode,
  seedOpencodeConfigDeps,
  writeOpencodeProviderConfig,
  writeOpencodeUserPlugin,
} from './rig.js';

const MODEL_PATH = '/v1/chat/completions';
/** `opencode run` of `bin`. */
const opencodeRun =
  (bin: string): SessionRun =>
  (place) =>
    runOpencode({ bin, ...place });
/** `opencode run` of `bin` with OpenCode on the PATH its plugin passes down (the capture runs `opencode export`). */
const opencodeOnPath =
  (bin: string): SessionRun =>
  (place) =>
    runOpencode({ bin, ...place, env: { ...place.env, PATH: pathWith(bin) } });

describe('OpenCode offline session', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'runs `opencode run` against the stub and delivers session.idle to a user plugin',
    async () => {
      const { t, stub, cwd, hookOut, explain, expectSessionOk, session } = w;
      const install = harnessInstall('opencode');
      const env = harnessEnv(t.home);
      const dir = opencodeConfigDir(env);
      await writeOpencodeUserPlugin(dir, hookOut);

      const result = await session(opencodeRun(install.bin));
      expectSessionOk(result);
      expect(stub.requestsTo(MODEL_PATH, 'POST').length, explain(result)).toBeGreaterThan(0);

      type Event = {
        type: string;
        properties?: { sessionID?: string; info?: { id?: string; directory?: string; parentID?: string } };
        directory?: string;
      };
      const events = (await waitFor('session.idle from the user plugin', async () => {
        const lines = (await readJsonLines(hookOut)) as Event[];
        return lines.some((e) => e.type === 'session.idle') ? lines : undefined;
      })) as Event[];
      const idle = events.find((e) => e.type === 'session.idle')!;
      expect(idle.properties?.sessionID).toMatch(/^ses_/);
      expect(idle.directory).toBe(cwd);
      const created = events.find(
        (e) => e.type === 'session.created' && e.properties?.info?.id === idle.properties?.sessionID,
      );
      expect(created?.properties?.info?.directory).toBe(cwd);

      // The plugin SDK came from the seeded cache, not the npm registry.
      expect(existsSync(path.join(t.home, '.npm')), 'OpenCode ran an npm install').toBe(false);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('reconcile with the real CLI', () => {
  const w = useReconcileHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'OpenCode loads the managed plugin, which calls capture once for the top-level session, beside a user plugin',
    async () => {
      const { t, cwd, userOut, reconcileHarness, session, managedCalls, managedCallsSeen, explain } = w;
      const bin = harnessBin('opencode');
      const dir = opencodeConfigDir(harnessEnv(t.home));
      await writeOpencodeUserPlugin(dir, userOut);

      expect(await reconcileHarness(bin, 'opencode')).toMatchObject({
        state: 'active',
        action: 'create',
        profile: 'opencode-v1_2_0',
      });

      const result = await session(opencodeRun(bin));
      expect(result.exitCode, explain(result)).toBe(0);

      const calls = await managedCallsSeen('the managed plugin', 15_000);
      expect(calls[0]!.argv).toEqual(['capture', '--harness', 'opencode', '--profile', 'opencode-v1_2_0']);
      expect(calls[0]!.payload).toMatchObject({ hook_event_name: 'session.idle', cwd });
      expect(calls[0]!.payload.session_id).toMatch(/^ses_/);
      expect(new Set((await managedCalls()).map((c) => c.payload.session_id)).size).toBe(1);

      const events = (await waitFor('the user plugin', async () => {
        const lines = (await readJsonLines(userOut)) as { type: string; properties?: { sessionID?: string } }[];
        return lines.some((e) => e.type === 'session.idle') ? lines : undefined;
      })) as { type: string; properties?: { sessionID?: string } }[];
      expect(events.find((e) => e.type === 'session.idle')!.properties?.sessionID).toBe(calls[0]!.payload.session_id);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('capture with the real CLI', () => {
  const w = useCaptureHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'OpenCode: session.idle plugin -> capture -> worker (opencode export) -> a ready, verified bundle',
    async () => {
      const { reconcileHarness, session, explain, expectOneReadyBundle, REPLY } = w;
      const bin = harnessBin('opencode');
      expect(await reconcileHarness(bin, 'opencode')).toMatchObject({ state: 'active', profile: 'opencode-v1_2_0' });

      const prompt = 'Name a colour of the rainbow.';
      // The worker runs `opencode export`, so OpenCode must be on the PATH the plugin passes down.
      const result = await session(opencodeOnPath(bin), { prompt });
      expect(result.exitCode, explain(result)).toBe(0);

      // OpenCode asks its (stub) model for a session title: that native title wins; the prompt is the preview.
      const capture = { harness: 'opencode', profile: 'opencode-v1_2_0', event: 'session.idle', timeoutMs: 90_000 };
      const record = await expectOneReadyBundle(result, capture, { title: REPLY, summary: prompt });
      expect(record.payload.session_id).toMatch(/^ses_/);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('restore with the real CLI, resumed in another HOME and directory', () => {
  const w = useRestoreRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'OpenCode: opencode import in the destination, then opencode run --session <id> continues the conversation',
    async () => {
      const { a, b, stub, sourceCwd, destination, agentContext, firstOnA, resumedOnB, bundleFromA, restoreIntoB } = w;
      const bin = harnessBin('opencode');
      const env = {
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      };
      await firstOnA(opencodeRun(bin));
      const listEnv = harnessEnv(a.home, env);
      const list = await runProcess(bin, ['session', 'list', '--format', 'json'], {
        env: listEnv,
        cwd: sourceCwd,
        timeoutMs: 60_000,
      });
      const sessions = JSON.parse(list.stdout) as { id: string }[];
      expect(sessions, list.stderr).toHaveLength(1);
      const id = sessions[0]!.id;
      const bundle = await bundleFromA('opencode', agentContext(a, bin, env), { session_id: id, cwd: sourceCwd });

      // OpenCode on machine B: configured for the stub, its plugin SDK seeded (no network).
      const configDir = opencodeConfigDir(harnessEnv(b.home));
      await writeOpencodeProviderConfig(configDir, stub.url);
      await seedOpencodeConfigDeps(configDir, opencodeDepsFor(bin));
      const ctx = agentContext(b, bin, env);
      const restored = await restoreIntoB(ctx, bundle);
      expect(restored).toEqual({ sessionId: id, resumeArgv: ['opencode', '--session', id] });

      // Restoring the same bundle again: OpenCode already holds exactly this conversation; nothing to do.
      const again = await prepareRestore(ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() });
      expect(again.collision).toBe('identical');
      expect((await applyRestore(ctx, again)).sessionId).toBe(id);
      await again.dispose();

      await resumedOnB(['--session', id], MODEL_PATH, opencodeRun(bin));
      // Nothing of the restore is left in B's OpenCode config folder.
      expect(Object.keys(await snapshot(configDir)).filter((k) => k.includes('.blue-agent-restore'))).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('capture on machine A, upload, resume on machine B with the real CLI', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'OpenCode',
    async () => {
      const { b, stub, expectRoundTrip } = w;
      const bin = harnessBin('opencode');
      await expectRoundTrip('opencode', bin, {
        first: opencodeOnPath(bin),
        prepareB: async () => {
          const configDir = opencodeConfigDir(harnessEnv(b.home));
          await writeOpencodeProviderConfig(configDir, stub.url);
          await seedOpencodeConfigDeps(configDir, opencodeDepsFor(bin));
        },
        resumeEnv: OPENCODE_ENV,
        command: (id) => ['opencode', '--session', id],
        resume: opencodeRun(bin),
        modelPath: MODEL_PATH,
      });
    },
    TEST_TIMEOUT_MS,
  );
});
