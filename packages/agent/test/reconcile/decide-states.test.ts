import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadProfiles, type LoadedProfiles, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { decide, policyRangeCheck, type Installation } from '../../src/reconcile/decide.js';
import { noRanges } from '@blue-agent/contract/util/semver.js';
import type { GovernancePolicy, Interval } from '@blue-agent/contract/schema/index.js';
import { agentRoot } from '../../../../test/support/context.js';

// Each state's exact reason, and the edges of the rules that choose it.

const self = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const policy: GovernancePolicy = {
  revision: 7,
  session_upload: { presign_url: 'https://control.example/session-uploads/presign' },
};
const installed = (version: string): Installation => ({
  installed: true,
  path: '/usr/bin/x',
  rawVersion: version,
  version,
});

let profiles: ProfileSet;
let codex: LoadedProfiles;
beforeAll(async () => {
  profiles = await loadProfiles(path.join(agentRoot, 'profiles'));
  codex = profiles.get('codex')!;
});

/** The Codex profiles with their intervals replaced. */
function withIntervals(intervals: Interval[]): LoadedProfiles {
  return { ...codex, doc: { ...codex.doc, intervals } };
}

describe('decide: reasons and edges', () => {
  it('not_installed when the binary is found but no version was read, naming the harness and its binary', () => {
    const d = decide('codex', codex, { installed: true, path: '/usr/bin/codex' }, policy, self, noRanges);
    expect(d).toEqual({ state: 'not_installed', reason: 'Codex CLI (`codex`) was not found on PATH', desired: null });
  });

  it('not_installed when the harness is reported missing, whatever version came with it', () => {
    const d = decide('codex', codex, { installed: false, version: '0.150.0' }, policy, self, noRanges);
    expect([d.state, d.desired]).toEqual(['not_installed', null]);
  });

  it('not_allowed names the policy revision and the harness', () => {
    const d = decide(
      'codex',
      codex,
      installed('0.150.0'),
      { ...policy, allowed_harnesses: ['claude'] },
      self,
      noRanges,
    );
    expect(d.reason).toBe('policy revision 7 does not list codex in allowed_harnesses');
    expect(d.interval?.profile).toBe('codex-v0_145_0');
  });

  it('below every interval, the reason names the earliest introduced version whatever the file order', () => {
    const [base] = codex.doc.intervals;
    const later: Interval = { ...base!, profile: 'codex-v0_200_0', introduced: '0.200.0', verified_before: '0.201.0' };
    const earlier: Interval = { ...base!, before: '0.200.0' };
    const d = decide('codex', withIntervals([later, earlier]), installed('0.100.0'), policy, self, noRanges);
    expect(d).toEqual({
      state: 'unsupported_version',
      reason: 'Codex CLI 0.100.0 is outside every compatibility profile (capture starts at 0.145.0)',
      desired: null,
    });
  });

  it('with no interval at all, the reason says only that the version is outside every profile', () => {
    const d = decide('codex', withIntervals([]), installed('0.150.0'), policy, self, noRanges);
    expect(d.reason).toBe('Codex CLI 0.150.0 is outside every compatibility profile');
  });

  it('unsupported_version for an interval that does not list session_capture, or has no capture section', () => {
    const [base] = codex.doc.intervals;
    for (const interval of [
      { ...base!, operations: ['session_resume'] },
      { ...base!, capture: undefined },
    ] as Interval[]) {
      const d = decide('codex', withIntervals([interval]), installed('0.150.0'), policy, self, noRanges);
      expect(d).toMatchObject({
        state: 'unsupported_version',
        reason: 'profile codex-v0_145_0 does not support session capture',
        desired: null,
      });
      expect(d.interval?.profile).toBe('codex-v0_145_0');
    }
  });

  it('a prerelease is measured against version_requirement like any version', async () => {
    const rule = (version_requirement: string): GovernancePolicy => ({
      ...policy,
      harnesses: { codex: { version_requirement } },
    });
    const decideUnder = async (ruled: GovernancePolicy) =>
      decide('codex', codex, installed('0.160.0-beta.1'), ruled, self, await policyRangeCheck(ruled));
    expect((await decideUnder(rule('>=0.150.0'))).state).toBe('active');
    const below = await decideUnder(rule('>=0.160.0'));
    expect(below.state).toBe('unsupported_version');
    expect(below.reason).toBe(
      'Codex CLI 0.160.0-beta.1 does not satisfy the policy\'s version_requirement ">=0.160.0"',
    );
  });

  it('a verified active decision has a plain reason', () => {
    const d = decide('codex', codex, installed('0.150.0'), policy, self, noRanges);
    expect(d.reason).toBe('managed SessionEnd capture hook for codex-v0_145_0');
    expect(d.verified).toBe(true);
  });

  it(
    "an active decision names what the capture event misses, when the profile says so, and passes on the hook's " +
      'required settings',
    () => {
      const [base] = codex.doc.intervals;
      const interval = {
        ...base!,
        capture: {
          ...base!.capture!,
          misses: 'headless runs fire no SessionEnd',
          hook: { ...base!.capture!.hook, requires: [{ key: ['a', 'b'], value: true }] },
        },
      } as Interval;
      const d = decide('codex', withIntervals([interval]), installed('0.150.0'), policy, self, noRanges);
      expect(d.reason).toBe('managed SessionEnd capture hook for codex-v0_145_0; headless runs fire no SessionEnd');
      expect(d.desired?.requires).toEqual([{ key: ['a', 'b'], value: true }]);
    },
  );

  it('an unverified version allowed by policy says so in its reason', () => {
    const d = decide(
      'codex',
      codex,
      installed('0.171.1'),
      { ...policy, harnesses: { codex: { allow_unverified_versions: true } } },
      self,
      noRanges,
    );
    expect(d.reason).toBe('managed SessionEnd capture hook for codex-v0_145_0 (unverified 0.171.1 allowed by policy)');
  });
});
