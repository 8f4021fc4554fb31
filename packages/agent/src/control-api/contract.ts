/**
 * Blue's service contract as this client speaks it: the governance contract version and the capabilities blue-agent
 * claims (sent with every GET /governance-config, and what a governance document may require of it), the headers
 * they travel in, and the client-version pin rule. One place, so what is claimed and what is checked cannot drift
 * apart. The policy module applies these to documents (src/policy/compat.ts); governance-config.ts sends them.
 */
import { BlueError } from '@blue-agent/contract/errors.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';

/**
 * The governance document shape this client reads: that of Blue's contract 0.2.0 client (gh-service
 * `GovernanceConfig::CONTRACT_VERSION` 3): string revisions, per-harness `version_requirement` and
 * `allow_unverified_versions`, capability negotiation, client-version pins. Blue's server stamps version-aware
 * revisions with 3, so a lower claim would be refused (426) exactly where blue-agent has something to enforce. Features
 * outside session capture (packages, gateway, managed_config, mcp) are tolerated and ignored; the capabilities that
 * gate them are not claimed (below), so a revision that needs them is refused rather than half-applied. Blue's newer
 * builds speak 4 (the gateway model catalog), which blue-agent does not implement.
 */
export const CONTRACT_VERSION = 3;

/**
 * What blue-agent implements of Blue's client capabilities (`X-Blue-Capabilities`; a revision's
 * `required_capabilities` must be among them). Not claimed: `gateway_inference_jwt` and `gateway_model_catalog`
 * (no inference gateway), `dynamic_verified_ceilings` (`effective_verified_ceilings` is ignored: certification
 * ceilings come from the profiles shipped with this blue-agent only).
 */
export const CAPABILITIES = [
  // required_client_version and X-Blue-Required-Client-Version are honoured: another major blocks (and the cached
  // policy is dropped), another release of the same major is a warning (src/policy/compat.ts).
  'tenant_client_version_pin',
  // A harness's behaviour is chosen by the compatibility profile whose [introduced, before) interval holds the
  // installed version (profiles/*.yaml, profiles/index.ts selectInterval); version_requirement is enforced on top.
  'adapter_intervals',
  // Harness keys are those of a registry compiled into the agent (harnesses/index.ts ADAPTERS, keyed by the generated
  // HarnessName); names it does not know are ignored with a warning, never guessed.
  'compiled_harness_registry',
  // Every managed file changes under its lock, write-ahead in the ledger, replaced atomically and read back
  // (reconcile/apply.ts): a failed or interrupted reconcile leaves each file as it was or as intended, never half
  // written, and a revision is reported applied only when every harness reconciled.
  'transactional_reconcile',
  // What the agent wrote is kept in a versioned ledger (reconcile/ledger.ts, `version: 1`) that records the profile
  // that wrote each hook, so a harness upgraded across intervals is re-planned from what the older profile wrote.
  'versioned_state',
  // allow_unverified_versions is honoured: a version at or past its profile's certified ceiling captures only when
  // the policy allows it (reconcile/decide.ts).
  'unverified_harness_versions',
] as const;

export const CONTRACT_VERSION_HEADER = 'x-blue-contract-version';
export const CAPABILITIES_HEADER = 'x-blue-capabilities';
export const REQUIRED_CLIENT_VERSION_HEADER = 'x-blue-required-client-version';

/** The negotiation headers of GET /governance-config. */
export function contractHeaders(): Record<string, string> {
  return { [CONTRACT_VERSION_HEADER]: String(CONTRACT_VERSION), [CAPABILITIES_HEADER]: CAPABILITIES.join(',') };
}

/** The hint every "update blue-agent" error and warning ends with. */
export function installHint(version: string | undefined): string {
  return version === undefined
    ? 'Update blue-agent to a release your organisation supports (ask the Control API administrator which).'
    : `Install blue-agent ${version}, the release your organisation pins, then run this again (or ask the Control ` +
        `API administrator to change the pin).`;
}

export type ClientVersionVerdict =
  /** This is the pinned release. */
  | { kind: 'same' }
  /** Same major, another release: it may apply, with a warning. */
  | { kind: 'recommended'; warning: string }
  /** Another major (CLIENT_VERSION_MISMATCH), or a pin that is not an exact release (POLICY_INVALID): it must not
   * apply. */
  | { kind: 'mismatch'; error: BlueError };

/**
 * `required_client_version` (or `X-Blue-Required-Client-Version`) against this agent's own version, as Blue's client
 * judges it: another major blocks, another release of the same major is a recommendation. `where` names the source.
 */
export function judgeClientVersion(required: string, own: string, where: string): ClientVersionVerdict {
  const pinned = exactRelease(required) ? required : null;
  if (pinned === null) {
    // A pin is canonical exact SemVer (Blue's server refuses anything else); a range would make "the major" unknown.
    return {
      kind: 'mismatch',
      error: new BlueError(
        'POLICY_INVALID',
        `${where}: the required client version "${printable(required).slice(0, 64)}" is not an exact SemVer release`,
        {
          hint: 'The organisation pins one release, such as 1.4.2 (never a range); tell the Control API administrator.',
        },
      ),
    };
  }
  const mine = exactRelease(own) ? own : null;
  if (mine !== null && mine === pinned) return { kind: 'same' };
  if (mine !== null && major(mine) === major(pinned)) {
    return {
      kind: 'recommended',
      warning:
        `the organisation recommends blue-agent ${pinned}; this is ${own} (same major ${major(pinned)}: the ` +
        `policy applies)`,
    };
  }
  return {
    kind: 'mismatch',
    error: clientVersionError(
      where,
      `the organisation requires blue-agent ${pinned}, and this is ${printable(own).slice(0, 64)}: another major ` +
        `version, which must not apply its policy`,
      pinned,
    ),
  };
}

function clientVersionError(where: string, why: string, version: string): BlueError {
  return new BlueError(
    'CLIENT_VERSION_MISMATCH',
    `${where}: ${why}; nothing is applied and the cached policy is dropped`,
    {
      hint: `${installHint(version)} Managed hooks stay as they are until then.`,
    },
  );
}

/** A governance document (or a 426) this client cannot consume: it needs a newer contract or missing capabilities. */
export function policyIncompatible(where: string, why: string, requiredVersion?: string): BlueError {
  return new BlueError('POLICY_INCOMPATIBLE', `${where}: ${why}`, {
    hint:
      `This blue-agent speaks governance contract ${CONTRACT_VERSION} with capabilities ` +
      `${CAPABILITIES.join(', ')}. ${installHint(requiredVersion)}`,
  });
}

/** SemVer 2.0's own expression, without build metadata (a pin names a release). */
const NUMBER = String.raw`(0|[1-9]\d*)`;
const IDENTIFIER = String.raw`(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)`;
const RELEASE = new RegExp(String.raw`^${NUMBER}\.${NUMBER}\.${NUMBER}(?:-${IDENTIFIER}(?:\.${IDENTIFIER})*)?$`);

/**
 * Whether `version` is one exact SemVer release in its canonical spelling: what `semver.valid(v) === v` says (the
 * tests hold the two equal), without loading the semver package into the long-running agent, which only sends these
 * headers.
 */
export function exactRelease(version: string): boolean {
  if (version.length > 256 || !RELEASE.test(version)) return false;
  return version
    .split('-')[0]!
    .split('.')
    .every((n) => Number.isSafeInteger(Number(n)));
}

function major(version: string): number {
  return Number(version.slice(0, version.indexOf('.')));
}
