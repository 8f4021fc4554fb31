/**
 * Shared by the restore tests: bundles made from the recorded fixtures the way the capture worker makes them
 * (collectSession + writeBundle), hand-made hostile bundles, and snapshots of whole folders.
 */
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterEach, beforeEach } from 'vitest';
import type { BundleResult } from '../../packages/contract/src/bundle/index.js';
import { fileEntryName, serializeManifest, type BundleManifest } from '../../packages/contract/src/bundle/manifest.js';
import { END_OF_ARCHIVE, fileHeader, padding } from '../../packages/contract/src/bundle/tar.js';
import { assembleBundle } from '../../packages/agent/src/drain/assemble.js';
import { findInterval } from '../../packages/contract/src/profiles/index.js';
import type { HarnessName } from '../../packages/contract/src/schema/index.js';
import { makeTestHome, type TestHome } from './context.js';
import { fixtureDir, readRecorded, shippedProfiles, substitute } from './recorded-sessions.js';
import { rigFor, type FixtureRig } from './rigs.js';

export { shippedProfiles } from './recorded-sessions.js';

/** The shipped profile of a harness's recorded fixture. */
export function fixtureProfile(harness: HarnessName): string {
  return rigFor(harness).fixture.profile;
}

/**
 * A test HOME whose agent state directory lies outside it, so that a snapshot of the HOME is exactly the harness
 * files a restore may change.
 */
export async function restoreHome(): Promise<TestHome> {
  const state = await mkdtemp(path.join(tmpdir(), 'blue-agent-restore-state-'));
  const home = await makeTestHome({ BLUE_AGENT_HOME: state });
  const cleanup = home.cleanup;
  return {
    ...home,
    cleanup: async () => {
      await cleanup();
      await rm(state, { recursive: true, force: true });
    },
  };
}

/**
 * The usual pair for a restore test: a source machine, a target machine, and an existing destination directory on the
 * target (`elsewhere/<name>` under its root, real path). `use` receives fresh ones before each test; both homes are
 * removed after it.
 */
export function useRestoreHomes(
  destinationName: string,
  use: (homes: { source: TestHome; target: TestHome; destination: string }) => void,
): void {
  let homes: { source: TestHome; target: TestHome; destination: string } | undefined;
  beforeEach(async () => {
    const source = await restoreHome();
    const target = await restoreHome();
    const dest = path.join(target.root, 'elsewhere', destinationName);
    await mkdir(dest, { recursive: true });
    homes = { source, target, destination: await realpath(dest) };
    use(homes);
  });
  afterEach(async () => {
    await homes?.source.cleanup();
    await homes?.target.cleanup();
  });
}

export interface FixtureSession {
  bundle: string;
  result: BundleResult;
  sessionId: string;
  /** The working directory the session was recorded in (in the source home). */
  cwd: string;
}

/**
 * Lays a recorded fixture session out in `source` (the machine it was captured on) where the harness keeps its
 * sessions, and bundles it into `out`, exactly as the capture worker does. Only for harnesses whose sessions are read
 * from the disk (their rig's `fixture.install`); `rig` picks one of its older recordings.
 */
export async function fixtureBundle(
  harness: HarnessName,
  source: TestHome,
  out: string,
  rig: FixtureRig = rigFor(harness).fixture,
): Promise<FixtureSession> {
  const install = rig.install;
  if (install === undefined)
    throw new Error(`the ${harness} fixture is not laid out on a disk (its rig has no fixture.install)`);
  const fixture = await fixtureDir(harness, rig.version);
  const recorded = await readRecorded(fixture);
  const cwd = path.join(source.root, 'work', 'proj');
  await mkdir(cwd, { recursive: true });
  const realCwd = await realpath(cwd);
  const vars = await install(fixture, { root: source.root, home: source.home, cwd: realCwd });
  const set = await shippedProfiles();
  const interval = findInterval(set, rig.profile)!.interval;
  const payload = {
    session_id: recorded.session_id,
    cwd: realCwd,
    hook_event_name: 'SessionEnd',
    ...(typeof recorded.transcript_path === 'string'
      ? { transcript_path: substitute(recorded.transcript_path, vars) }
      : {}),
  };
  const result = await assembleBundle(
    source.ctx,
    { harness, interval, payload, capturedAtUnixMs: 1_700_000_000_000 },
    out,
    set,
  );
  return { bundle: out, result, sessionId: recorded.session_id, cwd: realCwd };
}

export interface RawFile {
  role: string;
  name: string;
  native_path?: string;
  content: Buffer | string;
}

/**
 * A bundle written by hand, byte for byte as the writer lays bundles out, but with whatever manifest the test wants:
 * the hostile bundles a verified-looking download could hold.
 */
export async function rawBundle(
  out: string,
  fields: { harness: HarnessName; profile: string; sessionId: string; title?: string },
  files: RawFile[],
): Promise<void> {
  const entries = files.map((f, i) => {
    const bytes = Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content);
    return { name: fileEntryName(i, f.name), bytes, file: f };
  });
  const manifest = {
    schema_version: 1,
    artifact_format: 'blue-session-bundle-v1',
    harness: fields.harness,
    compatibility_profile: fields.profile,
    native_session_id: fields.sessionId,
    captured_at_unix_ms: 1_700_000_000_000,
    ...(fields.title === undefined ? {} : { title: fields.title }),
    files: entries.map((e) => ({
      role: e.file.role,
      path: e.name,
      ...(e.file.native_path === undefined ? {} : { native_path: e.file.native_path }),
      size: e.bytes.length,
      sha256: createHash('sha256').update(e.bytes).digest('hex'),
    })),
  } as unknown as BundleManifest;
  const manifestBytes = serializeManifest(manifest);
  const tar = Buffer.concat([
    ...entries.flatMap((e) => [fileHeader(e.name, e.bytes.length), e.bytes, padding(e.bytes.length)]),
    fileHeader('manifest.json', manifestBytes.length),
    manifestBytes,
    padding(manifestBytes.length),
    END_OF_ARCHIVE,
  ]);
  const deflated = zlib.deflateRawSync(tar);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(zlib.crc32(tar) >>> 0, 0);
  trailer.writeUInt32LE(tar.length, 4);
  await writeFile(out, Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), deflated, trailer]));
}

/**
 * Every entry below `dir`: type, mode and content hash of files, link targets; mtimes left out. The agent's own state
 * folder (`.local/state`: journals, locks) is not part of the machine the restore changes, and is left out.
 */
export async function snapshot(
  dir: string,
  exclude: readonly string[] = ['.local/state'],
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const visit = async (abs: string, rel: string): Promise<void> => {
    if (exclude.includes(rel)) return;
    let info;
    try {
      info = await lstat(abs);
    } catch {
      return;
    }
    if (info.isSymbolicLink()) out[rel] = `link ${await readlink(abs)}`;
    else if (info.isDirectory()) {
      out[rel] = `dir ${(info.mode & 0o777).toString(8)}`;
      for (const name of (await readdir(abs)).sort())
        await visit(path.join(abs, name), rel === '' ? name : `${rel}/${name}`);
    } else
      out[rel] = `file ${(info.mode & 0o777).toString(8)} ${createHash('sha256')
        .update(await readFile(abs))
        .digest('hex')}`;
  };
  await visit(dir, '');
  return out;
}

/** An errno error as Node raises it. */
export function errnoError(code: string, syscall: string, file: string): NodeJS.ErrnoException {
  const error = new Error(`${code}: injected, ${syscall} '${file}'`) as NodeJS.ErrnoException;
  error.code = code;
  error.syscall = syscall;
  error.path = file;
  return error;
}
