/**
 * Runs one real, headless harness session offline: the CLI talks to the loopback model stub, and every place it
 * reads or writes (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_*) is inside an isolated home, so a run never sees the
 * developer's own configuration, credentials or proxies.
 *
 * Config files are written so that hooks can be added afterwards by anyone (a test by hand, or reconcile):
 *   - Codex: root keys (`model`, `model_provider`) go first in config.toml and the provider table last; hook tables
 *     appended later keep the file valid.
 *   - OpenCode: opencode.json is edited in place with jsonc-parser; hooks live in plugin files beside it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { applyEdits, modify, parse as parseJsonc, type ParseError } from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';

export type EnvOverrides = Readonly<Record<string, string | undefined>>;

export interface HarnessRunOptions {
  /** Absolute path of the CLI (see harnessBin). */
  bin: string;
  /** The isolated HOME; every harness location defaults to a folder inside it. */
  home: string;
  /** Working directory of the session. */
  cwd: string;
  /** Model stub base URL, `http://127.0.0.1:PORT` (see startModelStub). */
  stubUrl: string;
  prompt: string;
  /** Extra environment, applied last; `undefined` removes a variable. Locations must stay inside `isolationRoot`. */
  env?: EnvOverrides;
  /** Every harness location must lie inside this folder (default: `home`). */
  isolationRoot?: string;
  /** Hard limit; the whole process group is killed when it is reached. Default 60 s. */
  timeoutMs?: number;
  /** Extra arguments (see each runner for where they go). */
  args?: readonly string[];
}

export interface HarnessRunResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  timedOut: boolean;
  /** What ran, for failure messages. */
  command: string[];
  env: Record<string, string>;
}

/** The environment variables that locate a harness's files; all of them point inside the isolated home. */
export const LOCATION_VARIABLES = [
  'HOME',
  'CLAUDE_CONFIG_DIR',
  'CODEX_HOME',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'XDG_CACHE_HOME',
] as const;

export const STUB_API_KEY = 'sk-blue-agent-stub';
/** Codex reads the provider key from this variable (`env_key`). */
export const CODEX_STUB_KEY_VARIABLE = 'BLUE_AGENT_STUB_API_KEY';
export const CODEX_PROVIDER_ID = 'blue_stub';
export const OPENCODE_PROVIDER_ID = 'bluestub';
export const STUB_MODEL = 'stub-model';

/**
 * The environment for a harness run in `home`, built from nothing but PATH so the developer's own variables
 * (API keys, proxies, CLAUDE_*, CODEX_*) cannot leak in. The locations match what a Context built on the same HOME
 * resolves (makeTestHome), so reconcile edits the files the run reads; pass the TestHome's env as overrides so the
 * hooks the harness spawns see the same BLUE_AGENT_* locations too.
 */
export function harnessEnv(home: string, overrides: EnvOverrides = {}, isolationRoot: string = home): Record<string, string> {
  const user = safeUser();
  const base: Record<string, string | undefined> = {
    // The Node that runs the tests goes first: Codex's launcher is `#!/usr/bin/env node`.
    PATH: [path.dirname(process.execPath), process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(path.delimiter),
    HOME: home,
    USER: user,
    LOGNAME: user,
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    TMPDIR: process.env.TMPDIR,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    CODEX_HOME: path.join(home, '.codex'),
  };
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...base, ...overrides })) if (value !== undefined) env[key] = value;
  const nodeDir = path.dirname(process.execPath);
  if (!(env.PATH ?? '').split(path.delimiter).includes(nodeDir)) env.PATH = [nodeDir, env.PATH ?? ''].join(path.delimiter);
  const root = path.resolve(isolationRoot);
  for (const key of LOCATION_VARIABLES) {
    const value = env[key];
    if (value === undefined || !path.isAbsolute(value) || !isInside(root, path.resolve(value))) {
      throw new Error(`harness run: ${key}=${value ?? '(unset)'} is not inside the isolated folder ${root}`);
    }
  }
  return env;
}

/** The configuration folders of each harness for an env built by harnessEnv. */
export function harnessDirs(env: Readonly<Record<string, string>>) {
  return {
    claude: env.CLAUDE_CONFIG_DIR!,
    codex: env.CODEX_HOME!,
    opencodeConfig: path.join(env.XDG_CONFIG_HOME!, 'opencode'),
    opencodeData: path.join(env.XDG_DATA_HOME!, 'opencode'),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Claude Code

/** `claude -p PROMPT` against the stub. `args` go before `-p` (for example `['--resume', id]`). */
export async function runClaude(options: HarnessRunOptions): Promise<HarnessRunResult> {
  const env = harnessEnv(
    options.home,
    {
      ANTHROPIC_BASE_URL: options.stubUrl,
      ANTHROPIC_API_KEY: STUB_API_KEY,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      ...options.env,
    },
    options.isolationRoot,
  );
  await mkdir(env.CLAUDE_CONFIG_DIR!, { recursive: true });
  return runProcess(options.bin, [...(options.args ?? []), '-p', options.prompt], { env, cwd: options.cwd, timeoutMs: options.timeoutMs });
}

// ---------------------------------------------------------------------------------------------------------------
// Codex

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
  const env = harnessEnv(options.home, { [CODEX_STUB_KEY_VARIABLE]: STUB_API_KEY, ...options.env }, options.isolationRoot);
  const codexHome = env.CODEX_HOME!;
  if (options.writeConfig !== false) await writeCodexProviderConfig(codexHome, options.stubUrl);
  else await mkdir(codexHome, { recursive: true });
  const args = ['exec', ...(options.args ?? []), '--skip-git-repo-check'];
  if (options.bypassHookTrust === true) args.push('--dangerously-bypass-hook-trust');
  args.push(options.prompt);
  return runProcess(options.bin, args, { env, cwd: options.cwd, timeoutMs: options.timeoutMs });
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
    const rootKeys = [CODEX_ROOT_KEYS_BEGIN, `model = ${tomlString(STUB_MODEL)}`, `model_provider = ${tomlString(CODEX_PROVIDER_ID)}`, ''].join('\n');
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
  const parsed = parseToml(text) as { model_provider?: unknown; model_providers?: Record<string, { base_url?: unknown }> };
  if (parsed.model_provider !== CODEX_PROVIDER_ID || parsed.model_providers?.[CODEX_PROVIDER_ID]?.base_url !== baseUrl) {
    throw new Error(`writing the stub provider into ${file} did not give the expected settings:\n${text}`);
  }
  if (text !== before) await writeFile(file, text);
  return file;
}

/** Appends a user `[[hooks.<event>]]` group to config.toml (after the provider settings, so the file stays valid). */
export async function appendCodexHook(codexHome: string, event: string, command: string, timeoutSeconds = 3): Promise<string> {
  await mkdir(codexHome, { recursive: true });
  const file = path.join(codexHome, 'config.toml');
  const before = existsSync(file) ? await readFile(file, 'utf8') : '';
  const block = [`[[hooks.${event}]]`, `[[hooks.${event}.hooks]]`, 'type = "command"', `command = ${tomlString(command)}`, `timeout = ${timeoutSeconds}`, ''].join('\n');
  const text = `${before === '' ? '' : `${before.replace(/\n*$/, '\n')}\n`}${block}`;
  parseToml(text);
  await writeFile(file, text);
  return file;
}

// ---------------------------------------------------------------------------------------------------------------
// OpenCode

export interface OpencodeRunOptions extends HarnessRunOptions {
  /**
   * Folder with `package.json`, `package-lock.json` and `node_modules` holding `@opencode-ai/plugin` (the installer's
   * `runtimeDepsDir`). Seeded into the config folder so OpenCode does not install its plugin SDK from the network.
   * Default: found from `bin` (the install folder that holds it).
   */
  configDeps?: string;
  /** Write the stub provider into opencode.json first (default true). */
  writeConfig?: boolean;
}

/** `opencode run PROMPT` against the stub. `args` go right after `run` (for example `['--session', id]`). */
export async function runOpencode(options: OpencodeRunOptions): Promise<HarnessRunResult> {
  const env = harnessEnv(
    options.home,
    {
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      // models.dev is fetched at start-up; offline it only costs time and an error line.
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
      ...options.env,
    },
    options.isolationRoot,
  );
  const configDir = harnessDirs(env).opencodeConfig;
  if (options.writeConfig !== false) await writeOpencodeProviderConfig(configDir, options.stubUrl);
  await seedOpencodeConfigDeps(configDir, options.configDeps ?? opencodeDepsFor(options.bin));
  return runProcess(options.bin, ['run', ...(options.args ?? []), options.prompt], { env, cwd: options.cwd, timeoutMs: options.timeoutMs });
}

/**
 * Makes `<config>/opencode.json` (or `.jsonc`) use the stub through `@ai-sdk/openai-compatible` (bundled in the CLI,
 * nothing is downloaded), with autoupdate and sharing off. Other settings and formatting are kept.
 */
export async function writeOpencodeProviderConfig(configDir: string, stubUrl: string): Promise<string> {
  await mkdir(configDir, { recursive: true });
  const jsonc = path.join(configDir, 'opencode.jsonc');
  const file = existsSync(jsonc) ? jsonc : path.join(configDir, 'opencode.json');
  const before = existsSync(file) ? await readFile(file, 'utf8') : '{\n  "$schema": "https://opencode.ai/config.json"\n}\n';
  const provider = {
    npm: '@ai-sdk/openai-compatible',
    name: 'Blue agent model stub',
    options: { baseURL: `${stubUrl.replace(/\/+$/, '')}/v1`, apiKey: STUB_API_KEY },
    models: { [STUB_MODEL]: { name: 'Stub model' } },
  };
  const settings: [string[], unknown][] = [
    [['autoupdate'], false],
    [['share'], 'disabled'],
    [['model'], `${OPENCODE_PROVIDER_ID}/${STUB_MODEL}`],
    [['small_model'], `${OPENCODE_PROVIDER_ID}/${STUB_MODEL}`],
    [['provider', OPENCODE_PROVIDER_ID], provider],
  ];
  let text = before;
  for (const [at, value] of settings) {
    text = applyEdits(text, modify(text, at, value, { formattingOptions: { insertSpaces: true, tabSize: 2 } }));
  }
  const errors: ParseError[] = [];
  parseJsonc(text, errors, { allowTrailingComma: true });
  if (errors.length > 0) throw new Error(`${file} does not parse after adding the stub provider`);
  if (text !== before) await writeFile(file, text.endsWith('\n') ? text : `${text}\n`);
  return file;
}

/**
 * OpenCode installs `@opencode-ai/plugin` into its config folder at start-up unless `node_modules` exists and
 * package-lock.json lists every declared dependency. Seeding both from the harness cache keeps runs offline and
 * saves the ~10 s install. node_modules is a symlink to the cache: it is only read while the lock is in sync.
 */
export async function seedOpencodeConfigDeps(configDir: string, depsDir: string): Promise<void> {
  await mkdir(configDir, { recursive: true });
  const cached = JSON.parse(await readFile(path.join(depsDir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  const pkgFile = path.join(configDir, 'package.json');
  const pkg = existsSync(pkgFile) ? (JSON.parse(await readFile(pkgFile, 'utf8')) as { dependencies?: Record<string, string> }) : {};
  const deps = { ...pkg.dependencies, ...cached.dependencies };
  const extra = Object.keys(deps).filter((name) => cached.dependencies?.[name] === undefined);
  if (extra.length > 0) {
    throw new Error(`${pkgFile} declares ${extra.join(', ')}, which the cached plugin dependencies do not hold`);
  }
  await writeFile(pkgFile, `${JSON.stringify({ ...pkg, dependencies: deps }, null, 2)}\n`);
  await copyFile(path.join(depsDir, 'package-lock.json'), path.join(configDir, 'package-lock.json'));
  const nodeModules = path.join(configDir, 'node_modules');
  if (!existsSync(nodeModules)) await symlink(path.join(depsDir, 'node_modules'), nodeModules, 'dir');
}

/** The installer's run-time dependency folder for the OpenCode install that holds `bin`. */
export function opencodeDepsFor(bin: string): string {
  for (let dir = path.dirname(bin); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const deps = path.join(dir, 'config-deps');
    if (existsSync(path.join(dir, '.blue-agent-installed.json')) && existsSync(path.join(deps, 'node_modules'))) return deps;
  }
  throw new Error(`no plugin dependencies found for ${bin}: install it with \`node scripts/install-harnesses.mjs --harness opencode\``);
}

// ---------------------------------------------------------------------------------------------------------------
// User hooks written by hand (what a developer would have before blue-agent arrives)

/** A shell command that appends its stdin, then a newline, to `file`: one JSON payload per line. */
export function appendStdinCommand(file: string): string {
  const quoted = `'${file.replace(/'/g, `'\\''`)}'`;
  return `{ cat; echo; } >> ${quoted}`;
}

/** Adds a user `SessionEnd` group to Claude's settings.json (creating it when missing). */
export async function addClaudeUserHook(claudeDir: string, event: string, command: string, timeoutSeconds = 10): Promise<string> {
  await mkdir(claudeDir, { recursive: true });
  const file = path.join(claudeDir, 'settings.json');
  const settings = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>) : {};
  const hooks = (settings.hooks ?? {}) as Record<string, unknown[]>;
  hooks[event] = [...(hooks[event] ?? []), { matcher: '', hooks: [{ type: 'command', command, timeout: timeoutSeconds }] }];
  settings.hooks = hooks;
  await writeFile(file, `${JSON.stringify(settings, null, 2)}\n`);
  return file;
}

/**
 * Writes a user OpenCode plugin that appends `{type, properties, directory}` for every session event to `outFile`,
 * one JSON line each (synchronously, so nothing is lost when the process exits).
 */
export async function writeOpencodeUserPlugin(configDir: string, outFile: string, name = 'user-events'): Promise<string> {
  const dir = path.join(configDir, 'plugin');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${name}.js`);
  const source = [
    'import { appendFileSync } from "node:fs";',
    '',
    `const OUT = ${JSON.stringify(outFile)};`,
    '',
    'export const UserEvents = async ({ directory }) => ({',
    '  event: async ({ event }) => {',
    '    if (!event.type.startsWith("session.")) return;',
    '    appendFileSync(OUT, JSON.stringify({ type: event.type, properties: event.properties, directory }) + "\\n");',
    '  },',
    '});',
    '',
  ].join('\n');
  await writeFile(file, source);
  return file;
}

// ---------------------------------------------------------------------------------------------------------------
// Small helpers

/** Parses a JSON-lines file; a missing file is an empty list, a line that is not JSON is skipped. */
export async function readJsonLines(file: string): Promise<unknown[]> {
  if (!existsSync(file)) return [];
  const out: unknown[] = [];
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // A partial line from a writer that is still running: the next poll sees it whole.
    }
  }
  return out;
}

/** Polls `probe` until it returns something other than undefined, or throws after `timeoutMs`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 5_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** A readable account of a run, for assertion messages. */
export function describeRun(result: HarnessRunResult, extra = ''): string {
  const tail = (s: string) => (s.length > 4000 ? `…${s.slice(-4000)}` : s);
  return [
    `$ ${result.command.join(' ')}`,
    `exit ${result.exitCode}${result.signal ? ` (${result.signal})` : ''}${result.timedOut ? ' TIMED OUT' : ''} in ${result.durationMs} ms`,
    `--- stdout\n${tail(result.stdout)}`,
    `--- stderr\n${tail(result.stderr)}`,
    extra,
  ].join('\n');
}

/**
 * Spawns without a shell in its own process group, stdin closed (Codex would otherwise wait for more input), and
 * kills the whole group at the deadline: harnesses start helpers that would outlive a plain kill.
 */
export function runProcess(
  file: string,
  args: readonly string[],
  { env, cwd, timeoutMs = 60_000 }: { env: Record<string, string>; cwd: string; timeoutMs?: number | undefined },
): Promise<HarnessRunResult> {
  const started = Date.now();
  const command = [file, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const keep = (buf: string, chunk: Buffer) => (buf.length > 1_000_000 ? buf : buf + chunk.toString('utf8'));
    child.stdout!.on('data', (chunk: Buffer) => void (stdout = keep(stdout, chunk)));
    child.stderr!.on('data', (chunk: Buffer) => void (stderr = keep(stderr, chunk)));
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // The group is already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`could not start ${file}: ${error.message}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // A helper that inherited stdout can keep the pipes open after the CLI exits; wait briefly, then stop reading.
      const finish = () => {
        child.stdout!.destroy();
        child.stderr!.destroy();
        resolve({ exitCode: code, signal, stdout, stderr, durationMs: Date.now() - started, timedOut, command, env });
      };
      if (child.stdout!.readableEnded && child.stderr!.readableEnded) return finish();
      const grace = setTimeout(finish, 2_000);
      let open = 2;
      const onEnd = () => {
        if (--open === 0) {
          clearTimeout(grace);
          finish();
        }
      };
      if (child.stdout!.readableEnded) open--;
      else child.stdout!.once('end', onEnd);
      if (child.stderr!.readableEnded) open--;
      else child.stderr!.once('end', onEnd);
      if (open === 0) {
        clearTimeout(grace);
        finish();
      }
    });
  });
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

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'user';
  }
}

