/**
 * Whether this blue-agent may apply a governance document, by the rules of Blue's client (its service contract):
 * the organisation's client-version pin, the contract version and the capabilities the revision needs, and the
 * harness names it uses. Errors mean "apply nothing"; warnings travel with the resolved policy, so `reconcile`,
 * `status` and `doctor` show them. Pure: the caller drops the cached policy when a pin blocks (index.ts).
 */
import { BlueError } from '@blue-agent/contract/errors.js';
import {
  CAPABILITIES,
  CONTRACT_VERSION,
  installHint,
  judgeClientVersion,
  policyIncompatible,
} from '../control-api/contract.js';
import { HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { compareVersions, validVersion } from '@blue-agent/contract/util/semver.js';

export interface CompatibilityInput {
  /** This agent's version (`ctx.self.version`). */
  clientVersion: string;
  /** Where the document came from, for messages (a path or the governance-config URL). */
  where: string;
  /** The X-Blue-Required-Client-Version the server sent with it, if any. */
  headerPin?: string | undefined;
}

/**
 * Checks a document; returns its warnings, throws CLIENT_VERSION_MISMATCH (another major is pinned),
 * POLICY_INCOMPATIBLE (a newer contract, or a capability this agent lacks) or POLICY_INVALID (the pin's header and
 * the document disagree, or the pin is not an exact release). In Blue's order: the pins first, then the contract.
 */
export function checkCompatibility(policy: GovernancePolicy, input: CompatibilityInput): string[] {
  const { clientVersion, where, headerPin } = input;
  const warnings: string[] = [];
  const pin = policy.required_client_version;
  // The header first, as Blue's client judges it (it arrives even with a 426, when there is no document to read).
  if (headerPin !== undefined) {
    const verdict = judgeClientVersion(headerPin, clientVersion, where);
    if (verdict.kind === 'mismatch') throw verdict.error;
  }
  if (headerPin !== undefined && headerPin !== pin) {
    throw new BlueError(
      'POLICY_INVALID',
      `${where}: the X-Blue-Required-Client-Version header (${headerPin}) and the document's ` +
        `required_client_version (${pin === undefined ? 'absent' : printable(pin)}) disagree`,
      {
        hint:
          'The Control API (or a proxy before it) answers inconsistently; tell its administrator. Nothing was ' +
          'applied.',
      },
    );
  }
  if (pin !== undefined) {
    const verdict = judgeClientVersion(pin, clientVersion, where);
    if (verdict.kind === 'mismatch') throw verdict.error;
    if (verdict.kind === 'recommended') warnings.push(verdict.warning);
  }

  const contract = policy.contract_version ?? 1;
  if (contract > CONTRACT_VERSION) {
    throw policyIncompatible(
      where,
      `revision ${policy.revision} needs governance contract ${contract}, and this blue-agent speaks ` +
        `${CONTRACT_VERSION}`,
      pin,
    );
  }
  const known: readonly string[] = CAPABILITIES;
  const missing = (policy.required_capabilities ?? []).filter((c) => !known.includes(c));
  if (missing.length > 0) {
    throw policyIncompatible(
      where,
      `revision ${policy.revision} requires client capabilities this blue-agent lacks: ` +
        `${missing.map((c) => printable(c).slice(0, 64)).join(', ')}`,
      pin,
    );
  }

  // Blue treats minimum_client_version as an operator-visible rollout floor, informational only: capability
  // negotiation, not this field, decides whether a client may consume the document. So it warns, never blocks.
  const floor = policy.minimum_client_version;
  if (floor !== undefined) {
    const min = validVersion(floor);
    if (min === null)
      warnings.push(`minimum_client_version "${printable(floor).slice(0, 64)}" is not a SemVer version; ignored`);
    else if (validVersion(clientVersion) !== null && compareVersions(clientVersion, min) < 0) {
      warnings.push(
        `the organisation's rollout floor is blue-agent ${min}, and this is ${clientVersion}: update when you can (` +
          `${installHint(min)})`,
      );
    }
  }

  const unknown = unknownHarnesses(policy);
  if (unknown.length > 0) {
    warnings.push(
      `revision ${policy.revision} names harness${unknown.length === 1 ? '' : 'es'} this blue-agent does not know: ` +
        `${unknown.join(', ')} (ignored; known: ${HARNESSES.join(', ')})`,
    );
  }
  return warnings;
}

/** Names in allowed_harnesses and harnesses that are not in this agent's compiled registry, printable and sorted. */
export function unknownHarnesses(policy: GovernancePolicy): string[] {
  const known: readonly string[] = HARNESSES;
  const named = [...(policy.allowed_harnesses ?? []), ...Object.keys(policy.harnesses ?? {})];
  return [...new Set(named.filter((n) => !known.includes(n)).map((n) => printable(n).slice(0, 64)))].sort();
}

/** The errors that mean the organisation's pin blocks this blue-agent: the cached policy must go too. */
export function isPinRefusal(error: unknown): boolean {
  return error instanceof BlueError && error.code === 'CLIENT_VERSION_MISMATCH';
}
