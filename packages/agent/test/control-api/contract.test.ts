/**
 * The client-version pin's SemVer check: `exactRelease` says what `semver.valid(v) === v` says (the agent's own process
 * judges pins without loading the semver package), for spellings made from SemVer's grammar and for arbitrary text.
 */
import fc from 'fast-check';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { exactRelease } from '../../src/control-api/contract.js';

const same = (v: string) => expect(exactRelease(v), JSON.stringify(v)).toBe(semver.valid(v) === v);

describe('exactRelease', () => {
  it('agrees with semver on versions, near-versions and the edges', () => {
    for (const v of [
      '1.4.2',
      '0.0.0',
      '10.20.30',
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-0.3.7',
      '1.0.0-x.7.z.92',
      '1.0.0-x-y-z.--',
      '1.0.0+build',
      '1.0.0-rc.1+build.5',
      'v1.2.3',
      '=1.2.3',
      ' 1.2.3',
      '1.2.3 ',
      '01.2.3',
      '1.02.3',
      '1.2.03',
      '1.2',
      '1.2.3.4',
      '^1.4.2',
      '~1.4',
      '1.x',
      '*',
      '',
      '1.2.3-',
      '1.2.3-01',
      '1.2.3-a..b',
      '1.2.3-é',
      `${Number.MAX_SAFE_INTEGER}.0.0`,
      `${Number.MAX_SAFE_INTEGER + 1}.0.0`,
      '1.2.3-99999999999999999999',
      `1.2.3-${'a'.repeat(260)}`,
    ]) {
      same(v);
    }
  });

  it('agrees with semver on spellings made from its grammar, and on any text (property)', () => {
    const num = fc.oneof(
      fc.constantFrom('0', '1', '00', '01', '9007199254740991', '9007199254740992'),
      fc.nat().map(String),
    );
    const ident = fc.oneof(num, fc.stringMatching(/^[0-9A-Za-z-]{0,6}$/));
    const version = fc
      .tuple(
        num,
        num,
        num,
        fc.option(fc.array(ident, { minLength: 1, maxLength: 3 })),
        fc.option(fc.array(ident, { minLength: 1, maxLength: 2 })),
      )
      .map(
        ([a, b, c, pre, build]) =>
          `${a}.${b}.${c}${pre === null ? '' : `-${pre.join('.')}`}${build === null ? '' : `+${build.join('.')}`}`,
      );
    fc.assert(
      fc.property(fc.oneof(version, fc.string({ maxLength: 20 })), (v) => {
        same(v);
      }),
      { numRuns: 2000 },
    );
  });
});
