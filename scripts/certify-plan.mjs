// What `npm run certify` certifies, from its flags and the lock file: the pure part of scripts/certify.mjs.
import { parseArgs as parseFlags } from 'node:util';
import semver from 'semver';
import { FIXTURE_HARNESSES, fixtureVersions, inInterval } from './compat.mjs';

export const USAGE =
  'usage: npm run certify [-- --harness NAME] [--version X | --latest] [--update-profiles] [--results FILE]';

export function parseArgs(argv) {
  // node:util's parser: --flag value and --flag=value, unknown flags refused.
  const { values } = parseFlags({
    args: argv,
    options: {
      harness: { type: 'string' },
      version: { type: 'string' },
      latest: { type: 'boolean' },
      'update-profiles': { type: 'boolean' },
      results: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const opts = {
    updateProfiles: values['update-profiles'] === true,
    harness: values.harness,
    version: values.version,
    latest: values.latest === true,
    results: values.results,
    help: values.help === true,
  };
  if (opts.version !== undefined && opts.latest)
    throw new Error('--version and --latest name the version two ways: give one');
  if (opts.version !== undefined && opts.harness === undefined) throw new Error('--version needs --harness');
  if (opts.version !== undefined && semver.valid(opts.version) === null)
    throw new Error(`--version ${opts.version} is not an exact version`);
  return opts;
}

/** The harnesses whose newest version `--latest` asks the registry for: those in the lock file (or the one named). */
export function latestQueries(lock, opts) {
  return Object.entries(lock)
    .filter(([harness]) => opts.harness === undefined || harness === opts.harness)
    .map(([harness, entry]) => ({ harness, package: entry.package }));
}

/**
 * `(harness, version) => boolean`: does the profile interval `version` lies in have `session_resume`? From the profile
 * documents (`readProfiles()`'s `doc`s).
 */
export function resumableIn(docs) {
  return (harness, version) =>
    docs.some(
      (doc) =>
        doc?.harness === harness &&
        (doc.intervals ?? []).some((i) => inInterval(version, i) && (i.operations ?? []).includes('session_resume')),
    );
}

/**
 * `(harness, from, to) => boolean`: may version `to` resume a session captured by version `from`? It may when both
 * lie in one interval, or when `to`'s interval lists `from`'s profile under `resumes`. From the profile documents.
 */
export function resumesFrom(docs) {
  const intervalOf = (harness, version) =>
    docs.find((doc) => doc?.harness === harness)?.intervals?.find((i) => inInterval(version, i));
  return (harness, from, to) => {
    const captured = intervalOf(harness, from);
    const resuming = intervalOf(harness, to);
    if (captured === undefined || resuming === undefined) return false;
    return captured.profile === resuming.profile || (resuming.resumes ?? []).includes(captured.profile);
  };
}

/**
 * The cross-version targets: for each harness of the lock file with two or more locked versions in intervals with
 * `session_resume`, a session captured by the oldest of them whose sessions the newest may resume (`canResume`) is
 * restored and resumed by the newest: `{ harness, from, version, method: 'cross' }`.
 */
export function crossTargets(lock, resumable, canResume = () => true) {
  const targets = [];
  for (const [harness, entry] of Object.entries(lock)) {
    const versions = entry.versions.filter((v) => resumable(harness, v)).sort(semver.compare);
    if (versions.length < 2) continue;
    const newest = versions.at(-1);
    const oldest = versions.slice(0, -1).find((v) => canResume(harness, v, newest));
    if (oldest !== undefined) targets.push({ harness, from: oldest, version: newest, method: 'cross' });
  }
  return targets;
}

/** How a target is named in the table and the results: its version, or `OLD→NEW` for a cross-version target. */
export function targetLabel(target) {
  return target.from === undefined ? target.version : `${target.from}→${target.version}`;
}

/**
 * What will be certified: `[{ harness, version, method, from?, package?, runtime_deps?, locked }]`. With `--latest`,
 * `latest` maps each harness of the lock file to the version the registry calls newest; harnesses certified on
 * fixtures have no registry and keep their fixture versions. Without `--version` or `--latest` (the locked versions),
 * the cross-version targets follow each harness's own targets; `resumable` says which versions can resume a session,
 * `canResume` which version may resume which version's session (resumesFrom).
 */
export function plan(lock, opts, latest = new Map(), resumable = () => false, canResume = () => true) {
  const known = [...Object.keys(lock), ...Object.keys(FIXTURE_HARNESSES)];
  if (opts.harness !== undefined && !known.includes(opts.harness)) {
    throw new Error(`unknown harness "${opts.harness}" (known: ${known.join(', ')})`);
  }
  const targets = [];
  for (const [harness, entry] of Object.entries(lock)) {
    if (opts.harness !== undefined && harness !== opts.harness) continue;
    let versions = entry.versions;
    if (opts.version !== undefined) versions = [opts.version];
    if (opts.latest) {
      const newest = latest.get(harness);
      if (newest === undefined) throw new Error(`no newest version of ${harness} was found`);
      versions = [newest];
    }
    for (const version of versions)
      targets.push({
        harness,
        version,
        method: 'cli',
        package: entry.package,
        runtime_deps: entry.runtime_deps,
        locked: entry.versions.includes(version),
      });
    if (opts.version === undefined && !opts.latest) {
      for (const cross of crossTargets({ [harness]: entry }, resumable, canResume))
        targets.push({ ...cross, package: entry.package, runtime_deps: entry.runtime_deps, locked: true });
    }
  }
  for (const harness of Object.keys(FIXTURE_HARNESSES)) {
    if (opts.harness !== undefined && harness !== opts.harness) continue;
    const versions = fixtureVersions(harness);
    if (opts.version !== undefined && !versions.includes(opts.version)) {
      throw new Error(
        `${harness} is certified on fixtures; there are fixtures for ${versions.join(', ')}, not ${opts.version}`,
      );
    }
    for (const version of opts.version === undefined ? versions : [opts.version])
      targets.push({ harness, version, method: 'fixtures', locked: true });
  }
  return targets;
}
