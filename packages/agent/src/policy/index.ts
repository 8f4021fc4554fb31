/**
 * Resolving the governance policy to apply: a local file, the Control API, or the last-known-good revision when the
 * Control API cannot be reached. Whatever the source, the document must be one this blue-agent may apply
 * (compat.ts: the organisation's client-version pin, the contract version, the capabilities); when the pin refuses
 * this blue-agent, the last-known-good copy is deleted too, so nothing keeps being applied from it.
 */
export { resolvePolicy } from './resolve.js';
export { DEFAULT_TTL_SECONDS, type PolicySource, type ResolveOptions, type ResolvedPolicy } from './resolved.js';
export { fetchedPolicy, formatDuration } from './remote.js';
export { lastKnownGoodPath, readLastKnownGood, type LastKnownGood } from './cache.js';
export { governanceConfigUrl } from '../control-api/governance-config.js';
export { checkUploadOrigin, loadPolicyFile } from './file.js';
export {
  parsePolicyText,
  unknownPolicyFields,
  validatePolicy,
  type PolicyOrigin,
} from '@blue-agent/contract/policy/validate.js';
export { checkCompatibility, unknownHarnesses } from './compat.js';
