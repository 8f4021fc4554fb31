/**
 * OpenCode's real CLI, offline against the model stub (test/support/real-cli.ts): `opencode run` delivers
 * session.idle to a user plugin; reconcile's managed plugin calls capture beside it; the capture (through `opencode
 * export`) becomes a ready, verified bundle; a restored session is imported and resumed in another HOME; and the
 * whole round trip through the Control API.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { reconcile } from '../../../src/reconcile/index.js';
import { applyRestore, prepareRestore } from '../../../src/restore/index.js';
import { harnessBin, harnessInstall } from '../../../../../test/support/harness-bins.js';
import {
  useCaptureHome,
  useOfflineSession,
  useReconcileHome,
  useRestoreRoundTrip,
  useResumeRoundTrip,
} from '../../../../../test/support/real-cli.js';
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

describe('OpenCode offline session', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'runs `opencode run` against the stub and delivers session.idle to a user plugin',
    async () => {
      const { t, stub, cwd, hookOut, explain, expectSessionOk, SESSION_TIMEOUT_MS } = w;
      const install = harnessInstall('opencode');
      const env = harnessEnv(t.home);
      const dir = opencodeConfigDir(env);
      await writeOpencodeUserPlugin(dir, hookOut);

      const result = await runOpencode({
        bin: install.bin,
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        env: t.env,
        timeoutMs: SESSION_TIMEOUT_MS,
      });
      expectSessionOk(result);
      expect(stub.requestsTo('/v1/chat/completions', 'POST').length, explain(result)).toBeGreaterThan(0);

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
      const { t, stub, cwd, userOut, policy, agentContext, managedCalls, explain } = w;
      const bin = harnessBin('opencode');
      const dir = opencodeConfigDir(harnessEnv(t.home));
      await writeOpencodeUserPlugin(dir, userOut);

      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['opencode'] });
      expect(report.harnesses[0]).toMatchObject({ state: 'active', action: 'create', profile: 'opencode-v1_2_0' });

      const result = await runOpencode({
        bin,
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        env: t.env,
        timeoutMs: 60_000,
      });
      expect(result.exitCode, explain(result)).toBe(0);

      const calls = await waitFor(
        'the managed plugin',
        async () => ((await managedCalls()).length > 0 ? managedCalls() : undefined),
        15_000,
      );
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
      const { t, stub, cwd, policy, agentContext, explain, oneFinishedCapture, expectVerifiedBundle, REPLY } = w;
      const bin = harnessBin('opencode');
      const report = await reconcile(agentContext(bin), { dryRun: false, policyFile: policy, harnesses: ['opencode'] });
      expect(report.harnesses[0]).toMatchObject({ state: 'active', profile: 'opencode-v1_2_0' });

      const prompt = 'Name a colour of the rainbow.';
      // The worker runs `opencode export`, so OpenCode must be on the PATH the plugin passes down.
      const env = { ...t.env, PATH: `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin` };
      const result = await runOpencode({ bin, home: t.home, cwd, prompt, stubUrl: stub.url, env, timeoutMs: 60_000 });
      expect(result.exitCode, explain(result)).toBe(0);

      const { state, record } = await oneFinishedCapture(90_000);
      expect(state, JSON.stringify(record)).toBe('ready');
      expect(record).toMatchObject({
        harness: 'opencode',
        profile: 'opencode-v1_2_0',
        payload: { cwd, hook_event_name: 'session.idle' },
      });
      expect(record.payload.session_id).toMatch(/^ses_/);
      // OpenCode asks its (stub) model for a session title: that native title wins; the prompt is the preview.
      await expectVerifiedBundle(record, 'opencode', 'opencode-v1_2_0', { title: REPLY, summary: prompt });
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
      const bin = harnessBin('opencode');
      const env = {
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        OPENCODE_DISABLE_MODELS_FETCH: '1',
        OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      };
      const first = await runOpencode({
        bin,
        home: a.home,
        cwd: sourceCwd,
        prompt: FIRST_PROMPT,
        stubUrl: stub.url,
        timeoutMs: 90_000,
      });
      expect(first.exitCode, explain(first)).toBe(0);
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

      stub.clear();
      const resumed = await runOpencode({
        bin,
        home: b.home,
        cwd: destination,
        prompt: SECOND_PROMPT,
        args: ['--session', id],
        stubUrl: stub.url,
        timeoutMs: 90_000,
      });
      expectResumedWithHistory(resumed, '/v1/chat/completions');
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
      const {
        a,
        b,
        stub,
        sourceCwd,
        destination,
        pathWith,
        agentOn,
        explain,
        expectResumedWithHistory,
        uploadedFromA,
        resumeOnB,
        FIRST_PROMPT,
        SECOND_PROMPT,
      } = w;
      const bin = harnessBin('opencode');
      expect((await reconcile(agentOn(a, bin), { dryRun: false, harnesses: ['opencode'] })).harnesses[0]).toMatchObject(
        { state: 'active' },
      );
      // The capture worker runs `opencode export`: OpenCode must be on the PATH the plugin passes down.
      const first = await runOpencode({
        bin,
        home: a.home,
        cwd: sourceCwd,
        prompt: FIRST_PROMPT,
        stubUrl: stub.url,
        env: { ...a.env, PATH: pathWith(bin) },
        timeoutMs: 90_000,
      });
      expect(first.exitCode, explain(first)).toBe(0);
      const upload = await uploadedFromA('opencode');

      const configDir = opencodeConfigDir(harnessEnv(b.home));
      await writeOpencodeProviderConfig(configDir, stub.url);
      await seedOpencodeConfigDeps(configDir, opencodeDepsFor(bin));
      const command = await resumeOnB(upload.id, bin, OPENCODE_ENV);
      expect(command).toEqual(['opencode', '--session', upload.native_session_id]);

      stub.clear();
      const resumed = await runOpencode({
        bin,
        home: b.home,
        cwd: destination,
        prompt: SECOND_PROMPT,
        args: command.slice(1),
        stubUrl: stub.url,
        env: b.env,
        timeoutMs: 90_000,
      });
      expectResumedWithHistory(resumed, '/v1/chat/completions');
    },
    TEST_TIMEOUT_MS,
  );
});
