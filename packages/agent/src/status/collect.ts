/**
 * Everything `status` shows, gathered into one plain object: the policy (read offline), each harness as a dry-run
 * reconcile sees it, the spool, the last drain, the running agent and the service. Reads only: no network, no file
 * written, no cache refreshed. Every part fails on its own, so one broken piece never hides the others.
 */
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { readLastDrain, readRunState, type AgentRunState, type LastDrain } from '../daemon/state.js';
import { processRuns } from '../lock/liveness.js';
import type { ResolvedPolicy } from '../policy/index.js';
import { findInterval, loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { reconcile, type HarnessReport } from '../reconcile/index.js';
import type { AgentConfig, HarnessName, Interval } from '@blue-agent/contract/schema/index.js';
import { sessionsStatus, type SessionsStatus } from '../sweep/status.js';
import { serviceStatus, type ServiceState } from '../service/index.js';
import { errorInfo, noPolicy, readPolicyOffline, type ErrorInfo } from './policy.js';
import { readSpoolStatus, type SpoolStatus } from './spool.js';

export interface PolicyStatus {
  revision: number | string | null;
  source: ResolvedPolicy['source'] | null;
  location: string | null;
  fetched_at_unix_ms: number | null;
  age_seconds: number | null;
  stale: boolean;
  /** The policy has a session_upload block. */
  capture_enabled: boolean | null;
  warnings: string[];
  error?: ErrorInfo;
}

export interface HarnessStatus {
  harness: string;
  installed: boolean;
  path: string | null;
  version: string | null;
  raw_version: string | null;
  profile: string | null;
  /** False: the version is at or past its profile's certification ceiling. */
  verified: boolean | null;
  /** The ceiling the version is measured against, when a profile covers it. */
  verified_before: string | null;
  state: HarnessReport['state'];
  reason: string;
  /** With state error: the error's code. */
  code?: string;
  /**
   * What `blue-agent reconcile` would do to this harness's managed hook now, or null when nothing: `create` (the hook
   * is missing — an `active` harness captures nothing until it is added), `update` (out of date), `remove` (no longer
   * wanted). `state` is what the policy and profiles decide; `pending` says whether the files match it yet.
   */
  pending: 'create' | 'update' | 'remove' | null;
  /** For a harness in error: what to do, when the error says. */
  hint: string | null;
}

export interface AgentStatus {
  /** running: the pid runs and the file is fresh; stopped: a file is left but the agent is gone; absent: no file. */
  state: 'running' | 'stopped' | 'absent';
  pid: number | null;
  started_at_unix_ms: number | null;
  updated_at_unix_ms: number | null;
  /** Why it counts as stopped. */
  detail: string | null;
  last_reconcile: AgentRunState['last_reconcile'] | null;
  next_drain_at_unix_ms: number | null;
  /** When the agent asks the Control API for the policy next (its ttl, or a retry after a failure). */
  next_policy_check_at_unix_ms: number | null;
  policy_error: { code: string; message: string } | null;
}

export interface StatusReport {
  now_unix_ms: number;
  config_file: string;
  state_dir: string;
  config_error?: ErrorInfo;
  policy: PolicyStatus;
  harnesses: HarnessStatus[];
  harnesses_error?: ErrorInfo;
  spool: SpoolStatus;
  /** Sessions captured without their end hook (idle sweep, backfill), and sessions at risk of the harness's own
   * cleanup. */
  sessions: SessionsStatus | { error: ErrorInfo };
  last_drain: LastDrain | null;
  agent: AgentStatus;
  service: ServiceState | { error: ErrorInfo };
}

/** A run state not rewritten for this long (past anything it scheduled) belongs to an agent that is gone. */
export const RUN_STATE_STALE_MS = 60 * 60 * 1000;
const RUN_STATE_GRACE_MS = 10 * 60 * 1000;

/** The running agent as its state file tells (`blue-agent run` started by the service or by hand). */
export async function readAgentStatus(ctx: Context): Promise<AgentStatus> {
  return agentStatus(await readRunState(ctx), ctx.clock.now());
}

export async function collectStatus(ctx: Context): Promise<StatusReport> {
  const now = ctx.clock.now();
  let config: AgentConfig = {};
  let configError: ErrorInfo | undefined;
  try {
    config = (await loadAgentConfig(ctx)).config;
  } catch (error) {
    configError = errorInfo(error);
  }

  const [run, lastDrain, spool, service] = await Promise.all([
    readRunState(ctx),
    readLastDrain(ctx),
    readSpoolStatus(ctx).catch(
      (error: unknown): SpoolStatus => ({
        root: ctx.paths.spoolDir,
        exists: false,
        counts: { intake: 0, building: 0, ready: 0, uploading: 0, failed: 0 },
        handed_over: 0,
        waiting: 0,
        oldest_waiting: null,
        error: errorInfo(error),
      }),
    ),
    serviceStatus(ctx).catch((error: unknown) => ({ error: errorInfo(error) })),
  ]);
  const agent = agentStatus(run, now);

  const offline =
    configError === undefined ? await readPolicyOffline(ctx, config) : { resolved: undefined, error: configError };
  const policy = policyStatus(offline.resolved, offline.error, agent.state === 'running' ? run : undefined);

  let harnesses: HarnessStatus[] = [];
  let harnessesError: ErrorInfo | undefined;
  if (configError === undefined) {
    try {
      harnesses = await inspectHarnesses(ctx, offline.resolved);
    } catch (error) {
      harnessesError = errorInfo(error);
    }
  } else {
    harnessesError = configError;
  }

  const sessions = await collectSessions(ctx, harnesses).catch((error: unknown) => ({ error: errorInfo(error) }));

  return {
    now_unix_ms: now,
    config_file: ctx.paths.configFile,
    state_dir: ctx.paths.stateDir,
    ...(configError === undefined ? {} : { config_error: configError }),
    policy,
    harnesses,
    ...(harnessesError === undefined ? {} : { harnesses_error: harnessesError }),
    spool,
    sessions,
    last_drain: lastDrain ?? null,
    agent,
    service,
  };
}

/**
 * Each harness as a dry-run reconcile against `policy` sees it (writes nothing, not even caches). Without a policy
 * the harnesses are still inspected — installed, version, profile, certification — and capture shows as off.
 */
export async function inspectHarnesses(ctx: Context, policy: ResolvedPolicy | undefined): Promise<HarnessStatus[]> {
  const report = await reconcile(ctx, { dryRun: true, policy: policy ?? noPolicy() });
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  return report.harnesses.map((h) => {
    const interval =
      h.profile === null ? undefined : profiles.get(h.harness)?.doc.intervals.find((i) => i.profile === h.profile);
    const noPolicyReason = policy === undefined && h.state === 'capture_disabled';
    return {
      harness: h.harness,
      installed: h.installed,
      path: h.path,
      version: h.version,
      raw_version: h.raw_version,
      profile: h.profile,
      verified: h.verified,
      verified_before: interval?.verified_before ?? null,
      state: h.state,
      reason: noPolicyReason ? 'no governance policy is available, so capture is off' : h.reason,
      ...(h.code === undefined ? {} : { code: h.code }),
      pending: h.action === 'create' || h.action === 'update' || h.action === 'remove' ? h.action : null,
      hint: fileHint(h),
    };
  });
}

/** The sweep's view of the harnesses whose sessions are captured here (a hook is wanted, whether or not it runs yet).
 * */
export async function collectSessions(ctx: Context, harnesses: readonly HarnessStatus[]): Promise<SessionsStatus> {
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const targets: { harness: HarnessName; interval: Interval }[] = [];
  for (const h of harnesses) {
    if (h.profile === null || !CAPTURING.has(h.state)) continue;
    const found = findInterval(profiles, h.profile);
    if (found !== undefined) targets.push(found);
  }
  return sessionsStatus(ctx, targets);
}

const CAPTURING: ReadonlySet<string> = new Set(['active', 'awaiting_trust', 'hooks_disabled']);

/** Policy errors the agent keeps hitting that leave no cached policy behind (the pin drops it): shown in its place. */
const REFUSALS = new Set(['CLIENT_VERSION_MISMATCH', 'POLICY_INCOMPATIBLE']);

function policyStatus(
  resolved: ResolvedPolicy | undefined,
  offlineError: ErrorInfo | undefined,
  run: AgentRunState | undefined,
): PolicyStatus {
  const refused = run?.policy?.last_error;
  const error =
    resolved === undefined &&
    offlineError?.code === 'POLICY_MISSING' &&
    refused !== undefined &&
    REFUSALS.has(refused.code)
      ? refused
      : offlineError;
  if (resolved === undefined) {
    return {
      revision: null,
      source: null,
      location: null,
      fetched_at_unix_ms: null,
      age_seconds: null,
      stale: false,
      capture_enabled: null,
      warnings: [],
      ...(error === undefined ? {} : { error }),
    };
  }
  // The running agent fetched (or confirmed) this very revision: say so rather than "cached".
  const live =
    run?.policy !== undefined &&
    String(run.policy.revision) === String(resolved.revision) &&
    resolved.source === 'cached'
      ? run.policy
      : undefined;
  return {
    revision: resolved.revision,
    source: live?.source ?? resolved.source,
    location: resolved.location,
    fetched_at_unix_ms: resolved.fetchedAt ?? null,
    age_seconds: resolved.ageSeconds ?? null,
    stale: resolved.stale,
    capture_enabled: resolved.policy.session_upload !== undefined,
    warnings: [
      ...resolved.warnings,
      ...(live?.last_error === undefined ? [] : [`the agent's last policy check failed: ${live.last_error.message}`]),
    ],
  };
}

export function agentStatus(run: AgentRunState | undefined, now: number): AgentStatus {
  if (run === undefined) {
    return {
      state: 'absent',
      pid: null,
      started_at_unix_ms: null,
      updated_at_unix_ms: null,
      detail: null,
      last_reconcile: null,
      next_drain_at_unix_ms: null,
      next_policy_check_at_unix_ms: null,
      policy_error: null,
    };
  }
  const expected = Math.max(
    run.updated_at_unix_ms + RUN_STATE_STALE_MS,
    (run.policy?.next_check_at_unix_ms ?? 0) + RUN_STATE_GRACE_MS,
    (run.next_drain_at_unix_ms ?? 0) + RUN_STATE_GRACE_MS,
  );
  const alive = processRuns(run.pid);
  // A clean stop is final, whatever process holds that pid now (a reused pid, or a new agent not yet reporting).
  const cleanStop = typeof run.stopped_at_unix_ms === 'number';
  const state = !cleanStop && alive && now <= expected ? 'running' : 'stopped';
  return {
    state,
    pid: run.pid,
    started_at_unix_ms: run.started_at_unix_ms ?? null,
    updated_at_unix_ms: run.updated_at_unix_ms,
    detail:
      state === 'running'
        ? null
        : cleanStop
          ? `stopped cleanly at ${new Date(run.stopped_at_unix_ms!).toISOString()}`
          : alive
            ? `pid ${run.pid} runs but has not reported since`
            : `pid ${run.pid} is gone`,
    last_reconcile: run.last_reconcile ?? null,
    next_drain_at_unix_ms: run.next_drain_at_unix_ms ?? null,
    next_policy_check_at_unix_ms:
      typeof run.policy?.next_check_at_unix_ms === 'number' ? run.policy.next_check_at_unix_ms : null,
    policy_error: run.policy?.last_error ?? null,
  };
}

function fileHint(h: HarnessReport): string | null {
  for (const f of h.files) {
    const hint = f.error?.hint;
    if (typeof hint === 'string') return hint;
  }
  return null;
}
