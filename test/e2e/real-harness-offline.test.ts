/**
 * The real harness CLIs, run offline against the loopback model stub in an isolated HOME. Proves the machinery the
 * capture tests build on: each CLI reports a version the profiles understand, completes a headless session against
 * the stub, and runs a user's session-end hook (or plugin) with the payload the capture verb will receive.
 */
import { mkdir, readFile, realpath } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parse as parseToml } from 'smol-toml';
import { loadProfiles, parseVersionOutput, requireProfiles, selectInterval, type ProfileSet } from '../../src/profiles/index.js';
import { makeTestHome, repoRoot, type TestHome } from '../support/context.js';
import { harnessBin, harnessInstall, lockedVersions, type LockedHarness } from '../support/harness-bins.js';
import { startModelStub, type ModelStub } from '../support/model-stub.js';
import {
  addClaudeUserHook,
  appendCodexHook,
  appendStdinCommand,
  describeRun,
  harnessDirs,
  harnessEnv,
  readJsonLines,
  runClaude,
  runCodex,
  runOpencode,
  runProcess,
  waitFor,
  writeCodexProviderConfig,
  writeOpencodeUserPlugin,
  type HarnessRunResult,
} from '../support/run-harness.js';

const REPLY = 'Offline stub reply: the session works.';
const SESSION_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 90_000;

interface Payload {
  session_id?: unknown;
  transcript_path?: unknown;
  cwd?: unknown;
  hook_event_name?: unknown;
  reason?: unknown;
}

let profiles: ProfileSet;
let t: TestHome;
let stub: ModelStub;
let cwd: string;
let hookOut: string;

beforeAll(async () => {
  profiles = await loadProfiles(path.join(repoRoot, 'profiles'));
});

beforeEach(async () => {
  t = await makeTestHome();
  stub = await startModelStub({ reply: REPLY });
  cwd = path.join(t.root, 'work', 'my_project');
  await mkdir(cwd, { recursive: true });
  // Realpath: the harnesses report the resolved working directory (on macOS /var is /private/var).
  cwd = await realpath(cwd);
  hookOut = path.join(t.root, 'hook-out.jsonl');
});

afterEach(async () => {
  await stub.close();
  await t.cleanup();
});

/** A run's account plus what the stub saw, for assertion messages. */
function explain(result: HarnessRunResult): string {
  return describeRun(result, `--- model stub requests\n${stub.summary() || '(none)'}`);
}

function expectSessionOk(result: HarnessRunResult): void {
  expect(result.timedOut, explain(result)).toBe(false);
  expect(result.exitCode, explain(result)).toBe(0);
  expect(result.stdout, explain(result)).toContain(REPLY);
}

const HARNESSES: LockedHarness[] = ['claude', 'codex', 'opencode'];

describe.each(HARNESSES)('%s --version', (harness) => {
  it.each(lockedVersions(harness))('%s is parsed by the profile patterns and falls in a capture interval', async (version) => {
    const bin = harnessBin(harness, version);
    const result = await runProcess(bin, ['--version'], { env: harnessEnv(t.home), cwd, timeoutMs: 30_000 });
    expect(result.exitCode, describeRun(result)).toBe(0);
    const loaded = requireProfiles(profiles, harness);
    expect(parseVersionOutput(loaded, result.stdout), describeRun(result)).toBe(version);
    const choice = selectInterval(loaded.doc, version);
    expect(choice, `no interval of ${loaded.file} holds ${version}`).toBeDefined();
    expect(choice!.interval.operations).toContain('session_capture');
  });
});

describe('Claude Code offline session', () => {
  it(
    'runs `claude -p` against the stub and fires a user SessionEnd hook',
    async () => {
      const env = harnessEnv(t.home);
      const dirs = harnessDirs(env);
      await addClaudeUserHook(dirs.claude, 'SessionEnd', appendStdinCommand(hookOut), 10);

      const result = await runClaude({ bin: harnessBin('claude'), home: t.home, cwd, prompt: 'Say hello.', stubUrl: stub.url, env: t.env, timeoutMs: SESSION_TIMEOUT_MS });
      expectSessionOk(result);

      const calls = stub.requestsTo('/v1/messages', 'POST');
      expect(calls.length, explain(result)).toBeGreaterThan(0);

      const payloads = (await waitFor('the SessionEnd hook output', async () => {
        const lines = (await readJsonLines(hookOut)) as Payload[];
        return lines.some((p) => p.hook_event_name === 'SessionEnd') ? lines : undefined;
      })) as Payload[];
      const end = payloads.find((p) => p.hook_event_name === 'SessionEnd')!;
      expect(end).toMatchObject({ cwd, hook_event_name: 'SessionEnd' });
      expect(end.session_id).toMatch(/^[0-9a-f-]{36}$/);
      // The hook speaks of the session the stub served.
      expect(calls.map((c) => c.headers['x-claude-code-session-id'])).toContain(end.session_id);
      expect(typeof end.transcript_path).toBe('string');
      const encoded = cwd.replace(/[^A-Za-z0-9]/g, '-');
      expect(end.transcript_path).toBe(path.join(dirs.claude, 'projects', encoded, `${end.session_id as string}.jsonl`));
      expect(existsSync(end.transcript_path as string)).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('Codex offline session', () => {
  it(
    'runs `codex exec` against the stub and fires a user SessionEnd hook when hook trust is bypassed',
    async () => {
      const env = harnessEnv(t.home);
      const dirs = harnessDirs(env);
      // Provider first, hooks appended after it: the order a later reconcile also produces.
      await writeCodexProviderConfig(dirs.codex, stub.url);
      const configFile = await appendCodexHook(dirs.codex, 'SessionEnd', appendStdinCommand(hookOut), 3);

      const result = await runCodex({
        bin: harnessBin('codex'),
        home: t.home,
        cwd,
        prompt: 'Say hello.',
        stubUrl: stub.url,
        env: t.env,
        bypassHookTrust: true,
        timeoutMs: SESSION_TIMEOUT_MS,
      });
      expectSessionOk(result);
      expect(stub.requestsTo('/v1/responses', 'POST').length, explain(result)).toBeGreaterThan(0);

      const payloads = (await waitFor('the SessionEnd hook output', async () => {
        const lines = (await readJsonLines(hookOut)) as Payload[];
        return lines.some((p) => p.hook_event_name === 'SessionEnd') ? lines : undefined;
      })) as Payload[];
      const end = payloads.find((p) => p.hook_event_name === 'SessionEnd')!;
      expect(end).toMatchObject({ cwd, hook_event_name: 'SessionEnd' });
      expect(end.session_id).toMatch(/^[0-9a-f-]{36}$/);
      if (end.transcript_path !== null) {
        expect(end.transcript_path).toMatch(new RegExp(`^${escapeRegExp(path.join(dirs.codex, 'sessions'))}/.*rollout-.*${end.session_id as string}\\.jsonl$`));
        expect(existsSync(end.transcript_path as string)).toBe(true);
      }

      // The run left config.toml valid, with the provider and the user's hook still in it.
      const config = parseToml(await readFile(configFile, 'utf8')) as { model_provider?: string; hooks?: { SessionEnd?: unknown[] } };
      expect(config.model_provider).toBe('blue_stub');
      expect(config.hooks?.SessionEnd).toHaveLength(1);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'skips a user hook that was never trusted, silently',
    async () => {
      const dirs = harnessDirs(harnessEnv(t.home));
      await writeCodexProviderConfig(dirs.codex, stub.url);
      await appendCodexHook(dirs.codex, 'SessionEnd', appendStdinCommand(hookOut), 3);

      const result = await runCodex({ bin: harnessBin('codex'), home: t.home, cwd, prompt: 'Say hello.', stubUrl: stub.url, env: t.env, timeoutMs: SESSION_TIMEOUT_MS });
      expectSessionOk(result);
      expect(existsSync(hookOut), 'an untrusted hook ran').toBe(false);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('OpenCode offline session', () => {
  it(
    'runs `opencode run` against the stub and delivers session.idle to a user plugin',
    async () => {
      const install = harnessInstall('opencode');
      const env = harnessEnv(t.home);
      const dirs = harnessDirs(env);
      await writeOpencodeUserPlugin(dirs.opencodeConfig, hookOut);

      const result = await runOpencode({ bin: install.bin, home: t.home, cwd, prompt: 'Say hello.', stubUrl: stub.url, env: t.env, timeoutMs: SESSION_TIMEOUT_MS });
      expectSessionOk(result);
      expect(stub.requestsTo('/v1/chat/completions', 'POST').length, explain(result)).toBeGreaterThan(0);

      type Event = { type: string; properties?: { sessionID?: string; info?: { id?: string; directory?: string; parentID?: string } }; directory?: string };
      const events = (await waitFor('session.idle from the user plugin', async () => {
        const lines = (await readJsonLines(hookOut)) as Event[];
        return lines.some((e) => e.type === 'session.idle') ? lines : undefined;
      })) as Event[];
      const idle = events.find((e) => e.type === 'session.idle')!;
      expect(idle.properties?.sessionID).toMatch(/^ses_/);
      expect(idle.directory).toBe(cwd);
      const created = events.find((e) => e.type === 'session.created' && e.properties?.info?.id === idle.properties?.sessionID);
      expect(created?.properties?.info?.directory).toBe(cwd);

      // The plugin SDK came from the seeded cache, not the npm registry.
      expect(existsSync(path.join(t.home, '.npm')), 'OpenCode ran an npm install').toBe(false);
    },
    TEST_TIMEOUT_MS,
  );
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
