/**
 * The restore engine behind `blue-agent resume`: a verified bundle goes into this machine's native layout of its
 * harness, atomically, and can be rolled back.
 *
 *   recoverRestores(ctx)              first, always: finishes or undoes any restore a crash interrupted
 *   prepareRestore(ctx, {bundle, ...}) extracts (verifying everything) into a staging folder on the harness's
 *                                     filesystem and plans; writes nothing else
 *   applyRestore(ctx, prepared)       places the files and merges the indexes, all or nothing
 *   prepared.dispose()                removes the staging folder (cancel, or after apply)
 *
 * Planning is each harness's `planRestore` (src/harnesses/<h>/restore.ts); applying is apply.ts; the crash journal is
 * journal.ts.
 */
import { constants } from 'node:fs';
import { lstat, mkdtemp, open, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { extractBundle, readManifest, type BundleManifest } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { ADAPTERS } from '../harnesses/index.js';
import type { RestorePlan } from '../harnesses/types.js';
import { findInterval, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { withLock } from '../lock/lock.js';
import { staleOwnerReason, systemLockWorld, type LockWorld } from '../lock/liveness.js';
import { applyPlan, finish, removeStaging, rollBack, STAGING_MARK } from './apply.js';
import { existingAncestor, inspectPlan, type Collision, type RestoreConflict } from './inspect.js';
import { realRestoreIO, type RestoreIO } from './io.js';
import { applyRewrites } from './rewrite.js';
import { journalFile, listJournals, ownerFields, removeJournal, type RestoreJournal } from './journal.js';

export type { RestoreIO } from './io.js';
export { realRestoreIO } from './io.js';
export type { Collision, RestoreConflict } from './inspect.js';

const OWNER_FILE = 'owner.json';
/** A restore holds its harness's lock at most this long before others may take it over. */
const LOCK_STALE_MS = 30 * 60_000;
/** A journal or staging folder whose process still runs is left alone, unless it is older than this (a reused pid). */
const OWNER_STALE_MS = 6 * 60 * 60_000;
/** Slack when comparing process start times (boot time and start ticks are known to about a second). */
const START_SLACK_MS = 5_000;

export interface RestoreSummary {
  /** Files that will be written. */
  create: string[];
  /** Files already here with the same bytes: nothing to write. */
  identical: string[];
  /** What is in the way (collision `different`). */
  conflicts: RestoreConflict[];
  /** Native index files the session is entered in. */
  indexes: string[];
  /** A restore through the harness's own import: the command that will run in the destination. */
  import?: string[];
  /** Files whose bytes change for this destination (the profile's restore_rewrite), and what changes. */
  rewritten: { file: string; what: string }[];
}

export interface PreparedRestore {
  harness: HarnessName;
  /** The native session id (for an import: the bundle's; the import reports the final one). */
  sessionId: string;
  manifest: BundleManifest;
  /** The destination, resolved. */
  destination: string;
  summary: RestoreSummary;
  collision: Collision;
  resumeArgv: string[];
  /** The staging folder holding the extracted bundle. */
  staging: string;
  /** The plan the summary describes (applyRestore applies it). */
  plan: RestorePlan;
  /** Removes the staging folder; safe to call more than once, and after applyRestore. */
  dispose(): Promise<void>;
}

export interface RestoreResult {
  sessionId: string;
  /** Files written. */
  placed: string[];
  /** Index files merged. */
  merged: string[];
  /** Files that were already here with the same bytes. */
  skipped: string[];
  resumeArgv: string[];
}

export async function prepareRestore(
  ctx: Context,
  input: {
    bundleFile: string;
    destination: string;
    profiles: ProfileSet /** The harness version that will resume it (RestoreInput.installedVersion). */;
    installedVersion?: string;
  },
): Promise<PreparedRestore> {
  const manifest = await readManifest(input.bundleFile);
  const found = findInterval(input.profiles, manifest.compatibility_profile);
  if (found === undefined || found.harness !== manifest.harness) {
    throw new BlueError(
      'RESTORE_UNSUPPORTED',
      `the bundle was captured with profile ${manifest.compatibility_profile}, which this blue-agent does not know ` +
        `for ${manifest.harness}`,
      {
        hint:
          'Update blue-agent: profiles are only ever added, and a bundle is restored by the profile that ' +
          'captured it.',
      },
    );
  }
  if (!found.interval.operations.includes('session_resume')) {
    throw new BlueError('RESTORE_UNSUPPORTED', `profile ${found.interval.profile} does not support resuming sessions`, {
      hint:
        'Sessions captured from this harness version cannot be restored; `blue-agent profiles list` shows ' +
        'which can.',
    });
  }
  const destination = await resolveDestination(ctx, input.destination);
  const adapter = ADAPTERS[found.harness];

  // Same filesystem as the targets: inside the harness home (or its nearest existing parent on a fresh machine).
  const parent = await existingAncestor(adapter.configRoot(ctx));
  const staging = await mkdtemp(path.join(parent, STAGING_MARK)).catch((error: NodeJS.ErrnoException) => {
    throw mapPrepareError(error, parent);
  });
  liveStaging.add(staging);
  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    // A journal left by a rollback that could not finish still needs the staged files (identity by inode).
    if (!(await listJournals(ctx.paths.restoresDir)).some((j) => j.journal?.staging === staging))
      await removeStaging(staging);
    liveStaging.delete(staging);
  };
  try {
    await writeOwner(staging);
    const extracted = await extractBundle(input.bundleFile, path.join(staging, 'bundle'), { profiles: input.profiles });
    const plan = await adapter.planRestore(ctx, {
      manifest: extracted.manifest,
      files: extracted.files,
      destination,
      interval: found.interval,
      ...(input.installedVersion === undefined ? {} : { installedVersion: input.installedVersion }),
    });
    await applyRewrites(plan, found.interval);
    const inspection = await inspectPlan(ctx, plan);
    return {
      harness: found.harness,
      sessionId: plan.sessionId,
      manifest: extracted.manifest,
      destination,
      summary: {
        create: inspection.create.map((p) => p.to),
        identical: inspection.identical.map((p) => p.to),
        conflicts: inspection.conflicts,
        indexes: plan.merges.map((m) => m.file),
        ...(plan.import === undefined ? {} : { import: [plan.import.binary, ...plan.import.args] }),
        rewritten: plan.placements.flatMap((p) =>
          p.rewritten === undefined ? [] : [{ file: p.to, what: p.rewritten.what }],
        ),
      },
      collision: inspection.collision,
      resumeArgv: plan.resumeArgv,
      staging,
      plan,
      dispose,
    };
  } catch (error) {
    await dispose().catch(() => undefined);
    throw error instanceof BlueError ? error : mapPrepareError(error as NodeJS.ErrnoException, staging);
  }
}

export async function applyRestore(
  ctx: Context,
  prepared: PreparedRestore,
  options: { io?: RestoreIO } = {},
): Promise<RestoreResult> {
  const io = options.io ?? realRestoreIO;
  if (prepared.collision === 'different') throw conflictError(prepared.plan, prepared.summary.conflicts);
  return withLock(
    ctx.paths.locksDir,
    `restore:${prepared.harness}`,
    async () => {
      // The machine may have changed since the preflight the user saw: check again under the lock.
      await resolveDestination(ctx, prepared.destination);
      await refusePending(ctx, prepared.plan);
      const inspection = await inspectPlan(ctx, prepared.plan);
      if (inspection.collision === 'different') throw conflictError(prepared.plan, inspection.conflicts);
      const result = await applyPlan(ctx, { plan: prepared.plan, inspection, staging: prepared.staging }, io);
      const resumeArgv =
        result.sessionId === prepared.plan.sessionId
          ? prepared.resumeArgv
          : prepared.resumeArgv.map((a) => (a === prepared.plan.sessionId ? result.sessionId : a));
      return { ...result, resumeArgv };
    },
    { timeoutMs: 30_000, staleMs: LOCK_STALE_MS },
  );
}

/**
 * Finishes every restore a crash interrupted: a journal that reached `placed` is completed (cleanup only), any other
 * is rolled back to the machine as it was. Journals of restores still running are left alone. Leftover staging
 * folders of dead processes are removed.
 */
export interface RecoveryResult {
  rolledBack: string[];
  completed: string[];
  /** Files a rollback kept because they changed after the restore placed them (or are not the ones it placed). */
  warnings?: string[];
}

export interface RecoveryOptions {
  /** Whose journals still run: this machine's processes unless replaced (tests). */
  world?: LockWorld;
}

export async function recoverRestores(ctx: Context, options: RecoveryOptions = {}): Promise<RecoveryResult> {
  const world = options.world ?? systemLockWorld();
  const rolledBack: string[] = [];
  const completed: string[] = [];
  const warnings: string[] = [];
  for (const { id, journal, damaged } of await listJournals(ctx.paths.restoresDir)) {
    if (journal === undefined) {
      ctx.logger.warn('restore journal cannot be read; left in place', { journal: id, reason: damaged });
      continue;
    }
    if (ownerAlive(world, journal.pid, journal.host, journal.started_at_unix_ms, false, journal.pid_started_at_unix_ms))
      continue;
    try {
      await withLock(
        ctx.paths.locksDir,
        `restore:${journal.harness}`,
        async () => {
          const current = (await listJournals(ctx.paths.restoresDir)).find((j) => j.id === id)?.journal;
          if (current === undefined) return;
          if (current.state === 'placed') {
            await finish(ctx, current);
            completed.push(id);
          } else {
            const kept = await rollBack(ctx, current);
            await removeJournal(ctx.paths.restoresDir, id);
            rolledBack.push(id);
            for (const why of kept) {
              warnings.push(why);
              ctx.logger.warn('interrupted restore rolled back; a file was kept', { journal: id, why });
            }
          }
        },
        { timeoutMs: 2_000, staleMs: LOCK_STALE_MS },
      );
    } catch (error) {
      if (error instanceof BlueError && error.code === 'LOCK_TIMEOUT') continue;
      throw new BlueError(
        'RESTORE_FAILED',
        `an interrupted restore (${describe(journal)}) could not be finished: ${(error as Error).message}`,
        {
          hint:
            `Its journal stays in ${ctx.paths.restoresDir}; fix the cause (permissions, disk) and run ` +
            `\`blue-agent resume\` again.`,
          cause: error,
        },
      );
    }
  }
  await sweepStaging(ctx, world);
  return { rolledBack, completed, ...(warnings.length > 0 ? { warnings } : {}) };
}

/**
 * A journal that was not recovered (its process may still run, or recovery could not finish it) owns the files it
 * names: restoring into any of them now could have that journal's rollback remove this restore's work.
 */
async function refusePending(ctx: Context, plan: RestorePlan): Promise<void> {
  const ours = new Set([...plan.placements.map((p) => p.to), ...plan.merges.map((m) => m.file)]);
  for (const { id, journal } of await listJournals(ctx.paths.restoresDir)) {
    if (journal === undefined) continue;
    const named = [...(journal.targets ?? []).map((t) => t.path), ...(journal.indexes ?? []).map((i) => i.file)].find(
      (f) => ours.has(f),
    );
    if (named === undefined) continue;
    throw new BlueError(
      'RESTORE_FAILED',
      `an unfinished restore (${describe(journal)}) still names ${named}; this restore would write there too`,
      {
        file: named,
        hint:
          `Wait for that restore to end, then run \`blue-agent resume\` again (it finishes or undoes the ` +
          `interrupted one first). Its journal is ${journalFile(ctx.paths.restoresDir, id)}.`,
      },
    );
  }
}

function describe(journal: RestoreJournal): string {
  return `${journal.harness} session ${journal.session_id}, journal ${journal.id}`;
}

/** The hint of a conflict the plan has no better advice for. */
const CONFLICT_HINT =
  'blue-agent never overwrites a local session. Resume the local copy as it is, or move it away (or delete it in ' +
  'the harness) and restore again.';

function conflictError(plan: RestorePlan, conflicts: RestoreConflict[]): BlueError {
  const first = conflicts[0];
  return new BlueError(
    'RESTORE_CONFLICT',
    `this machine already has ${plan.harness} session ${plan.sessionId}` +
      `${first === undefined ? ' with other content' : `: ${first.path}: ${first.why}`}`,
    {
      ...(first === undefined || !path.isAbsolute(first.path) ? {} : { file: first.path }),
      hint: first?.hint ?? CONFLICT_HINT,
    },
  );
}

async function resolveDestination(ctx: Context, destination: string): Promise<string> {
  const abs = path.resolve(ctx.cwd, destination);
  let real: string;
  try {
    real = await realpath(abs);
  } catch (error) {
    throw new BlueError(
      'DESTINATION_INVALID',
      `the destination ${abs} does not exist (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      {
        file: abs,
        hint: 'Create the folder (or check out the repository there) first, then restore into it.',
      },
    );
  }
  if (!(await stat(real)).isDirectory()) {
    throw new BlueError('DESTINATION_INVALID', `the destination ${abs} is not a folder`, {
      file: abs,
      hint: 'Restore into the folder you want to work in.',
    });
  }
  return real;
}

function mapPrepareError(error: NodeJS.ErrnoException, where: string): BlueError {
  if (error.code === 'ENOSPC' || error.code === 'EDQUOT') {
    return new BlueError('RESTORE_NO_SPACE', `the disk is full: the bundle cannot be unpacked in ${where}`, {
      hint: 'Free some space on that disk, then restore again.',
      cause: error,
    });
  }
  return new BlueError('RESTORE_FAILED', `the bundle cannot be unpacked in ${where} (${error.code ?? error.message})`, {
    hint: 'Check the permissions of the harness folder, then restore again.',
    cause: error,
  });
}

async function writeOwner(staging: string): Promise<void> {
  const handle = await open(
    path.join(staging, OWNER_FILE),
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await handle.writeFile(JSON.stringify({ ...ownerFields(), started_at_unix_ms: Date.now() }));
  } finally {
    await handle.close();
  }
}

/** Staging folders prepared by this process and not yet disposed. */
const liveStaging = new Set<string>();

/**
 * Whether the process that wrote a journal or staging folder still runs (lock/liveness.ts). Our own pid counts only
 * for what this process holds (`self`): an earlier process may have had the same pid. A record of another host, or
 * older than OWNER_STALE_MS, has no running owner here. An in-flight apply is also protected by the harness lock it
 * holds, which recovery takes before acting.
 */
function ownerAlive(
  world: LockWorld,
  pid: unknown,
  host: unknown,
  startedAt: unknown,
  self = false,
  pidStartedAt?: unknown,
): boolean {
  // (The owner's own start time when recorded: a journal's started_at comes from the context's clock.)
  const owner = {
    pid,
    host: typeof host === 'string' ? host : '',
    processStartedAt: pidStartedAt,
    recordedAt: startedAt,
  };
  const rules = {
    self,
    maxAgeMs: OWNER_STALE_MS,
    bootSlackMs: START_SLACK_MS,
    startSlackMs: START_SLACK_MS,
    otherHost: 'stale',
    foreign: 'alive',
  } as const;
  return staleOwnerReason(owner, world, rules) === undefined;
}

/** Staging folders of dead processes in every harness home (a prepare that was never applied nor disposed). */
async function sweepStaging(ctx: Context, world: LockWorld): Promise<void> {
  for (const adapter of Object.values(ADAPTERS)) {
    const parent = await existingAncestor(adapter.configRoot(ctx)).catch(() => undefined);
    if (parent === undefined) continue;
    let names: string[];
    try {
      names = await readdir(parent);
    } catch {
      continue;
    }
    for (const name of names.filter((n) => n.startsWith(STAGING_MARK))) {
      const dir = path.join(parent, name);
      const info = await lstat(dir).catch(() => undefined);
      if (info === undefined || !info.isDirectory()) continue;
      let owner: { pid?: unknown; host?: unknown; started_at_unix_ms?: unknown; pid_started_at_unix_ms?: unknown } = {};
      try {
        owner = JSON.parse(await readFile(path.join(dir, OWNER_FILE), 'utf8')) as typeof owner;
      } catch {
        // No owner yet: a prepare that died right after creating the folder, unless it is brand new.
        if (Date.now() - info.mtimeMs < 60_000) continue;
      }
      if (
        owner.pid !== undefined &&
        ownerAlive(
          world,
          owner.pid,
          owner.host,
          owner.started_at_unix_ms,
          liveStaging.has(dir),
          owner.pid_started_at_unix_ms,
        )
      )
        continue;
      // A journal still naming this folder is recovered above; never pull staging from under it.
      const journals = await listJournals(ctx.paths.restoresDir);
      if (journals.some((j) => j.journal?.staging === dir)) continue;
      await removeStaging(dir);
    }
  }
}
