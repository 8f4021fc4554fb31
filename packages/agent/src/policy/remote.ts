/**
 * The governance policy from the Control API, with the last-known-good revision when it cannot be reached (see
 * index.ts for the rules every source passes).
 */
import type { ControlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { dropLastKnownGood, readLastKnownGood, writeLastKnownGood, type LastKnownGood } from './cache.js';
import { checkCompatibility, isPinRefusal } from './compat.js';
import {
  DEFAULT_FETCH_TIMEOUT_MS,
  fetchGovernanceConfig,
  governanceConfigUrl,
} from '../control-api/governance-config.js';
import { MAX_ANSWER_DEPTH, parseRetryAfter } from '../control-api/http.js';
import { JsonTooDeep, parseJsonBounded } from '@blue-agent/contract/util/json-depth.js';
import { DEFAULT_TTL_SECONDS, type ResolveOptions, type ResolvedPolicy } from './resolved.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import { checkUploadOrigin, type OriginRules } from './file.js';
import { unknownPolicyFields, validatePolicy } from '@blue-agent/contract/policy/validate.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';

/** A cache entry claiming to come from the future beyond this slack has an unknown age: treat it as stale. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

/** The policy from the Control API at `settings.controlUrl` (resolvePolicy's path when no policy file is named). */
export async function resolveFetchedPolicy(
  ctx: Context,
  options: ResolveOptions,
  settings: ControlSettings & { controlUrl: string },
  originRules: { controlUrl: string | undefined; allowedOrigins: readonly string[] | undefined },
): Promise<ResolvedPolicy> {
  const url = governanceConfigUrl(settings.controlUrl);
  const location = url.href;
  const warnings: string[] = [];
  if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
    warnings.push(`the Control API URL ${url.origin} is not https: the token and the policy travel unencrypted`);
  }
  const lkg = await readLastKnownGood(ctx, location, warnings);
  const token = await settings.readToken();
  const now = ctx.clock.now();

  const clientVersion = ctx.self.version;
  // A pin that refuses this blue-agent (from a 426, a fresh document, a 304's header or the cached copy) drops the
  // cached copy before the error goes up: nothing may keep being applied from it. --dry-run deletes nothing.
  const refusing = async <T>(work: () => T | Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (isPinRefusal(error) && !options.dryRun) await dropLastKnownGood(ctx).catch(() => undefined);
      throw error;
    }
  };

  const outcome = await refusing(() =>
    fetchGovernanceConfig({
      url,
      token,
      tokenSource: settings.tokenSource,
      etag: lkg?.etag,
      timeoutMs: options.timeoutMs ?? DEFAULT_FETCH_TIMEOUT_MS,
      maxBytes: MAX_POLICY_BYTES,
      userAgent: `blue-agent/${clientVersion}`,
      clientVersion,
      env: ctx.env,
    }),
  );

  if (outcome.kind === 'ok') {
    const resolved = await refusing(() =>
      fetchedPolicy(outcome.text, {
        location,
        etag: outcome.etag,
        now,
        originRules,
        warnings,
        clientVersion,
        headerPin: outcome.requiredClientVersion,
      }),
    );
    const fresh: LastKnownGood = {
      policy: resolved.policy,
      fetched_at: now,
      url: location,
      ...(outcome.etag === undefined ? {} : { etag: outcome.etag }),
    };
    if (!options.dryRun) await saveQuietly(ctx, fresh, warnings);
    return resolved;
  }

  if (outcome.kind === 'not-modified' && lkg !== undefined) {
    warnings.push(
      ...(await refusing(() =>
        checkCompatibility(lkg.policy, { clientVersion, where: location, headerPin: outcome.requiredClientVersion }),
      )),
    );
    warnings.push(...checkUploadOrigin(lkg.policy, { ...originRules, file: location }));
    if (!options.dryRun) await saveQuietly(ctx, { ...lkg, fetched_at: now }, warnings);
    return {
      policy: lkg.policy,
      source: 'fetched',
      location,
      revision: lkg.policy.revision,
      fetchedAt: now,
      ageSeconds: 0,
      stale: false,
      ...(lkg.etag === undefined ? {} : { etag: lkg.etag }),
      notModified: true,
      warnings,
    };
  }

  const reason =
    outcome.kind === 'unavailable' ? outcome.reason : 'answered 304 Not Modified to an unconditional request';
  const retryAfterMs = outcome.kind === 'unavailable' ? parseRetryAfter(outcome.retryAfter, now) : undefined;
  options.onUnavailable?.({ reason, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
  if (lkg === undefined) {
    throw new BlueError(
      'POLICY_UNREACHABLE',
      `cannot fetch the governance policy from ${location}: Control API ${reason}, and there is no last-known-good ` +
        `policy to fall back on`,
      {
        hint:
          'Check the network and control_url (or BLUE_AGENT_CONTROL_URL), then try again; or use --policy FILE ' +
          'for a local policy.',
      },
    );
  }
  // The cached copy passes the same gate (it may have been written by another blue-agent release).
  warnings.push(
    ...(await refusing(() =>
      checkCompatibility(lkg.policy, { clientVersion, where: `${location} (last-known-good)` }),
    )),
  );
  return fallBack(ctx, lkg, location, reason, now, warnings, originRules);
}

function fallBack(
  ctx: Context,
  lkg: LastKnownGood,
  location: string,
  reason: string,
  now: number,
  warnings: string[],
  originRules: { controlUrl: string | undefined; allowedOrigins: readonly string[] | undefined },
): ResolvedPolicy {
  const { policy } = lkg;
  const ttl = policy.ttl_seconds ?? DEFAULT_TTL_SECONDS;
  const fromFuture = lkg.fetched_at > now + CLOCK_SKEW_MS;
  const ageSeconds = Math.max(0, Math.floor((now - lkg.fetched_at) / 1000));
  const stale = fromFuture || ageSeconds > ttl;
  const age = fromFuture ? 'of unknown age (fetched_at is in the future)' : `${formatDuration(ageSeconds)} old`;
  if (stale && policy.required === true) {
    throw new BlueError(
      'POLICY_STALE',
      `refusing to change anything: Control API ${reason}, and the last-known-good revision ${policy.revision} is ` +
        `${age}, past its ttl of ${formatDuration(ttl)} (the policy is required)`,
      {
        hint:
          `Restore access to ${location} and run again; until a fresh policy is fetched, managed hooks stay as ` +
          `they are.`,
      },
    );
  }
  warnings.push(...checkUploadOrigin(policy, { ...originRules, file: location }));
  const fetched = fromFuture ? 'of unknown age' : `fetched ${formatDuration(ageSeconds)} ago`;
  warnings.unshift(`Control API ${reason}: using last-known-good revision ${policy.revision} ${fetched}`);
  if (stale)
    warnings.push(`last-known-good revision ${policy.revision} is ${age}, past its ttl of ${formatDuration(ttl)}`);
  ctx.logger.debug('using the last-known-good policy', { location, revision: policy.revision });
  return {
    policy,
    source: 'cached',
    location,
    revision: policy.revision,
    fetchedAt: lkg.fetched_at,
    ageSeconds,
    stale,
    ...(lkg.etag === undefined ? {} : { etag: lkg.etag }),
    warnings,
  };
}

/**
 * The policy a `GET /governance-config` answered with, parsed, validated, judged against this agent (compat.ts) and
 * checked for where it sends uploads: POLICY_INVALID, POLICY_INCOMPATIBLE, CLIENT_VERSION_MISMATCH or
 * POLICY_FOREIGN_ORIGIN when it may not apply. `warnings` (kept) gets the compatibility and origin warnings.
 */
export function fetchedPolicy(
  text: string,
  at: {
    location: string;
    etag: string | undefined;
    now: number;
    originRules: Omit<OriginRules, 'file'>;
    warnings?: string[];
    /** This agent's version, judged against the document's pins (compat.ts). */
    clientVersion: string;
    /** The X-Blue-Required-Client-Version of the answer, which must agree with the document. */
    headerPin?: string | undefined;
  },
): ResolvedPolicy {
  const { location, etag, now } = at;
  let data: unknown;
  try {
    data = parseJsonBounded(text.replace(/^\uFEFF/, ''), MAX_ANSWER_DEPTH);
  } catch (error) {
    if (error instanceof JsonTooDeep) {
      throw new BlueError('POLICY_INVALID', `${location}: the response ${error.message}; refusing it`, {
        file: location,
        hint: 'A governance policy nests a few levels; check that control_url points at the Control API.',
      });
    }
    throw new BlueError('POLICY_INVALID', `${location}: the response is not valid JSON (${(error as Error).message})`, {
      file: location,
      hint: 'The Control API must answer GET /governance-config with a JSON policy; check its logs.',
    });
  }
  const policy = validatePolicy(data, location);
  const warnings = at.warnings ?? [];
  const unknown = unknownPolicyFields(data);
  if (unknown.length > 0) {
    warnings.push(
      `revision ${printable(String(policy.revision))} has fields this blue-agent does not know: ` +
        `${unknown.slice(0, 10).join(', ')}${unknown.length > 10 ? ', …' : ''} (ignored; a newer Control API may ` +
        `add fields)`,
    );
  }
  warnings.push(
    ...checkCompatibility(policy, { clientVersion: at.clientVersion, where: location, headerPin: at.headerPin }),
  );
  warnings.push(...checkUploadOrigin(policy, { ...at.originRules, file: location }));
  return {
    policy,
    source: 'fetched',
    location,
    revision: policy.revision,
    fetchedAt: now,
    ageSeconds: 0,
    stale: false,
    ...(etag === undefined ? {} : { etag }),
    warnings,
  };
}

/** The fetched policy is valid and applies even if the cache cannot be written; say so instead of failing. */
async function saveQuietly(ctx: Context, lkg: LastKnownGood, warnings: string[]): Promise<void> {
  try {
    await writeLastKnownGood(ctx, lkg);
  } catch (error) {
    warnings.push(
      `could not save the last-known-good policy: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** "42 s", "5 min", "3 h", "2 d". */
export function formatDuration(seconds: number): string {
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  if (seconds < 48 * 3600) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}
