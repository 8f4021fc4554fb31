/**
 * Verifying a bundle: everything a restore relies on, checked in a fixed order so the first violation is the one
 * reported. Structural rules (gzip, tar, entry names and types, caps) are applied while streaming; the manifest and
 * its cross-checks (digests, listed and unlisted files, profile roles) once the archive has been read.
 */
import type { FileHandle } from 'node:fs/promises';
import { BlueError } from '../errors.js';
import type { ProfileSet } from '../profiles/index.js';
import { bundleManifestSchema, validateDocument } from '../schema/index.js';
import type { BundleResult } from './create.js';
import { formatBytes, limitsWith, type Limits } from './limits.js';
import { nativePathProblem, profileProblem, type BundleManifest } from './manifest.js';
import { BUNDLE_HINT, openBundle, scanBundle, violation, type ScanResult } from './scan.js';

export interface VerifyOptions {
  profiles: ProfileSet;
  /** Tighter caps (tests, constrained machines). */
  limits?: Partial<Limits>;
}

/** Throws BUNDLE_INVALID naming the first violation; returns the manifest, size and SHA-256 of a valid bundle. */
export async function verifyBundle(file: string, options: VerifyOptions): Promise<BundleResult> {
  const limits = limitsWith(options.limits);
  return withBundle(file, async (handle) => {
    const scan = await scanBundle(handle, file, { limits });
    const manifest = checkScan(scan, file, options.profiles, limits);
    return { manifest, size: scan.size, sha256: scan.sha256 };
  });
}

/**
 * The manifest of a bundle, schema-validated, read with the same caps as verification but without checking the files
 * (for showing what a bundle claims to hold).
 */
export async function readManifest(file: string, options: { limits?: Partial<Limits> } = {}): Promise<BundleManifest> {
  const limits = limitsWith(options.limits);
  return withBundle(file, async (handle) => {
    const scan = await scanBundle(handle, file, { limits, manifestOnly: true });
    if (scan.manifest === undefined) throw violation(file)('has no manifest.json');
    return parseManifest(scan.manifest, file);
  });
}

export async function withBundle<T>(file: string, work: (handle: FileHandle) => Promise<T>): Promise<T> {
  const handle = await openBundle(file);
  try {
    return await work(handle);
  } finally {
    await handle.close();
  }
}

/** The checks that need the whole archive read: the manifest and what it says about the entries. */
export function checkScan(scan: ScanResult, file: string, profiles: ProfileSet, limits: Limits): BundleManifest {
  const fail = violation(file);
  if (scan.manifest === undefined) throw fail('has no manifest.json');
  const manifest = parseManifest(scan.manifest, file);
  const label = (i: number) => `manifest.json: files[${i}] (${manifest.files[i]!.path})`;

  const paths = new Set<string>();
  const natives = new Set<string>();
  const folders = new Set<string>();
  let total = 0;
  for (const [i, f] of manifest.files.entries()) {
    if (paths.has(f.path)) throw fail(`${label(i)}: the path is listed twice`);
    paths.add(f.path);
    if (f.native_path !== undefined) {
      const problem = nativePathProblem(f.native_path);
      if (problem !== undefined) throw fail(`${label(i)}: native_path ${JSON.stringify(f.native_path)} ${problem}`);
      if (natives.has(f.native_path)) throw fail(`${label(i)}: native_path ${f.native_path} is listed twice`);
      // A file at another file's folder cannot be restored: one of the two would have to replace the other.
      const parents = parentsOf(f.native_path);
      if (folders.has(f.native_path) || parents.some((p) => natives.has(p))) {
        throw fail(
          `${label(i)}: native_path ${f.native_path} is both a file and the folder of another file of the bundle`,
        );
      }
      natives.add(f.native_path);
      for (const p of parents) folders.add(p);
    }
    total += f.size;
  }
  if (total > limits.contentBytes)
    throw fail(
      `manifest.json lists files adding up to ${total} bytes, over the ${formatBytes(limits.contentBytes)} cap`,
    );

  for (const f of manifest.files) {
    const entry = scan.files.get(f.path);
    if (entry === undefined) throw fail(`${f.path} is listed in manifest.json but missing from the archive`);
    if (entry.size !== f.size) throw fail(`${f.path} is ${entry.size} bytes, but manifest.json says ${f.size}`);
    if (entry.sha256 !== f.sha256)
      throw fail(`${f.path} has SHA-256 ${entry.sha256}, but manifest.json says ${f.sha256}`);
  }
  for (const name of scan.files.keys()) {
    if (!paths.has(name)) throw fail(`${name} is in the archive but not listed in manifest.json`);
  }

  const problem = profileProblem(manifest, profiles, label);
  if (problem !== undefined) throw fail(problem.startsWith('manifest.json') ? problem : `manifest.json: ${problem}`);
  return manifest;
}

/** `a/b/c` → `a`, `a/b`. */
function parentsOf(nativePath: string): string[] {
  const segments = nativePath.split('/');
  return segments.slice(1).map((_, i) => segments.slice(0, i + 1).join('/'));
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function parseManifest(bytes: Buffer, file: string): BundleManifest {
  const fail = violation(file);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw fail('has a manifest.json that is not valid UTF-8');
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw fail(`has a manifest.json that is not valid JSON: ${(error as Error).message}`);
  }
  return validManifest(data, file);
}

/** A manifest already parsed (kept beside its bundle), held to the schema as one read from the bundle is. */
export function validManifest(data: unknown, file: string): BundleManifest {
  try {
    return validateDocument(bundleManifestSchema, data, `${file}: manifest.json`);
  } catch (error) {
    if (!(error instanceof BlueError)) throw error;
    throw new BlueError('BUNDLE_INVALID', error.message, {
      file,
      ...(error.path === undefined ? {} : { path: error.path }),
      hint: BUNDLE_HINT,
    });
  }
}
