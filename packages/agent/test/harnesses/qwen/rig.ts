/**
 * Qwen Code's test rig (see test/support/rigs.ts): Qwen Code fires SessionEnd only when an interactive session
 * closes, so its runs are interactive, in a pseudo-terminal (test/support/pty-session.ts), against the stub's OpenAI
 * Chat Completions API (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`); a headless `qwen -p` run is here too,
 * for what it does and does not fire. Its settings.json hooks, its transcripts under QWEN_HOME, its recorded fixture.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { qwenProjectKey } from '../../../src/harnesses/qwen/session.js';
import { installTree } from '../../../../../test/support/recorded-sessions.js';
import { startPty } from '../../../../../test/support/pty-session.js';
import {
  appendStdinCommand,
  harnessEnv,
  readJsonLines,
  runProcess,
  STUB_API_KEY,
  STUB_MODEL,
  waitFor,
  type HarnessRunOptions,
  type HarnessRunResult,
} from '../../../../../test/support/run-harness.js';
import type { HarnessRig } from '../../../../../test/support/rigs.js';
import { addHookGroup, editSettings } from '../../../../../test/support/settings-file.js';

export const QWEN_MODEL_PATH = '/v1/chat/completions';

/** Qwen Code's home (settings.json, and projects/ here) for an env built by harnessEnv. */
export function qwenHome(env: Readonly<Record<string, string>>): string {
  return env.QWEN_HOME!;
}

/**
 * Settings that keep a run offline and quiet, merged into settings.json (everything else kept): OpenAI auth (the stub
 * is named by the environment), no usage statistics, telemetry or update checks, and the settings version and the
 * acknowledgement Qwen Code would otherwise write into the file itself (`$version`, `ui.autoModeAcknowledged`).
 */
export function writeQwenSettings(home: string): Promise<string> {
  return editSettings(home, (settings) => {
    settings.security = { ...settings.security, auth: { selectedType: 'openai' } };
    settings.privacy = { ...settings.privacy, usageStatisticsEnabled: false };
    settings.telemetry = { ...settings.telemetry, enabled: false };
    settings.general = { ...settings.general, enableAutoUpdate: false };
    settings.ui = { ...settings.ui, autoModeAcknowledged: true };
    settings.$version = 4;
  });
}

function qwenEnv(options: HarnessRunOptions): Record<string, string> {
  return harnessEnv(
    options.home,
    {
      OPENAI_BASE_URL: `${options.stubUrl.replace(/\/+$/, '')}/v1`,
      OPENAI_API_KEY: STUB_API_KEY,
      OPENAI_MODEL: STUB_MODEL,
      QWEN_DISABLE_AUTO_TITLE: '1',
      ...options.env,
    },
    options.isolationRoot,
  );
}

/**
 * An interactive session in a pseudo-terminal: wait for the input box, type the prompt, Enter, wait for the answer,
 * then `/quit` (which fires SessionEnd). `args` go first (for example `['--resume', id]`). What was on screen is the
 * result's stdout.
 */
export async function runQwen(options: HarnessRunOptions & { writeSettings?: boolean }): Promise<HarnessRunResult> {
  const env = qwenEnv(options);
  if (options.writeSettings !== false) await writeQwenSettings(qwenHome(env));
  const pty = startPty(options.bin, options.args ?? [], {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs ?? 120_000,
  });
  try {
    const idle = (s: string) =>
      s.includes('Type your message') && !s.includes('Initializing') && !s.includes('esc to cancel');
    await pty.waitFor('the input box', idle, 90_000);
    // The input box's line starts the screen line; the conversation above it is indented.
    const inInput = (text: string) => (s: string) =>
      s.split('\n').some((line) => line.startsWith(`> ${text.slice(0, 60)}`));
    await pty.type(options.prompt);
    await pty.waitFor('the prompt in the input box', inInput(options.prompt), 10_000);
    await new Promise((r) => setTimeout(r, 300));
    pty.press('\r');
    // Answered when the transcript holds a model record after this prompt, and the input box is back.
    await waitFor('the answer in the transcript', () => answered(env, options.cwd, options.prompt), 60_000, 100);
    await pty.waitFor('the input box after the answer', idle, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    await pty.type('/quit');
    await pty.waitFor('/quit echoed', (s) => s.includes('> /quit'), 10_000);
    await new Promise((r) => setTimeout(r, 400));
    pty.press('\r');
    // The exit waits for the SessionEnd hooks (about two seconds at most); a lost Enter is sent again.
    for (let i = 0; i < 3 && !(await pty.waitUntil(() => pty.exited(), 6_000)); i++) pty.press('\r');
  } catch (error) {
    pty.kill();
    const result = await pty.done();
    return { ...result, exitCode: result.exitCode === 0 ? 1 : result.exitCode, stderr: (error as Error).message };
  }
  return pty.done();
}

/** True once a transcript of the working directory holds a model record after the user's `prompt`. */
async function answered(env: Record<string, string>, cwd: string, prompt: string): Promise<true | undefined> {
  const chats = path.join(qwenHome(env), 'projects', qwenProjectKey(cwd), 'chats');
  for (const name of (await readdir(chats).catch(() => [] as string[])).filter((n) => n.endsWith('.jsonl'))) {
    const records = (await readJsonLines(path.join(chats, name))) as {
      type?: string;
      message?: { parts?: { text?: string }[] };
    }[];
    const asked = records.findIndex(
      (r) => r.type === 'user' && r.message?.parts?.some((p) => p.text === prompt) === true,
    );
    if (asked >= 0 && records.slice(asked + 1).some((r) => r.type === 'assistant')) return true;
  }
  return undefined;
}

/** `qwen -p PROMPT`, headless (no SessionEnd). `args` go before `-p`. */
export async function runQwenHeadless(
  options: HarnessRunOptions & { writeSettings?: boolean },
): Promise<HarnessRunResult> {
  const env = qwenEnv(options);
  if (options.writeSettings !== false) await writeQwenSettings(qwenHome(env));
  return runProcess(options.bin, [...(options.args ?? []), '-p', options.prompt], {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
  });
}

/** Adds a user group to settings.json's `hooks.<event>` (creating the file when missing). */
export function addQwenUserHook(home: string, event: string, command: string, timeoutMs = 10_000): Promise<string> {
  return addHookGroup(home, event, { hooks: [{ name: 'my-notes', type: 'command', command, timeout: timeoutMs }] });
}

export const qwen: HarnessRig = {
  name: 'qwen',
  reconcileStates: ['active'],
  versionLine: '0.24.4',
  // Qwen Code 0.15.10 and later read QWEN_HOME; 0.15.6 uses ~/.qwen, the same folder here.
  locations: (home) => ({ QWEN_HOME: path.join(home, '.qwen') }),
  fixture: {
    profile: 'qwen-v0_15_6',
    title: 'Explain the build steps of this project',
    placeholders: (cwd) => ({ QWEN_PROJECT: qwenProjectKey(cwd) }),
    async files(dir, recorded, vars, content) {
      const rel = `${vars.QWEN_PROJECT}/chats/${recorded.session_id}.jsonl`;
      return [
        {
          role: 'primary_transcript',
          name: 'transcript.jsonl',
          nativePath: rel,
          content: await content(
            path.join(dir, 'projects', '{{QWEN_PROJECT}}', 'chats', `${recorded.session_id}.jsonl`),
          ),
        },
      ];
    },
    sessionsIn: (home) => path.join(home, '.qwen', 'projects'),
    async install(dir, { root, home, cwd }) {
      const vars = { ROOT: root, QWEN_PROJECT: qwenProjectKey(cwd) };
      await installTree(path.join(dir, 'projects'), qwen.fixture.sessionsIn!(home), vars);
      return vars;
    },
  },
  cli: {
    modelPath: QWEN_MODEL_PATH,
    prepareHome: async (env) => void (await writeQwenSettings(qwenHome(env))),
    prepareResume: async (env) => void (await writeQwenSettings(qwenHome(env))),
    run: (options) => runQwen({ ...options, writeSettings: false }),
    addUserHook: async (env, outFile) =>
      void (await addQwenUserHook(qwenHome(env), 'SessionEnd', appendStdinCommand(outFile))),
    userHookSessions: (lines) =>
      lines.filter((e) => e.hook_event_name === 'SessionEnd').map((e) => e.session_id as string),
    resumeCommand: (id) => ['qwen', '--resume', id],
  },
};
