/** What `npm run certify` plans from its flags and the lock file, without installing or running anything. */
import { describe, expect, it } from 'vitest';
import {
  crossTargets,
  latestQueries,
  parseArgs,
  plan,
  resumableIn,
  resumesFrom,
  targetLabel,
} from '../../scripts/certify-plan.mjs';
import { FIXTURE_CERTIFIED } from '../../packages/contract/src/schema/generated/harness-names.js';

const lock = {
  alpha: { package: '@org/alpha', versions: ['1.0.0', '2.3.0'] },
  beta: { package: 'beta-cli', versions: ['0.5.0'] },
};

describe('certify flags', () => {
  it('takes --latest, alone or with --harness and --update-profiles', () => {
    expect(parseArgs(['--latest', '--update-profiles'])).toMatchObject({
      latest: true,
      updateProfiles: true,
      harness: undefined,
      version: undefined,
    });
    expect(parseArgs(['--latest', '--harness', 'alpha'])).toMatchObject({ latest: true, harness: 'alpha' });
    expect(parseArgs([])).toMatchObject({ latest: false, updateProfiles: false });
  });

  it('refuses --latest with --version, a --version without --harness and an inexact version', () => {
    expect(() => parseArgs(['--latest', '--harness', 'alpha', '--version', '2.4.0'])).toThrow(
      '--version and --latest name the version two ways',
    );
    expect(() => parseArgs(['--version', '2.4.0'])).toThrow('--version needs --harness');
    expect(() => parseArgs(['--harness', 'alpha', '--version', '^2'])).toThrow('is not an exact version');
    expect(() => parseArgs(['--newest'])).toThrow();
  });
});

// alpha 1.0.0 lies in an interval without session_resume, 1.5.0 and 2.3.0 in one with it; beta has one version.
const docs = [
  {
    harness: 'alpha',
    intervals: [
      { profile: 'alpha-v1', introduced: '1.0.0', before: '1.5.0', operations: ['session_capture'] },
      { profile: 'alpha-v1_5', introduced: '1.5.0', operations: ['session_capture', 'session_resume'] },
    ],
  },
  {
    harness: 'beta',
    intervals: [{ profile: 'beta-v0', introduced: '0.1.0', operations: ['session_capture', 'session_resume'] }],
  },
];
const resumable = resumableIn(docs);
const crossLock = { ...lock, alpha: { ...lock.alpha, versions: ['1.0.0', '1.5.0', '2.3.0'] } };

describe('cross-version targets', () => {
  it('say which versions lie in an interval with session_resume', () => {
    expect(['1.0.0', '1.4.9', '1.5.0', '2.3.0'].map((v) => resumable('alpha', v))).toEqual([false, false, true, true]);
    expect(resumable('beta', '0.5.0')).toBe(true);
    expect(resumable('beta', '0.0.9')).toBe(false);
    expect(resumable('gamma', '1.0.0')).toBe(false);
  });

  it('restore the oldest resumable locked version with the newest, for harnesses with two or more of them', () => {
    expect(crossTargets(crossLock, resumable)).toEqual([
      { harness: 'alpha', from: '1.5.0', version: '2.3.0', method: 'cross' },
    ]);
    // Sorted by version, not by their order in the lock file.
    expect(crossTargets({ alpha: { package: 'a', versions: ['2.3.0', '1.10.0', '1.9.0'] } }, resumable)).toEqual([
      { harness: 'alpha', from: '1.9.0', version: '2.3.0', method: 'cross' },
    ]);
    expect(crossTargets(lock, resumable)).toEqual([]);
    expect(crossTargets(crossLock, () => false)).toEqual([]);
  });

  it(
    'pair the newest with the oldest version whose sessions it may resume: its own interval, or one its interval ' +
      'resumes',
    () => {
      const layered = [
        {
          harness: 'alpha',
          intervals: [
            {
              profile: 'alpha-v1',
              introduced: '1.0.0',
              before: '2.0.0',
              operations: ['session_capture', 'session_resume'],
            },
            {
              profile: 'alpha-v2',
              introduced: '2.0.0',
              before: '3.0.0',
              operations: ['session_capture', 'session_resume'],
            },
            {
              profile: 'alpha-v3',
              introduced: '3.0.0',
              operations: ['session_capture', 'session_resume'],
              resumes: ['alpha-v2'],
            },
          ],
        },
      ];
      const can = resumesFrom(layered);
      expect([
        can('alpha', '2.1.0', '3.4.0'),
        can('alpha', '1.0.0', '3.4.0'),
        can('alpha', '3.0.0', '3.4.0'),
        can('alpha', '3.4.0', '2.1.0'),
        can('beta', '1.0.0', '1.0.0'),
      ]).toEqual([true, false, true, false, false]);
      const versions = { alpha: { package: 'a', versions: ['1.0.0', '2.1.0', '3.4.0'] } };
      expect(crossTargets(versions, resumableIn(layered), can)).toEqual([
        { harness: 'alpha', from: '2.1.0', version: '3.4.0', method: 'cross' },
      ]);
      // The newest reads none of the older ones: no cross-version target.
      expect(
        crossTargets({ alpha: { package: 'a', versions: ['1.0.0', '3.4.0'] } }, resumableIn(layered), can),
      ).toEqual([]);
      expect(
        plan(versions, parseArgs([]), new Map(), resumableIn(layered), can).filter((t) => t.method === 'cross'),
      ).toMatchObject([{ harness: 'alpha', from: '2.1.0', version: '3.4.0' }]);
    },
  );

  it('are named OLD→NEW', () => {
    expect(targetLabel({ version: '2.3.0', from: '1.5.0' })).toBe('1.5.0→2.3.0');
    expect(targetLabel({ version: '2.3.0' })).toBe('2.3.0');
  });

  it("follow a harness's own targets when the locked versions are certified, not with --version or --latest", () => {
    const all = (targets: ReturnType<typeof plan>) =>
      targets.filter((t) => t.method !== 'fixtures').map((t) => `${t.harness} ${targetLabel(t)} ${t.method}`);
    expect(all(plan(crossLock, parseArgs([]), new Map(), resumable))).toEqual([
      'alpha 1.0.0 cli',
      'alpha 1.5.0 cli',
      'alpha 2.3.0 cli',
      'alpha 1.5.0→2.3.0 cross',
      'beta 0.5.0 cli',
    ]);
    expect(all(plan(crossLock, parseArgs(['--harness', 'alpha']), new Map(), resumable))).toEqual([
      'alpha 1.0.0 cli',
      'alpha 1.5.0 cli',
      'alpha 2.3.0 cli',
      'alpha 1.5.0→2.3.0 cross',
    ]);
    expect(all(plan(crossLock, parseArgs(['--harness', 'beta']), new Map(), resumable))).toEqual(['beta 0.5.0 cli']);
    expect(all(plan(crossLock, parseArgs(['--harness', 'alpha', '--version', '2.4.0']), new Map(), resumable))).toEqual(
      ['alpha 2.4.0 cli'],
    );
    const latest = new Map([
      ['alpha', '2.4.0'],
      ['beta', '0.5.0'],
    ]);
    expect(all(plan(crossLock, parseArgs(['--latest']), latest, resumable))).toEqual([
      'alpha 2.4.0 cli',
      'beta 0.5.0 cli',
    ]);
    // Without a resumable predicate, no cross-version target.
    expect(all(plan(crossLock, parseArgs([])))).toEqual([
      'alpha 1.0.0 cli',
      'alpha 1.5.0 cli',
      'alpha 2.3.0 cli',
      'beta 0.5.0 cli',
    ]);
  });
});

describe('certify plan', () => {
  const cli = (targets: ReturnType<typeof plan>) =>
    targets.filter((t) => t.method === 'cli').map((t) => `${t.harness} ${t.version}${t.locked ? '' : ' (new)'}`);

  it('certifies every locked version by default', () => {
    expect(cli(plan(lock, parseArgs([])))).toEqual(['alpha 1.0.0', 'alpha 2.3.0', 'beta 0.5.0']);
  });

  it("with --latest, only the registry's newest version of each harness, marked new when it is not locked", () => {
    const latest = new Map([
      ['alpha', '2.4.0'],
      ['beta', '0.5.0'],
    ]);
    expect(latestQueries(lock, parseArgs(['--latest']))).toEqual([
      { harness: 'alpha', package: '@org/alpha' },
      { harness: 'beta', package: 'beta-cli' },
    ]);
    expect(cli(plan(lock, parseArgs(['--latest']), latest))).toEqual(['alpha 2.4.0 (new)', 'beta 0.5.0']);
    expect(latestQueries(lock, parseArgs(['--latest', '--harness', 'beta']))).toEqual([
      { harness: 'beta', package: 'beta-cli' },
    ]);
    expect(cli(plan(lock, parseArgs(['--latest', '--harness', 'beta']), latest))).toEqual(['beta 0.5.0']);
    expect(() => plan(lock, parseArgs(['--latest']), new Map([['alpha', '2.4.0']]))).toThrow(
      'no newest version of beta was found',
    );
  });

  it('keeps the fixture versions of harnesses certified on fixtures, which have no registry to ask', () => {
    const fixtures = plan(
      lock,
      parseArgs(['--latest']),
      new Map([
        ['alpha', '2.4.0'],
        ['beta', '0.5.0'],
      ]),
    ).filter((t) => t.method === 'fixtures');
    expect([...new Set(fixtures.map((t) => t.harness))]).toEqual([...FIXTURE_CERTIFIED]);
  });

  it('refuses a harness it does not know', () => {
    expect(() => plan(lock, parseArgs(['--harness', 'gamma']), new Map(), resumable)).toThrow(
      'unknown harness "gamma"',
    );
    expect(() => plan(lock, parseArgs(['--harness', 'gamma']))).toThrow('unknown harness "gamma"');
  });
});
