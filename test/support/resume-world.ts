/**
 * For the resume tests: a real Control API on loopback holding real bundles, a temporary HOME with a fake harness
 * binary on PATH, the built CLI run in a real pseudo-terminal (keys typed, screen read back), and snapshots of every
 * file under the test's root to prove that nothing was written.
 */
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn as ptySpawn, type IPty } from '@lydell/node-pty';
import { writeBundle } from '../../packages/contract/src/bundle/index.js';
import { loadProfiles } from '../../packages/contract/src/profiles/index.js';
import { startTestServer, type TestServer, type TestUser } from './control-server.js';
import { ENTRY, claudeProjectKey, runCli, type CliResult } from './cli-process.js';
import { agentRoot, makeTestHome, type TestHome } from './context.js';

export { claudeProjectKey };

export interface World {
  server: TestServer;
  home: TestHome;
  /** Folder of fake binaries on PATH. */
  bin: string;
  /** The project directory sessions were recorded in (it exists on this machine). */
  project: string;
  /** Another existing directory. */
  elsewhere: string;
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startWorld(
  options: { claudeVersion?: string | null; policy?: Record<string, unknown> } = {},
): Promise<World> {
  const server = await startTestServer({ startAt: Date.now() }); // resume judges expiry by the machine's own clock
  const home = await makeTestHome();
  const bin = path.join(home.root, 'bin');
  const project = path.join(home.root, 'work', 'project');
  const elsewhere = path.join(home.root, 'work', 'elsewhere');
  await mkdir(bin, { recursive: true });
  await mkdir(project, { recursive: true });
  await mkdir(elsewhere, { recursive: true });
  await mkdir(path.join(home.root, 'tmp'), { recursive: true });
  if (options.claudeVersion !== null) await fakeClaude(bin, options.claudeVersion ?? '2.1.197');
  await server.server.store.publishPolicy(options.policy ?? {}, server.clock.now());
  const env: Record<string, string> = {
    ...home.env,
    PATH: `${bin}:/usr/bin:/bin`,
    TMPDIR: path.join(home.root, 'tmp'),
    BLUE_AGENT_CONTROL_URL: server.url,
    BLUE_AGENT_TOKEN: server.alice.token,
    TERM: 'xterm-256color',
    LANG: 'C.UTF-8',
    GIT_CONFIG_NOSYSTEM: '1',
    // Node's own module cache would otherwise land in TMPDIR, which the snapshots watch.
    NODE_DISABLE_COMPILE_CACHE: '1',
  };
  return {
    server,
    home,
    bin,
    project,
    elsewhere,
    env,
    close: async () => {
      await server.close();
      await home.cleanup();
    },
  };
}

/** A stand-in for the `claude` binary: prints its version, and on resume says what it was given, then exits 7. */
export async function fakeClaude(bin: string, version: string): Promise<string> {
  const file = path.join(bin, 'claude');
  await writeFile(
    file,
    `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "${version} (Claude Code)"; exit 0; fi\necho "FAKE-CLAUDE ` +
      `args=$* cwd=$(pwd)"\nexit 7\n`,
  );
  await chmod(file, 0o755);
  return file;
}

let counter = 0;

/** A Claude session bundle (transcript + a companion), uploaded by `user`; returns the upload and the bundle bytes. */
export async function uploadClaudeSession(
  world: World,
  options: {
    user?: TestUser;
    sessionId?: string;
    cwd?: string;
    title?: string;
    remote?: string;
    resumable?: boolean;
    profile?: string;
    /** What is said after the title (assistant, user, assistant, ...); by default `Done.` */
    turns?: string[];
  } = {},
): Promise<{ capturedId: string; artifactId: string; sessionId: string; bytes: Buffer }> {
  const sessionId =
    options.sessionId ??
    `5e55${String(++counter).padStart(4, '0')}-aaaa-4bbb-8ccc-${Date.now().toString(16).padStart(12, '0').slice(-12)}`;
  const cwd = options.cwd ?? world.project;
  const src = path.join(world.server.root, `src-${sessionId}`);
  const key = claudeProjectKey(cwd);
  await mkdir(path.join(src, key, sessionId, 'subagents'), { recursive: true });
  const line = (type: string, text: string) =>
    JSON.stringify({ type, sessionId, cwd, message: { role: type, content: text } });
  const turns = [options.title ?? 'Fix the flaky test', ...(options.turns ?? ['Done.'])];
  await writeFile(
    path.join(src, key, `${sessionId}.jsonl`),
    turns.map((text, i) => `${line(i % 2 === 0 ? 'user' : 'assistant', text)}\n`).join(''),
  );
  await writeFile(path.join(src, key, sessionId, 'subagents', 'agent-1.jsonl'), `${line('user', 'sub')}\n`);
  const out = path.join(world.server.root, `bundle-${sessionId}.tar.gz`);
  const profile = options.profile ?? 'claude-v2_0_12';
  await writeBundle(
    {
      harness: 'claude',
      profile,
      sessionId,
      capturedAtUnixMs: Date.UTC(2026, 0, 1),
      cwd,
      ...(options.remote === undefined ? {} : { repository: { root: cwd, remote: options.remote } }),
      title: options.title ?? 'Fix the flaky test',
      root: src,
      files: [
        {
          role: 'primary_transcript',
          name: `${sessionId}.jsonl`,
          nativePath: `${key}/${sessionId}.jsonl`,
          path: path.join(src, key, `${sessionId}.jsonl`),
        },
        {
          role: 'session_companion',
          name: 'agent-1.jsonl',
          nativePath: `${key}/${sessionId}/subagents/agent-1.jsonl`,
          path: path.join(src, key, sessionId, 'subagents', 'agent-1.jsonl'),
        },
      ],
    },
    out,
    { profiles: await loadProfiles(path.join(agentRoot, 'profiles')) },
  );
  const bytes = await readFile(out);
  return {
    ...(await uploadBytes(world, bytes, {
      sessionId,
      cwd,
      title: options.title ?? 'Fix the flaky test',
      remote: options.remote,
      resumable: options.resumable,
      profile,
      user: options.user,
    })),
    sessionId,
    bytes,
  };
}

/** Uploads any bytes (hostile bundles included) as a session of `harness`. */
export async function uploadBytes(
  world: World,
  bytes: Buffer,
  options: {
    sessionId: string;
    cwd?: string;
    title?: string;
    remote?: string | undefined;
    resumable?: boolean | undefined;
    profile?: string;
    user?: TestUser | undefined;
    harness?: string;
  },
): Promise<{ capturedId: string; artifactId: string }> {
  const done = await world.server.upload(options.user ?? world.server.alice, bytes, {
    harness: options.harness ?? 'claude',
    session_id: options.sessionId,
    compatibility_profile: options.profile ?? 'claude-v2_0_12',
    artifact_format: 'blue-session-bundle-v1',
    cwd: options.cwd ?? world.project,
    resumable: options.resumable ?? true,
    title: options.title ?? 'A session',
    ...(options.remote === undefined
      ? {}
      : { repository_root: options.cwd ?? world.project, repository_remote: options.remote }),
  });
  if (done.status !== 200) throw new Error(`upload failed: ${JSON.stringify(done.body)}`);
  // Resume names the captured session (its contract id), not one upload of it.
  return { capturedId: done.sessionId, artifactId: done.uploadId };
}

export function cli(
  world: World,
  args: string[],
  extra: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return runCli(['resume', ...args], {
    env: { ...world.env, ...extra.env },
    cwd: extra.cwd ?? world.project,
    timeoutMs: 30_000,
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Snapshots

/** Every entry under `dir`: type, and the content's SHA-256 for files (link targets for links). */
export async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(d, e.name);
      const rel = path.relative(dir, full);
      const info = await lstat(full);
      if (info.isDirectory()) {
        out[rel] = 'dir';
        await walk(full);
      } else if (info.isSymbolicLink()) {
        out[rel] = `link:${await readlink(full)}`;
      } else {
        out[rel] = createHash('sha256')
          .update(await readFile(full))
          .digest('hex');
      }
    }
  };
  await walk(dir);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// A real pseudo-terminal

export const KEYS = {
  up: '\u001b[A',
  down: '\u001b[B',
  enter: '\r',
  esc: '\u001b',
  ctrlC: '\u0003',
  backspace: '\u007f',
};

export function stripAnsi(text: string): string {
  // CSI, OSC, and single-character escapes.
  return text
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\u001b\][^\u0007\u001b]*(\u0007|\u001b\\)/g, '')
    .replace(/\u001b[@-Z\\-_]/g, '');
}

export interface Pty {
  term: IPty;
  /** Everything written so far, raw. */
  raw(): string;
  /** Everything written so far, without escape sequences. */
  text(): string;
  /** The text of the last full-screen frame (after the last screen clear), as lines. */
  frame(): string[];
  /** Waits (bounded) until the stripped output after `from` matches. */
  waitFor(pattern: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Marks the current end of output: later waits look only at what comes after it. */
  mark(): void;
  type(keys: string): Promise<void>;
  resize(columns: number, rows: number): void;
  exit: Promise<{ exitCode: number; signal?: number }>;
  kill(): void;
}

export function runPty(
  world: World,
  args: string[],
  options: { cwd?: string; columns?: number; rows?: number; env?: Record<string, string> } = {},
): Pty {
  const term = ptySpawn(process.execPath, [ENTRY, 'resume', ...args], {
    name: 'xterm-256color',
    cols: options.columns ?? 120,
    rows: options.rows ?? 30,
    cwd: options.cwd ?? world.project,
    env: { ...world.env, ...options.env },
  });
  let output = '';
  let from = 0;
  term.onData((data) => {
    output += data;
  });
  const exit = new Promise<{ exitCode: number; signal?: number }>((resolve) => term.onExit((e) => resolve(e)));
  const killer = setTimeout(() => term.kill('SIGKILL'), 60_000);
  void exit.then(() => clearTimeout(killer));
  const pty: Pty = {
    term,
    raw: () => output,
    text: () => stripAnsi(output),
    frame: () => {
      const at = output.lastIndexOf('\u001b[2J');
      return stripAnsi(at < 0 ? output : output.slice(at)).split(/\r*\n/);
    },
    mark: () => {
      from = output.length;
    },
    async waitFor(pattern, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      const test = (s: string) => (typeof pattern === 'string' ? s.includes(pattern) : pattern.test(s));
      while (!test(stripAnsi(output.slice(from)))) {
        if (Date.now() > deadline)
          throw new Error(
            `timed out waiting for ${String(pattern)}; screen so far:\n${stripAnsi(output).slice(-3000)}`,
          );
        await sleep(20);
      }
    },
    async type(keys) {
      term.write(keys);
      await sleep(60);
    },
    resize: (columns, rows) => term.resize(columns, rows),
    exit,
    kill: () => term.kill('SIGKILL'),
  };
  return pty;
}

export function printableWidth(line: string): number {
  return [...line].length;
}
