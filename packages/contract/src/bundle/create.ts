/**
 * Writing a bundle in one streamed pass: each session file is read in chunks into the tar while its SHA-256 is
 * computed, the tar is deflated in blocks on the threadpool (deflate.ts), and the compressed bytes are hashed on their
 * way to disk. Memory stays at a few blocks whatever the file sizes. The manifest, which needs every digest, is the
 * last entry.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { open, realpath, rename, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import { BlueError } from '../errors.js';
import type { ProfileSet } from '../profiles/index.js';
import { bundleManifestSchema, validateDocument } from '../schema/index.js';
import { fsyncDir } from '../util/fs.js';
import { checkFile, openChecked, readAt, type SafeReadOptions } from '../util/safe-read.js';
import { ParallelDeflate } from './deflate.js';
import { GZIP_HEADER, gzipTrailer } from './gzip.js';
import { formatBytes, limitsWith, type Limits } from './limits.js';
import type { BundleInput, BundleRedaction, SessionFile } from './input.js';
import { protectMetadata } from './metadata.js';
import {
  buildManifest,
  fileEntryName,
  MANIFEST_NAME,
  nameProblem,
  nativePathProblem,
  profileProblem,
  serializeManifest,
  type BundleFile,
  type BundleManifest,
} from './manifest.js';
import { END_OF_ARCHIVE, fileHeader, padding } from './tar.js';

export interface BundleResult {
  manifest: BundleManifest;
  /** Bytes of the bundle file. */
  size: number;
  /** SHA-256 of the bundle file, hex. */
  sha256: string;
}

export interface WriteBundleOptions {
  /** When given, the files' roles are checked against the profile before anything is read. */
  profiles?: ProfileSet;
  /** Tighter caps (tests, constrained spools). */
  limits?: Partial<Limits>;
  /**
   * A consistent snapshot or nothing: each file must keep its size and modification time from open to the end of its
   * read, else SESSION_CHANGING (a session captured while nobody said it ended may still be written to). Without it a
   * file still being appended to is cut at the size it had at open.
   */
  stable?: boolean;
  redaction?: BundleRedaction;
}

const HINT = 'The session cannot be bundled as it is; the message names the file and the reason.';

function refuse(what: string, file?: string): BlueError {
  return new BlueError('ARTIFACT_INVALID', what, { hint: HINT, ...(file === undefined ? {} : { file }) });
}

interface Planned {
  file: SessionFile;
  entry: string;
  label: string;
  size: number;
  source: { kind: 'path'; path: string; stat: Stats } | { kind: 'content'; bytes: Buffer };
}

/**
 * Writes the bundle for `input` to `outFile` (atomically: a private temporary file beside it, renamed into place), and
 * returns its manifest, size and SHA-256; the texts beside the files (title, summary, folders, remote) are redacted or
 * masked first (metadata.ts). Throws ARTIFACT_INVALID naming the file and the reason for anything that
 * must not be captured; nothing is left behind on failure.
 */
export async function writeBundle(
  given: BundleInput,
  outFile: string,
  options: WriteBundleOptions = {},
): Promise<BundleResult> {
  const limits = limitsWith(options.limits);
  const { input, replaced } = await protectMetadata(given, options.redaction);
  const planned = await plan(input, limits);
  const provisional = describe(
    input,
    planned.map((p) => ({ p, sha256: '0'.repeat(64) })),
  );
  if (options.profiles !== undefined) {
    const problem = profileProblem(provisional, options.profiles, (i) => planned[i]!.label);
    if (problem !== undefined) throw refuse(problem);
  }

  const dir = path.dirname(path.resolve(outFile));
  const temp = path.join(dir, `.${path.basename(outFile)}.${randomBytes(6).toString('hex')}.partial`);
  let out: FileHandle | undefined = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    const handle = out;
    const bundleHash = createHash('sha256');
    let compressed = 0;
    const write = async (chunk: Buffer): Promise<void> => {
      compressed += chunk.length;
      if (compressed > limits.bundleBytes)
        throw refuse(`the bundle would be larger than ${formatBytes(limits.bundleBytes)}, the cap`);
      bundleHash.update(chunk);
      let offset = 0;
      while (offset < chunk.length) offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten;
    };

    let crc = 0;
    let uncompressed = 0;
    /** CRC, size and the caps for each stretch of the tar before it is compressed. */
    const account = (chunk: Buffer): void => {
      crc = zlib.crc32(chunk, crc);
      uncompressed += chunk.length;
      // The same bomb guard a reader applies, so that every bundle written can be read.
      if (uncompressed > limits.tarBytes)
        throw refuse(`the bundle would decompress to more than ${formatBytes(limits.tarBytes)}`);
      if (uncompressed > limits.ratioFloorBytes && uncompressed > limits.maxRatio * compressed) {
        throw refuse(
          `the session's files compress more than ${limits.maxRatio}:1, which a restore refuses as a possible ` +
            `decompression bomb`,
        );
      }
    };
    const deflate = new ParallelDeflate(write);
    const sink: TarSink = {
      write: async (chunk) => {
        account(chunk);
        await deflate.write(chunk);
      },
      space: () => deflate.space(),
      commit: (chunk) => {
        account(chunk);
        deflate.commit(chunk.length);
      },
    };

    let manifest: BundleManifest;
    try {
      await write(GZIP_HEADER);
      manifest = await produceTar(input, planned, limits, sink, options, replaced);
      await deflate.end();
    } catch (error) {
      // Nothing may still be writing to the file when it is closed and removed.
      await deflate.settle(error);
      throw error;
    }
    await write(gzipTrailer(crc, uncompressed));
    await handle.sync();
    await handle.close();
    out = undefined;
    await rename(temp, outFile);
    await fsyncDir(dir);
    return { manifest, size: compressed, sha256: bundleHash.digest('hex') };
  } catch (error) {
    await out?.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/** Where the tar goes: copied in, or read straight into the room the deflater offers and then committed. */
interface TarSink {
  write(chunk: Buffer): Promise<void>;
  space(): Promise<Buffer>;
  commit(chunk: Buffer): void;
}

/**
 * Writes the whole tar to `sink`: each file read in chunks straight into the deflater's current block and hashed
 * there, then the manifest and the end-of-archive marker. Returns the manifest.
 */
async function produceTar(
  input: BundleInput,
  planned: Planned[],
  limits: Limits,
  sink: TarSink,
  options: WriteBundleOptions,
  inMetadata: number,
): Promise<BundleManifest> {
  const digests: string[] = [];
  let total = 0;
  let replaced = inMetadata;
  for (const p of planned) {
    const hash = createHash('sha256');
    if (options.redaction !== undefined) {
      // Redacted files are read whole (each at most the per-file cap): the tar header needs the size of what is packed.
      const original =
        p.source.kind === 'content'
          ? p.source.bytes
          : await readWhole(p, p.source.path, p.source.stat, limits, options.stable === true);
      const out = await options.redaction.redact(original, { role: p.file.role, name: p.file.name });
      replaced += out.replaced;
      p.size = out.bytes.length;
      if (p.size > limits.fileBytes)
        throw refuse(
          `${p.label}: is ${p.size} bytes once redacted, over the ${formatBytes(limits.fileBytes)} cap for one file`,
        );
      hash.update(out.bytes);
      await sink.write(fileHeader(p.entry, p.size));
      if (p.size > 0) await sink.write(out.bytes);
    } else if (p.source.kind === 'content') {
      hash.update(p.source.bytes);
      await sink.write(fileHeader(p.entry, p.size));
      if (p.size > 0) await sink.write(p.source.bytes);
    } else {
      const handle = await openSessionFile(p, p.source.path, p.source.stat);
      let opened: Stats;
      try {
        // The size stat'ed at open is the size recorded: a file still being appended to is cut there.
        opened = await handle.stat();
        p.size = opened.size;
        if (p.size > limits.fileBytes)
          throw refuse(`${p.label}: is ${p.size} bytes, over the ${formatBytes(limits.fileBytes)} cap for one file`);
        await sink.write(fileHeader(p.entry, p.size));
        let position = 0;
        while (position < p.size) {
          const room = await sink.space();
          const { bytesRead } = await handle.read(room, 0, Math.min(room.length, p.size - position), position);
          if (bytesRead === 0) throw refuse(`${p.label}: shrank while being read (${position} of ${p.size} bytes)`);
          const chunk = room.subarray(0, bytesRead);
          hash.update(chunk);
          position += bytesRead;
          sink.commit(chunk);
        }
        if (options.stable === true) await checkUnchanged(p, handle, opened);
      } finally {
        await handle.close();
      }
    }
    total += p.size;
    if (total > limits.contentBytes) {
      throw refuse(
        `the session's files add up to more than ${formatBytes(limits.contentBytes)}, the cap for one bundle (at ` +
          `${p.label})`,
      );
    }
    if (p.size % 512 !== 0) await sink.write(padding(p.size));
    digests.push(hash.digest('hex'));
  }
  const manifest = describe(
    input,
    planned.map((p, i) => ({ p, sha256: digests[i]! })),
    options.redaction === undefined
      ? undefined
      : { mode: 'secrets', rules: options.redaction.rules, version: options.redaction.version, replaced },
  );
  const bytes = serializeManifest(manifest);
  if (bytes.length > limits.manifestBytes)
    throw refuse(
      `the bundle manifest would be ${bytes.length} bytes, over the ${formatBytes(limits.manifestBytes)} cap`,
    );
  await sink.write(
    Buffer.concat([fileHeader(MANIFEST_NAME, bytes.length), bytes, padding(bytes.length), END_OF_ARCHIVE]),
  );
  return manifest;
}

/** Every check that needs no file content: names, native paths, sources, sizes. Nothing is read yet. */
async function plan(input: BundleInput, limits: Limits): Promise<Planned[]> {
  const files = input.files;
  if (files.length === 0) throw refuse(`session ${input.sessionId} has no files to bundle`);
  if (files.length > limits.files)
    throw refuse(`session ${input.sessionId} has ${files.length} files, over the cap of ${limits.files}`);
  let realRoot: string | undefined;
  if (input.root !== undefined) {
    if (!path.isAbsolute(input.root))
      throw refuse(`the session root ${JSON.stringify(input.root)} is not an absolute path`);
    try {
      realRoot = await realpath(input.root);
    } catch (error) {
      throw refuse(`the session root ${input.root} cannot be resolved: ${(error as Error).message}`);
    }
  }
  const names = new Set<string>();
  const natives = new Map<string, string>();
  const planned: Planned[] = [];
  let total = 0;
  for (const [index, file] of files.entries()) {
    const label = `session file ${JSON.stringify(file.name)}${file.path === undefined ? '' : ` (${file.path})`}`;
    const problem = nameProblem(file.name);
    if (problem !== undefined) throw refuse(`${label}: its bundle name ${problem}`);
    if (names.has(file.name)) throw refuse(`${label}: the bundle name is used twice`);
    names.add(file.name);
    if (file.nativePath !== undefined) {
      const pathProblem = nativePathProblem(file.nativePath);
      if (pathProblem !== undefined)
        throw refuse(`${label}: native path ${JSON.stringify(file.nativePath)} ${pathProblem}`);
      const other = natives.get(file.nativePath);
      if (other !== undefined)
        throw refuse(`${label}: native path ${file.nativePath} is also the native path of ${JSON.stringify(other)}`);
      natives.set(file.nativePath, file.name);
    }
    const entry = fileEntryName(index, file.name);
    let item: Planned;
    if (file.content !== undefined) {
      if (file.path !== undefined) throw refuse(`${label}: has both a path and content`);
      const bytes = Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength);
      item = { file, entry, label, size: bytes.length, source: { kind: 'content', bytes } };
    } else if (file.path !== undefined) {
      if (realRoot === undefined)
        throw refuse(`${label}: a file on disk needs a session root to lie inside, and the session has none`);
      const stat = await inspectSessionFile(label, file, realRoot);
      item = { file, entry, label, size: stat.size, source: { kind: 'path', path: file.path, stat } };
    } else {
      throw refuse(`${label}: has neither a path nor content`);
    }
    if (item.size > limits.fileBytes)
      throw refuse(`${label}: is ${item.size} bytes, over the ${formatBytes(limits.fileBytes)} cap for one file`);
    total += item.size;
    if (total > limits.contentBytes) {
      throw refuse(
        `the session's files add up to more than ${formatBytes(limits.contentBytes)}, the cap for one bundle (at ` +
          `${label})`,
      );
    }
    planned.push(item);
  }
  return planned;
}

/**
 * The read rule for a session file: one name, never through a link, and at open the inode planned. The size cap is the
 * planner's own (checked right after, with the bundle's limits in the message).
 */
function readRule(label: string, inspected?: Stats): SafeReadOptions {
  return {
    code: 'ARTIFACT_INVALID',
    label,
    maxBytes: Number.MAX_SAFE_INTEGER,
    ...(inspected === undefined ? {} : { expect: { dev: inspected.dev, ino: inspected.ino } }),
  };
}

async function inspectSessionFile(label: string, file: SessionFile, realRoot: string): Promise<Stats> {
  const where = file.path!;
  if (!path.isAbsolute(where)) throw refuse(`${label}: the path is not absolute`);
  const stat = (await checkFile(where, readRule(label)))!;
  const real = await realpath(where);
  const relative = path.relative(realRoot, real);
  if (relative === '' || relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) {
    throw refuse(`${label}: lies outside the session root ${realRoot} (it resolves to ${real})`, where);
  }
  if (file.nativePath !== undefined) {
    const native = relative.split(path.sep).join('/');
    if (native !== file.nativePath)
      throw refuse(
        `${label}: its native path ${file.nativePath} is not where it lies in the session root (${native})`,
        where,
      );
  }
  return stat;
}

/** The file must be as it was at open: same size, same modification time (stable snapshots only). */
async function checkUnchanged(p: Planned, handle: FileHandle, opened: Stats): Promise<void> {
  const now = await handle.stat();
  if (now.size !== opened.size || now.mtimeMs !== opened.mtimeMs) {
    throw new BlueError(
      'SESSION_CHANGING',
      `${p.label}: changed while it was being read (${opened.size} -> ${now.size} bytes)`,
      {
        hint: 'The session is still being written to; it is captured once it has been left alone for a while.',
      },
    );
  }
}

/** A whole file, read from the checked descriptor (for redaction), within the per-file cap. */
async function readWhole(
  p: Planned,
  where: string,
  inspected: Stats,
  limits: Limits,
  stable: boolean,
): Promise<Buffer> {
  const handle = await openSessionFile(p, where, inspected);
  try {
    const opened = await handle.stat();
    if (opened.size > limits.fileBytes)
      throw refuse(`${p.label}: is ${opened.size} bytes, over the ${formatBytes(limits.fileBytes)} cap for one file`);
    const bytes = await readAt(handle, 0, opened.size);
    if (bytes.length !== opened.size)
      throw refuse(`${p.label}: shrank while being read (${bytes.length} of ${opened.size} bytes)`);
    if (stable) await checkUnchanged(p, handle, opened);
    return bytes;
  } finally {
    await handle.close();
  }
}

/** Opens by the read rule: still the file inspected, one link, regular; the tar is fed from this descriptor only. */
async function openSessionFile(p: Planned, where: string, inspected: Stats): Promise<FileHandle> {
  return (await openChecked(where, readRule(p.label, inspected)))!.handle;
}

function describe(
  input: BundleInput,
  files: { p: Planned; sha256: string }[],
  redaction?: BundleManifest['redaction'],
): BundleManifest {
  const entries: BundleFile[] = files.map(({ p, sha256 }) => ({
    role: p.file.role,
    path: p.entry,
    ...(p.file.nativePath === undefined ? {} : { native_path: p.file.nativePath }),
    size: p.size,
    sha256,
  }));
  const manifest = buildManifest(
    {
      harness: input.harness,
      profile: input.profile,
      sessionId: input.sessionId,
      capturedAtUnixMs: input.capturedAtUnixMs,
      cwd: input.cwd,
      repository: input.repository,
      title: input.title,
      summary: input.summary,
      captureReason: input.captureReason,
      resumable: input.resumable,
      redaction,
    },
    entries,
  );
  checkManifest(manifest, input.sessionId);
  return manifest;
}

/** Schema validation, reported as a capture problem rather than a damaged bundle. */
function checkManifest(manifest: BundleManifest, sessionId: string): void {
  try {
    validateDocument(bundleManifestSchema, manifest, `the manifest of session ${JSON.stringify(sessionId)}`);
  } catch (error) {
    if (error instanceof BlueError) throw refuse(error.message);
    throw error;
  }
}
