/**
 * The recorded session `blue-agent demo` plays: a copy of a session of the demo's harness (the registry's
 * `demoHarness()`) recorded from the real CLI (offline, against a loopback model), shipped in
 * `demo/sessions/<harness>/<version>/` with the placeholders of fixtures/sessions/README.md. It is laid out in
 * machine A's HOME exactly where the harness keeps sessions (its adapter's demo facet says where), as if it had run
 * there.
 */
import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { release } from 'node:os';
import path from 'node:path';
import semver from 'semver';
import { BlueError } from '@blue-agent/contract/errors.js';
import { demoHarness } from '../harnesses/index.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { substitute, substitutedName, type MachineLayout } from './layout.js';

const SESSION_ID = /^[A-Za-z0-9._-]{1,512}$/;
/** The asset is small; anything larger is not the shipped one. */
const MAX_ASSET_BYTES = 16 * 1024 * 1024;
const MAX_ASSET_FILES = 256;

export interface RecordedAsset {
  dir: string;
  harness: HarnessName;
  /** How people call the harness, and the executable its stand-in takes on PATH. */
  displayName: string;
  binary: string;
  version: string;
  sessionId: string;
  prompt: string;
  /** The transcript path with placeholders, as the recording's hook payload gave it. */
  transcriptPath: string;
}

export interface InstalledSession {
  sessionId: string;
  cwd: string;
  transcriptPath: string;
  projectDir: string;
  files: number;
  bytes: number;
}

function assetError(dir: string, what: string): BlueError {
  return new BlueError('INTERNAL', `the demo's recorded session in ${dir} ${what}`, {
    file: dir,
    hint: 'The installed blue-agent package is incomplete or was changed; reinstall it.',
  });
}

/** The newest recorded session of the demo's harness shipped in `demoDir`. */
export async function readRecordedAsset(demoDir: string): Promise<RecordedAsset> {
  const harness = demoHarness();
  const base = path.join(demoDir, 'sessions', harness.name);
  const versions = (await readdir(base, { withFileTypes: true }).catch(() => []))
    .filter((e) => e.isDirectory() && semver.valid(e.name) !== null)
    .map((e) => e.name)
    .sort(semver.compare);
  const version = versions.at(-1);
  if (version === undefined) throw assetError(base, 'is missing');
  const dir = path.join(base, version);
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(await readFile(path.join(dir, 'session.json'), 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw assetError(dir, `has no readable session.json (${(error as Error).message})`);
  }
  const { session_id: sessionId, prompt, transcript_path: transcriptPath } = doc;
  if (doc.harness !== harness.name || doc.version !== version)
    throw assetError(dir, `does not describe a ${harness.displayName} session of its version`);
  if (typeof sessionId !== 'string' || !SESSION_ID.test(sessionId)) throw assetError(dir, 'has no valid session_id');
  const sessionsHome = `{{ROOT}}/home/${harness.demo.sessionsHome.split(path.sep).join('/')}`;
  if (typeof transcriptPath !== 'string' || !transcriptPath.startsWith(`${sessionsHome}/`))
    throw assetError(dir, `has no transcript_path under ${sessionsHome}`);
  const { displayName, demo } = harness;
  return {
    dir,
    harness: harness.name,
    displayName,
    binary: demo.binary,
    version,
    sessionId,
    prompt: typeof prompt === 'string' ? prompt : '',
    transcriptPath,
  };
}

/** Copies the recorded tree into the HOME where the harness keeps sessions, placeholders replaced; files 0600. */
export async function installRecordedSession(
  asset: RecordedAsset,
  machine: MachineLayout,
  cwd: string,
): Promise<InstalledSession> {
  const { demo } = demoHarness();
  const vars: Record<string, string> = {
    ROOT: machine.root,
    ...demo.placeholders({ root: machine.root, cwd }),
    OS_RELEASE: release(),
  };
  const counts = { files: 0, bytes: 0 };
  const target = path.join(machine.home, demo.sessionsHome);
  await copyTree(path.join(asset.dir, path.basename(demo.sessionsHome)), target, vars, counts);
  return {
    sessionId: asset.sessionId,
    cwd,
    transcriptPath: substitute(asset.transcriptPath, vars),
    projectDir: path.join(target, demo.sessionDir(vars)),
    ...counts,
  };
}

async function copyTree(
  from: string,
  to: string,
  vars: Record<string, string>,
  counts: { files: number; bytes: number },
): Promise<void> {
  await mkdir(to, { recursive: true, mode: 0o700 });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const name = substitutedName(entry.name, vars);
    if (name === undefined)
      throw assetError(from, `names a file that would leave its folder: ${JSON.stringify(entry.name)}`);
    const source = path.join(from, entry.name);
    const info = await lstat(source);
    if (info.isDirectory()) {
      await copyTree(source, path.join(to, name), vars, counts);
    } else if (info.isFile()) {
      counts.files++;
      counts.bytes += info.size;
      if (counts.files > MAX_ASSET_FILES || counts.bytes > MAX_ASSET_BYTES)
        throw assetError(from, 'is larger than the shipped one');
      await writeFile(path.join(to, name), substitute(await readFile(source, 'utf8'), vars), {
        mode: 0o600,
        flag: 'wx',
      });
    } else {
      throw assetError(from, `holds ${JSON.stringify(entry.name)}, which is not a regular file or folder`);
    }
  }
}
