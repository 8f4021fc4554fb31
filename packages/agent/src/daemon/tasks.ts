/**
 * The run loop's heavy steps — check the policy, reconcile, report to the Control API — each a function with a small,
 * JSON-serialisable answer. The agent runs them in a short-lived child process (`blue-agent run` with
 * BLUE_AGENT_RUN_TASK=1, see task-process.ts): the HTTP client, the schema validators, the harness adapters and the
 * profiles are then never loaded into the long-lived process, which stays small while idle.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { AgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { sendClientStatus } from '../control-api/status.js';
import { toBlueError } from '@blue-agent/contract/errors.js';
import { ADAPTERS } from '../harnesses/index.js';
import { DEFAULT_TTL_SECONDS, loadPolicyFile, resolvePolicy, type PolicySource } from '../policy/index.js';
import { loadProfiles, selectInterval } from '@blue-agent/contract/profiles/index.js';
import { reconcile } from '../reconcile/index.js';
import type { ClientStatusReport } from '@blue-agent/contract/schema/generated/control-client-status.js';
import { readTextIfExists, writeStateFile } from '@blue-agent/contract/util/fs.js';
import type { HarnessSummary } from './report.js';
import { fingerprints, type Fingerprint } from './watcher.js';

export type TaskRequest =
  | { task: 'policy'; config: AgentConfig; snapshot: string }
  | { task: 'reconcile'; snapshot: string }
  | { task: 'status'; body: ClientStatusReport; timeoutMs: number }
  | { task: 'sweep'; snapshot: string; idleMs?: number };

export interface TaskError {
  code: string;
  message: string;
}

export interface PolicyTaskResult {
  /** A policy is in force (fetched, confirmed, from a file, or the last-known-good one). */
  resolved?: {
    revision: number | string;
    source: PolicySource;
    fetchedAt?: number;
    ageSeconds?: number;
    stale: boolean;
    ttlSeconds: number;
    /** SHA-256 of the policy: changes exactly when the policy does. */
    key: string;
    warnings: string[];
  };
  /** The Control API could not be asked. */
  unavailable?: { reason: string; retryAfterMs?: number };
  error?: TaskError;
}

export interface ReconcileTaskResult {
  ok: boolean;
  harnesses: HarnessSummary[];
  /** Every native file a hook may live in: what the agent watches for drift. */
  watch: string[];
  /** How each watched file was right after the step's writes: the agent's own writes, not drift. */
  fingerprints?: Record<string, Fingerprint>;
  error?: TaskError;
}

export interface SweepTaskResult {
  ok: boolean;
  idle_ms: number;
  /** Folders to watch for sessions changing, with the depth of the sessions' files below each. */
  watch: { dir: string; depth: number }[];
  enqueued: number;
  active: number;
  next_due_at_unix_ms?: number;
  backfill?: { enqueued: number; remaining: number };
  error?: TaskError;
}

/** The agent's one backfill after install takes at most this many sessions per sweep, so the drains keep pace. */
export const BACKFILL_SLICE = 50;

export interface StatusTaskResult {
  ok: boolean;
  error?: TaskError;
}

function taskError(error: unknown): TaskError {
  const blue = toBlueError(error);
  return { code: blue.code, message: blue.message };
}

/** Fetches (or confirms, or falls back on) the policy and keeps a copy of it at `snapshot` for reconcile to apply. */
export async function policyTask(ctx: Context, config: AgentConfig, snapshot: string): Promise<PolicyTaskResult> {
  let unavailable: PolicyTaskResult['unavailable'];
  try {
    const resolved = await resolvePolicy(ctx, { dryRun: false, config, onUnavailable: (info) => (unavailable = info) });
    const text = `${JSON.stringify(resolved.policy, null, 2)}\n`;
    if ((await readTextIfExists(snapshot)) !== text) await writeStateFile(snapshot, text);
    return {
      resolved: {
        revision: resolved.revision,
        source: resolved.source,
        ...(resolved.fetchedAt === undefined ? {} : { fetchedAt: resolved.fetchedAt }),
        ...(resolved.ageSeconds === undefined ? {} : { ageSeconds: resolved.ageSeconds }),
        stale: resolved.stale,
        ttlSeconds: resolved.policy.ttl_seconds ?? DEFAULT_TTL_SECONDS,
        key: createHash('sha256').update(text).digest('hex'),
        warnings: resolved.warnings,
      },
      ...(unavailable === undefined ? {} : { unavailable }),
    };
  } catch (error) {
    return { ...(unavailable === undefined ? {} : { unavailable }), error: taskError(error) };
  }
}

/** Applies the policy kept at `snapshot` to every harness. */
export async function reconcileTask(ctx: Context, snapshot: string): Promise<ReconcileTaskResult> {
  const watch = new Set<string>();
  for (const adapter of Object.values(ADAPTERS)) for (const f of adapter.knownHookFiles(ctx)) watch.add(f);
  try {
    // The snapshot is the revision policyTask fetched (or a policy file it read): checked there, by its own rules.
    const report = await reconcile(ctx, { dryRun: false, policyFile: snapshot, policyOrigin: 'fetched' });
    // For the client status: what the policy allows and what the profiles support (both cached by reconcile).
    const policy = await loadPolicyFile(snapshot, undefined, 'fetched');
    const profiles = await loadProfiles(ctx.paths.profilesDir);
    const harnesses: HarnessSummary[] = report.harnesses.map((h) => {
      for (const f of h.files) if (path.isAbsolute(f.path)) watch.add(f.path);
      const loaded = profiles.get(h.harness);
      const choice = h.version === null || loaded === undefined ? undefined : selectInterval(loaded.doc, h.version);
      return {
        harness: h.harness,
        installed: h.installed,
        path: h.path,
        raw_version: h.raw_version,
        version: h.version,
        profile: h.profile,
        deprecated: choice?.interval.lifecycle === 'deprecated',
        allowed: policy.allowed_harnesses === undefined || policy.allowed_harnesses.includes(h.harness),
        supported: !h.installed || (choice !== undefined && choice.interval.operations.includes('session_capture')),
        verified: h.verified,
        state: h.state,
        reason: h.reason,
        ...(h.code === undefined ? {} : { code: h.code }),
        action: h.action,
        files: h.files.filter((f) => f.action !== 'unchanged').map((f) => f.path),
        file_error: h.files.some((f) => f.action === 'error'),
      };
    });
    return { ok: report.ok, harnesses, watch: [...watch], fingerprints: await fingerprints(watch) };
  } catch (error) {
    return {
      ok: false,
      harnesses: [],
      watch: [...watch],
      fingerprints: await fingerprints(watch),
      error: taskError(error),
    };
  }
}

/** `POST /client-status`. */
export async function statusTask(ctx: Context, body: ClientStatusReport, timeoutMs: number): Promise<StatusTaskResult> {
  try {
    await sendClientStatus(ctx, body, timeoutMs);
    return { ok: true };
  } catch (error) {
    return { ok: false, error: taskError(error) };
  }
}

/**
 * The idle sweep under the policy kept at `snapshot`, and, while the policy asks for it and it has not gone through
 * every session yet, a slice of the backfill (the drains upload them).
 */
export async function sweepTask(ctx: Context, snapshot: string, idleMs?: number): Promise<SweepTaskResult> {
  const { sweepIdle } = await import('../sweep/index.js');
  let result: SweepTaskResult = { ok: true, idle_ms: idleMs ?? 0, watch: [], enqueued: 0, active: 0 };
  try {
    const policy = await loadPolicyFile(snapshot, undefined, 'fetched');
    const report = await sweepIdle(ctx, policy, idleMs === undefined ? {} : { idleMs });
    result = {
      ok: true,
      idle_ms: report.idle_ms,
      watch: report.watch,
      enqueued: report.harnesses.reduce((n, h) => n + h.enqueued.length, 0),
      active: report.harnesses.reduce((n, h) => n + h.counts.active, 0),
      ...(report.next_due_at_unix_ms === undefined ? {} : { next_due_at_unix_ms: report.next_due_at_unix_ms }),
    };
    if (policy.session_upload?.backfill === true) {
      const { backfill, backfillFinishedAt } = await import('../sweep/backfill.js');
      if ((await backfillFinishedAt(ctx)) === undefined) {
        const done = await backfill(ctx, policy, {
          dryRun: false,
          drainBatches: false,
          max: BACKFILL_SLICE,
          batch: BACKFILL_SLICE,
        });
        result.backfill = { enqueued: done.candidates.length, remaining: done.remaining };
      }
    }
    return result;
  } catch (error) {
    return { ...result, ok: false, error: taskError(error) };
  }
}

export function runTask(
  ctx: Context,
  request: TaskRequest,
): Promise<PolicyTaskResult | ReconcileTaskResult | StatusTaskResult | SweepTaskResult> {
  switch (request.task) {
    case 'policy':
      return policyTask(ctx, request.config, request.snapshot);
    case 'reconcile':
      return reconcileTask(ctx, request.snapshot);
    case 'status':
      return statusTask(ctx, request.body, request.timeoutMs);
    case 'sweep':
      return sweepTask(ctx, request.snapshot, request.idleMs);
  }
}
