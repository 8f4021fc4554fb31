/**
 * Kimi's test rig (see test/support/rigs.ts). Its CLI is Kimi Code (npm @moonshot-ai/kimi-code): `cli` runs it
 * against the stub's OpenAI Chat Completions API through a stub provider in its config.toml, interactively in a
 * pseudo-terminal (its session end fires only when an interactive session closes); `fixture` is its recording
 * (fixtures/sessions/kimi/<Kimi Code version>/). `olderFixtures` and `certifyOnFixtures` are the Python kimi-cli's
 * (profile kimi-v1_28_0, certified on fixtures that follow its source: PyPI is unreachable here), whose captured
 * sessions must still verify and restore.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { kimiWorkDirHash } from '../../../src/harnesses/kimi/legacy/session.js';
import { encodeState, sanitizeKimiCodeState } from '../../../src/harnesses/kimi/state.js';
import { kimiCodeWorkDirKey } from '../../../src/harnesses/kimi/workdir.js';
import type { SessionFile } from '../../../src/harnesses/types.js';
import { reconcile } from '../../../src/reconcile/index.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import {
  agentOn,
  captured,
  check,
  drained,
  intervalFor,
  pathWith,
  Recorder,
  restoredOnB,
  shell,
  startMachines,
  userHookSessions,
  type Machines,
  type Target,
  type TargetResult,
} from '../../../../../test/support/certify.js';
import { entryName, filesBelow, installTree } from '../../../../../test/support/recorded-sessions.js';
import { fixtureBundle } from '../../../../../test/support/restore-homes.js';
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
import type { FixtureRig, HarnessRig } from '../../../../../test/support/rigs.js';

/** The kimi-cli recording the fixture is (Kimi Code's recordings sit beside it). */
export const KIMI_CLI_FIXTURE_VERSION = '1.49.0';
export const KIMI_MODEL_PATH = '/v1/chat/completions';

/** The sessions Kimi's SessionEnd hook payloads speak of. */
function kimiHookSessions(lines: readonly Record<string, any>[]): string[] {
  return lines.filter((e) => e.hook_event_name === 'SessionEnd').map((e) => e.session_id as string);
}

/**
 * Kimi, from fixtures that follow its source: the session folder and kimi.json as Kimi writes them, the hook
 * commands run the way Kimi runs them, the real capture, drain and restore; no CLI to resume with.
 */
async function certifyKimiFixtures(target: Target): Promise<TargetResult> {
  const rec = new Recorder(target);
  const { version } = target;
  let interval: Interval | undefined;
  let r: Machines | undefined;
  try {
    let bin = '';
    await rec.step('install', async () => {
      interval = await intervalFor('kimi', version);
      rec.result.profile = interval.profile;
      r = await startMachines('kimi');
      // No Kimi CLI can be installed here: a stand-in that prints Kimi's `--version` line, for detection only.
      bin = path.join(r.a.root, 'bin', 'kimi');
      await mkdir(path.dirname(bin), { recursive: true });
      await writeFile(bin, `#!/bin/sh\necho "kimi, version ${version}"\n`);
      await chmod(bin, 0o755);
      return 'fixtures (no CLI)';
    });
    if (r === undefined || interval === undefined) return rec.result;
    const rr = r;
    const share = path.join(rr.a.home, '.kimi');
    const config = path.join(share, 'config.toml');
    let sessionId = '';
    let cwd = '';

    await rec.step('reconcile', async () => {
      await mkdir(share, { recursive: true });
      await writeFile(
        config,
        `default_model = "kimi-k2"\n\n[[hooks]]\nevent = "SessionEnd"\nmatcher = ""\ncommand = ` +
          `${JSON.stringify(appendStdinCommand(rr.userOut))}\ntimeout = 5\n`,
      );
      const report = (await reconcile(agentOn(rr.a, bin), { dryRun: false, harnesses: ['kimi'] })).harnesses[0]!;
      check(report.state === 'active', () => `reconcile: ${report.state}: ${report.reason}`);
      check(
        report.version === version && report.profile === interval!.profile,
        () => `reconcile read ${report.version} / ${report.profile}`,
      );
      const hooks =
        (
          parseToml(await readFile(config, 'utf8')) as {
            hooks?: { event: string; command: string; timeout?: number }[];
          }
        ).hooks ?? [];
      const sessionEnd = hooks.filter((h) => h.event === 'SessionEnd');
      check(
        sessionEnd.length === 2,
        () => `config.toml holds ${sessionEnd.length} SessionEnd hooks, expected the user's and the managed one`,
      );
      // The fixture session, as Kimi 1.49 leaves it when a session ends.
      const fixture = await fixtureBundle('kimi', rr.a, path.join(rr.a.root, 'unused.bundle'), KIMI_CLI_FIXTURE);
      sessionId = fixture.sessionId;
      cwd = fixture.cwd;
      // Kimi runs each matching hook with `sh -c COMMAND`, the payload as JSON on stdin (kimi_cli/hooks).
      const payload = JSON.stringify({ hook_event_name: 'SessionEnd', session_id: sessionId, cwd, reason: 'exit' });
      for (const hook of sessionEnd) {
        const code = await shell(hook.command, payload, { ...rr.a.env, PATH: pathWith(bin) }, cwd);
        check(code === 0, () => `hook ${hook.command} exited ${code}`);
      }
      const sessions = await userHookSessions(rr, kimiHookSessions);
      check(sessions.includes(sessionId), () => `the user hook saw ${sessions.join(', ')}`);
      return 'active; managed + user hook run as Kimi runs them';
    });

    await rec.step('session', async () => {
      check(
        existsSync(path.join(share, 'sessions', kimiWorkDirHash(cwd), sessionId, 'context.jsonl')),
        () => 'the fixture session folder is missing',
      );
      return `fixture ${version}`;
    });

    await rec.step('capture', async () => {
      const id = await captured(rr, 'kimi');
      check(id === sessionId, () => `captured ${id}, expected ${sessionId}`);
      return sessionId;
    });

    let upload: { id: string; native_session_id: string } | undefined;
    await rec.step('drain', async () => {
      upload = await drained(rr, 'kimi', sessionId);
      return upload.id;
    });

    await rec.step('restore', async () => {
      const binB = path.join(rr.b.root, 'bin', 'kimi');
      await mkdir(path.dirname(binB), { recursive: true });
      await writeFile(binB, `#!/bin/sh\necho "kimi, version ${version}"\n`);
      await chmod(binB, 0o755);
      const shareB = path.join(rr.b.home, '.kimi');
      await mkdir(shareB, { recursive: true });
      await writeFile(
        path.join(shareB, 'kimi.json'),
        '{"work_dirs": [{"path": "/srv/other", "kaos": "local", "last_session_id": "keep-me"}]}\n',
      );
      const command = await restoredOnB(rr, upload!.id, binB);
      check(
        JSON.stringify(command) === JSON.stringify(['kimi', '--session', sessionId]),
        () => `resume command ${JSON.stringify(command)}`,
      );
      const folder = path.join(shareB, 'sessions', kimiWorkDirHash(rr.destination), sessionId);
      check(
        existsSync(path.join(folder, 'context.jsonl')) && existsSync(path.join(folder, 'wire.jsonl')),
        () => `${folder} lacks context.jsonl / wire.jsonl`,
      );
      const index = JSON.parse(await readFile(path.join(shareB, 'kimi.json'), 'utf8')) as {
        work_dirs: { path: string; last_session_id?: string }[];
      };
      check(
        index.work_dirs.some((w) => w.path === '/srv/other' && w.last_session_id === 'keep-me'),
        () => 'the user work_dirs entry was lost',
      );
      check(
        index.work_dirs.some((w) => w.path === rr.destination && w.last_session_id === sessionId),
        () => 'no work_dirs entry for the destination',
      );
      return command.join(' ');
    });
    rec.notApplicable('resume', 'Kimi CLI cannot be installed here (PyPI unreachable): no native resume run');
    return rec.result;
  } finally {
    rec.finish();
    await r?.close();
  }
}

/** kimi-cli's session, built from its source (fixtures/sessions/kimi/1.49.0/). */
export const KIMI_CLI_FIXTURE: FixtureRig = {
  version: KIMI_CLI_FIXTURE_VERSION,
  profile: 'kimi-v1_28_0',
  title: 'Refactor the config loader so it reads TOML only',
  // The session folder's parent: the hash of the working directory.
  placeholders: (cwd) => ({ WORKDIR_MD5: kimiWorkDirHash(cwd) }),
  async files(dir, recorded, vars, content) {
    const id = recorded.session_id;
    const sessionDir = path.join(dir, 'share', 'sessions', '{{WORKDIR_MD5}}', id);
    const sessionRel = `sessions/${vars.WORKDIR_MD5}/${id}`;
    const files: SessionFile[] = [];
    files.push({
      role: 'agent_wire_history',
      name: 'wire.jsonl',
      nativePath: `${sessionRel}/wire.jsonl`,
      content: await content(path.join(sessionDir, 'wire.jsonl')),
    });
    files.push({
      role: 'kimi_state',
      name: 'state.json',
      nativePath: `${sessionRel}/state.json`,
      content: await content(path.join(sessionDir, 'state.json')),
    });
    for (const rel of await filesBelow(sessionDir)) {
      if (rel === 'wire.jsonl' || rel === 'state.json' || rel.startsWith('tasks/')) continue;
      files.push({
        role: 'session_state',
        name: entryName(rel),
        nativePath: `${sessionRel}/${rel}`,
        content: await content(path.join(sessionDir, rel)),
      });
    }
    return files;
  },
  sessionsIn: (home) => path.join(home, '.kimi'),
  async seedIndexes(home) {
    await mkdir(path.join(home, '.kimi'), { recursive: true });
    await writeFile(path.join(home, '.kimi', 'kimi.json'), '{"work_dirs": []}\n');
  },
  async install(dir, { root, home, cwd }) {
    const vars = { ROOT: root, WORKDIR_MD5: kimiWorkDirHash(cwd) };
    await installTree(path.join(dir, 'share'), KIMI_CLI_FIXTURE.sessionsIn!(home), vars);
    return vars;
  },
};

/** A line of another session in Kimi Code's session index, which a restore keeps. */
export const KIMI_INDEX_LINE =
  '{"sessionId":"session_00000000-0000-4000-8000-000000000000",' +
  '"sessionDir":"/srv/other/session_00000000-0000-4000-8000-000000000000","workDir":"/srv/other"}\n';

export const kimi: HarnessRig = {
  name: 'kimi',
  reconcileStates: ['active'],
  versionLine: '2.1.0',
  locations: (home) => ({ KIMI_CODE_HOME: path.join(home, '.kimi-code'), KIMI_SHARE_DIR: path.join(home, '.kimi') }),
  fixture: {
    profile: 'kimi-v2_0_2',
    title: 'Explain the build steps of this project',
    // The session folder's parent: the work-dir key.
    placeholders: (cwd) => ({ KIMI_WORKDIR: kimiCodeWorkDirKey(cwd) }),
    async files(dir, recorded, vars, content) {
      const id = recorded.session_id;
      const sessionDir = path.join(dir, 'sessions', '{{KIMI_WORKDIR}}', id);
      const sessionRel = `${vars.KIMI_WORKDIR}/${id}`;
      // The state as capture makes it: sanitised by the allow-list.
      const state = encodeState(
        sanitizeKimiCodeState(JSON.parse(new TextDecoder().decode(await content(path.join(sessionDir, 'state.json'))))),
      );
      const files: SessionFile[] = [
        {
          role: 'agent_wire_history',
          name: 'wire.jsonl',
          nativePath: `${sessionRel}/agents/main/wire.jsonl`,
          content: await content(path.join(sessionDir, 'agents', 'main', 'wire.jsonl')),
        },
        { role: 'kimi_state', name: 'state.json', nativePath: `${sessionRel}/state.json`, content: state },
      ];
      for (const rel of await filesBelow(sessionDir)) {
        if (rel === 'agents/main/wire.jsonl' || rel === 'state.json') continue;
        files.push({
          role: 'session_state',
          name: entryName(rel),
          nativePath: `${sessionRel}/${rel}`,
          content: await content(path.join(sessionDir, rel)),
        });
      }
      return files;
    },
    sessionsIn: (home) => path.join(home, '.kimi-code', 'sessions'),
    async seedIndexes(home) {
      await mkdir(path.join(home, '.kimi-code'), { recursive: true });
      await writeFile(path.join(home, '.kimi-code', 'session_index.jsonl'), KIMI_INDEX_LINE);
    },
    async install(dir, { root, home, cwd }) {
      const vars = { ROOT: root, KIMI_WORKDIR: kimiCodeWorkDirKey(cwd) };
      await installTree(path.join(dir, 'sessions'), kimi.fixture.sessionsIn!(home), vars);
      return vars;
    },
  },
  olderFixtures: [KIMI_CLI_FIXTURE],
  certifyOnFixtures: certifyKimiFixtures,
  cli: {
    modelPath: KIMI_MODEL_PATH,
    prepareHome: async (env, stubUrl) => void (await writeKimiCodeConfig(kimiCodeHome(env), stubUrl)),
    prepareResume: async (env, stubUrl) => void (await writeKimiCodeConfig(kimiCodeHome(env), stubUrl)),
    run: (options) => runKimi({ ...options, writeConfig: false }),
    addUserHook: async (env, outFile) =>
      void (await appendKimiHook(kimiCodeHome(env), 'SessionEnd', appendStdinCommand(outFile))),
    userHookSessions: (lines) =>
      lines.filter((e) => e.hook_event_name === 'SessionEnd').map((e) => e.session_id as string),
    resumeCommand: (id) => ['kimi', '--session', id],
  },
};

// ---------------------------------------------------------------------------------------------------------------
// Kimi Code

const STUB_PROVIDER = 'blue_stub';
const KIMI_QUIET = { KIMI_DISABLE_TELEMETRY: '1', KIMI_CODE_NO_AUTO_UPDATE: '1' };

/** Kimi Code's home for an env built by harnessEnv. */
export function kimiCodeHome(env: Readonly<Record<string, string>>): string {
  return env.KIMI_CODE_HOME!;
}

/**
 * Makes `<home>/config.toml` use the stub (a provider of type `kimi`, which speaks OpenAI Chat Completions, and a
 * model on it), keeping everything else in the file: the root key goes first, the tables at the end; a later run
 * with another stub only rewrites the `base_url` line.
 */
export async function writeKimiCodeConfig(home: string, stubUrl: string): Promise<string> {
  await mkdir(home, { recursive: true });
  const file = path.join(home, 'config.toml');
  const before = existsSync(file) ? await readFile(file, 'utf8') : '';
  const baseUrl = `${stubUrl.replace(/\/+$/, '')}/v1`;
  let text = before;
  if (!/^default_model\s*=/m.test(text)) text = `default_model = "${STUB_PROVIDER}"\n\n${text}`;
  if (!text.includes(`[providers.${STUB_PROVIDER}]`)) {
    text =
      `${text.replace(/\n*$/, '\n')}\n[providers.${STUB_PROVIDER}]\ntype = "kimi"\nbase_url = ` +
      `${JSON.stringify(baseUrl)}\napi_key = "${STUB_API_KEY}"\n\n[models.${STUB_PROVIDER}]\nprovider = "` +
      `${STUB_PROVIDER}"\nmodel = "${STUB_MODEL}"\nmax_context_size = 128000\n`;
  } else {
    text = text.replace(/^base_url = .*$/m, `base_url = ${JSON.stringify(baseUrl)}`);
  }
  const parsed = parseToml(text) as { providers?: Record<string, { base_url?: string }> };
  if (parsed.providers?.[STUB_PROVIDER]?.base_url !== baseUrl)
    throw new Error(`writing the stub provider into ${file} did not give the expected settings:\n${text}`);
  if (text !== before) await writeFile(file, text);
  return file;
}

/** Appends a user `[[hooks]]` table (after the provider tables, so the file stays valid). */
export async function appendKimiHook(home: string, event: string, command: string, timeout = 10): Promise<string> {
  await mkdir(home, { recursive: true });
  const file = path.join(home, 'config.toml');
  const before = existsSync(file) ? await readFile(file, 'utf8') : '';
  const text =
    `${before === '' ? '' : `${before.replace(/\n*$/, '\n')}\n`}[[hooks]]\nevent = "${event}"\nmatcher ` +
    `= ""\ncommand = ${JSON.stringify(command)}\ntimeout = ${timeout}\n`;
  parseToml(text);
  await writeFile(file, text);
  return file;
}

function kimiEnv(options: HarnessRunOptions): Record<string, string> {
  return harnessEnv(options.home, { ...KIMI_QUIET, ...options.env }, options.isolationRoot);
}

/** `kimi -p PROMPT`, headless (no SessionEnd from 0.33; Stop fires). `args` go before `-p`. */
export async function runKimiHeadless(
  options: HarnessRunOptions & { writeConfig?: boolean },
): Promise<HarnessRunResult> {
  const env = kimiEnv(options);
  if (options.writeConfig !== false) await writeKimiCodeConfig(kimiCodeHome(env), options.stubUrl);
  return runProcess(options.bin, [...(options.args ?? []), '-p', options.prompt], {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs,
  });
}

/** True once a wire log of the home holds the user's `prompt` and, after it, the end of that turn's usage. */
async function answered(home: string, prompt: string): Promise<true | undefined> {
  const sessions = path.join(home, 'sessions');
  for (const key of await readdir(sessions).catch(() => [] as string[])) {
    for (const id of await readdir(path.join(sessions, key)).catch(() => [] as string[])) {
      const records = (await readJsonLines(path.join(sessions, key, id, 'agents', 'main', 'wire.jsonl'))) as {
        type?: string;
        usageScope?: string;
        input?: { text?: string }[];
      }[];
      const asked = records.findIndex(
        (r) => r.type === 'turn.prompt' && r.input?.some((p) => p.text === prompt) === true,
      );
      if (asked >= 0 && records.slice(asked + 1).some((r) => r.type === 'usage.record' && r.usageScope === 'turn'))
        return true;
    }
  }
  return undefined;
}

/** What an interactive run may do besides its one prompt. */
export interface KimiInteractive {
  /** Prompts typed after the first, each once the one before was answered. */
  more?: readonly string[];
  /** Called after each answer, while Kimi still runs (its index: 0 for the first prompt). */
  onAnswered?: (index: number) => Promise<void>;
}

/**
 * An interactive session in a pseudo-terminal: trust the folder when asked (some versions preselect "Don't trust"),
 * type the prompt, Enter, wait for the answer (then the `more` prompts the same way), then `/exit` (which fires
 * SessionEnd). `args` go first (for example `['--session', id]`). What was on screen is the result's stdout.
 */
export async function runKimi(
  options: HarnessRunOptions & { writeConfig?: boolean } & KimiInteractive,
): Promise<HarnessRunResult> {
  const env = kimiEnv(options);
  const home = kimiCodeHome(env);
  if (options.writeConfig !== false) await writeKimiCodeConfig(home, options.stubUrl);
  const pty = startPty(options.bin, options.args ?? [], {
    env,
    cwd: options.cwd,
    timeoutMs: options.timeoutMs ?? 120_000,
  });
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    await pty.waitFor(
      'the trust question or the input box',
      (s) => s.includes('Trust this folder?') || s.includes('context: '),
      60_000,
    );
    if (pty.screen().includes('Trust this folder?')) {
      await pause(300);
      if (pty.screen().includes("❯ Don't trust")) {
        pty.press('\x1b[A');
        await pty.waitFor('the cursor on Trust', (s) => s.includes('❯ Trust this folder'), 5_000);
      }
      pty.press('\r');
      await pty.waitFor(
        'the input box after trusting',
        (s) => !s.includes('Trust this folder?') && s.includes('context: '),
        30_000,
      );
    }
    for (const [index, prompt] of [options.prompt, ...(options.more ?? [])].entries()) {
      await pause(500);
      await pty.type(prompt);
      await pty.waitFor('the prompt typed', (s) => s.includes(prompt.slice(0, 60)), 10_000);
      await pause(500);
      pty.press('\r');
      const done = () => answered(home, prompt);
      if ((await waitFor('the answer', done, 8_000, 100).catch(() => undefined)) === undefined) {
        // An Enter taken for a new line inside the prompt: once more.
        pty.press('\x7f');
        await pause(500);
        pty.press('\r');
        await waitFor('the answer', done, 60_000, 100);
      }
      await pause(1000);
      await options.onAnswered?.(index);
    }
    await pty.type('/exit');
    await pause(400);
    pty.press('\r');
    for (let i = 0; i < 2 && !(await pty.waitUntil(() => pty.exited(), 15_000)); i++) pty.press('\r');
  } catch (error) {
    pty.kill();
    const result = await pty.done();
    return { ...result, exitCode: result.exitCode === 0 ? 1 : result.exitCode, stderr: (error as Error).message };
  }
  return pty.done();
}
