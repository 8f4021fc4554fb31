/**
 * Applying a restore plan, all or nothing:
 *
 *   1. (under a per-harness lock) preflight again: a conflict found now refuses with nothing written;
 *   2. every index merge is computed from the file as it is now;
 *   3. the journal is written (atomically) naming every folder, file, temp file and index backup this restore may
 *      create;
 *   4. folders are created (one that already exists is not ours: the journal stops naming it), then each staged file
 *      is hard-linked to its target (fresh mtime first); a link never replaces anything, so a file that appeared
 *      meanwhile is a conflict, never clobbered; after each placement the target's folder must still resolve inside
 *      the session root and the target must be the inode placed;
 *   5. each index is backed up by a hard link of the original, then replaced by a fsynced temp file (rename) —
 *      rollback is a rename of the backup, which needs no free space;
 *   6. A harness restored through its own import: that command runs in the destination; the journal is rewritten at
 * once with the id it reports;
 *   7. the journal says `placed` (the commit point); backups, staging and the journal are removed.
 *
 * Any failure before 7 rolls back what 4-6 did, in reverse; a crash is rolled back (or, after 7, finished) by
 * recoverRestores from the journal. Rollback removes a target only when it is still the inode this restore placed
 * (the staged file, or the copy-fallback temp kept until the commit) with the journal's size and SHA-256: a file the
 * user kept working in after a crash is kept and reported.
 */
import { lstat, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { RestorePlan } from '../harnesses/types.js';
import { findExecutable } from '../profiles/detect.js';
import { fsyncDir, resolveWriteTarget } from '@blue-agent/contract/util/fs.js';
import type { Inspection } from './inspect.js';
import type { RestoreIO } from './io.js';
import {
  newJournalId,
  ownerFields,
  removeJournal,
  writeJournal,
  type JournalIndex,
  type RestoreJournal,
} from './journal.js';
import { rollBack } from './rollback.js';
export { rollBack } from './rollback.js';
import { runImport, mapFailure, importStep } from './harness-import.js';
export { IMPORT_TIMEOUT_MS } from './harness-import.js';
import { mergeIndex } from './merge-index.js';
import { checkParents, place } from './place.js';
import { STAGING_MARK, sha256, errnoOf, readIfExists, beside, unlinkIfExists, removeStaging } from './files.js';
export { MAX_INDEX_BYTES, removeStaging } from './files.js';

export interface ApplyResult {
  sessionId: string;
  placed: string[];
  merged: string[];
  skipped: string[];
}

export interface ApplyInput {
  plan: RestorePlan;
  inspection: Inspection;
  staging: string;
}

export async function applyPlan(
  ctx: Context,
  { plan, inspection, staging }: ApplyInput,
  io: RestoreIO,
): Promise<ApplyResult> {
  const id = newJournalId();
  const now = new Date(ctx.clock.now());

  // Index merges from the files as they are now; unchanged ones need no write.
  const merges: { index: JournalIndex; mode: number; after: Buffer; before: Buffer | null }[] = [];
  for (const merge of plan.merges) {
    const file = await resolveWriteTarget(merge.file);
    const before = await readIfExists(file);
    const after = merge.merge(before);
    if (before !== null && after.equals(before)) continue;
    const mode = before === null ? 0o600 : (await stat(file)).mode & 0o7777;
    merges.push({
      index: {
        file,
        existed: before !== null,
        backup: beside(file, id, 'backup'),
        temp: beside(file, id, 'tmp'),
        sha256_before: sha256(before),
        sha256_after: sha256(after)!,
      },
      mode,
      after,
      before,
    });
  }

  let importBinary: string | undefined;
  const needsImport = plan.import !== undefined && inspection.imported === 'none';
  if (needsImport) {
    importBinary = await findExecutable(plan.import!.binary, ctx.env.PATH);
    if (importBinary === undefined) {
      throw new BlueError(
        'RESTORE_FAILED',
        `the ${plan.import!.binary} binary is not on PATH, so the session cannot be imported`,
        { hint: `Install ${plan.import!.binary}, or run blue-agent with the PATH it runs with.` },
      );
    }
  }

  const skipped = inspection.identical.map((p) => p.to);
  if (inspection.create.length === 0 && merges.length === 0 && !needsImport) {
    await rm(staging, { recursive: true, force: true });
    return { sessionId: plan.sessionId, placed: [], merged: [], skipped };
  }

  const journal: RestoreJournal = {
    format: 'blue-agent-restore-journal-v1',
    id,
    ...ownerFields(),
    started_at_unix_ms: ctx.clock.now(),
    harness: plan.harness,
    session_id: plan.sessionId,
    state: 'placing',
    staging,
    root: plan.root,
    dirs: inspection.dirs,
    targets: inspection.create.map((p) => ({
      path: p.to,
      staged: p.from,
      sha256: p.sha256,
      size: p.size,
      temp: beside(p.to, id, 'tmp'),
      ...(p.rewritten === undefined
        ? {}
        : { captured_sha256: p.rewritten.captured_sha256, rewritten: p.rewritten.what }),
    })),
    indexes: merges.map((m) => m.index),
    ...(needsImport ? { import: importStep(plan, importBinary!, plan.sessionId) } : {}),
  };

  let sessionId = plan.sessionId;
  let journalWritten = false;
  try {
    await writeJournal(io, ctx.paths.restoresDir, journal);
    journalWritten = true;

    // A folder that exists by now was made by someone else: it is not this restore's to remove.
    const existing: string[] = [];
    for (const dir of journal.dirs) {
      try {
        await io.mkdir(dir, 0o700);
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw error;
        const info = await lstat(dir);
        if (!info.isDirectory())
          throw new BlueError('RESTORE_CONFLICT', `${dir}: appeared while restoring and is not a folder`, {
            file: dir,
            hint: 'Move it away, then restore again.',
          });
        existing.push(dir);
      }
      await fsyncDir(path.dirname(dir));
    }
    if (existing.length > 0) {
      journal.dirs = journal.dirs.filter((d) => !existing.includes(d));
      await writeJournal(io, ctx.paths.restoresDir, journal);
    }

    const touched = new Set<string>();
    for (const target of journal.targets) {
      await checkParents(plan.root, target.path);
      await io.utimes(target.staged, now, now);
      await place(io, inspection.realRoot, target, now);
      touched.add(path.dirname(target.path));
    }
    for (const dir of touched) await fsyncDir(dir);

    for (const m of merges) await mergeIndex(io, m.index, m.before, m.after, m.mode);

    if (needsImport) {
      sessionId = await runImport(ctx, plan, importBinary!);
      if (sessionId !== journal.import!.session_id) {
        // The harness named the session itself: from now on that is the one a rollback removes.
        journal.import = importStep(plan, importBinary!, sessionId);
        await writeJournal(io, ctx.paths.restoresDir, journal);
      }
    }

    journal.state = 'placed';
    await writeJournal(io, ctx.paths.restoresDir, journal);
  } catch (error) {
    let failure = mapFailure(error, plan);
    try {
      const kept = await rollBack(ctx, journal);
      if (journalWritten) await removeJournal(ctx.paths.restoresDir, id);
      if (kept.length > 0) {
        for (const why of kept) ctx.logger.warn('restore rolled back; a file was kept', { journal: id, why });
        failure = new BlueError(failure.code, `${failure.message}; kept: ${kept.join('; ')}`, {
          hint: failure.hint,
          ...(failure.file === undefined ? {} : { file: failure.file }),
          cause: error,
        });
      }
    } catch (rollbackError) {
      throw new BlueError(
        'RESTORE_FAILED',
        `${failure.message}; undoing the restore failed too (${(rollbackError as Error).message})`,
        {
          hint:
            `Nothing is lost: the journal ${id} in ${ctx.paths.restoresDir} records what to undo; \`blue-agent ` +
            `resume\` finishes the rollback first.`,
          cause: error,
        },
      );
    }
    throw failure;
  }
  await finish(ctx, journal).catch((error: unknown) =>
    ctx.logger.warn('restore cleanup left files for recovery', { journal: id, error: String(error) }),
  );
  return { sessionId, placed: journal.targets.map((t) => t.path), merged: merges.map((m) => m.index.file), skipped };
}

/** After the commit point: drop the backups, the staging folder and the journal. */
export async function finish(ctx: Context, journal: RestoreJournal): Promise<void> {
  for (const index of journal.indexes) {
    await unlinkIfExists(index.temp);
    await unlinkIfExists(index.backup);
  }
  for (const target of journal.targets) await unlinkIfExists(target.temp);
  await removeStaging(journal.staging);
  await removeJournal(ctx.paths.restoresDir, journal.id);
}

export { STAGING_MARK };
