/**
 * Runs real, headless harness sessions offline: the CLI talks to the loopback model stub, and every place it reads
 * or writes (HOME, XDG_*, and each harness's own location variables, see its rig) is inside an isolated home, so a
 * run never sees the developer's own configuration, credentials or proxies. What is particular to one harness (its
 * argv, environment and config files) is in its rig, test/harnesses/<name>/rig.ts; this file holds what they share.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { harnessLocations } from './rigs.js';

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
  /** Told the process's pid once it started (it leads its own process group). */
  onSpawn?: (pid: number) => void;
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

/** The environment variables that locate files, besides each harness's own (its rig's `locations`). */
const BASE_LOCATION_VARIABLES = [
  'HOME',
  'XDG_CONFIG_HOME',
  'XDG_DATA_HOME',
  'XDG_STATE_HOME',
  'XDG_CACHE_HOME',
] as const;

/** The environment variables that locate a harness's files; all of them point inside the isolated home. */
export function locationVariables(): string[] {
  return [...BASE_LOCATION_VARIABLES, ...Object.keys(harnessLocations('/'))];
}

export const STUB_API_KEY = 'sk-blue-agent-stub';
export const STUB_MODEL = 'stub-model';

/**
 * The environment for a harness run in `home`, built from nothing but PATH so the developer's own variables
 * (API keys, proxies, a harness's own variables) cannot leak in. The locations match what a Context built on the same
 * HOME resolves (makeTestHome), so reconcile edits the files the run reads; pass the TestHome's env as overrides so the
 * hooks the harness spawns see the same BLUE_AGENT_* locations too.
 */
export function harnessEnv(
  home: string,
  overrides: EnvOverrides = {},
  isolationRoot: string = home,
): Record<string, string> {
  const user = safeUser();
  const base: Record<string, string | undefined> = {
    // The Node that runs the tests goes first: a CLI may be launched by `#!/usr/bin/env node`.
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
    // Runs stay on loopback: a CLI that reaches for a git remote of its own (Codex asks GitHub for its plugins) is
    // refused before any connection, whatever the machine's network allows.
    GIT_ALLOW_PROTOCOL: 'file',
    GIT_CONFIG_NOSYSTEM: '1',
    ...harnessLocations(home),
  };
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...base, ...overrides })) if (value !== undefined) env[key] = value;
  const nodeDir = path.dirname(process.execPath);
  if (!(env.PATH ?? '').split(path.delimiter).includes(nodeDir))
    env.PATH = [nodeDir, env.PATH ?? ''].join(path.delimiter);
  const root = path.resolve(isolationRoot);
  for (const key of locationVariables()) {
    const value = env[key];
    if (value === undefined || !path.isAbsolute(value) || !isInside(root, path.resolve(value))) {
      throw new Error(`harness run: ${key}=${value ?? '(unset)'} is not inside the isolated folder ${root}`);
    }
  }
  return env;
}

// ---------------------------------------------------------------------------------------------------------------
// User hooks written by hand (what a developer would have before blue-agent arrives; each rig adds its own)

/** A shell command that appends its stdin, then a newline, to `file`: one JSON payload per line. */
export function appendStdinCommand(file: string): string {
  const quoted = `'${file.replace(/'/g, `'\\''`)}'`;
  return `{ cat; echo; } >> ${quoted}`;
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

/**
 * Polls `probe` until it returns something other than undefined, or throws after `timeoutMs`: a bound on what never
 * comes, generous because a loaded machine starts processes slowly; what comes ends the wait at once.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
  everyMs = 50,
): Promise<T> {
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
    `exit ${result.exitCode}${result.signal ? ` (${result.signal})` : ''}${result.timedOut ? ' TIMED OUT' : ''} in ` +
      `${result.durationMs} ms`,
    `--- stdout\n${tail(result.stdout)}`,
    `--- stderr\n${tail(result.stderr)}`,
    extra,
  ].join('\n');
}

/**
 * Spawns without a shell in its own process group, stdin closed (a CLI may otherwise wait for more input), and
 * kills the whole group at the deadline: harnesses start helpers that would outlive a plain kill.
 */
export function runProcess(
  file: string,
  args: readonly string[],
  {
    env,
    cwd,
    timeoutMs = 60_000,
    onSpawn,
  }: {
    env: Record<string, string>;
    cwd: string;
    timeoutMs?: number | undefined;
    onSpawn?: ((pid: number) => void) | undefined;
  },
): Promise<HarnessRunResult> {
  const started = Date.now();
  const command = [file, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    if (child.pid !== undefined) onSpawn?.(child.pid);
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
