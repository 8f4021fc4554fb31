/**
 * Finding a harness binary and asking it its version. `<bin> --version` runs without a shell and with a timeout; the
 * answer is cached by the binary's real path, size and mtime, so a warm reconcile starts no child process.
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { writeStateFile } from '@blue-agent/contract/util/fs.js';
import { findExecutable } from '@blue-agent/contract/util/executable.js';
import { parseVersionOutput, type LoadedProfiles } from '@blue-agent/contract/profiles/index.js';

export { findExecutable };

// Generous: a CLI's first start on a busy machine (an interpreter loading its packages) can take tens of seconds, and
// the answer is cached, so the bound is paid at most once per binary; it only stops a binary that hangs.
const VERSION_TIMEOUT_MS = 60_000;
const CACHE_VERSION = 1;

interface CacheEntry {
  key: string;
  raw: string;
}
interface CacheFile {
  version: number;
  entries: Record<string, CacheEntry>;
}

/** Version answers remembered across runs; `save` writes only when something changed. */
export class VersionCache {
  private dirty = false;
  private constructor(
    private readonly file: string,
    private readonly data: CacheFile,
  ) {}

  static async open(ctx: Context): Promise<VersionCache> {
    const file = ctx.paths.versionCacheFile;
    let data: CacheFile = { version: CACHE_VERSION, entries: {} };
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as CacheFile;
      if (parsed?.version === CACHE_VERSION && typeof parsed.entries === 'object' && parsed.entries !== null)
        data = parsed;
    } catch {
      // Missing or damaged: start empty; it is only a cache.
    }
    return new VersionCache(file, data);
  }

  get(realPath: string, key: string): string | undefined {
    const entry = this.data.entries[realPath];
    return entry !== undefined && entry.key === key && typeof entry.raw === 'string' ? entry.raw : undefined;
  }

  set(realPath: string, key: string, raw: string): void {
    this.data.entries[realPath] = { key, raw };
    this.dirty = true;
  }

  async save(): Promise<void> {
    if (!this.dirty) return;
    await writeStateFile(this.file, `${JSON.stringify(this.data, null, 2)}\n`);
    this.dirty = false;
  }
}

export interface DetectedVersion {
  /** The binary as found on PATH (or configured). */
  path: string;
  realPath: string;
  /** First line of the `--version` output, as printed. */
  raw: string;
  /** Normalised semver. */
  version: string;
}

export async function detectVersion(
  ctx: Context,
  loaded: LoadedProfiles,
  binary: string,
  cache: VersionCache,
): Promise<DetectedVersion> {
  const realPath = await realpath(binary);
  const info = await stat(realPath);
  const key = `${info.size}:${Math.trunc(info.mtimeMs)}:${info.ino}`;
  const cached = cache.get(realPath, key);
  // A cached answer that the current profiles no longer recognise is asked again.
  if (cached !== undefined) {
    const version = parseVersionOutput(loaded, cached);
    if (version !== undefined) return { path: binary, realPath, raw: cached, version };
  }
  const result = await ctx.run(binary, ['--version'], {
    timeoutMs: VERSION_TIMEOUT_MS,
    env: ctx.env,
    cwd: ctx.paths.home,
    maxOutputBytes: 64 * 1024,
  });
  if (result.spawnError !== undefined || result.timedOut || result.exitCode !== 0) {
    const why =
      result.spawnError ??
      (result.timedOut ? `timed out after ${VERSION_TIMEOUT_MS / 1000} s` : `exited with ${result.exitCode}`);
    throw new BlueError('VERSION_DETECT_FAILED', `\`${binary} --version\` failed: ${why}`, {
      hint: `Check that ${loaded.doc.display_name} runs from a terminal: ${binary} --version`,
    });
  }
  const raw = firstLine(result.stdout) || firstLine(result.stderr);
  const version = parseVersionOutput(loaded, raw);
  if (version === undefined) {
    throw new BlueError(
      'VERSION_UNRECOGNISED',
      `${loaded.doc.display_name} printed a version blue-agent does not recognise: "${raw.slice(0, 120)}"`,
      {
        hint:
          `Registered forms: ${loaded.doc.version_output.map((f) => `"${f.example}"`).join(', ')}. Update ` +
          `blue-agent, or add the form to ${loaded.file}.`,
      },
    );
  }
  cache.set(realPath, key, raw);
  return { path: binary, realPath, raw, version };
}

function firstLine(text: string): string {
  return (
    text
      .split(/\r?\n/)
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}
