/**
 * Codex's test rig (see test/support/rigs.ts): `codex exec` against the stub's OpenAI Responses API through a stub
 * model provider in config.toml, its `[[hooks.*]]` tables and hook trust, its rollouts under CODEX_HOME, and its
 * recorded fixture.
 *
 * config.toml is written so that hooks can be added afterwards by anyone (a test by hand, or reconcile): root keys
 * (`model`, `model_provider`) go first and the provider table last; hook tables appended later keep the file valid.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { installTree } from '../../../../../test/support/recorded-sessions.js';
import {
  appendStdinCommand,
  harnessEnv,
  runProcess,
  STUB_API_KEY,
  STUB_MODEL,
  type HarnessRunOptions,
  type HarnessRunResult,
} from '../../../../../test/support/run-harness.js';
import type { HarnessRig } from '../../../../../test/support/rigs.js';

/** Codex reads the provider key from this variable (`env_key`). */
export const CODEX_STUB_KEY_VARIABLE = 'BLUE_AGENT_STUB_API_KEY';
export const CODEX_PROVIDER_ID = 'blue_stub';

/** Codex's home for an env built by harnessEnv. */
export function codexHome(env: Readonly<Record<string, string>>): string {
  return env.CODEX_HOME!;
}

export interface CodexRunOptions extends HarnessRunOptions {
  /** Pass `--dangerously-bypass-hook-trust`: without it, hooks the user has not trusted are skipped silently. */
  bypassHookTrust?: boolean;
  /** Write the stub provider into config.toml first (default true). */
  writeConfig?: boolean;
}

/**
 * `codex exec --skip-git-repo-check PROMPT` against the stub. `args` go right after `exec`
 * (for example `['resume', id]`).
 */
export async function runCodex(options: CodexRunOptions): Promise<HarnessRunResult> {
  const env = harnessEnv(
    options.home,
    { [CODEX_STUB_KEY_VARIABLE]: STUB_API_KEY, ...options.env },
    options.isolationRoot,
  );
  const codexHome = env.CODEX_HOME!;
  if (options.writeConfig !== false) await writeCodexProviderConfig(codexHome, options.stubUrl);
  else await mkdir(codexHome, { recursive: true });
  const args = ['exec', ...(options.args ?? []), '--skip-git-repo-check'];
  if (options.bypassHookTrust === true) args.push('--dangerously-bypass-hook-trust');
  args.push(options.prompt);
  return runProcess(options.bin, args, {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
    onSpawn: options.onSpawn,
  });
}

const CODEX_ROOT_KEYS_BEGIN = '# blue-agent test: model stub provider (root keys)';

/**
 * Makes `$CODEX_HOME/config.toml` use the stub provider, keeping everything else in the file. Root keys must come
 * before the first table in TOML, so `model` / `model_provider` are written at the top and the provider table at
 * the end; a later run with another stub port only rewrites the `base_url` line. The result is parsed to prove it.
 */
export async function writeCodexProviderConfig(codexHome: string, stubUrl: string): Promise<string> {
  await mkdir(codexHome, { recursive: true });
  const file = path.join(codexHome, 'config.toml');
  const before = existsSync(file) ? await readFile(file, 'utf8') : '';
  const baseUrl = `${stubUrl.replace(/\/+$/, '')}/v1`;
  let text = before;
  const header = `[model_providers.${CODEX_PROVIDER_ID}]`;
  if (!text.includes(CODEX_ROOT_KEYS_BEGIN)) {
    const rootKeys = [
      CODEX_ROOT_KEYS_BEGIN,
      `model = ${tomlString(STUB_MODEL)}`,
      `model_provider = ${tomlString(CODEX_PROVIDER_ID)}`,
      '',
    ].join('\n');
    // Drop root keys the stub must own; a user's own `model` would otherwise be defined twice.
    text = removeRootKeys(text, ['model', 'model_provider']);
    text = `${rootKeys}\n${text}`;
  }
  const tableStart = text.indexOf(`\n${header}\n`);
  if (tableStart < 0) {
    const table = [
      header,
      `name = "Blue agent model stub"`,
      `base_url = ${tomlString(baseUrl)}`,
      `wire_api = "responses"`,
      `env_key = ${tomlString(CODEX_STUB_KEY_VARIABLE)}`,
      // One attempt each: a stub that does not answer should fail the test fast, not after back-off.
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      '',
    ].join('\n');
    text = `${text.replace(/\n*$/, '\n')}\n${table}`;
  } else {
    const end = nextTableStart(text, tableStart + header.length + 2);
    const body = text.slice(tableStart, end).replace(/^base_url = .*$/m, `base_url = ${tomlString(baseUrl)}`);
    text = text.slice(0, tableStart) + body + text.slice(end);
  }
  const parsed = parseToml(text) as {
    model_provider?: unknown;
    model_providers?: Record<string, { base_url?: unknown }>;
  };
  if (
    parsed.model_provider !== CODEX_PROVIDER_ID ||
    parsed.model_providers?.[CODEX_PROVIDER_ID]?.base_url !== baseUrl
  ) {
    throw new Error(`writing the stub provider into ${file} did not give the expected settings:\n${text}`);
  }
  if (text !== before) await writeFile(file, text);
  return file;
}

/** Appends a user `[[hooks.<event>]]` group to config.toml (after the provider settings, so the file stays valid). */
export async function appendCodexHook(
  codexHome: string,
  event: string,
  command: string,
  timeoutSeconds = 3,
): Promise<string> {
  await mkdir(codexHome, { recursive: true });
  const file = path.join(codexHome, 'config.toml');
  const before = existsSync(file) ? await readFile(file, 'utf8') : '';
  const block = [
    `[[hooks.${event}]]`,
    `[[hooks.${event}.hooks]]`,
    'type = "command"',
    `command = ${tomlString(command)}`,
    `timeout = ${timeoutSeconds}`,
    '',
  ].join('\n');
  const text = `${before === '' ? '' : `${before.replace(/\n*$/, '\n')}\n`}${block}`;
  parseToml(text);
  await writeFile(file, text);
  return file;
}

function tomlString(value: string): string {
  // JSON string escapes are all valid TOML basic-string escapes.
  return JSON.stringify(value);
}

const TABLE_HEADER = /^[ \t]*\[\[?[A-Za-z0-9_."' -]+\]\]?[ \t]*(?:#.*)?$/gm;

/** Removes `key = ...` lines that sit before the first table header (single-line values only). */
function removeRootKeys(text: string, keys: readonly string[]): string {
  const firstTable = nextTableStart(text, 0);
  const pattern = new RegExp(`^[ \\t]*(?:${keys.join('|')})[ \\t]*=.*(?:\\n|$)`, 'gm');
  return text.slice(0, firstTable).replace(pattern, '') + text.slice(firstTable);
}

function nextTableStart(text: string, from: number): number {
  const re = new RegExp(TABLE_HEADER.source, 'gm');
  re.lastIndex = from;
  const match = re.exec(text);
  return match === null ? text.length : match.index;
}

export const codex: HarnessRig = {
  name: 'codex',
  // A hook is not run until the user trusts it; reconcile says so.
  reconcileStates: ['active', 'awaiting_trust'],
  versionLine: 'codex-cli 0.171.0',
  locations: (home) => ({ CODEX_HOME: path.join(home, '.codex') }),
  fixture: {
    profile: 'codex-v0_145_0',
    // None: the export's heading falls back to the session id.
    title: undefined,
    async files(dir, recorded, _vars, content) {
      const rel = String(recorded.rollout);
      return [
        {
          role: 'rollout',
          name: 'rollout.jsonl',
          nativePath: rel,
          content: await content(path.join(dir, 'sessions', rel)),
        },
      ];
    },
    sessionsIn: (home) => path.join(home, '.codex', 'sessions'),
    async seedIndexes(home) {
      await mkdir(path.join(home, '.codex'), { recursive: true });
      await writeFile(
        path.join(home, '.codex', 'session_index.jsonl'),
        '{"id":"x","thread_name":"y","updated_at":"z"}\n',
      );
    },
    async install(dir, { root, home }) {
      const vars = { ROOT: root };
      await installTree(path.join(dir, 'sessions'), codex.fixture.sessionsIn!(home), vars);
      return vars;
    },
  },
  cli: {
    modelPath: '/v1/responses',
    prepareHome: async (env, stubUrl) => void (await writeCodexProviderConfig(codexHome(env), stubUrl)),
    prepareResume: async (env, stubUrl) => void (await writeCodexProviderConfig(codexHome(env), stubUrl)),
    // The provider is in config.toml already (prepareHome, prepareResume): the run reads the file as reconcile left it.
    run: (options) => runCodex({ ...options, bypassHookTrust: options.trustHooks === true, writeConfig: false }),
    addUserHook: async (env, outFile) =>
      void (await appendCodexHook(codexHome(env), 'SessionEnd', appendStdinCommand(outFile), 3)),
    userHookSessions: (lines) =>
      lines.filter((e) => e.hook_event_name === 'SessionEnd').map((e) => e.session_id as string),
    resumeCommand: (id) => ['codex', 'resume', id],
  },
};
