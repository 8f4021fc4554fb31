/**
 * The policy this machine applies, read without the network: the configured policy file, else the last-known-good
 * revision fetched from the Control API, judged by the same compatibility rules as reconcile (its warnings kept).
 * Nothing is written (no cache refresh, no document cache, no cache deleted).
 */
import { resolveConfigPath } from '../config.js';
import { controlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { toBlueError } from '@blue-agent/contract/errors.js';
import {
  checkCompatibility,
  checkUploadOrigin,
  governanceConfigUrl,
  loadPolicyFile,
  readLastKnownGood,
  DEFAULT_TTL_SECONDS,
  type ResolvedPolicy,
} from '../policy/index.js';
import type { AgentConfig, GovernancePolicy } from '@blue-agent/contract/schema/index.js';

export interface ErrorInfo {
  code: string;
  message: string;
  hint?: string;
}

export function errorInfo(error: unknown): ErrorInfo {
  const blue = toBlueError(error);
  return { code: blue.code, message: blue.message, ...(blue.hint === undefined ? {} : { hint: blue.hint }) };
}

/** A cache entry claiming to come from the future beyond this slack has an unknown age (as in policy/index.ts). */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

export interface OfflinePolicy {
  /** Undefined when no policy could be read. */
  resolved: ResolvedPolicy | undefined;
  /** Why there is none (no source configured, the file is broken, nothing cached yet). */
  error?: ErrorInfo;
}

/** The policy file (config's policy_file) or the last-known-good copy of the Control API's policy. */
export async function readPolicyOffline(ctx: Context, config: AgentConfig): Promise<OfflinePolicy> {
  let settings;
  try {
    settings = controlSettings(ctx, config);
  } catch (error) {
    return { resolved: undefined, error: errorInfo(error) };
  }
  const originRules = { controlUrl: settings.controlUrl, allowedOrigins: config.allowed_upload_origins };
  if (config.policy_file !== undefined) {
    const file = resolveConfigPath(ctx, config.policy_file);
    try {
      const policy = await loadPolicyFile(file);
      const warnings = [
        ...checkCompatibility(policy, { clientVersion: ctx.self.version, where: file }),
        ...checkUploadOrigin(policy, { ...originRules, file }),
      ];
      return {
        resolved: { policy, source: 'file', location: file, revision: policy.revision, stale: false, warnings },
      };
    } catch (error) {
      return { resolved: undefined, error: errorInfo(error) };
    }
  }
  if (settings.controlUrl === undefined) {
    return {
      resolved: undefined,
      error: {
        code: 'POLICY_MISSING',
        message: 'no governance policy source is configured',
        hint: 'Run `blue-agent login --control-url URL`, or set policy_file in the agent config.',
      },
    };
  }
  const location = governanceConfigUrl(settings.controlUrl).href;
  const warnings: string[] = [];
  const lkg = await readLastKnownGood(ctx, location, warnings);
  if (lkg === undefined) {
    return {
      resolved: undefined,
      error: {
        code: 'POLICY_MISSING',
        message:
          `no policy from ${location} has been fetched on this machine yet` +
          `${warnings.length > 0 ? ` (${warnings.join('; ')})` : ''}`,
        hint:
          'Run `blue-agent reconcile` (or start the agent) to fetch it; `blue-agent doctor` checks the Control ' +
          'API.',
      },
    };
  }
  try {
    // The copy passes the gate reconcile applies: a pin or a contract this blue-agent cannot meet is shown as the
    // error.
    warnings.push(
      ...checkCompatibility(lkg.policy, { clientVersion: ctx.self.version, where: `${location} (last-known-good)` }),
    );
  } catch (error) {
    return { resolved: undefined, error: errorInfo(error) };
  }
  return { resolved: cachedPolicy(ctx, lkg.policy, location, lkg.fetched_at, lkg.etag, warnings, originRules) };
}

export function cachedPolicy(
  ctx: Context,
  policy: GovernancePolicy,
  location: string,
  fetchedAt: number,
  etag: string | undefined,
  warnings: string[],
  originRules: { controlUrl: string | undefined; allowedOrigins: readonly string[] | undefined },
): ResolvedPolicy {
  const now = ctx.clock.now();
  const ttl = policy.ttl_seconds ?? DEFAULT_TTL_SECONDS;
  const fromFuture = fetchedAt > now + CLOCK_SKEW_MS;
  const ageSeconds = Math.max(0, Math.floor((now - fetchedAt) / 1000));
  const stale = fromFuture || ageSeconds > ttl;
  warnings.push(...checkUploadOrigin(policy, { ...originRules, file: location }));
  if (stale)
    warnings.push(
      `revision ${policy.revision} is past its ttl of ${ttl} s` +
        `${policy.required === true ? ' and required: the agent changes nothing until a fresh one is fetched' : ''}`,
    );
  return {
    policy,
    source: 'cached',
    location,
    revision: policy.revision,
    fetchedAt,
    ageSeconds,
    stale,
    ...(etag === undefined ? {} : { etag }),
    warnings,
  };
}

/** Stands in for a missing policy so harnesses can still be inspected: it enables nothing. */
export function noPolicy(): ResolvedPolicy {
  return {
    policy: { revision: 'none' },
    source: 'file',
    location: '(none)',
    revision: 'none',
    stale: false,
    warnings: [],
  };
}
