/**
 * README.md's compatibility table is generated from profiles/*.yaml and harness-versions.lock.json
 * (`npm run docs:compat`): it must match them. Also the pure parts of `npm run certify -- --update-profiles`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import {
  README,
  ceilingAfter,
  raiseCeiling,
  renderCompatTable,
  spliceCeiling,
  withCompatTable,
} from '../../scripts/compat.mjs';
import { agentRoot } from '../support/context.js';

describe('README compatibility table', () => {
  it('is up to date with the profiles and the lock file (run `npm run docs:compat`)', () => {
    const readme = readFileSync(README, 'utf8');
    expect(
      withCompatTable(readme, renderCompatTable()),
      'README.md: the compatibility table is out of date; run `npm run docs:compat`',
    ).toBe(readme);
  });

  it('has one row per profile interval', () => {
    const table = renderCompatTable();
    for (const name of ['claude-v1_0_85', 'claude-v2_0_12', 'codex-v0_145_0', 'kimi-v1_28_0', 'opencode-v1_2_0'])
      expect(table).toContain(`\`${name}\``);
  });

  it("names an interval's own CLI when it has one (one the harness succeeded), else the harness", () => {
    const rows = renderCompatTable().split('\n');
    expect(rows.find((r) => r.includes('`kimi-v1_28_0`'))).toMatch(/^\| kimi-cli \|/);
    expect(rows.find((r) => r.includes('`kimi-v2_0_2`'))).toMatch(/^\| Kimi Code \|/);
  });
});

describe('certification ceilings', () => {
  it('puts the ceiling just past a version', () => {
    expect(ceilingAfter('2.1.197')).toBe('2.1.198-0');
    expect(ceilingAfter('1.0.85')).toBe('1.0.86-0');
  });

  it('raises to just past the highest pass, never lowers, never past a failure', () => {
    expect(
      raiseCeiling('2.0.12', [
        { version: '2.0.12', passed: true },
        { version: '2.1.197', passed: true },
      ]),
    ).toEqual({ ceiling: '2.1.198-0', raised: true, blockedBy: undefined });
    expect(raiseCeiling('2.1.333-0', [{ version: '2.1.197', passed: true }])).toMatchObject({
      ceiling: '2.1.333-0',
      raised: false,
    });
    expect(
      raiseCeiling('2.0.12', [
        { version: '2.0.12', passed: true },
        { version: '2.1.100', passed: false },
        { version: '2.1.197', passed: true },
      ]),
    ).toEqual({
      ceiling: '2.0.13-0',
      raised: true,
      blockedBy: '2.1.100',
    });
    expect(raiseCeiling('1.0.85', [{ version: '1.0.85', passed: false }])).toEqual({
      ceiling: '1.0.85',
      raised: false,
      blockedBy: '1.0.85',
    });
  });

  it('splices only the ceiling lines of one interval, keeping comments and formatting', () => {
    const text = readFileSync(path.join(agentRoot, 'profiles', 'claude.yaml'), 'utf8');
    const out = spliceCeiling(text, 'claude-v2_0_12', '2.1.400-0', 'cli');
    const before = text.split('\n');
    const after = out.split('\n');
    expect(after.length).toBe(before.length);
    expect(after.filter((l, i) => l !== before[i])).toEqual(['    verified_before: 2.1.400-0']);
    const doc = YAML.parse(out) as { intervals: { profile: string; verified_before: string; verified_by?: string }[] };
    expect(doc.intervals.find((i) => i.profile === 'claude-v2_0_12')).toMatchObject({
      verified_before: '2.1.400-0',
      verified_by: 'cli',
    });

    const uncertified =
      'intervals:\n  - profile: x-v1_0_0\n    introduced: 1.0.0\n    # No version of this interval has been ' +
      'certified yet.\n    verified_before: 1.0.0 # ceiling\n    lifecycle: supported\n  - profile: ' +
      'x-v2_0_0\n    introduced: 2.0.0\n    verified_before: 2.0.0\n';
    expect(spliceCeiling(uncertified, 'x-v1_0_0', '1.0.1-0', 'fixtures')).toBe(
      'intervals:\n  - profile: x-v1_0_0\n    introduced: 1.0.0\n    verified_before: 1.0.1-0 # ceiling\n    ' +
        'verified_by: fixtures\n    lifecycle: supported\n  - profile: x-v2_0_0\n    introduced: 2.0.0\n    ' +
        'verified_before: 2.0.0\n',
    );
  });
});
