/**
 * What resolving the governance policy takes (`ResolveOptions`) and gives (`ResolvedPolicy`), whether the policy came
 * from a local file (resolve.ts) or from the Control API and its last-known-good copy (remote.ts).
 */
import type { DocumentCache } from '@blue-agent/contract/schema/document-cache.js';
import type { AgentConfig, GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import type { PolicyOrigin } from '@blue-agent/contract/policy/validate.js';

export type PolicySource = 'file' | 'fetched' | 'cached';

export interface ResolvedPolicy {
  policy: GovernancePolicy;
  source: PolicySource;
  /** The policy file path or the governance-config URL (never with secrets). */
  location: string;
  revision: number | string;
  /** When the policy was last fetched or confirmed by the Control API (ms); absent for a file. */
  fetchedAt?: number;
  ageSeconds?: number;
  /** A cached revision older than its ttl_seconds. */
  stale: boolean;
  etag?: string;
  /** The Control API answered 304: the last-known-good revision is current. */
  notModified?: boolean;
  warnings: string[];
}

export interface ResolveOptions {
  /** `--policy FILE`: takes precedence over the config's policy_file and the Control API. */
  policyFile?: string | undefined;
  /** Who wrote `policyFile`: someone (`authored`, the default) or this agent, copying a fetched revision (`fetched`).
   * */
  policyOrigin?: PolicyOrigin;
  /** Change nothing on disk: no last-known-good write, no fetched_at refresh. */
  dryRun: boolean;
  config: AgentConfig;
  /** Bound on the whole request; defaults to 10 s. */
  timeoutMs?: number;
  /** Policy files validated in earlier runs. */
  documents?: DocumentCache;
  /**
   * Told when the Control API could not be asked (network down, 5xx, 429...), before falling back or failing, with the
   * server's Retry-After in milliseconds when it sent one. The run loop uses it to back off.
   */
  onUnavailable?: (info: { reason: string; retryAfterMs?: number }) => void;
}

/**
 * A policy that states no ttl_seconds is fresh for 300 s, Blue's default ("client cache TTL, 300 when absent"): the
 * running agent checks again that often (so removing session_upload reaches machines within minutes), and a
 * `required` policy past it fails closed.
 */
export const DEFAULT_TTL_SECONDS = 300;
