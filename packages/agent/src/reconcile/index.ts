/**
 * Reconcile: policy in, managed hooks out. One plan per harness, shown as-is by `--dry-run` and applied as-is
 * otherwise.
 */
import { loadAgentConfig } from '../config.js';
import { DocumentCache } from '@blue-agent/contract/schema/document-cache.js';
import type { Context } from '../context.js';
import { type BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import { ADAPTERS } from '../harnesses/index.js';
import type { HarnessAdapter } from '../harnesses/types.js';
import { detectVersion, findExecutable, VersionCache } from '../profiles/detect.js';
import { HARNESSES, loadProfiles, type LoadedProfiles } from '@blue-agent/contract/profiles/index.js';
import { resolvePolicy } from '../policy/resolve.js';
import type { ResolvedPolicy } from '../policy/resolved.js';
import type { PolicyOrigin } from '@blue-agent/contract/policy/validate.js';
import type { AgentConfig, GovernancePolicy, HarnessName, Interval } from '@blue-agent/contract/schema/index.js';
import { removeEmptyDirs } from '@blue-agent/contract/util/fs.js';
import { applyFilePlan, needsLedgerUpdate, recordOwnership } from './apply.js';
import { decide, policyRangeCheck, type Decision, type HarnessState, type Installation } from './decide.js';
import type { RangeCheck } from '@blue-agent/contract/util/semver.js';
import { readLedger, type LedgerData } from './ledger.js';
import { planHarness, type FileAction, type FilePlan } from './plan.js';

export type { HarnessState } from './decide.js';

export interface ReconcileOptions {
  dryRun: boolean;
  policyFile?: string;
  /** Who wrote `policyFile`: someone (the default), or this agent copying a fetched revision (the running agent's
   * steps). */
  policyOrigin?: PolicyOrigin;
  /** Only these harnesses; all when empty or absent. */
  harnesses?: readonly HarnessName[];
  /** A policy the caller already resolved (`status` reads it offline): used instead of resolving one here. */
  policy?: ResolvedPolicy;
}

export type HarnessAction = 'create' | 'update' | 'remove' | 'unchanged' | 'error';

export interface FileReport {
  path: string;
  action: FileAction | 'error';
  /** The file before and after, for diffs. Not serialised into --json. */
  before?: string | null;
  after?: string | null;
  backup?: string;
  error?: ReturnType<BlueError['toJSON']>;
}

export interface HarnessReport {
  harness: HarnessName;
  installed: boolean;
  path: string | null;
  raw_version: string | null;
  version: string | null;
  profile: string | null;
  verified: boolean | null;
  state: HarnessState;
  reason: string;
  /** With state error: the error's code (the first, when several files failed). */
  code?: string;
  action: HarnessAction;
  files: FileReport[];
}

export interface ReconcileReport {
  dry_run: boolean;
  policy: {
    revision: number | string;
    source: ResolvedPolicy['source'];
    location: string;
    age_seconds: number | null;
    stale: boolean;
    warnings: string[];
  };
  harnesses: HarnessReport[];
  ok: boolean;
}

export async function reconcile(ctx: Context, options: ReconcileOptions): Promise<ReconcileReport> {
  // Independent reads run together; a failure is still reported in the order the steps come (policy, then profiles).
  const [{ config }, documents] = await Promise.all([
    loadAgentConfig(ctx),
    DocumentCache.open(ctx.paths.documentCacheFile, !options.dryRun),
  ]);
  const [resolved, profiles, cache, ledger] = await inOrder([
    options.policy ??
      resolvePolicy(ctx, {
        dryRun: options.dryRun,
        config,
        documents,
        ...(options.policyFile === undefined ? {} : { policyFile: options.policyFile }),
        ...(options.policyOrigin === undefined ? {} : { policyOrigin: options.policyOrigin }),
      }),
    loadProfiles(ctx.paths.profilesDir, documents),
    VersionCache.open(ctx),
    readLedger(ctx),
  ] as const);
  const wanted =
    options.harnesses !== undefined && options.harnesses.length > 0 ? new Set(options.harnesses) : undefined;
  const selected = HARNESSES.flatMap((harness) => {
    const loaded = wanted === undefined || wanted.has(harness) ? profiles.get(harness) : undefined;
    return loaded === undefined ? [] : [{ harness, loaded }];
  });

  // Looking for the binaries and their versions only reads (and, on a cold cache, runs `--version`): all at once.
  // Plans are made and applied one harness after the other, as before.
  const installations = await Promise.all(selected.map(({ loaded }) => inspect(ctx, loaded, config, cache)));
  const inRange = await policyRangeCheck(resolved.policy);
  const reports: HarnessReport[] = [];
  for (const [i, { harness, loaded }] of selected.entries()) {
    reports.push(
      await reconcileHarness(
        ctx,
        ADAPTERS[harness],
        loaded,
        installations[i]!,
        resolved,
        inRange,
        ledger,
        options.dryRun,
      ),
    );
  }
  if (!options.dryRun) await Promise.all([cache.save(), documents.save()]);

  return {
    dry_run: options.dryRun,
    policy: {
      revision: resolved.revision,
      source: resolved.source,
      location: resolved.location,
      age_seconds: resolved.ageSeconds ?? null,
      stale: resolved.stale,
      warnings: resolved.warnings,
    },
    harnesses: reports,
    ok: reports.every((r) => r.state !== 'error'),
  };
}

/** Awaits every step and throws the first failure in the order given, not the order they happen to fail in. */
async function inOrder<T extends readonly unknown[]>(steps: T): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const settled = await Promise.allSettled(steps);
  for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
  return settled.map((outcome) => (outcome as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}

/** A harness whose sessions the policy captures here, with the profile interval its installed version captures by. */
export interface CaptureTarget {
  harness: HarnessName;
  interval: Interval;
  version: string;
}

/**
 * The harnesses whose sessions are captured on this machine under `policy`: installed, allowed, a supported version,
 * capture on (what reconcile installs a hook for, whether or not the harness runs it yet). Reads versions from the
 * cache reconcile keeps; writes nothing.
 */
export async function captureTargets(
  ctx: Context,
  policy: GovernancePolicy,
  only?: ReadonlySet<string>,
): Promise<CaptureTarget[]> {
  const { config } = await loadAgentConfig(ctx);
  const profiles = await loadProfiles(
    ctx.paths.profilesDir,
    await DocumentCache.open(ctx.paths.documentCacheFile, false),
  );
  const cache = await VersionCache.open(ctx);
  const inRange = await policyRangeCheck(policy);
  const targets: CaptureTarget[] = [];
  for (const harness of HARNESSES) {
    if (only !== undefined && !only.has(harness)) continue;
    const loaded = profiles.get(harness);
    if (loaded === undefined) continue;
    const installation = await inspect(ctx, loaded, config, cache);
    const decision = decide(harness, loaded, installation, policy, ctx.self, inRange);
    if (
      decision.desired === null ||
      decision.desired === undefined ||
      decision.interval === undefined ||
      installation.version === undefined
    )
      continue;
    targets.push({ harness, interval: decision.interval, version: installation.version });
  }
  return targets;
}

async function inspect(
  ctx: Context,
  loaded: LoadedProfiles,
  config: AgentConfig,
  cache: VersionCache,
): Promise<Installation> {
  const configured = config.harnesses?.[loaded.harness]?.binary;
  const binary = configured ?? (await findExecutable(loaded.doc.binary, ctx.env.PATH));
  if (binary === undefined) return { installed: false };
  try {
    const found = await detectVersion(ctx, loaded, binary, cache);
    return { installed: true, path: found.path, rawVersion: found.raw, version: found.version };
  } catch (error) {
    const blue = toBlueError(error);
    return {
      installed: true,
      path: binary,
      error: { code: blue.code, message: blue.message, ...(blue.hint === undefined ? {} : { hint: blue.hint }) },
    };
  }
}

async function reconcileHarness(
  ctx: Context,
  adapter: HarnessAdapter,
  loaded: LoadedProfiles,
  installation: Installation,
  resolved: ResolvedPolicy,
  inRange: RangeCheck,
  ledger: LedgerData,
  dryRun: boolean,
): Promise<HarnessReport> {
  const decision = decide(adapter.name, loaded, installation, resolved.policy, ctx.self, inRange);
  const base = {
    harness: adapter.name,
    installed: installation.installed,
    path: installation.path ?? null,
    raw_version: installation.rawVersion ?? null,
    version: installation.version ?? null,
    profile: decision.interval?.profile ?? null,
    verified: decision.verified ?? null,
  };
  if (decision.desired === undefined) {
    return {
      ...base,
      state: decision.state,
      reason: decision.reason,
      ...(decision.code === undefined ? {} : { code: decision.code }),
      action: 'error',
      files: [],
    };
  }

  const plan = await planHarness(ctx, adapter, decision.interval, decision.desired, ledger);
  if (plan.errors.length > 0) {
    // Any file we cannot read safely stops the whole harness: moving a hook between files must not half-happen.
    return {
      ...base,
      state: 'error',
      reason: plan.errors.map((e) => e.error.message).join('; '),
      code: plan.errors[0]!.error.code,
      action: 'error',
      files: [
        ...plan.files.map((p) => ({ path: p.file, action: 'unchanged' as const })),
        ...plan.errors.map((e) => ({ path: e.file, action: 'error' as const, error: e.error.toJSON() })),
      ],
    };
  }

  let applied: { plan: FilePlan; backup?: string }[] = plan.files.map((p) => ({ plan: p }));
  if (!dryRun) {
    try {
      applied = [];
      for (const filePlan of plan.files) {
        applied.push(
          filePlan.action === 'unchanged' ? { plan: filePlan } : await applyFilePlan(ctx, adapter, filePlan),
        );
      }
      const plans = applied.map((a) => a.plan);
      // A file the agent removed takes the folders it once created for it along, when they are empty.
      for (const p of plans) if (p.after === null && p.createdDirs.length > 0) await removeEmptyDirs(p.createdDirs);
      // A written file left a write-ahead entry to settle; otherwise only a stale record needs a ledger write.
      if (plans.some((p) => p.action !== 'unchanged') || needsLedgerUpdate(ctx, adapter, ledger, plans))
        await recordOwnership(ctx, adapter, plans);
    } catch (error) {
      const blue = toBlueError(error);
      return {
        ...base,
        state: 'error',
        reason: blue.message,
        code: blue.code,
        action: 'error',
        files: [
          ...applied.map((a) => fileReport(a.plan, a.backup)),
          { path: blue.file ?? '(unknown)', action: 'error', error: blue.toJSON() },
        ],
      };
    }
  }

  const { state, reason } = finalState(
    ctx,
    adapter,
    decision,
    applied.map((a) => a.plan),
  );
  return {
    ...base,
    state,
    reason,
    action: harnessAction(applied.map((a) => a.plan)),
    files: applied.map((a) => fileReport(a.plan, a.backup)),
  };
}

function finalState(
  ctx: Context,
  adapter: HarnessAdapter,
  decision: Decision,
  plans: readonly FilePlan[],
): { state: HarnessState; reason: string } {
  const hook = decision.desired;
  if (decision.state !== 'active' || hook === null || hook === undefined || adapter.pendingState === undefined)
    return decision;
  const holder = plans.find((p) => p.desired !== null && p.after !== null);
  if (holder === undefined) return decision;
  return adapter.pendingState(ctx, holder.after!, hook) ?? decision;
}

function harnessAction(plans: readonly FilePlan[]): HarnessAction {
  const changed = plans.filter((p) => p.action !== 'unchanged');
  if (changed.length === 0) return 'unchanged';
  const adds = changed.some((p) => p.desired !== null && p.managedFound === 0);
  const holds = plans.some((p) => p.desired !== null);
  if (!holds) return 'remove';
  return adds && changed.every((p) => p.desired !== null) ? 'create' : 'update';
}

function fileReport(plan: FilePlan, backup?: string): FileReport {
  return {
    path: plan.file,
    action: plan.action,
    before: plan.before,
    after: plan.after,
    ...(backup === undefined ? {} : { backup }),
  };
}
