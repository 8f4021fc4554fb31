/**
 * OpenCode's test rig (see test/support/rigs.ts): `opencode run` against the stub's OpenAI Chat Completions API
 * through a stub provider in opencode.json (edited in place with jsonc-parser), its plugins (hooks live in plugin
 * files beside opencode.json), its plugin SDK seeded from the harness cache, and its recorded export.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { applyEdits, modify, parse as parseJsonc, type ParseError } from 'jsonc-parser';
import { writeBundle } from '@blue-agent/contract/bundle/index.js';
import {
  fixtureDir,
  readRecorded,
  shippedProfiles,
  substitute,
} from '../../../../../test/support/recorded-sessions.js';
import {
  harnessEnv,
  runProcess,
  STUB_API_KEY,
  STUB_MODEL,
  type HarnessRunOptions,
  type HarnessRunResult,
} from '../../../../../test/support/run-harness.js';
import type { HarnessRig } from '../../../../../test/support/rigs.js';

export const OPENCODE_PROVIDER_ID = 'bluestub';
/** What keeps OpenCode offline and quiet, for every process that runs it. */
export const OPENCODE_ENV = {
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
};

/** OpenCode's configuration folder for an env built by harnessEnv. */
export function opencodeConfigDir(env: Readonly<Record<string, string>>): string {
  return path.join(env.XDG_CONFIG_HOME!, 'opencode');
}

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
  const configDir = opencodeConfigDir(env);
  if (options.writeConfig !== false) await writeOpencodeProviderConfig(configDir, options.stubUrl);
  await seedOpencodeConfigDeps(configDir, options.configDeps ?? opencodeDepsFor(options.bin));
  return runProcess(options.bin, ['run', ...(options.args ?? []), options.prompt], {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
  });
}

/**
 * Makes `<config>/opencode.json` (or `.jsonc`) use the stub through `@ai-sdk/openai-compatible` (bundled in the CLI,
 * nothing is downloaded), with autoupdate and sharing off. Other settings and formatting are kept.
 */
export async function writeOpencodeProviderConfig(configDir: string, stubUrl: string): Promise<string> {
  await mkdir(configDir, { recursive: true });
  const jsonc = path.join(configDir, 'opencode.jsonc');
  const file = existsSync(jsonc) ? jsonc : path.join(configDir, 'opencode.json');
  const before = existsSync(file)
    ? await readFile(file, 'utf8')
    : '{\n  "$schema": "https://opencode.ai/config.json"\n}\n';
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
  const cached = JSON.parse(await readFile(path.join(depsDir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const pkgFile = path.join(configDir, 'package.json');
  const pkg = existsSync(pkgFile)
    ? (JSON.parse(await readFile(pkgFile, 'utf8')) as { dependencies?: Record<string, string> })
    : {};
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
    if (existsSync(path.join(dir, '.blue-agent-installed.json')) && existsSync(path.join(deps, 'node_modules')))
      return deps;
  }
  throw new Error(
    `no plugin dependencies found for ${bin}: install it with \`node scripts/install-harnesses.mjs --harness ` +
      `opencode\``,
  );
}

/**
 * Writes a user OpenCode plugin that appends `{type, properties, directory}` for every session event to `outFile`,
 * one JSON line each (synchronously, so nothing is lost when the process exits).
 */
export async function writeOpencodeUserPlugin(
  configDir: string,
  outFile: string,
  name = 'user-events',
): Promise<string> {
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

/** The OpenCode fixture export as a bundle (no harness run needed to make one). */
export async function opencodeFixtureBundle(root: string, out: string): Promise<{ bundle: string; sessionId: string }> {
  const fixture = await fixtureDir('opencode');
  const recorded = await readRecorded(fixture);
  const text = substitute(await readFile(path.join(fixture, 'export.json'), 'utf8'), {
    ROOT: root,
    ROOT_REL: root.replace(/^\//, ''),
  });
  await writeBundle(
    {
      harness: 'opencode',
      profile: opencode.fixture.profile,
      sessionId: recorded.session_id,
      capturedAtUnixMs: 1_700_000_000_000,
      files: [{ role: 'portable_export', name: 'export.json', content: Buffer.from(text) }],
    },
    out,
    { profiles: await shippedProfiles() },
  );
  return { bundle: out, sessionId: recorded.session_id };
}

export const opencode: HarnessRig = {
  name: 'opencode',
  reconcileStates: ['active'],
  versionLine: '1.18.33',
  fixture: {
    profile: 'opencode-v1_2_0',
    title: 'Add a README for the CLI',
    async files(dir, _recorded, _vars, content) {
      return [{ role: 'portable_export', name: 'export.json', content: await content(path.join(dir, 'export.json')) }];
    },
  },
  cli: {
    modelPath: '/v1/chat/completions',
    async prepareResume(env, stubUrl, bin) {
      const configDir = opencodeConfigDir(env);
      await writeOpencodeProviderConfig(configDir, stubUrl);
      await seedOpencodeConfigDeps(configDir, opencodeDepsFor(bin));
    },
    // The restore runs `opencode import`.
    resumeEnv: OPENCODE_ENV,
    run: runOpencode,
    addUserHook: async (env, outFile) => void (await writeOpencodeUserPlugin(opencodeConfigDir(env), outFile)),
    userHookSessions: (lines) =>
      lines.filter((e) => e.type === 'session.idle').map((e) => e.properties?.sessionID as string),
    resumeCommand: (id) => ['opencode', '--session', id],
  },
};
