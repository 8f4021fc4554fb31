/**
 * Shared by the session tests: recorded fixtures laid out in a temporary HOME, the shipped profiles' intervals, the
 * world a collector suite works in (`useRecordedHome`), and assertions on BlueErrors.
 */
import { chmod, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { BlueError } from '../../packages/contract/src/errors.js';
import { findInterval, loadProfiles, type ProfileSet } from '../../packages/contract/src/profiles/index.js';
import type { Interval } from '../../packages/contract/src/schema/index.js';
import { agentRoot, makeTestHome, repoRoot, type TestHome } from './context.js';

export const FIXTURES = path.join(repoRoot, 'fixtures', 'sessions');

/** Facts the recorder writes beside each recorded session (`session.json`). */
export interface RecordedSession {
  harness: string;
  version: string;
  session_id: string;
  prompt: string;
  /** The working directory with `{{ROOT}}` for the recording's temporary root. */
  cwd: string;
  [key: string]: unknown;
}

export async function readRecorded(dir: string): Promise<RecordedSession> {
  return JSON.parse(await readFile(path.join(dir, 'session.json'), 'utf8')) as RecordedSession;
}

/** A version folder of a harness's fixtures: `version`, or the one recorded last. */
export async function fixtureDir(harness: string, version?: string): Promise<string> {
  const versions = (await readdir(path.join(FIXTURES, harness), { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  if (versions.length === 0) throw new Error(`no fixtures for ${harness} under ${FIXTURES}`);
  if (version !== undefined) {
    if (!versions.includes(version)) throw new Error(`no fixtures of ${harness} ${version} under ${FIXTURES}`);
    return path.join(FIXTURES, harness, version);
  }
  return path.join(FIXTURES, harness, versions.sort().at(-1)!);
}

export function substitute(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(/\{\{([A-Z][A-Z0-9_]*)\}\}/g, (all, name: string) => vars[name] ?? all);
}

/**
 * Copies `from` into `to`: placeholders in file contents and folder/file names are replaced with `vars`
 * (`{{ROOT}}`, `{{PROJECT}}`, ...), so the fixture looks as if it was recorded under the test's own HOME.
 */
export async function installTree(from: string, to: string, vars: Readonly<Record<string, string>>): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const target = path.join(to, substitute(entry.name, vars));
    if (entry.isDirectory()) await installTree(path.join(from, entry.name), target, vars);
    else await writeFile(target, substitute(await readFile(path.join(from, entry.name), 'utf8'), vars));
  }
}

/** Every file below `dir`, as `/`-separated paths relative to it, sorted. */
export async function filesBelow(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await filesBelow(path.join(dir, entry.name), rel)));
    else out.push(rel);
  }
  return out.sort();
}

/** A bundle entry name for a file at `rel` in a session folder. */
export function entryName(rel: string): string {
  return rel.replace(/\//g, '-');
}

let profiles: Promise<ProfileSet> | undefined;

/** The shipped profiles (profiles/), loaded once. */
export function shippedProfiles(): Promise<ProfileSet> {
  profiles ??= loadProfiles(path.join(agentRoot, 'profiles'));
  return profiles;
}

/** The interval of a shipped profile (`<harness>-v<version>`). */
export async function intervalOf(profile: string): Promise<Interval> {
  const found = findInterval(await shippedProfiles(), profile);
  if (found === undefined) throw new Error(`no interval ${profile} in profiles/`);
  return found.interval;
}

/** Runs `fn` and returns the BlueError it throws; fails when it does not throw one. */
export async function blueErrorOf(fn: () => Promise<unknown>): Promise<BlueError> {
  try {
    await fn();
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(BlueError);
    return error as BlueError;
  }
  throw new Error('expected a BlueError, but nothing was thrown');
}

/** Expects ARTIFACT_INVALID naming `file` (exactly) with a message matching `why`. */
export async function expectArtifactInvalid(fn: () => Promise<unknown>, file: string, why: RegExp): Promise<BlueError> {
  const error = await blueErrorOf(fn);
  expect(error.code, error.message).toBe('ARTIFACT_INVALID');
  expect(error.file, error.message).toBe(file);
  expect(error.message).toMatch(why);
  expect(error.hint ?? '').not.toBe('');
  return error;
}

/** A realpath'd working directory under the test root (harnesses report resolved paths). */
export async function workDir(root: string, ...parts: string[]): Promise<string> {
  const dir = path.join(root, 'work', ...(parts.length === 0 ? ['proj'] : parts));
  await mkdir(dir, { recursive: true });
  return realpath(dir);
}

/** Writes an executable script (for fake CLIs on PATH). */
export async function writeExecutable(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  await chmod(file, 0o755);
}

/** A collector suite's world: one harness's recording, and a fresh HOME with a working directory for each test. */
export interface RecordedHome<R extends RecordedSession = RecordedSession> {
  /** The shipped interval of the recording's profile. */
  interval: Interval;
  /** The recording's folder (fixtures/sessions/<harness>/<version>/). */
  fixture: string;
  recorded: R;
  t: TestHome;
  /** The working directory the recording is laid out for, inside the HOME's root, resolved. */
  cwd: string;
}

/**
 * Registers, in the calling file or describe block, the hooks of a suite on the newest recording of `harness` (its
 * profile `profile`): read once; a fresh HOME and working directory before each test, removed after it. Read the
 * world's fields inside hooks and tests; a `beforeEach` registered after this call lays the recording out.
 */
export function useRecordedHome<R extends RecordedSession = RecordedSession>(
  harness: string,
  profile: string,
): RecordedHome<R> {
  const world = {} as RecordedHome<R>;
  beforeAll(async () => {
    world.interval = await intervalOf(profile);
    world.fixture = await fixtureDir(harness);
    world.recorded = (await readRecorded(world.fixture)) as R;
  });
  beforeEach(async () => {
    world.t = await makeTestHome();
    world.cwd = await workDir(world.t.root);
  });
  afterEach(async () => {
    await world.t.cleanup();
  });
  return world;
}
