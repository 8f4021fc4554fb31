/**
 * The one object every use-case receives. Everything that touches the outside world — environment, paths, clock,
 * output, child processes — comes through here, so tests build a Context around a temporary HOME instead of patching
 * globals.
 */
import { existsSync, fstatSync, readFileSync, realpathSync, statSync, writeSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, type Logger } from './logger.js';
import { createProcessRunner, type ProcessRunner } from '@blue-agent/contract/util/process.js';

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Everything blue-agent keeps in its state directory, by name: the one place these file and folder names are spelled.
 * A pure function of the state directory, so the hook pays nothing for it.
 */
export interface StateLayout {
  /** Agent state: ledger, caches, backups, locks, spool, logs. `BLUE_AGENT_HOME`. */
  stateDir: string;
  /** What reconcile owns in each harness file. */
  ledgerFile: string;
  /** Previous versions of the harness files reconcile changed, one folder per harness. */
  backupsDir: string;
  /** Lock files of reconcile, the ledger and restore. */
  locksDir: string;
  /** Parsed profiles and schemas, keyed by content. */
  documentCacheFile: string;
  /** Harness versions already read, keyed by binary. */
  versionCacheFile: string;
  /** The last governance policy fetched from the Control API. */
  policyCacheFile: string;
  /** The policy the agent (`run`) enforces now. */
  policySnapshotFile: string;
  /** The Control API token (`blue-agent login`), unless the config names another file. */
  tokenFile: string;
  /** One JSON line per capture, build and upload event. */
  captureLogFile: string;
  /** The spool of captured sessions; its inner layout belongs to `src/spool/`. */
  spoolDir: string;
  /** What each native session's last capture held (`src/drain/captured.ts`), so unchanged content is not uploaded
   * twice. */
  capturedDir: string;
  /** The idle sweep's cursor per native session (`src/sweep/cursors.ts`): one file per harness. */
  cursorsDir: string;
  /** Backfill's record of what it has done: that the agent's one backfill after install has run. */
  backfillStateFile: string;
  /** Journals of restores in progress. */
  restoresDir: string;
  /** The running agent's state, its instance lock and its log. */
  runStateFile: string;
  runLockFile: string;
  runLogFile: string;
  /** The outcome of the agent's last drain. */
  lastDrainFile: string;
  /** This machine's agent instance id, reported to the Control API. */
  instanceIdFile: string;
  /** Where the user service's stdout and stderr go. */
  serviceStdoutFile: string;
  serviceStderrFile: string;
}

export interface Paths extends StateLayout {
  /** The user's home directory (`HOME`). */
  home: string;
  /** Per-user configuration (`XDG_CONFIG_HOME` when absolute, else ~/.config): harnesses' and the service manager's. */
  configHome: string;
  /** Per-user data (`XDG_DATA_HOME` when absolute, else ~/.local/share). */
  dataHome: string;
  /** Agent config file. `BLUE_AGENT_CONFIG`. */
  configFile: string;
  /** The reference Control API's default data directory (`control-plane --data` and `BLUE_CONTROL_DATA` override it).
   * */
  controlDataDir: string;
  /** Shipped compatibility profiles. */
  profilesDir: string;
  /** The agent's package.json (its `engines`: the Node.js it supports). */
  packageFile: string;
  /** Shipped assets of `blue-agent demo` (a recorded session). */
  demoDir: string;
}

export interface Output {
  write(text: string): void;
  isTTY: boolean;
  /** The terminal's width and height, when it is one and they are known. */
  size?(): { columns: number; rows: number } | undefined;
  /** Calls `listener` whenever the terminal is resized; returns the function that stops it. */
  onResize?(listener: () => void): () => void;
}

/** Where keys come from, for the few commands that ask questions (`resume`). */
export interface Input {
  isTTY: boolean;
  /** The stream itself; only touched by commands that read keys, so other commands never open it. */
  stream(): NodeJS.ReadableStream;
  /** Keys one at a time, no echo, Ctrl-C as a key (terminals only). */
  setRawMode?(raw: boolean): void;
}

export interface SelfInfo {
  /** Absolute path of the Node.js binary that runs the agent. */
  node: string;
  /** Absolute, resolved path of the agent's entry script. */
  entry: string;
  /**
   * The sh capture hook (`bin/blue-agent-hook`) beside the entry, when there is one: managed hooks then run it, and it
   * runs the entry only to drain. Without it, they run `node <entry> capture` itself.
   */
  hook?: string;
  version: string;
}

/**
 * The wall clock and this machine's time zone. `utcOffsetMinutes(at)` is how far local time is ahead of UTC at the
 * instant `at` (ms), daylight saving included: what a harness that names files by local time used then.
 */
export interface Clock {
  now(): number;
  utcOffsetMinutes(at: number): number;
}

/** The time zone of this process (the `TZ` variable, else the system's) at the instant `at`. */
export function systemUtcOffsetMinutes(at: number): number {
  const offset = -new Date(at).getTimezoneOffset();
  return offset === 0 ? 0 : offset;
}

export interface Context {
  env: Env;
  cwd: string;
  platform: NodeJS.Platform;
  paths: Paths;
  clock: Clock;
  logger: Logger;
  stdin: Input;
  stdout: Output;
  stderr: Output;
  run: ProcessRunner;
  self: SelfInfo;
}

/** The installed package's root: the nearest folder above this module with blue-agent's package.json. */
function findPackageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'blue-agent') {
        packageVersionFound = pkg.version;
        return dir;
      }
    } catch {
      // Not here; keep walking up.
    }
    const parent = path.dirname(dir);
    if (parent === dir) return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
    dir = parent;
  }
}
let packageVersionFound: string | undefined;
const packageRoot = findPackageRoot();

export function resolvePaths(env: Env, platform: NodeJS.Platform): Paths {
  const home = env.HOME && path.isAbsolute(env.HOME) ? env.HOME : homedir();
  const xdgState = absoluteOr(env.XDG_STATE_HOME, path.join(home, '.local', 'state'));
  const xdgConfig = absoluteOr(env.XDG_CONFIG_HOME, path.join(home, '.config'));
  const xdgData = absoluteOr(env.XDG_DATA_HOME, path.join(home, '.local', 'share'));
  const defaultState =
    platform === 'darwin'
      ? path.join(home, 'Library', 'Application Support', 'blue-agent')
      : path.join(xdgState, 'blue-agent');
  return {
    home,
    configHome: xdgConfig,
    dataHome: xdgData,
    ...stateLayout(absoluteOr(env.BLUE_AGENT_HOME, defaultState)),
    configFile: absoluteOr(env.BLUE_AGENT_CONFIG, path.join(xdgConfig, 'blue-agent', 'config.yaml')),
    controlDataDir: path.join(xdgData, 'blue-agent', 'control'),
    profilesDir: absoluteOr(env.BLUE_AGENT_PROFILES_DIR, path.join(packageRoot, 'profiles')),
    packageFile: path.join(packageRoot, 'package.json'),
    demoDir: path.join(packageRoot, 'demo'),
  };
}

/** The state layout under `stateDir` (see StateLayout). */
export function stateLayout(stateDir: string): StateLayout {
  const at = (...parts: string[]) => path.join(stateDir, ...parts);
  return {
    stateDir,
    ledgerFile: at('ledger.json'),
    backupsDir: at('backups'),
    locksDir: at('locks'),
    documentCacheFile: at('cache', 'documents.json'),
    versionCacheFile: at('cache', 'versions.json'),
    policyCacheFile: at('policy', 'last-known-good.json'),
    policySnapshotFile: at('policy', 'in-force.json'),
    tokenFile: at('token'),
    captureLogFile: at('capture.log'),
    spoolDir: at('spool'),
    capturedDir: at('captured'),
    cursorsDir: at('cursors'),
    backfillStateFile: at('backfill.json'),
    restoresDir: at('restores'),
    runStateFile: at('agent-run.json'),
    runLockFile: at('agent-run.lock'),
    runLogFile: at('run.log'),
    lastDrainFile: at('last-drain.json'),
    instanceIdFile: at('instance-id'),
    serviceStdoutFile: at('service.out.log'),
    serviceStderrFile: at('service.err.log'),
  };
}

function absoluteOr(value: string | undefined, fallback: string): string {
  return value !== undefined && value !== '' && path.isAbsolute(value) ? value : fallback;
}

export function defaultSelf(): SelfInfo {
  const entry = path.join(packageRoot, 'bin', 'blue-agent.js');
  let resolved = entry;
  try {
    resolved = realpathSync(entry);
  } catch {
    // Running from an unusual layout: the unresolved path is still the best we have.
  }
  const hook = path.join(path.dirname(resolved), 'blue-agent-hook');
  return {
    node: process.execPath,
    entry: resolved,
    ...(process.platform !== 'win32' && existsSync(hook) ? { hook } : {}),
    version: packageVersion(),
  };
}

function packageVersion(): string {
  return packageVersionFound ?? '0.0.0';
}

export interface ContextOverrides {
  env?: Env;
  cwd?: string;
  platform?: NodeJS.Platform;
  stdin?: Input;
  stdout?: Output;
  stderr?: Output;
  self?: Partial<SelfInfo>;
  /** A clock without a time zone keeps the process's. */
  clock?: { now(): number; utcOffsetMinutes?(at: number): number };
}

export function createContext(overrides: ContextOverrides = {}): Context {
  const env = overrides.env ?? process.env;
  const platform = overrides.platform ?? process.platform;
  const stdout = overrides.stdout ?? descriptorOutput(1, () => process.stdout);
  const stderr = overrides.stderr ?? descriptorOutput(2, () => process.stderr);
  const paths = resolvePaths(env, platform);
  return {
    env,
    cwd: overrides.cwd ?? process.cwd(),
    platform,
    paths,
    clock: clockOf(overrides.clock),
    logger: createLogger({ env, stderr }),
    stdin: overrides.stdin ?? processInput(),
    stdout,
    stderr,
    run: createProcessRunner(),
    self: selfInfo(overrides.self),
  };
}

/** This agent, or the one the overrides name: the default sh hook is the one beside the default entry, no other's. */
function selfInfo(given: Partial<SelfInfo> | undefined): SelfInfo {
  const { hook, ...rest } = defaultSelf();
  const keepHook = given?.entry === undefined && hook !== undefined;
  return { ...rest, ...(keepHook ? { hook } : {}), ...given };
}

function clockOf(given: ContextOverrides['clock']): Clock {
  if (given === undefined) return { now: () => Date.now(), utcOffsetMinutes: systemUtcOffsetMinutes };
  return {
    now: () => given.now(),
    utcOffsetMinutes:
      given.utcOffsetMinutes === undefined ? systemUtcOffsetMinutes : (at) => given.utcOffsetMinutes!(at),
  };
}

/**
 * stdout or stderr. A file or a terminal (or /dev/null) is written on its descriptor directly, as Node.js's stream
 * would write it, synchronously: the stream (with node:stream, and node:net for a terminal) is made only for a
 * terminal's size or a write that cannot go straight through. Most commands print a report and exit, and making the
 * stream was a visible part of a no-change reconcile (bench/reconcile-noop.mjs). A pipe or a socket (the journal of the
 * long-running agent) keeps the stream, which never blocks on a stalled reader. A reader that has gone away (`| head`)
 * ends the output quietly either way.
 */
function descriptorOutput(fd: 1 | 2, stream: () => NodeJS.WriteStream): Output {
  let closed = false;
  let info: Stats | null | undefined;
  let direct: boolean | undefined;
  let terminal: boolean | undefined;
  let opened: NodeJS.WriteStream | undefined;
  const kind = (): Stats | null => (info ??= statOf(fd));
  const isTTY = (): boolean =>
    // Only a character device can be a terminal, and /dev/null (cron jobs, scripts, services) is none: node:tty, and
    // node:net with it, loads only to tell the others apart.
    (terminal ??=
      kind()?.isCharacterDevice() === true && !isDevNull(kind()!) && process.getBuiltinModule('node:tty').isatty(fd));
  const open = (): NodeJS.WriteStream => {
    if (opened === undefined) {
      opened = stream();
      opened.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EPIPE') throw error;
        closed = true;
      });
    }
    return opened;
  };
  return {
    write: (text) => {
      if (closed) return;
      let rest: Buffer | string = text;
      direct ??= kind()?.isFile() === true || kind()?.isCharacterDevice() === true;
      if (direct) {
        const bytes = Buffer.from(text, 'utf8');
        let at = 0;
        try {
          while (at < bytes.length) at += writeSync(fd, bytes, at);
          return;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EPIPE') {
            closed = true;
            return;
          }
          // EAGAIN (a terminal left non-blocking by another program) and the rest: the stream knows how to wait.
          direct = false;
          rest = bytes.subarray(at);
        }
      }
      open().write(rest);
    },
    get isTTY() {
      return isTTY();
    },
    size: () => {
      if (!isTTY()) return undefined;
      const s = open();
      return s.columns > 0 ? { columns: s.columns, rows: s.rows > 0 ? s.rows : 24 } : undefined;
    },
    onResize: (listener) => {
      if (!isTTY()) return () => undefined;
      const s = open();
      s.on('resize', listener);
      return () => void s.off('resize', listener);
    },
  };
}

function isDevNull(info: Stats): boolean {
  try {
    return statSync('/dev/null').rdev === info.rdev;
  } catch {
    return false;
  }
}

function statOf(fd: number): Stats | null {
  try {
    return fstatSync(fd);
  } catch {
    return null;
  }
}

/** process.stdin, opened only when a command reads keys (a hook's stdin is left to the code that reads it). */
function processInput(): Input {
  return {
    // Asked only by the commands that read keys: node:tty (and node:net with it) is not loaded for the others.
    get isTTY() {
      return process.getBuiltinModule('node:tty').isatty(0);
    },
    stream: () => process.stdin,
    setRawMode: (raw) => {
      if (process.stdin.isTTY) process.stdin.setRawMode(raw);
    },
  };
}

/** An Output that collects what is written, for tests and for rendering into strings. */
export function bufferOutput(isTTY = false): Output & { text(): string } {
  const chunks: string[] = [];
  return { write: (text) => void chunks.push(text), isTTY, text: () => chunks.join('') };
}
