/**
 * Which governance policy applies: a local file here; the Control API and its last-known-good fallback in remote.ts,
 * loaded only when there is no file, so a run with a local policy loads no HTTP client.
 */
import path from 'node:path';
import { resolveConfigPath } from '../config.js';
import { controlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { BlueError } from '../errors.js';
import type { DocumentCache } from '../schema/document-cache.js';
import type { AgentConfig, GovernancePolicy } from '../schema/index.js';
import { checkCompatibility } from './compat.js';
import { checkUploadOrigin, loadPolicyFile } from './file.js';
import type { PolicyOrigin } from './validate.js';

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
  /** Who wrote `policyFile`: someone (`authored`, the default) or this agent, copying a fetched revision (`fetched`). */
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

export async function resolvePolicy(ctx: Context, options: ResolveOptions): Promise<ResolvedPolicy> {
  const { config } = options;
  const settings = controlSettings(ctx, config);
  const originRules = { controlUrl: settings.controlUrl, allowedOrigins: config.allowed_upload_origins };

  const file =
    options.policyFile !== undefined
      ? path.resolve(ctx.cwd, options.policyFile)
      : config.policy_file !== undefined
        ? resolveConfigPath(ctx, config.policy_file)
        : undefined;
  if (file !== undefined) {
    // The config's policy_file is always someone's own; --policy may be the running agent's copy of a fetched revision.
    const origin = options.policyFile === undefined ? 'authored' : (options.policyOrigin ?? 'authored');
    const policy = await loadPolicyFile(file, options.documents, origin);
    const warnings = [...checkCompatibility(policy, { clientVersion: ctx.self.version, where: file }), ...checkUploadOrigin(policy, { ...originRules, file })];
    return { policy, source: 'file', location: file, revision: policy.revision, stale: false, warnings };
  }

  const controlUrl = settings.controlUrl;
  if (controlUrl === undefined) {
    throw new BlueError('POLICY_MISSING', 'no governance policy source is configured', {
      hint:
        'Pass --policy FILE for a local policy, or connect to a Control API with `blue-agent login` ' +
        '(or set BLUE_AGENT_CONTROL_URL and BLUE_AGENT_TOKEN).',
    });
  }

  const { resolveFetchedPolicy } = await import('./remote.js');
  return resolveFetchedPolicy(ctx, options, { ...settings, controlUrl }, originRules);
}
