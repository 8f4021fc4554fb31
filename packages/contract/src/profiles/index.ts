/**
 * Compatibility profiles: loading, consistency checks, version parsing and half-open interval choice.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { BlueError } from '../errors.js';
import { DocumentCache } from '../schema/document-cache.js';
import type { HarnessName, HarnessProfiles, Interval, Operation } from '../schema/index.js';
import { compareVersions, validVersion } from '../util/semver.js';

export { HARNESSES } from '../schema/generated/harness-names.js';

export interface LoadedProfiles {
  harness: HarnessName;
  file: string;
  doc: HarnessProfiles;
  patterns: RegExp[];
}

export type ProfileSet = ReadonlyMap<HarnessName, LoadedProfiles>;

export interface ProfileProblem {
  file: string;
  profile?: string;
  message: string;
}

/**
 * Reads and schema-validates every `*.yaml` profile file; throws on the first invalid file. Documents unchanged since
 * an earlier validation come from `documents` without being parsed again.
 */
export async function loadProfiles(dir: string, documents: DocumentCache = DocumentCache.none()): Promise<ProfileSet> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.yaml') || n.endsWith('.yml')).sort();
  } catch (error) {
    throw new BlueError('PROFILE_INVALID', `cannot read the profiles folder ${dir}: ${(error as Error).message}`, {
      file: dir,
      hint: 'Reinstall blue-agent, or point BLUE_AGENT_PROFILES_DIR at a folder of profile files.',
    });
  }
  const set = new Map<HarnessName, LoadedProfiles>();
  // Read together, then taken in name order, so the first bad file is still the one reported.
  const reads = await Promise.allSettled(names.map((name) => readFile(path.join(dir, name), 'utf8')));
  for (const [i, name] of names.entries()) {
    const file = path.join(dir, name);
    const read = reads[i]!;
    if (read.status === 'rejected') throw read.reason;
    const doc = await documents.loadAsync(`profile:${file}`, read.value, async (t) => {
      const { loadDocument, profileSchema } = await import('../schema/index.js');
      return loadDocument(profileSchema, t, file);
    });
    if (set.has(doc.harness)) {
      throw new BlueError(
        'PROFILE_INVALID',
        `${file}: harness "${doc.harness}" is already described by ${set.get(doc.harness)!.file}`,
        {
          file,
          hint: 'Keep one profile file per harness.',
        },
      );
    }
    set.set(doc.harness, { harness: doc.harness, file, doc, patterns: compilePatterns(doc, file) });
  }
  return set;
}

function compilePatterns(doc: HarnessProfiles, file: string): RegExp[] {
  return doc.version_output.map((form, i) => {
    try {
      return new RegExp(form.pattern);
    } catch (error) {
      throw new BlueError(
        'PROFILE_INVALID',
        `${file}: /version_output/${i}/pattern is not a valid regular expression: ${(error as Error).message}`,
        {
          file,
          path: `/version_output/${i}/pattern`,
        },
      );
    }
  });
}

const KNOWN_OPERATIONS: readonly Operation[] = ['session_capture', 'session_resume', 'restore_rewrite'];

/** Semantic checks the schema cannot express. An empty list means the profiles are consistent. */
export function checkProfiles(set: ProfileSet): ProfileProblem[] {
  const problems: ProfileProblem[] = [];
  const seenNames = new Map<string, string>();
  for (const loaded of set.values()) {
    const { file, doc } = loaded;
    doc.version_output.forEach((form, i) => {
      // Against this form's pattern alone: another form matching the example says nothing of this one.
      if (parseVersionOutput({ ...loaded, patterns: loaded.patterns.slice(i, i + 1) }, form.example) === undefined) {
        problems.push({
          file,
          message: `version_output[${i}]: the example "${form.example}" does not match its own pattern`,
        });
      }
    });
    for (const interval of doc.intervals) {
      const at = { file, profile: interval.profile };
      const other = seenNames.get(interval.profile);
      if (other !== undefined)
        problems.push({ ...at, message: `profile name ${interval.profile} is also used in ${other}` });
      seenNames.set(interval.profile, file);
      if (interval.verified_before === undefined) problems.push({ ...at, message: 'verified_before is missing' });
      if (interval.before !== undefined && compareVersions(interval.before, interval.introduced) <= 0) {
        problems.push({ ...at, message: `before ${interval.before} is not after introduced ${interval.introduced}` });
      }
      if (
        interval.verified_before !== undefined &&
        compareVersions(interval.verified_before, interval.introduced) < 0
      ) {
        problems.push({
          ...at,
          message: `verified_before ${interval.verified_before} is below introduced ${interval.introduced}`,
        });
      }
      for (const op of interval.operations) {
        if (!KNOWN_OPERATIONS.includes(op)) problems.push({ ...at, message: `unknown operation "${op}"` });
      }
      if (interval.operations.includes('session_capture') && interval.capture === undefined) {
        problems.push({ ...at, message: 'supports session_capture but has no capture section' });
      }
      if (interval.operations.length > 0 && interval.session === undefined) {
        problems.push({ ...at, message: 'captures or resumes sessions but has no session section' });
      }
      for (const [what, value] of [
        ['session.root', interval.session?.root],
        ['capture.hook.file', interval.capture?.hook.file],
      ] as const) {
        if (value !== undefined && value.split('/').includes('..'))
          problems.push({ ...at, message: `${what} "${value}" leaves the harness's folder` });
      }
      const seenRoles = new Set<string>();
      for (const r of interval.session?.roles ?? []) {
        if (seenRoles.has(r.role)) problems.push({ ...at, message: `role ${r.role} is listed twice` });
        seenRoles.add(r.role);
        if (r.min > r.max) problems.push({ ...at, message: `role ${r.role}: min ${r.min} is above max ${r.max}` });
        if (r.restore_rewrite !== undefined && !interval.operations.includes('restore_rewrite')) {
          problems.push({
            ...at,
            message: `role ${r.role} declares restore_rewrite, but the operations do not list restore_rewrite`,
          });
        }
      }
      const rewritten = (interval.session?.roles ?? []).filter((r) => r.restore_rewrite !== undefined);
      if (interval.operations.includes('restore_rewrite')) {
        if (!interval.operations.includes('session_resume'))
          problems.push({ ...at, message: 'lists restore_rewrite without session_resume (only a restore rewrites)' });
        if (rewritten.length === 0)
          problems.push({
            ...at,
            message:
              'lists restore_rewrite, but no role says what a restore rewrites (session.roles[].restore_rewrite)',
          });
      }
    }
    for (const interval of doc.intervals) {
      for (const name of interval.resumes ?? []) {
        const at = { file, profile: interval.profile };
        const earlier = doc.intervals.find((i) => i.profile === name);
        if (earlier === undefined)
          problems.push({ ...at, message: `resumes ${name}, which is not a profile of ${doc.harness}` });
        else if (compareVersions(earlier.introduced, interval.introduced) >= 0)
          problems.push({ ...at, message: `resumes ${name}, which is not an earlier interval` });
        else if (!earlier.operations.includes('session_resume'))
          problems.push({ ...at, message: `resumes ${name}, whose sessions are not resumable (no session_resume)` });
      }
      if ((interval.resumes ?? []).length > 0 && !interval.operations.includes('session_resume')) {
        problems.push({ file, profile: interval.profile, message: 'lists resumes without session_resume' });
      }
    }
    const sorted = [...doc.intervals].sort((a, b) => compareVersions(a.introduced, b.introduced));
    for (let i = 1; i < sorted.length; i++) {
      const prev = sorted[i - 1]!;
      const next = sorted[i]!;
      if (prev.before === undefined || compareVersions(prev.before, next.introduced) > 0) {
        problems.push({
          file,
          profile: next.profile,
          message:
            `overlaps ${prev.profile} ([${prev.introduced}, ${prev.before ?? '∞'}) and [${next.introduced}, ` +
            `${next.before ?? '∞'}))`,
        });
      }
    }
  }
  return problems;
}

/** Normalises `--version` output to a semver string, or undefined when no registered form matches. */
export function parseVersionOutput(loaded: LoadedProfiles, output: string): string | undefined {
  const line =
    output
      .replace(/^\uFEFF/, '')
      .split(/\r?\n/)
      .find((l) => l.trim() !== '')
      ?.trim() ?? '';
  if (line.length > 256) return undefined;
  for (const pattern of loaded.patterns) {
    const version = pattern.exec(line)?.groups?.version;
    if (version !== undefined) {
      const clean = validVersion(version);
      if (clean !== null) return clean;
    }
  }
  return undefined;
}

export interface IntervalChoice {
  interval: Interval;
  /** False when the version is at or past the interval's verified_before ceiling. */
  verified: boolean;
}

/** The interval holding `version` (half-open: introduced <= v < before), prerelease-aware. */
export function selectInterval(doc: HarnessProfiles, version: string): IntervalChoice | undefined {
  for (const interval of doc.intervals) {
    if (compareVersions(version, interval.introduced) < 0) continue;
    if (interval.before !== undefined && compareVersions(version, interval.before) >= 0) continue;
    return { interval, verified: compareVersions(version, interval.verified_before) < 0 };
  }
  return undefined;
}

/** Finds a profile by its recorded name, across harnesses. */
export function findInterval(
  set: ProfileSet,
  profile: string,
): { harness: HarnessName; interval: Interval } | undefined {
  for (const loaded of set.values()) {
    const interval = loaded.doc.intervals.find((i) => i.profile === profile);
    if (interval !== undefined) return { harness: loaded.harness, interval };
  }
  return undefined;
}

export function requireProfiles(set: ProfileSet, harness: HarnessName): LoadedProfiles {
  const loaded = set.get(harness);
  if (loaded === undefined) {
    throw new BlueError('PROFILE_UNKNOWN', `no compatibility profile file describes harness "${harness}"`, {
      hint: 'Reinstall blue-agent: its profiles/ folder is incomplete.',
    });
  }
  return loaded;
}
