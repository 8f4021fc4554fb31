/** Versions are read and ordered exactly as the semver package's valid() and compare() do, on any text. */
import fc from 'fast-check';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { compareVersions, noRanges, rangeCheck, validVersion } from '../../src/util/semver.js';

const number = fc.oneof(
  fc.constantFrom('0', '1', '01', '00', '9007199254740991', '9007199254740992', '99999999999999999999'),
  fc.nat({ max: 40 }).map(String),
);
const identifier = fc.oneof(
  number,
  fc.constantFrom('alpha', 'beta', 'rc', 'x-y', '-', '0a', 'a0', 'A', ''),
  fc.stringMatching(/^[0-9A-Za-z-]{1,5}$/),
);
const dotted = (part: fc.Arbitrary<string>) =>
  fc.array(part, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.'));
/** Mostly versions, some nearly versions, some not at all. */
const versionish = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('', 'v', 'V', '=', ' ', '\u00a0v'),
      number,
      number,
      number,
      fc.option(dotted(identifier), { nil: undefined }),
      fc.option(dotted(fc.stringMatching(/^[0-9A-Za-z-]{0,4}$/)), { nil: undefined }),
      fc.constantFrom('', ' ', '\n', 'x'),
    )
    .map(
      ([pre, a, b, c, release, build, post]) =>
        `${pre}${a}.${b}.${c}${release === undefined ? '' : `-${release}`}${build === undefined ? '' : `+${build}`}` +
        `${post}`,
    ),
  fc.string({ maxLength: 20 }),
  fc.constantFrom('1.2', '1.2.3.4', '1.2.3-', '1.2.3+', `1.2.3-${'a'.repeat(260)}`, ` ${'1.2.3'.padEnd(256, ' ')}`),
);

describe('versions', () => {
  it('are valid, and normalised, exactly where semver says so', () => {
    fc.assert(
      fc.property(versionish, (text) => validVersion(text) === semver.valid(text)),
      { numRuns: 3000 },
    );
    expect(validVersion('v1.2.3-rc.1+build.5')).toBe('1.2.3-rc.1');
    expect(validVersion(42)).toBeNull();
  });

  it('are ordered exactly as semver orders them', () => {
    const valid = versionish.filter((text) => semver.valid(text) !== null);
    fc.assert(
      fc.property(valid, valid, (a, b) => compareVersions(a, b) === semver.compare(a, b)),
      { numRuns: 3000 },
    );
    expect(compareVersions('1.0.0-alpha', '1.0.0-alpha.1')).toBe(-1);
    expect(compareVersions('1.0.0-alpha.beta', '1.0.0-beta')).toBe(-1);
    expect(compareVersions('1.0.0-beta.11', '1.0.0-beta.2')).toBe(1);
    expect(compareVersions('1.0.0-rc.1', '1.0.0')).toBe(-1);
    expect(compareVersions('1.0.0+a', '1.0.0+b')).toBe(0);
  });

  it('refuse to order what is not a version, as semver does', () => {
    expect(() => compareVersions('1.2', '1.2.3')).toThrow(TypeError);
    expect(() => semver.compare('1.2', '1.2.3')).toThrow(TypeError);
  });
});

describe('version ranges', () => {
  it('are checked by semver, prereleases included', async () => {
    const check = await rangeCheck([undefined, '>=2.1.0 <3']);
    expect(check('2.1.5', '>=2.1.0 <3')).toBe(true);
    expect(check('3.0.0-rc.1', '<3.0.1')).toBe(true);
    expect(check('2.0.9', '>=2.1.0 <3')).toBe(false);
  });

  it('are not loaded for a policy without one: asking then is a bug, said as such', async () => {
    expect(await rangeCheck([undefined, undefined])).toBe(noRanges);
    expect(() => noRanges('1.0.0', '^1')).toThrow(/no version range was expected/);
  });
});
