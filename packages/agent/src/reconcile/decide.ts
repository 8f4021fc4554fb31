/**
 * Pure: from the policy and what is installed, what each harness should have — a state, a reason a person can read,
 * and the one managed hook it should carry (or none).
 */
import type { SelfInfo } from '../context.js';
import { buildManagedHook } from '../harness-kit/signature.js';
import type { ManagedHook } from '../harnesses/types.js';
import { selectInterval, type LoadedProfiles } from '@blue-agent/contract/profiles/index.js';
import type { GovernancePolicy, HarnessName, Interval } from '@blue-agent/contract/schema/index.js';
import { compareVersions, rangeCheck, type RangeCheck } from '@blue-agent/contract/util/semver.js';

export type HarnessState =
  | 'active'
  | 'not_installed'
  | 'not_allowed'
  | 'unsupported_version'
  | 'unverified_version'
  | 'capture_disabled'
  | 'awaiting_trust'
  | 'hooks_disabled'
  | 'error';

export interface Installation {
  installed: boolean;
  path?: string;
  rawVersion?: string;
  version?: string;
  /** Why the version could not be read; the harness is then left exactly as it is. */
  error?: { code: string; message: string; hint?: string };
}

export interface Decision {
  state: HarnessState;
  reason: string;
  /** With state error: the error's code. */
  code?: string;
  interval?: Interval;
  verified?: boolean;
  /** The managed hook to have; null for none. Undefined: do not touch this harness at all. */
  desired: ManagedHook | null | undefined;
}

/** The range check decide needs under `policy`: semver's range grammar loads only for a policy that states a
 * version_requirement. */
export function policyRangeCheck(policy: GovernancePolicy): Promise<RangeCheck> {
  return rangeCheck(Object.values(policy.harnesses ?? {}).map((rule) => rule?.version_requirement));
}

export function decide(
  harness: HarnessName,
  loaded: LoadedProfiles,
  installation: Installation,
  policy: GovernancePolicy,
  self: Pick<SelfInfo, 'node' | 'entry'>,
  /** policyRangeCheck(policy), or noRanges for a policy known to state no version_requirement. */
  inRange: RangeCheck,
): Decision {
  const name = loaded.doc.display_name;
  if (installation.error !== undefined) {
    return { state: 'error', reason: installation.error.message, code: installation.error.code, desired: undefined };
  }
  if (!installation.installed || installation.version === undefined) {
    return {
      state: 'not_installed',
      reason: `${name} (\`${loaded.doc.binary}\`) was not found on PATH`,
      desired: null,
    };
  }
  const version = installation.version;
  const choice = selectInterval(loaded.doc, version);
  const located = choice === undefined ? {} : { interval: choice.interval, verified: choice.verified };
  if (policy.session_upload === undefined) {
    return {
      state: 'capture_disabled',
      reason: `policy revision ${policy.revision} has no session_upload block`,
      ...located,
      desired: null,
    };
  }
  if (policy.allowed_harnesses !== undefined && !policy.allowed_harnesses.includes(harness)) {
    return {
      state: 'not_allowed',
      reason: `policy revision ${policy.revision} does not list ${harness} in allowed_harnesses`,
      ...located,
      desired: null,
    };
  }
  if (choice === undefined) {
    const first = [...loaded.doc.intervals].sort((a, b) => compareVersions(a.introduced, b.introduced))[0];
    return {
      state: 'unsupported_version',
      reason:
        `${name} ${version} is outside every compatibility profile` +
        `${first ? ` (capture starts at ${first.introduced})` : ''}`,
      desired: null,
    };
  }
  const { interval, verified } = choice;
  if (!interval.operations.includes('session_capture') || interval.capture === undefined) {
    return {
      state: 'unsupported_version',
      reason: `profile ${interval.profile} does not support session capture`,
      ...located,
      desired: null,
    };
  }
  const rule = policy.harnesses?.[harness];
  if (rule?.version_requirement !== undefined && !inRange(version, rule.version_requirement)) {
    return {
      state: 'unsupported_version',
      reason: `${name} ${version} does not satisfy the policy's version_requirement "${rule.version_requirement}"`,
      ...located,
      desired: null,
    };
  }
  if (!verified && rule?.allow_unverified_versions !== true) {
    return {
      state: 'unverified_version',
      reason:
        `${name} ${version} is at or past the certified ceiling ${interval.verified_before} of ` +
        `${interval.profile}; capture stays off unless the policy sets allow_unverified_versions; certify it in a ` +
        `checkout of blue-agent: ${certifyCommand(harness, version)}`,
      ...located,
      desired: null,
    };
  }
  const hook = buildManagedHook(
    self,
    harness,
    interval.profile,
    interval.capture.event,
    interval.capture.hook.timeout_seconds,
    interval.capture.hook.requires,
  );
  const note = verified ? '' : ` (unverified ${version} allowed by policy)`;
  const misses = interval.capture.misses === undefined ? '' : `; ${interval.capture.misses}`;
  return {
    state: 'active',
    reason: `managed ${interval.capture.event} capture hook for ${interval.profile}${note}${misses}`,
    ...located,
    desired: hook,
  };
}

/**
 * The command that certifies one harness version, run in a checkout of blue-agent (README "Certification"); through
 * scripts/with-node24, so that it runs as printed whatever the Node.js on PATH.
 */
export function certifyCommand(harness: string, version: string): string {
  return `scripts/with-node24 npm run certify -- --harness ${harness} --version ${version}`;
}
