import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadProfiles, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { decide, policyRangeCheck, type Installation } from '../../src/reconcile/decide.js';
import { noRanges } from '@blue-agent/contract/util/semver.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { agentRoot } from '../../../../test/support/context.js';

const self = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const upload = { presign_url: 'https://control.example/session-uploads/presign' };
const installed = (version: string): Installation => ({
  installed: true,
  path: '/usr/bin/x',
  rawVersion: version,
  version,
});

let profiles: ProfileSet;
beforeAll(async () => {
  profiles = await loadProfiles(path.join(agentRoot, 'profiles'));
});

describe('decide', () => {
  const policy: GovernancePolicy = { revision: 7, session_upload: upload };

  it('is active with exactly one managed hook for an eligible, verified version', () => {
    const d = decide('claude', profiles.get('claude')!, installed('2.1.200'), policy, self, noRanges);
    expect(d.state).toBe('active');
    expect(d.interval?.profile).toBe('claude-v2_0_12');
    expect(d.desired).toMatchObject({
      event: 'SessionEnd',
      timeoutSeconds: 10,
      command: "'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness claude --profile claude-v2_0_12",
    });
  });

  it('not_installed wants no hook', () => {
    const d = decide('codex', profiles.get('codex')!, { installed: false }, policy, self, noRanges);
    expect([d.state, d.desired]).toEqual(['not_installed', null]);
  });

  it('leaves a harness alone when its version cannot be read', () => {
    const d = decide(
      'codex',
      profiles.get('codex')!,
      { installed: true, path: '/x', error: { code: 'VERSION_DETECT_FAILED', message: 'boom' } },
      policy,
      self,
      noRanges,
    );
    expect([d.state, d.desired, d.reason, d.code]).toEqual(['error', undefined, 'boom', 'VERSION_DETECT_FAILED']);
  });

  it('capture_disabled without a session_upload block', () => {
    const d = decide('claude', profiles.get('claude')!, installed('2.1.200'), { revision: 8 }, self, noRanges);
    expect([d.state, d.desired]).toEqual(['capture_disabled', null]);
    expect(d.reason).toContain('revision 8');
  });

  it('not_allowed when the harness is missing from allowed_harnesses', () => {
    const d = decide(
      'claude',
      profiles.get('claude')!,
      installed('2.1.200'),
      { ...policy, allowed_harnesses: ['codex'] },
      self,
      noRanges,
    );
    expect([d.state, d.desired]).toEqual(['not_allowed', null]);
  });

  it('unsupported_version below the first interval (Codex before SessionEnd)', () => {
    const d = decide('codex', profiles.get('codex')!, installed('0.144.9'), policy, self, noRanges);
    expect([d.state, d.desired]).toEqual(['unsupported_version', null]);
    expect(d.reason).toContain('0.145.0');
  });

  it('unsupported_version when the policy requirement is not met', async () => {
    const ruled: GovernancePolicy = { ...policy, harnesses: { claude: { version_requirement: '>=2.2.0' } } };
    const d = decide(
      'claude',
      profiles.get('claude')!,
      installed('2.1.200'),
      ruled,
      self,
      await policyRangeCheck(ruled),
    );
    expect([d.state, d.desired]).toEqual(['unsupported_version', null]);
    expect(d.reason).toContain('>=2.2.0');
  });

  it('unverified_version past the ceiling, unless the policy allows unverified versions', () => {
    const past = installed('2.1.333');
    const unverified = decide('claude', profiles.get('claude')!, past, policy, self, noRanges);
    expect(unverified).toMatchObject({ state: 'unverified_version', desired: null, verified: false });
    // The reason names the command that certifies this version (reconcile and status print it).
    expect(unverified.reason).toBe(
      'Claude Code 2.1.333 is at or past the certified ceiling 2.1.333-0 of claude-v2_0_12; capture stays off ' +
        'unless the policy sets allow_unverified_versions; certify it in a checkout of blue-agent: ' +
        'scripts/with-node24 npm run certify -- --harness claude --version 2.1.333',
    );
    const allowed = decide(
      'claude',
      profiles.get('claude')!,
      past,
      { ...policy, harnesses: { claude: { allow_unverified_versions: true } } },
      self,
      noRanges,
    );
    expect(allowed.state).toBe('active');
    expect(allowed.desired).not.toBeNull();
    expect(allowed.reason).toContain('unverified');
  });

  it('the prerelease right at the ceiling is already unverified', () => {
    expect(decide('codex', profiles.get('codex')!, installed('0.171.1-0'), policy, self, noRanges).state).toBe(
      'unverified_version',
    );
    expect(decide('codex', profiles.get('codex')!, installed('0.171.0'), policy, self, noRanges).state).toBe('active');
  });

  it('uses the profile of the interval the version falls in, with its own hook settings', () => {
    const d = decide('codex', profiles.get('codex')!, installed('0.150.0'), policy, self, noRanges);
    expect(d.desired).toMatchObject({ profile: 'codex-v0_145_0', timeoutSeconds: 3 });
  });
});
