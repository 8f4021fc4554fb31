/** What `npm run certify` plans from its flags and the lock file, without installing or running anything. */
import { describe, expect, it } from 'vitest';
import { latestQueries, parseArgs, plan } from '../../scripts/certify-plan.mjs';
import { FIXTURE_CERTIFIED } from '../../src/schema/generated/harness-names.js';

const lock = {
  alpha: { package: '@org/alpha', versions: ['1.0.0', '2.3.0'] },
  beta: { package: 'beta-cli', versions: ['0.5.0'] },
};

describe('certify flags', () => {
  it('takes --latest, alone or with --harness and --update-profiles', () => {
    expect(parseArgs(['--latest', '--update-profiles'])).toMatchObject({ latest: true, updateProfiles: true, harness: undefined, version: undefined });
    expect(parseArgs(['--latest', '--harness', 'alpha'])).toMatchObject({ latest: true, harness: 'alpha' });
    expect(parseArgs([])).toMatchObject({ latest: false, updateProfiles: false });
  });

  it('refuses --latest with --version, a --version without --harness and an inexact version', () => {
    expect(() => parseArgs(['--latest', '--harness', 'alpha', '--version', '2.4.0'])).toThrow('--version and --latest name the version two ways');
    expect(() => parseArgs(['--version', '2.4.0'])).toThrow('--version needs --harness');
    expect(() => parseArgs(['--harness', 'alpha', '--version', '^2'])).toThrow('is not an exact version');
    expect(() => parseArgs(['--newest'])).toThrow();
  });
});

describe('certify plan', () => {
  const cli = (targets: ReturnType<typeof plan>) => targets.filter((t) => t.method === 'cli').map((t) => `${t.harness} ${t.version}${t.locked ? '' : ' (new)'}`);

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
    expect(latestQueries(lock, parseArgs(['--latest', '--harness', 'beta']))).toEqual([{ harness: 'beta', package: 'beta-cli' }]);
    expect(cli(plan(lock, parseArgs(['--latest', '--harness', 'beta']), latest))).toEqual(['beta 0.5.0']);
    expect(() => plan(lock, parseArgs(['--latest']), new Map([['alpha', '2.4.0']]))).toThrow('no newest version of beta was found');
  });

  it('keeps the fixture versions of harnesses certified on fixtures, which have no registry to ask', () => {
    const fixtures = plan(lock, parseArgs(['--latest']), new Map([['alpha', '2.4.0'], ['beta', '0.5.0']])).filter((t) => t.method === 'fixtures');
    expect([...new Set(fixtures.map((t) => t.harness))]).toEqual([...FIXTURE_CERTIFIED]);
  });

  it('refuses a harness it does not know', () => {
    expect(() => plan(lock, parseArgs(['--harness', 'gamma']))).toThrow('unknown harness "gamma"');
  });
});
