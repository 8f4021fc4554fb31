/**
 * Gemini CLI's test rig (see test/support/rigs.ts): `gemini -p` against the stub's Gemini API
 * (`GOOGLE_GEMINI_BASE_URL`, an API key, `security.auth.selectedType: gemini-api-key`), its settings.json hooks,
 * its chats under `~/.gemini/tmp/<project folder>/chats/` (GEMINI_CLI_HOME replaces HOME for it), and its recorded
 * fixture.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectHash, slugify } from '../../../src/harnesses/gemini/projects.js';
import type { SessionFile } from '../../../src/harnesses/types.js';
import { entryName, filesBelow, installTree } from '../../../../../test/support/recorded-sessions.js';
import {
  appendStdinCommand,
  harnessEnv,
  runProcess,
  STUB_API_KEY,
  type HarnessRunOptions,
  type HarnessRunResult,
} from '../../../../../test/support/run-harness.js';
import type { HarnessRig } from '../../../../../test/support/rigs.js';
import { addHookGroup, editSettings } from '../../../../../test/support/settings-file.js';

/** The model the runs name (`-m`): the stub answers any, and the path carries it. */
export const GEMINI_STUB_MODEL = 'gemini-2.5-flash';
export const GEMINI_MODEL_PATH = `/v1beta/models/${GEMINI_STUB_MODEL}:streamGenerateContent`;

/** Gemini CLI's home (`~/.gemini`) for an env built by harnessEnv. */
export function geminiDir(env: Readonly<Record<string, string>>): string {
  return path.join(env.GEMINI_CLI_HOME!, '.gemini');
}

/** The installed version of the CLI a `bin` of the harness cache runs (its package.json beside the bin folder). */
export function geminiVersionOf(bin: string): string {
  const file = path.join(path.dirname(path.dirname(bin)), '@google', 'gemini-cli', 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

function older(version: string, than: string): boolean {
  const [a, b] = [version, than].map((v) => v.split('.').map(Number));
  for (let i = 0; i < 3; i++) if (a![i] !== b![i]) return a![i]! < b![i]!;
  return false;
}

/**
 * Settings that keep a run offline and quiet, merged into settings.json (everything else in it kept): the API-key
 * auth (without it the base-URL variable selects a gateway auth `-p` refuses), no folder trust prompt, no usage
 * statistics, telemetry or update checks — the update switches in the form the version reads, so that it does not
 * rewrite the file.
 */
export function writeGeminiSettings(dir: string, version: string): Promise<string> {
  return editSettings(dir, (settings) => {
    settings.security = {
      ...settings.security,
      auth: { selectedType: 'gemini-api-key' },
      folderTrust: { enabled: false },
    };
    settings.privacy = { ...settings.privacy, usageStatisticsEnabled: false };
    settings.telemetry = { ...settings.telemetry, enabled: false };
    settings.general = {
      ...settings.general,
      ...(older(version, '0.26.0')
        ? { disableAutoUpdate: true, disableUpdateNag: true }
        : { enableAutoUpdate: false, enableAutoUpdateNotification: false }),
    };
  });
}

/** `gemini -m <model> -p PROMPT` against the stub. `args` go before `-p` (for example `['--resume', id]`). */
export async function runGemini(options: HarnessRunOptions & { writeSettings?: boolean }): Promise<HarnessRunResult> {
  const env = harnessEnv(
    options.home,
    { GOOGLE_GEMINI_BASE_URL: options.stubUrl, GEMINI_API_KEY: STUB_API_KEY, ...options.env },
    options.isolationRoot,
  );
  if (options.writeSettings !== false) await writeGeminiSettings(geminiDir(env), geminiVersionOf(options.bin));
  return runProcess(options.bin, [...(options.args ?? []), '-m', GEMINI_STUB_MODEL, '-p', options.prompt], {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
  });
}

/** Adds a user group to settings.json's `hooks.<event>` (creating the file when missing). */
export function addGeminiUserHook(dir: string, event: string, command: string, timeoutMs = 10_000): Promise<string> {
  return addHookGroup(dir, event, {
    matcher: '',
    hooks: [{ name: 'my-notes', type: 'command', command, timeout: timeoutMs }],
  });
}

export const gemini: HarnessRig = {
  name: 'gemini',
  reconcileStates: ['active'],
  versionLine: '0.61.0',
  // Gemini CLI 0.26 and later read GEMINI_CLI_HOME in place of HOME; earlier ones use HOME, the same folder here.
  locations: (home) => ({ GEMINI_CLI_HOME: home }),
  fixture: {
    profile: 'gemini-v0_39_0',
    title: 'Explain the build steps of this project',
    // The registry folder of the working directory, and its hash (the chat records it as projectHash).
    placeholders: (cwd) => ({ GEMINI_PROJECT: slugify(path.basename(cwd)), GEMINI_HASH: projectHash(cwd) }),
    async files(dir, recorded, vars, content) {
      const id = recorded.session_id;
      const project = path.join(dir, 'tmp', '{{GEMINI_PROJECT}}');
      const chat = String(recorded.chat);
      const files: SessionFile[] = [
        {
          role: 'primary_transcript',
          name: 'transcript.jsonl',
          nativePath: `${vars.GEMINI_PROJECT}/chats/${chat}`,
          content: await content(path.join(project, 'chats', chat)),
        },
      ];
      for (const inside of [`chats/${id}`, `tool-outputs/session-${id}`, id]) {
        if (!existsSync(path.join(project, inside))) continue;
        for (const rel of await filesBelow(path.join(project, inside))) {
          files.push({
            role: 'session_companion',
            name: entryName(`${inside}/${rel}`),
            nativePath: `${vars.GEMINI_PROJECT}/${inside}/${rel}`,
            content: await content(path.join(project, inside, rel)),
          });
        }
      }
      return files;
    },
    sessionsIn: (home) => path.join(home, '.gemini', 'tmp'),
    async install(dir, { root, home, cwd }) {
      const vars = { ROOT: root, GEMINI_PROJECT: slugify(path.basename(cwd)), GEMINI_HASH: projectHash(cwd) };
      await installTree(path.join(dir, 'tmp'), gemini.fixture.sessionsIn!(home), vars);
      return vars;
    },
  },
  cli: {
    modelPath: GEMINI_MODEL_PATH,
    prepareHome: async (env, _stubUrl, bin) => void (await writeGeminiSettings(geminiDir(env), geminiVersionOf(bin))),
    prepareResume: async (env, _stubUrl, bin) => void (await writeGeminiSettings(geminiDir(env), geminiVersionOf(bin))),
    // The settings are in place already (prepareHome, prepareResume): the run reads the file as reconcile left it.
    run: (options) => runGemini({ ...options, writeSettings: false }),
    addUserHook: async (env, outFile) =>
      void (await addGeminiUserHook(geminiDir(env), 'SessionEnd', appendStdinCommand(outFile))),
    userHookSessions: (lines) =>
      lines.filter((e) => e.hook_event_name === 'SessionEnd').map((e) => e.session_id as string),
    resumeCommand: (id) => ['gemini', '--resume', id],
  },
};
