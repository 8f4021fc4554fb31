/**
 * SemVer 2.0.0 versions, read and ordered exactly as the semver package's valid() and compare() do (strict, not loose).
 * A no-change reconcile orders profile intervals and the installed versions; loading the semver package for that (it
 * builds dozens of regular expressions as it loads) was a visible part of it (bench/reconcile-noop.mjs). Ranges
 * (`version_requirement`) stay with the semver package, loaded only for a policy that has one (rangeCheck).
 */

/** semver's limit on a version's length, before it is trimmed. */
const MAX_LENGTH = 256;
const IDENTIFIER = String.raw`(?:\d*[a-zA-Z-][a-zA-Z0-9-]*|0|[1-9]\d*)`;
const NUMBER = String.raw`(0|[1-9]\d*)`;
const PRERELEASE = String.raw`(?:-(${IDENTIFIER}(?:\.${IDENTIFIER})*))?`;
const BUILD = String.raw`(?:\+[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)*)?`;
const FULL = new RegExp(String.raw`^v?${NUMBER}\.${NUMBER}\.${NUMBER}${PRERELEASE}${BUILD}$`);

export interface SemVersion {
  major: number;
  minor: number;
  patch: number;
  /** Numeric identifiers as numbers (below 2^53 - 1), the others as text. */
  prerelease: (number | string)[];
  /** The normalised text: no `v`, no build metadata. */
  version: string;
}

/** The version `text` states (surrounding white space and a leading `v` allowed), or undefined. */
export function parseVersion(text: unknown): SemVersion | undefined {
  if (typeof text !== 'string' || text.length > MAX_LENGTH) return undefined;
  const m = FULL.exec(text.trim());
  if (m === null) return undefined;
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (major > Number.MAX_SAFE_INTEGER || minor > Number.MAX_SAFE_INTEGER || patch > Number.MAX_SAFE_INTEGER)
    return undefined;
  const prerelease =
    m[4] === undefined
      ? []
      : m[4].split('.').map((id) => {
          const num = /^[0-9]+$/.test(id) ? Number(id) : NaN;
          return num >= 0 && num < Number.MAX_SAFE_INTEGER ? num : id;
        });
  const version = `${major}.${minor}.${patch}${prerelease.length > 0 ? `-${prerelease.join('.')}` : ''}`;
  return { major, minor, patch, prerelease, version };
}

/** semver.valid: the normalised version, or null when `text` is not one. */
export function validVersion(text: unknown): string | null {
  return parseVersion(text)?.version ?? null;
}

/** semver.compare: -1, 0 or 1 as `a` is below, equal to or above `b` (build metadata ignored); throws on a non-version.
 * */
export function compareVersions(a: string, b: string): -1 | 0 | 1 {
  for (const text of [a, b])
    if (typeof text === 'string' && text.length > MAX_LENGTH)
      throw new TypeError(`version is longer than ${MAX_LENGTH} characters`);
  const x = parseVersion(a) ?? invalid(a);
  const y = parseVersion(b) ?? invalid(b);
  if (x.version === y.version) return 0;
  for (const key of ['major', 'minor', 'patch'] as const) {
    if (x[key] !== y[key]) return x[key] < y[key] ? -1 : 1;
  }
  // A version with a prerelease is below the same version without one.
  if (x.prerelease.length === 0 || y.prerelease.length === 0) return x.prerelease.length === 0 ? 1 : -1;
  for (let i = 0; ; i++) {
    const [p, q] = [x.prerelease[i], y.prerelease[i]];
    if (p === undefined || q === undefined) return p === q ? 0 : p === undefined ? -1 : 1;
    if (p !== q) return compareIdentifiers(p, q);
  }
}

/** Numeric identifiers are below the others, and ordered as numbers (past 2^53, as imprecisely as semver); the others
 * as text. */
function compareIdentifiers(a: number | string, b: number | string): -1 | 0 | 1 {
  const aNumeric = /^[0-9]+$/.test(String(a));
  const bNumeric = /^[0-9]+$/.test(String(b));
  if (aNumeric && bNumeric) return Number(a) === Number(b) ? 0 : Number(a) < Number(b) ? -1 : 1;
  if (aNumeric !== bNumeric) return aNumeric ? -1 : 1;
  return a < b ? -1 : 1;
}

function invalid(text: string): never {
  throw new TypeError(`Invalid Version: ${text}`);
}

/** Whether `version` is in the semver range `range` (prereleases included). */
export type RangeCheck = (version: string, range: string) => boolean;

/** The range check for a policy whose ranges are `ranges`: semver's range grammar loads only when one is stated. */
export async function rangeCheck(ranges: Iterable<string | undefined>): Promise<RangeCheck> {
  if (![...ranges].some((range) => range !== undefined)) return noRanges;
  const { default: semver } = await import('semver');
  return (version, range) => semver.satisfies(version, range, { includePrerelease: true });
}

/** The check for a policy without ranges: asking it is a bug (rangeCheck was given the wrong policy). */
export const noRanges: RangeCheck = (version, range) => {
  throw new Error(`no version range was expected (asked whether ${version} is in "${range}")`);
};
