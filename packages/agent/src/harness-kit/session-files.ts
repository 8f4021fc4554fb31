/**
 * Finding a session's native files safely, shared by every harness's `collectSession`.
 *
 * Everything captured lies inside a session root (the profile's `session.root` under the harness home). The root
 * itself may be reached through links (a harness home symlinked to a dotfiles checkout is common): it is resolved once
 * and what it resolves to is the root. Below it nothing may be a link: every component of every captured path is
 * checked with lstat, the file must be a regular file with one link (util/safe-read.ts: a hard link is another name
 * for a file that may lie anywhere on the machine), and its real path must be exactly the resolved root plus the
 * native path. A link inside the root would make the native path (what restore recreates) differ from what was read,
 * and could point anywhere on the machine. Every later read opens the file again by that rule and must find the same
 * inode.
 *
 * Any violation is a BlueError `ARTIFACT_INVALID` naming the file: a session is captured whole or not at all.
 */
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { openChecked, readAt, readChecked, type SafeReadOptions } from '@blue-agent/contract/util/safe-read.js';
import { SESSION_ID_RULE, sessionIdProblem } from '@blue-agent/contract/util/session-id.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import type { ArtifactRole, NativeSession, SessionFile } from '../harnesses/types.js';

/** Blue's caps: one file at most 64 MiB, a bundle at most 2048 files. */
export const MAX_FILE_BYTES = 64 * 1024 * 1024;
export const MAX_SESSION_FILES = 2048;
/** Native paths are at most this long in the manifest. */
const MAX_NATIVE_PATH = 4096;
/** Folders nest a few levels in practice (subagents/...); this only stops pathological trees. */
const MAX_DEPTH = 32;
/** Bundle entry names: `files/NNNN-<name>` with the whole path at most 1024 characters. */
const MAX_NAME = 200;

export function artifactInvalid(file: string, why: string, hint: string): BlueError {
  return new BlueError('ARTIFACT_INVALID', `${file}: ${why}`, { file, hint });
}

const LINK_HINT =
  'blue-agent captures only regular files inside the session folder; replace the link with the file itself, or ' +
  'leave this session uncaptured.';

/** The caller validates ids; this repeats the check (the one rule, util/session-id.ts) where an id becomes part of a
 * path. */
export function assertSessionId(id: string, where: string): void {
  const problem = sessionIdProblem(id);
  if (problem !== undefined) {
    throw artifactInvalid(
      where,
      `session id ${JSON.stringify(printable(id).slice(0, 80))} cannot name a file: it ${problem}`,
      `Session ids are ${SESSION_ID_RULE}; check what calls \`blue-agent capture\`.`,
    );
  }
}

export interface CheckedFile {
  /** Absolute path, under the root as configured (not resolved). */
  abs: string;
  /** Native path: relative to the root, `/`-separated. */
  rel: string;
  size: number;
  /** The inode checked: every later read must find this same file. */
  dev: number;
  ino: number;
}

function code(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** Splits a native path into components, refusing anything that could climb out or be read two ways. */
export function nativeSegments(rel: string, file: string): string[] {
  const segments = rel.split('/');
  if (
    rel === '' ||
    rel.length > MAX_NATIVE_PATH ||
    segments.some((s) => s === '' || s === '.' || s === '..' || s.includes('\\') || s.includes('\0'))
  ) {
    throw artifactInvalid(
      file,
      'has a path that cannot be stored as a native path (empty, "..", a backslash or too long)',
      'Rename the file, or leave this session uncaptured.',
    );
  }
  return segments;
}

/** A bundle entry name from a native path: `subagents/agent-a1.jsonl` -> `subagents-agent-a1.jsonl`. */
export function entryName(rel: string): string {
  let name = rel.replace(/\//g, '-').replace(/[^A-Za-z0-9._-]+/g, '_');
  if (name.length > MAX_NAME) name = name.slice(name.length - MAX_NAME);
  return name === '' ? 'file' : name;
}

export class SessionRoot {
  private constructor(
    /** The root as configured (harness home + profile root). */
    readonly path: string,
    /** Where it resolves; every captured file's real path lies below it. */
    readonly real: string,
  ) {}

  static async open(root: string): Promise<SessionRoot> {
    if (!path.isAbsolute(root)) {
      throw artifactInvalid(
        root,
        'the session root is not an absolute path',
        'Set the harness home variable to an absolute path.',
      );
    }
    const lexical = path.resolve(root);
    let real: string;
    try {
      real = await realpath(lexical);
    } catch (error) {
      throw artifactInvalid(
        lexical,
        `the session root cannot be read (${code(error) ?? String(error)})`,
        'Check that the harness has recorded sessions on this machine and that the folder is readable.',
      );
    }
    if (!(await stat(real)).isDirectory()) {
      throw artifactInvalid(
        lexical,
        'the session root is not a directory',
        'Check the harness home; blue-agent reads sessions from this folder.',
      );
    }
    return new SessionRoot(lexical, real);
  }

  abs(rel: string): string {
    return path.join(this.path, ...rel.split('/'));
  }

  /** The native path of an absolute path inside the root (as configured or as resolved); undefined outside it. */
  relativeOf(file: string): string | undefined {
    const abs = path.resolve(file);
    for (const base of [this.path, this.real]) {
      const rel = path.relative(base, abs);
      if (rel !== '' && !rel.startsWith(`..${path.sep}`) && rel !== '..' && !path.isAbsolute(rel))
        return rel.split(path.sep).join('/');
    }
    return undefined;
  }

  /**
   * lstat of a native path, component by component: a link anywhere below the root is refused, a missing component
   * gives undefined.
   */
  async lstat(rel: string): Promise<Stats | undefined> {
    const segments = nativeSegments(rel, this.abs(rel));
    let current = this.path;
    let info: Stats | undefined;
    for (const [i, segment] of segments.entries()) {
      current = path.join(current, segment);
      try {
        info = await lstat(current);
      } catch (error) {
        if (code(error) === 'ENOENT' || code(error) === 'ENOTDIR') return undefined;
        throw artifactInvalid(
          current,
          `cannot be read (${code(error) ?? String(error)})`,
          'Check the permissions of the session folder.',
        );
      }
      if (info.isSymbolicLink()) throw artifactInvalid(current, 'is a symbolic link', LINK_HINT);
      if (i < segments.length - 1 && !info.isDirectory()) return undefined;
    }
    return info;
  }

  /** True for a real directory at `rel`, false when nothing is there; anything else is refused. */
  async isDirectory(rel: string): Promise<boolean> {
    const info = await this.lstat(rel);
    if (info === undefined) return false;
    if (!info.isDirectory())
      throw artifactInvalid(
        this.abs(rel),
        'is not a directory',
        'The harness keeps a folder here; move the file away, or leave this session uncaptured.',
      );
    return true;
  }

  /** Checks one file for capture: regular, not a link, one hard link, readable, at most 64 MiB, really inside the root.
   * */
  async file(rel: string): Promise<CheckedFile> {
    const abs = this.abs(rel);
    const info = await this.lstat(rel);
    if (info === undefined)
      throw artifactInvalid(
        abs,
        'does not exist',
        'The harness has not written this file; check the session id and that the session was saved.',
      );
    return this.checkRegular(rel, abs, info);
  }

  private async checkRegular(rel: string, abs: string, info: Stats): Promise<CheckedFile> {
    if (!info.isFile()) throw artifactInvalid(abs, `is not a regular file (${kindOf(info)})`, LINK_HINT);
    if (info.size > MAX_FILE_BYTES) {
      throw artifactInvalid(
        abs,
        `is ${info.size} bytes, over the ${MAX_FILE_BYTES}-byte (64 MiB) limit for one file`,
        'Blue bundles hold files of at most 64 MiB; this session cannot be captured whole.',
      );
    }
    // One link only (a hard link may be any file of the machine), still the inode lstat saw: opened and checked by
    // fstat.
    const opened = await openChecked(abs, {
      code: 'ARTIFACT_INVALID',
      maxBytes: MAX_FILE_BYTES,
      expect: { dev: info.dev, ino: info.ino },
    });
    await opened!.handle.close();
    const real = await realpath(abs);
    if (real !== path.join(this.real, ...rel.split('/'))) {
      throw artifactInvalid(abs, `resolves to ${real}, outside the session root ${this.real}`, LINK_HINT);
    }
    return { abs, rel, size: info.size, dev: info.dev, ino: info.ino };
  }

  /**
   * Every regular file below the directory `rel` (depth first, names sorted). A link, FIFO, socket or device
   * anywhere in the tree is refused, and so is a tree with more than `limit` files.
   */
  async walk(rel: string, options: { limit: number; skip?: (relInside: string) => boolean }): Promise<CheckedFile[]> {
    const found: CheckedFile[] = [];
    const visit = async (dirRel: string, inside: string, depth: number): Promise<void> => {
      const dirAbs = this.abs(dirRel);
      if (depth > MAX_DEPTH)
        throw artifactInvalid(
          dirAbs,
          `nests more than ${MAX_DEPTH} folders deep`,
          'This does not look like a harness session folder; leave it uncaptured.',
        );
      let entries;
      try {
        entries = await readdir(dirAbs, { withFileTypes: true });
      } catch (error) {
        throw artifactInvalid(
          dirAbs,
          `cannot be listed (${code(error) ?? String(error)})`,
          'Check the permissions of the session folder.',
        );
      }
      entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        const childRel = `${dirRel}/${entry.name}`;
        const childInside = inside === '' ? entry.name : `${inside}/${entry.name}`;
        if (options.skip?.(childInside) === true) continue;
        const childAbs = this.abs(childRel);
        nativeSegments(childRel, childAbs);
        const info = await lstat(childAbs);
        if (info.isSymbolicLink()) throw artifactInvalid(childAbs, 'is a symbolic link', LINK_HINT);
        if (info.isDirectory()) {
          await visit(childRel, childInside, depth + 1);
          continue;
        }
        if (found.length >= options.limit) {
          throw artifactInvalid(
            this.abs(rel),
            `holds more than ${options.limit} files`,
            `Blue bundles hold at most ${MAX_SESSION_FILES} files; this session cannot be captured whole.`,
          );
        }
        found.push(await this.checkRegular(childRel, childAbs, info));
      }
    };
    if (!(await this.isDirectory(rel))) return found;
    await visit(rel, '', 0);
    return found;
  }
}

function kindOf(info: Stats): string {
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isSocket()) return 'a socket';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** The session root of `interval` under the harness home; PROFILE_INVALID when the profile names none or an unsafe one.
 * */
export function sessionRootOf(home: string, interval: Interval): string {
  const root = interval.session?.root;
  if (root === undefined) {
    throw new BlueError('PROFILE_INVALID', `profile ${interval.profile} names no session root`, {
      hint: 'Add session.root to this interval of the harness profile.',
    });
  }
  const normal = path.normalize(root);
  if (path.isAbsolute(normal) || normal === '..' || normal.startsWith(`..${path.sep}`)) {
    throw new BlueError(
      'PROFILE_INVALID',
      `profile ${interval.profile} names a session root outside the harness home: ${root}`,
      {
        hint: 'session.root must be a path relative to the harness home, such as projects or sessions.',
      },
    );
  }
  return path.join(home, normal);
}

/** A captured file with its native place. */
export function fileOf(role: ArtifactRole, name: string, checked: CheckedFile): SessionFile {
  return { role, name, nativePath: checked.rel, path: checked.abs };
}

/** The files must fit the role counts of the interval and Blue's cap on files per bundle. */
export function checkRoleCounts(interval: Interval, files: readonly SessionFile[], where: string): void {
  const roles = interval.session?.roles;
  if (roles === undefined) {
    throw new BlueError(
      'PROFILE_INVALID',
      `profile ${interval.profile} says nothing about which session files it captures`,
      {
        hint: 'Add session.roles to this interval of the harness profile.',
      },
    );
  }
  if (files.length > MAX_SESSION_FILES) {
    throw artifactInvalid(
      where,
      `the session has ${files.length} files, over the ${MAX_SESSION_FILES}-file limit`,
      'Blue bundles hold at most 2048 files; this session cannot be captured whole.',
    );
  }
  for (const file of files) {
    if (!roles.some((r) => r.role === file.role)) {
      throw artifactInvalid(
        where,
        `profile ${interval.profile} does not capture ${file.role} files`,
        'Use a blue-agent version whose profile matches this harness version.',
      );
    }
  }
  for (const { role, min, max } of roles) {
    const count = files.filter((f) => f.role === role).length;
    if (count < min)
      throw artifactInvalid(
        where,
        `the session has ${count} ${role} file(s); profile ${interval.profile} needs at least ${min}`,
        'The harness did not write every file this profile expects; check that the session was saved.',
      );
    if (count > max)
      throw artifactInvalid(
        where,
        `the session has ${count} ${role} files; profile ${interval.profile} allows at most ${max}`,
        'This session is larger than Blue bundles allow; it cannot be captured whole.',
      );
  }
}

/** Up to `maxBytes` from the start of a checked file, read from a descriptor verified to be that same file. */
export async function readHead(file: CheckedFile, maxBytes: number): Promise<Buffer> {
  return (await readChecked(file.abs, { ...captureRead(file), head: maxBytes }))!;
}

/** Up to `maxBytes` from the end of a checked file, starting at a line boundary (the partial first line dropped). */
export async function readTail(file: CheckedFile, maxBytes: number): Promise<Buffer> {
  return readTailOf(file.abs, maxBytes, captureRead(file));
}

/** The same from any file read by `rule` (an index outside the session root). */
export async function readTailOf(abs: string, maxBytes: number, rule: SafeReadOptions): Promise<Buffer> {
  const opened = await openChecked(abs, { ...rule, optional: false });
  const { handle, stat } = opened!;
  try {
    const start = Math.max(0, stat.size - maxBytes);
    const tail = await readAt(handle, start, stat.size - start);
    if (start === 0) return tail;
    const newline = tail.indexOf(0x0a);
    return newline < 0 ? Buffer.alloc(0) : tail.subarray(newline + 1);
  } finally {
    await handle.close();
  }
}

/** The read rule for a file checked by SessionRoot: still that inode, one link, within Blue's per-file cap. */
export function captureRead(file: CheckedFile): SafeReadOptions {
  return { code: 'ARTIFACT_INVALID', maxBytes: MAX_FILE_BYTES, expect: { dev: file.dev, ino: file.ino } };
}

/** A file `findSessionFiles` found: where it is, its session id, its size and modification time. */
export interface FoundSessionFile {
  abs: string;
  id: string;
  size: number;
  mtimeMs: number;
}

/**
 * Lists the sessions' marker files below `root`: folders down to `depth` levels (none followed through a link), then
 * every regular file whose name `idOf` turns into a valid session id. At most `limit` files and a bounded number of
 * folders are looked at; `truncated` says when the bound stopped the walk. A missing root lists nothing.
 */
export async function findSessionFiles(
  root: string,
  options: { depth: number; idOf: (name: string) => string | undefined; limit: number; maxDirs?: number },
): Promise<{ files: FoundSessionFile[]; truncated: boolean }> {
  const files: FoundSessionFile[] = [];
  const maxDirs = options.maxDirs ?? 20_000;
  let dirs = 0;
  let truncated = false;
  const walk = async (dir: string, level: number): Promise<void> => {
    if (truncated) return;
    if (++dirs > maxDirs) {
      truncated = true;
      return;
    }
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (truncated) return;
      const abs = path.join(dir, entry.name);
      if (level < options.depth) {
        if (entry.isDirectory()) await walk(abs, level + 1);
        continue;
      }
      if (!entry.isFile()) continue;
      const id = options.idOf(entry.name);
      if (id === undefined || sessionIdProblem(id) !== undefined) continue;
      if (files.length >= options.limit) {
        truncated = true;
        return;
      }
      const info = await lstat(abs).catch(() => undefined);
      if (info === undefined || !info.isFile()) continue;
      files.push({ abs, id, size: info.size, mtimeMs: info.mtimeMs });
    }
  };
  const real = await realpath(root).catch(() => undefined);
  if (real !== undefined) await walk(root, 0);
  return { files, truncated };
}

/**
 * The sessions a listing found, each named by its marker file (the payload a hook would have handed over names it as
 * the transcript); `version` reads the version that wrote it, lazily.
 */
export function nativeSessions(
  files: readonly FoundSessionFile[],
  version: (file: FoundSessionFile) => Promise<string | undefined>,
): NativeSession[] {
  return files.map((f) => ({
    payload: { session_id: f.id, transcript_path: f.abs },
    file: f.abs,
    size: f.size,
    mtimeMs: f.mtimeMs,
    version: () => version(f),
  }));
}

/** The first string `field` of the first JSONL records that have one (within `bytes` of the file's head). */
export async function headField(file: string, bytes: number, field: string): Promise<string | undefined> {
  for (const record of (await headRecords(file, bytes)) ?? []) {
    if (isRecord(record) && typeof record[field] === 'string') return record[field];
  }
  return undefined;
}

/**
 * The first JSONL records of a session file (at most `bytes` of it, read by the safe-read rule), for what a listing
 * reads lazily: the version a session was written by. Undefined when the file cannot be read by the rule.
 */
export async function headRecords(file: string, bytes: number): Promise<unknown[] | undefined> {
  let head: Buffer | undefined;
  try {
    head = await readChecked(file, {
      code: 'ARTIFACT_INVALID',
      maxBytes: Number.MAX_SAFE_INTEGER,
      head: bytes,
      optional: true,
    });
  } catch {
    return undefined;
  }
  if (head === undefined) return undefined;
  const lines = head.toString('utf8').split('\n');
  // The last line may be cut in the middle.
  if (head.length >= bytes) lines.pop();
  const records: unknown[] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    try {
      records.push(JSON.parse(line));
    } catch {
      // A damaged line says nothing.
    }
  }
  return records;
}
