// Types for scripts/install-harnesses.mjs, so TypeScript tests can share the installer's logic.
export interface LockEntry {
  package: string;
  versions: string[];
  /** Packages the harness fetches while it runs, installed beside it (`{version}`: the version installed). */
  runtime_deps?: { folder: string; packages: string[] };
}
export type HarnessLock = Record<string, LockEntry>;
/** Adds a version to a harness's list in the lock file, every other byte kept. */
export function addLockedVersion(file: string, harness: string, version: string): void;

export interface InstalledHarness {
  harness: string;
  version: string;
  /** `<cache>/<harness>-<version>` */
  dir: string;
  /** Absolute path of the CLI (`<dir>/node_modules/.bin/<name>`). */
  bin: string;
  /** Folder holding the packages the harness would otherwise fetch at run time (its lock entry's runtime_deps). */
  runtimeDepsDir: string | undefined;
}

export interface InstallResult {
  harness: string;
  version: string;
  package: string;
  dir: string;
  bin: string;
  action: 'cached' | 'installed';
  durationMs: number;
}

export const repoRoot: string;
export const DEFAULT_LOCK_FILE: string;
export const MARKER_FILE: string;
export function runtimeDeps(
  entry: Pick<LockEntry, 'runtime_deps'> | undefined,
  version: string,
): { folder: string; packages: string[] } | undefined;
export function defaultCacheDir(env?: Readonly<Record<string, string | undefined>>): string;
export function readLock(file?: string): HarnessLock;
export function latestLocked(lock: HarnessLock, harness: string): string;
export function compareVersions(a: string, b: string): number;
export function installDir(cache: string, harness: string, version: string): string;
export function readMarker(dir: string): Record<string, unknown> | undefined;
export function installedHarness(cache: string, harness: string, version: string): InstalledHarness | undefined;
export function installedBin(cache: string, harness: string, version: string): string | undefined;
export function installCommand(harness?: string, version?: string): string;
export function installHarness(options: {
  harness: string;
  pkg: string;
  version: string;
  runtime_deps?: LockEntry['runtime_deps'];
  cache?: string;
  log?: (line: string) => void;
  npm?: string;
}): Promise<InstallResult>;
export function installAll(options?: {
  lockFile?: string;
  cache?: string;
  harness?: string;
  version?: string;
  log?: (line: string) => void;
}): Promise<InstallResult[]>;
export function run(
  file: string,
  args: readonly string[],
  options?: { cwd?: string; timeoutMs?: number; env?: Readonly<Record<string, string | undefined>> },
): Promise<{ code: number; stdout: string; stderr: string; timedOut: boolean }>;
