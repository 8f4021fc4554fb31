/**
 * Where the real harness CLIs live for tests: the cache that scripts/install-harnesses.mjs fills from
 * harness-versions.lock.json (`$BLUE_AGENT_HARNESS_CACHE`, else ~/.cache/blue-agent/harnesses).
 */
import path from 'node:path';
import {
  DEFAULT_LOCK_FILE,
  defaultCacheDir,
  installCommand,
  installedHarness,
  latestLocked,
  readLock,
  type InstalledHarness,
} from '../../scripts/install-harnesses.mjs';

export type { InstalledHarness } from '../../scripts/install-harnesses.mjs';

export function harnessCacheDir(): string {
  return defaultCacheDir(process.env);
}

/** Every locked version of a harness, as written in the lock file. */
export function lockedVersions(harness: string): string[] {
  const entry = readLock(DEFAULT_LOCK_FILE)[harness];
  return entry === undefined ? [] : [...entry.versions];
}

/** The installed harness (paths of its folder, binary and run-time dependencies); throws when it is missing. */
export function harnessInstall(harness: string, version?: string): InstalledHarness {
  const lock = readLock(DEFAULT_LOCK_FILE);
  if (lock[harness] === undefined) {
    throw new Error(
      `harness "${harness}" is not in ${path.basename(DEFAULT_LOCK_FILE)} (locked: ${Object.keys(lock).join(', ')})`,
    );
  }
  if (version !== undefined && !lock[harness]!.versions.includes(version)) {
    throw new Error(
      `${harness} ${version} is not in ${path.basename(DEFAULT_LOCK_FILE)} (locked: ` +
        `${lock[harness]!.versions.join(', ')}); add it there first`,
    );
  }
  const chosen = version ?? latestLocked(lock, harness);
  const installed = installedHarness(harnessCacheDir(), harness, chosen);
  if (installed === undefined) {
    throw new Error(
      `${harness} ${chosen} is not installed in ${harnessCacheDir()}. ` +
        `Run \`${installCommand(harness, version)}\` from the repository root (needs the npm registry once).`,
    );
  }
  return installed;
}

/** Absolute path of the installed CLI of `harness` (the newest locked version unless one is named). */
export function harnessBin(harness: string, version?: string): string {
  return harnessInstall(harness, version).bin;
}

/** True when the CLI is installed; for `describe.runIf` style guards. */
export function hasHarness(harness: string, version?: string): boolean {
  try {
    harnessInstall(harness, version);
    return true;
  } catch {
    return false;
  }
}
