/**
 * Extracting a bundle: verify it completely, then read it a second time from the same open file and write each entry
 * as it streams past, checking its digest against the verified manifest again (the file may have changed between the
 * passes). Files are created with O_EXCL|O_NOFOLLOW inside an empty directory, so nothing outside it is touched, and
 * everything written is removed if anything fails.
 */
import { createHash, type Hash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readdir, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { BlueError } from '../errors.js';
import type { BundleResult } from './create.js';
import { limitsWith } from './limits.js';
import { FILE_ENTRY_PATTERN, MANIFEST_NAME } from './manifest.js';
import { scanBundle, violation, type EntrySink } from './scan.js';
import { checkScan, withBundle, type VerifyOptions } from './verify.js';

export interface ExtractResult extends BundleResult {
  /** Absolute paths of the extracted session files, in manifest order (`files[i]` holds `manifest.files[i]`). */
  files: string[];
}

const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export async function extractBundle(file: string, dir: string, options: VerifyOptions): Promise<ExtractResult> {
  const limits = limitsWith(options.limits);
  const target = path.resolve(dir);
  return withBundle(file, async (handle) => {
    const first = await scanBundle(handle, file, { limits });
    const manifest = checkScan(first, file, options.profiles, limits);

    const createdDir = await prepareDirectory(target);
    const filesDir = path.join(target, 'files');
    const written: string[] = [];
    let createdFilesDir = false;
    try {
      await mkdir(filesDir, { mode: 0o700 });
      createdFilesDir = true;
      const expected = new Map(manifest.files.map((f) => [f.path, f]));
      let out: { handle: FileHandle; name: string; hash: Hash; size: number } | undefined;
      const sink: EntrySink = {
        async open(name) {
          const base = FILE_ENTRY_PATTERN.exec(name)?.[1];
          if (base === undefined || !expected.has(name))
            throw violation(file)(`changed while being extracted (${name} was not in it before)`);
          const where = path.join(filesDir, base);
          const fh = await open(where, CREATE_FLAGS, 0o600);
          written.push(where);
          out = { handle: fh, name, hash: createHash('sha256'), size: 0 };
        },
        async write(chunk) {
          const o = out!;
          o.hash.update(chunk);
          o.size += chunk.length;
          let offset = 0;
          while (offset < chunk.length)
            offset += (await o.handle.write(chunk, offset, chunk.length - offset)).bytesWritten;
        },
        async close() {
          const o = out!;
          out = undefined;
          await o.handle.close();
          const want = expected.get(o.name)!;
          if (o.size !== want.size || o.hash.digest('hex') !== want.sha256)
            throw violation(file)(`changed while being extracted (${o.name} differs)`);
        },
      };
      let second;
      try {
        second = await scanBundle(handle, file, { limits, sink });
      } finally {
        // Left open only when reading stopped inside an entry.
        const unfinished = out as { handle: FileHandle } | undefined;
        await unfinished?.handle.close().catch(() => undefined);
      }
      if (second.sha256 !== first.sha256 || second.manifest === undefined || !second.manifest.equals(first.manifest!)) {
        throw violation(file)('changed while being extracted');
      }
      const manifestFile = path.join(target, MANIFEST_NAME);
      const fh = await open(manifestFile, CREATE_FLAGS, 0o600);
      written.push(manifestFile);
      try {
        await fh.writeFile(second.manifest);
      } finally {
        await fh.close();
      }
      return {
        manifest,
        size: first.size,
        sha256: first.sha256,
        files: manifest.files.map((f) => path.join(filesDir, FILE_ENTRY_PATTERN.exec(f.path)![1]!)),
      };
    } catch (error) {
      for (const f of written) await unlink(f).catch(() => undefined);
      if (createdFilesDir) await rmdir(filesDir).catch(() => undefined);
      if (createdDir) await rmdir(target).catch(() => undefined);
      throw error;
    }
  });
}

/** Creates `dir` (0700) or checks that it is an empty real directory. Returns whether it was created. */
async function prepareDirectory(dir: string): Promise<boolean> {
  const refuse = (what: string) =>
    new BlueError('UNSAFE_PATH', `${dir}: ${what}`, { file: dir, hint: 'Extract into a new or empty directory.' });
  try {
    await mkdir(dir, { mode: 0o700 });
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      await mkdir(path.dirname(dir), { recursive: true, mode: 0o700 });
      await mkdir(dir, { mode: 0o700 });
      return true;
    }
    if (code !== 'EEXIST') throw refuse(`cannot be created (${code ?? (error as Error).message})`);
  }
  const stat = await lstat(dir);
  if (stat.isSymbolicLink()) throw refuse('is a symbolic link');
  if (!stat.isDirectory()) throw refuse('exists and is not a directory');
  if ((await readdir(dir)).length > 0) throw refuse('is not empty');
  return false;
}
