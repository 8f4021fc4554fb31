/**
 * The restore round trip with the real harness CLIs, offline against the model stub: a real session runs in HOME A
 * with a distinctive prompt, is bundled the way the capture worker bundles it (collectSession + writeBundle), is
 * restored into HOME B under a different destination directory with prepareRestore + applyRestore, and the CLI's own
 * headless resume runs there. The proof is the stub's request: the resumed conversation carries the earlier turn.
 */
import { readdir, mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assembleBundle } from '../../src/drain/assemble.js';
import type { Context } from '../../src/context.js';
import { claudeProjectKey } from '../../src/harnesses/claude/session.js';
import { findInterval } from '../../src/profiles/index.js';
import type { HarnessName } from '../../src/schema/index.js';
import { applyRestore, prepareRestore, recoverRestores } from '../../src/restore/index.js';
import type { TestHome } from '../support/context.js';
import { harnessBin } from '../support/harness-bins.js';
import { startModelStub, type ModelStub } from '../support/model-stub.js';
import {
  describeRun,
  harnessDirs,
  harnessEnv,
  opencodeDepsFor,
  runClaude,
  runCodex,
  runOpencode,
  runProcess,
  seedOpencodeConfigDeps,
  writeOpencodeProviderConfig,
  type HarnessRunResult,
} from '../support/run-harness.js';
import { PROFILE, restoreHome, shippedProfiles, snapshot } from '../support/restore-homes.js';

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

/** The agent's Context on a home, with the harness on PATH (OpenCode's export and import run it). */
function agentContext(home: TestHome, bin: string, extra: Record<string, string> = {}): Context {
  return home.context({ env: { PATH: `${path.dirname(bin)}:${path.dirname(process.execPath)}:/usr/bin:/bin`, ...extra } });
}

function explain(result: HarnessRunResult): string {
  return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}`);
}

/** Bundles a session of HOME A exactly as the capture worker does. */
async function bundleFromA(harness: HarnessName, ctx: Context, payload: { session_id: string; cwd: string; transcript_path?: string }): Promise<string> {
  const profiles = await shippedProfiles();
  const interval = findInterval(profiles, PROFILE[harness as keyof typeof PROFILE])!.interval;
  const out = path.join(a.root, `${harness}.bundle`);
  await assembleBundle(ctx, { harness, interval, payload: { ...payload, hook_event_name: 'SessionEnd' }, capturedAtUnixMs: Date.now() }, out, profiles);
  return out;
}

/** Restores into HOME B under the other destination; returns the native id and the resume command. */
async function restoreIntoB(ctx: Context, bundle: string): Promise<{ sessionId: string; resumeArgv: string[] }> {
  expect(await recoverRestores(ctx)).toEqual({ rolledBack: [], completed: [] });
  const prepared = await prepareRestore(ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() });
  try {
    expect(prepared.collision).toBe('none');
    const result = await applyRestore(ctx, prepared);
    return { sessionId: result.sessionId, resumeArgv: result.resumeArgv };
  } finally {
    await prepared.dispose();
  }
}

describe('restore with the real harness CLIs, resumed in another HOME and directory', () => {
  it(
    'Claude Code: claude --resume <id> -p in the destination continues the restored conversation',
    async () => {
      const bin = harnessBin('claude');
      const first = await runClaude({ bin, home: a.home, cwd: sourceCwd, prompt: FIRST_PROMPT, stubUrl: stub.url, timeoutMs: 90_000 });
      expect(first.exitCode, explain(first)).toBe(0);
      const projectDir = path.join(harnessDirs(harnessEnv(a.home)).claude, 'projects', claudeProjectKey(sourceCwd));
      const transcripts = (await readdir(projectDir)).filter((n) => n.endsWith('.jsonl'));
      expect(transcripts).toHaveLength(1);
      const id = transcripts[0]!.replace(/\.jsonl$/, '');
      const bundle = await bundleFromA('claude', agentContext(a, bin), { session_id: id, cwd: sourceCwd, transcript_path: path.join(projectDir, transcripts[0]!) });

      const ctx = agentContext(b, bin);
      const restored = await restoreIntoB(ctx, bundle);
      expect(restored).toEqual({ sessionId: id, resumeArgv: ['claude', '--resume', id] });
      expect(await readdir(path.join(b.home, '.claude', 'projects', claudeProjectKey(destination)))).toContain(`${id}.jsonl`);

      stub.clear();
      const resumed = await runClaude({ bin, home: b.home, cwd: destination, prompt: SECOND_PROMPT, args: restored.resumeArgv.slice(1), stubUrl: stub.url, timeoutMs: 90_000 });
      expect(resumed.exitCode, explain(resumed)).toBe(0);
      const sent = stub.textSentTo('/v1/messages');
      expect(sent, explain(resumed)).toContain(SECOND_PROMPT);
      expect(sent, explain(resumed)).toContain(CODE_WORD);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'Codex: codex exec resume <id> in the destination continues the restored rollout',
    async () => {
      const bin = harnessBin('codex');
      const first = await runCodex({ bin, home: a.home, cwd: sourceCwd, prompt: FIRST_PROMPT, stubUrl: stub.url, timeoutMs: 90_000 });
      expect(first.exitCode, explain(first)).toBe(0);
      const sessions = path.join(harnessDirs(harnessEnv(a.home)).codex, 'sessions');
      const rollouts = (await readdir(sessions, { recursive: true })).filter((n) => /rollout-.*\.jsonl$/.test(n));
      expect(rollouts).toHaveLength(1);
      const id = /-([0-9a-f-]{36})\.jsonl$/.exec(rollouts[0]!)![1]!;
      const bundle = await bundleFromA('codex', agentContext(a, bin), { session_id: id, cwd: sourceCwd, transcript_path: path.join(sessions, rollouts[0]!) });

      const ctx = agentContext(b, bin);
      await mkdir(path.join(b.home, '.codex'), { recursive: true });
      const restored = await restoreIntoB(ctx, bundle);
      expect(restored).toEqual({ sessionId: id, resumeArgv: ['codex', 'resume', id] });

      stub.clear();
      const resumed = await runCodex({ bin, home: b.home, cwd: destination, prompt: SECOND_PROMPT, args: ['resume', id], stubUrl: stub.url, timeoutMs: 90_000 });
      expect(resumed.exitCode, explain(resumed)).toBe(0);
      const sent = stub.textSentTo('/v1/responses');
      expect(sent, explain(resumed)).toContain(SECOND_PROMPT);
      expect(sent, explain(resumed)).toContain(CODE_WORD);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'OpenCode: opencode import in the destination, then opencode run --session <id> continues the conversation',
    async () => {
      const bin = harnessBin('opencode');
      const env = { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1' };
      const first = await runOpencode({ bin, home: a.home, cwd: sourceCwd, prompt: FIRST_PROMPT, stubUrl: stub.url, timeoutMs: 90_000 });
      expect(first.exitCode, explain(first)).toBe(0);
      const listEnv = harnessEnv(a.home, env);
      const list = await runProcess(bin, ['session', 'list', '--format', 'json'], { env: listEnv, cwd: sourceCwd, timeoutMs: 60_000 });
      const sessions = JSON.parse(list.stdout) as { id: string }[];
      expect(sessions, list.stderr).toHaveLength(1);
      const id = sessions[0]!.id;
      const bundle = await bundleFromA('opencode', agentContext(a, bin, env), { session_id: id, cwd: sourceCwd });

      // OpenCode on machine B: configured for the stub, its plugin SDK seeded (no network).
      const configDir = harnessDirs(harnessEnv(b.home)).opencodeConfig;
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
      const resumed = await runOpencode({ bin, home: b.home, cwd: destination, prompt: SECOND_PROMPT, args: ['--session', id], stubUrl: stub.url, timeoutMs: 90_000 });
      expect(resumed.exitCode, explain(resumed)).toBe(0);
      const sent = stub.textSentTo('/v1/chat/completions');
      expect(sent, explain(resumed)).toContain(SECOND_PROMPT);
      expect(sent, explain(resumed)).toContain(CODE_WORD);
      // Nothing of the restore is left in B's OpenCode config folder.
      expect(Object.keys(await snapshot(configDir)).filter((k) => k.includes('.blue-agent-restore'))).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );
});
