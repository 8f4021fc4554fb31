/**
 * Codex's real CLI, offline against the model stub (test/support/real-cli.ts): `codex exec` fires a user SessionEnd
 * hook once trusted and skips it silently before; reconcile's managed hook fires beside it; the capture becomes a
 * ready, verified bundle; a restored rollout resumes in another HOME; and the whole round trip through the Control API.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { harnessBin } from '../../../../../test/support/harness-bins.js';
import {
  type SessionRun,
  useCaptureHome,
  useOfflineSession,
  useReconcileHome,
} from '../../../../../test/support/real-cli.js';
import { useRestoreRoundTrip, useResumeRoundTrip } from '../../../../../test/support/real-cli-round-trips.js';
import { appendStdinCommand, harnessEnv } from '../../../../../test/support/run-harness.js';
import { appendCodexHook, codexHome, runCodex, writeCodexProviderConfig } from './rig.js';

const MODEL_PATH = '/v1/responses';
/** `codex exec` of the locked version (or `bin`); `hooksTrusted`: as a user who trusted the managed hook. */
const codexRun =
  (bin = harnessBin('codex'), hooksTrusted = false): SessionRun =>
  (place) =>
    runCodex({ bin, ...place, ...(hooksTrusted ? { bypassHookTrust: true } : {}), writeConfig: false });

describe('Codex offline session', () => {
  const w = useOfflineSession();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'runs `codex exec` against the stub and fires a user SessionEnd hook when hook trust is bypassed',
    async () => {
      const { t, stub, cwd, hookOut, explain, expectSessionOk, session, userHookPayload } = w;
      const env = harnessEnv(t.home);
      const dir = codexHome(env);
      // Provider first, hooks appended after it: the order a later reconcile also produces.
      await writeCodexProviderConfig(dir, stub.url);
      const configFile = await appendCodexHook(dir, 'SessionEnd', appendStdinCommand(hookOut), 3);

      const result = await session((place) => runCodex({ bin: harnessBin('codex'), ...place, bypassHookTrust: true }));
      expectSessionOk(result);
      expect(stub.requestsTo(MODEL_PATH, 'POST').length, explain(result)).toBeGreaterThan(0);

      const end = await userHookPayload();
      expect(end).toMatchObject({ cwd, hook_event_name: 'SessionEnd' });
      expect(end.session_id).toMatch(/^[0-9a-f-]{36}$/);
      if (end.transcript_path !== null) {
        expect(end.transcript_path).toMatch(
          new RegExp(`^${escapeRegExp(path.join(dir, 'sessions'))}/.*rollout-.*${end.session_id as string}\\.jsonl$`),
        );
        expect(existsSync(end.transcript_path as string)).toBe(true);
      }

      // The run left config.toml valid, with the provider and the user's hook still in it.
      const config = parseToml(await readFile(configFile, 'utf8')) as {
        model_provider?: string;
        hooks?: { SessionEnd?: unknown[] };
      };
      expect(config.model_provider).toBe('blue_stub');
      expect(config.hooks?.SessionEnd).toHaveLength(1);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'skips a user hook that was never trusted, silently',
    async () => {
      const { t, stub, hookOut, expectSessionOk, session } = w;
      const dir = codexHome(harnessEnv(t.home));
      await writeCodexProviderConfig(dir, stub.url);
      await appendCodexHook(dir, 'SessionEnd', appendStdinCommand(hookOut), 3);

      const result = await session((place) => runCodex({ bin: harnessBin('codex'), ...place }));
      expectSessionOk(result);
      expect(existsSync(hookOut), 'an untrusted hook ran').toBe(false);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('reconcile with the real CLI', () => {
  const w = useReconcileHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Codex fires the managed SessionEnd hook and the user hook (trust bypassed), and reports awaiting_trust until then',
    async () => {
      const { t, stub, userOut, reconcileHarness, session, expectBothHooksRan } = w;
      const bin = harnessBin('codex');
      const dir = codexHome(harnessEnv(t.home));
      await writeCodexProviderConfig(dir, stub.url);
      await appendCodexHook(dir, 'SessionEnd', appendStdinCommand(userOut), 3);

      expect(await reconcileHarness(bin, 'codex')).toMatchObject({
        state: 'awaiting_trust',
        action: 'create',
        profile: 'codex-v0_145_0',
      });

      const result = await session(codexRun(bin, true));
      await expectBothHooksRan(result, 'codex', 'codex-v0_145_0');
    },
    TEST_TIMEOUT_MS,
  );
});

describe('capture with the real CLI', () => {
  const w = useCaptureHome();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Codex: SessionEnd -> capture -> worker -> a ready, verified bundle',
    async () => {
      const { t, stub, reconcileHarness, session, explain, expectOneReadyBundle } = w;
      const bin = harnessBin('codex');
      const dir = codexHome(harnessEnv(t.home));
      await writeCodexProviderConfig(dir, stub.url);
      expect(await reconcileHarness(bin, 'codex')).toMatchObject({ profile: 'codex-v0_145_0' });

      const prompt = 'List three prime numbers.';
      const result = await session(codexRun(bin, true), { prompt });
      expect(result.exitCode, explain(result)).toBe(0);

      const capture = { harness: 'codex', profile: 'codex-v0_145_0' };
      await expectOneReadyBundle(result, capture, { title: prompt, summary: prompt });
    },
    TEST_TIMEOUT_MS,
  );
});

const CHATHAM = 'Pacific/Chatham';

/** Chatham's offset from UTC at `at`, in minutes (+12:45, +13:45 in summer), whatever the time zone of this process. */
function chathamOffset(at: number): number {
  const name = new Intl.DateTimeFormat('en-US', { timeZone: CHATHAM, timeZoneName: 'longOffset' })
    .formatToParts(at)
    .find((p) => p.type === 'timeZoneName')!.value;
  const [, sign, hours, minutes] = /^GMT([+-])(\d{2}):(\d{2})$/.exec(name)!;
  return (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes));
}

describe('restore with the real CLI, resumed in another HOME and directory', () => {
  const w = useRestoreRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Codex: codex exec resume <id> in the destination continues the restored rollout',
    async () => {
      const { a, b, sourceCwd, agentContext, firstOnA, resumedOnB, bundleFromA, restoreIntoB } = w;
      const bin = harnessBin('codex');
      // Both machines in a time zone far from UTC: Codex names the rollout by local time, and so does the restore.
      await firstOnA((place) => runCodex({ bin, ...place, env: { TZ: CHATHAM } }));
      const sessions = path.join(codexHome(harnessEnv(a.home)), 'sessions');
      const rollouts = (await readdir(sessions, { recursive: true })).filter((n) => /rollout-.*\.jsonl$/.test(n));
      expect(rollouts).toHaveLength(1);
      const id = /-([0-9a-f-]{36})\.jsonl$/.exec(rollouts[0]!)![1]!;
      const bundle = await bundleFromA('codex', agentContext(a, bin), {
        session_id: id,
        cwd: sourceCwd,
        transcript_path: path.join(sessions, rollouts[0]!),
      });

      const ctx = b.context({
        env: agentContext(b, bin).env as Record<string, string>,
        clock: { now: () => Date.now(), utcOffsetMinutes: chathamOffset },
      });
      await mkdir(path.join(b.home, '.codex'), { recursive: true });
      const restored = await restoreIntoB(ctx, bundle);
      expect(restored).toEqual({ sessionId: id, resumeArgv: ['codex', 'resume', id] });
      const placed = (await readdir(path.join(b.home, '.codex', 'sessions'), { recursive: true })).filter((n) =>
        /rollout-.*\.jsonl$/.test(n),
      );
      expect(placed).toEqual(rollouts);

      await resumedOnB(['resume', id], MODEL_PATH, (place) => runCodex({ bin, ...place }));
    },
    TEST_TIMEOUT_MS,
  );
});

describe('capture on machine A, upload, resume on machine B with the real CLI', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Codex',
    async () => {
      const { a, b, stub, expectRoundTrip } = w;
      const bin = harnessBin('codex');
      await writeCodexProviderConfig(codexHome(harnessEnv(a.home)), stub.url);
      await expectRoundTrip('codex', bin, {
        reconciled: { profile: 'codex-v0_145_0' },
        // The managed hook is not trusted in this fresh CODEX_HOME: the run bypasses trust, as a user who trusted it.
        first: codexRun(bin, true),
        prepareB: () => writeCodexProviderConfig(codexHome(harnessEnv(b.home)), stub.url),
        command: (id) => ['codex', 'resume', id],
        // Headless, `codex exec resume <id>` is the same resume the command names.
        resume: codexRun(bin),
        modelPath: MODEL_PATH,
      });
    },
    TEST_TIMEOUT_MS,
  );
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('a session killed mid-turn, so no end hook runs, is captured once idle and resumes on machine B', () => {
  const w = useResumeRoundTrip();
  const { TEST_TIMEOUT_MS } = w;

  it(
    'Codex',
    async () => {
      const { a, b, stub, sourceCwd, explain, uploadedFromA, resumeOnB, resumedOnB, startAgentOnA } = w;
      const { managedHookInstalled, killedMidTurn, expectCapturedOnceIdle, CODE_WORD, FIRST_PROMPT } = w;
      const bin = harnessBin('codex');
      const home = codexHome(harnessEnv(a.home));
      await writeCodexProviderConfig(home, stub.url);
      await startAgentOnA(bin, 4_000);
      await managedHookInstalled(path.join(home, 'config.toml'), 'codex');

      // Hook trust bypassed, as a user who trusted the hook: only the kill keeps it from running.
      const killed = await killedMidTurn(CODE_WORD, (onSpawn) =>
        runCodex({
          bin,
          home: a.home,
          cwd: sourceCwd,
          prompt: FIRST_PROMPT,
          stubUrl: stub.url,
          env: a.env,
          bypassHookTrust: true,
          writeConfig: false,
          timeoutMs: 90_000,
          onSpawn,
        }),
      );
      expect(killed.signal, explain(killed)).toBe('SIGKILL');
      const upload = await uploadedFromA('codex');

      expectCapturedOnceIdle(upload);

      await writeCodexProviderConfig(codexHome(harnessEnv(b.home)), stub.url);
      const command = await resumeOnB(upload.id, bin);
      await resumedOnB(command.slice(1), MODEL_PATH, codexRun(bin));
    },
    TEST_TIMEOUT_MS,
  );
});
