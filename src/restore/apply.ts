/**
 * Applying a restore plan, all or nothing:
 *
 *   1. (under a per-harness lock) preflight again: a conflict found now refuses with nothing written;
 *   2. every index merge is computed from the file as it is now;
 *   3. the journal is written (atomically) naming every folder, file, temp file and index backup this restore may
 *      create;
 *   4. folders are created, then each staged file is hard-linked to its target (fresh mtime first); a link never
 *      replaces anything, so a file that appeared meanwhile is a conflict, never clobbered;
 *   5. each index is backed up by a hard link of the original, then replaced by a fsynced temp file (rename) —
 *      rollback is a rename of the backup, which needs no free space;
 *   6. OpenCode: `opencode import` runs in the destination;
 *   7. the journal says `placed` (the commit point); backups, staging and the journal are removed.
 *
 * Any failure before 7 rolls back what 4-6 did, in reverse; a crash is rolled back (or, after 7, finished) by
 * recoverRestores from the journal.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readFile, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '../errors.js';
import type { RestorePlan } from '../harnesses/types.js';
import { findExecutable } from '../profiles/detect.js';
import { fsyncDir, resolveWriteTarget } from '../util/fs.js';
import { isInside, sha256File, type Inspection } from './inspect.js';
import type { RestoreIO } from './io.js';
import { newJournalId, ownerFields, removeJournal, writeJournal, type JournalIndex, type RestoreJournal } from './journal.js';

export const IMPORT_TIMEOUT_MS = 120_000;
const STAGING_MARK = '.blue-agent-restore-';

export interface ApplyResult {
  sessionId: string;
  placed: string[];
  merged: string[];
  skipped: string[];
}

function sha256(text: string | null): string | null {
  return text === null ? null : createHash('sha256').update(text, 'utf8').digest('hex');
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

async function readIfExists(file: string): Promise<string | null> {
  try {
    const info = await lstat(file);
    if (!info.isFile()) {
      throw new BlueError('RESTORE_CONFLICT', `${file}: is not a regular file, so the session cannot be entered in it`, { file, hint: 'Move it away (it is yours; blue-agent never replaces it), then restore again.' });
    }
    return await readFile(file, 'utf8');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return null;
    throw error;
  }
}

/** Where temp files and backups of a file go: beside it, hidden, named by the restore. */
function beside(file: string, id: string, kind: string): string {
  return path.join(path.dirname(file), `${STAGING_MARK}${id}.${kind}.${path.basename(file).slice(0, 100)}`);
}

export interface ApplyInput {
  plan: RestorePlan;
  inspection: Inspection;
  staging: string;
}

export async function applyPlan(ctx: Context, { plan, inspection, staging }: ApplyInput, io: RestoreIO): Promise<ApplyResult> {
  const id = newJournalId();
  const now = new Date(ctx.clock.now());

  // Index merges from the files as they are now; unchanged ones need no write.
  const merges: { index: JournalIndex; mode: number; after: string; before: string | null }[] = [];
  for (const merge of plan.merges) {
    const file = await resolveWriteTarget(merge.file);
    const before = await readIfExists(file);
    const after = merge.merge(before);
    if (after === before) continue;
    const mode = before === null ? 0o600 : (await stat(file)).mode & 0o7777;
    merges.push({
      index: { file, existed: before !== null, backup: beside(file, id, 'backup'), temp: beside(file, id, 'tmp'), sha256_before: sha256(before), sha256_after: sha256(after)! },
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
      throw new BlueError('RESTORE_FAILED', `the ${plan.import!.binary} binary is not on PATH, so the session cannot be imported`, { hint: `Install ${plan.import!.binary}, or run blue-agent with the PATH it runs with.` });
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
    targets: inspection.create.map((p) => ({ path: p.to, staged: p.from, sha256: p.sha256, size: p.size, temp: beside(p.to, id, 'tmp') })),
    indexes: merges.map((m) => m.index),
    ...(needsImport ? { import: { binary: importBinary!, cwd: plan.import!.cwd, session_id: plan.sessionId, remove_args: [...plan.import!.removeArgs(plan.sessionId)] } } : {}),
  };

  let sessionId = plan.sessionId;
  let journalWritten = false;
  try {
    await writeJournal(io, ctx.paths.stateDir, journal);
    journalWritten = true;

    for (const dir of journal.dirs) {
      try {
        await io.mkdir(dir, 0o700);
      } catch (error) {
        if (errnoOf(error) !== 'EEXIST') throw error;
        const info = await lstat(dir);
        if (!info.isDirectory()) throw new BlueError('RESTORE_CONFLICT', `${dir}: appeared while restoring and is not a folder`, { file: dir, hint: 'Move it away, then restore again.' });
      }
      await fsyncDir(path.dirname(dir));
    }

    const touched = new Set<string>();
    for (const target of journal.targets) {
      await checkParents(plan.root, target.path);
      await io.utimes(target.staged, now, now);
      await place(io, target.staged, target.path, target.temp, now);
      touched.add(path.dirname(target.path));
    }
    for (const dir of touched) await fsyncDir(dir);

    for (const m of merges) await mergeIndex(io, m.index, m.before, m.after, m.mode);

    if (needsImport) sessionId = await runImport(ctx, plan, importBinary!);

    journal.state = 'placed';
    await writeJournal(io, ctx.paths.stateDir, journal);
  } catch (error) {
    const failure = mapFailure(error, plan);
    try {
      await rollBack(ctx, journal);
      if (journalWritten) await removeJournal(ctx.paths.stateDir, id);
    } catch (rollbackError) {
      throw new BlueError('RESTORE_FAILED', `${failure.message}; undoing the restore failed too (${(rollbackError as Error).message})`, {
        hint: `Nothing is lost: the journal ${id} in ${path.join(ctx.paths.stateDir, 'restores')} records what to undo; \`blue-agent resume\` finishes the rollback first.`,
        cause: error,
      });
    }
    throw failure;
  }
  await finish(ctx, journal).catch((error: unknown) => ctx.logger.warn('restore cleanup left files for recovery', { journal: id, error: String(error) }));
  return { sessionId, placed: journal.targets.map((t) => t.path), merged: merges.map((m) => m.index.file), skipped };
}

/** Right before a placement: no folder between the root and the target became a link since the preflight. */
async function checkParents(root: string, target: string): Promise<void> {
  let current = path.dirname(target);
  while (current !== root && isInside(root, current)) {
    const info = await lstat(current);
    if (info.isSymbolicLink() || !info.isDirectory()) {
      throw new BlueError('RESTORE_UNSAFE', `${current}: became a link or a file while restoring`, { file: current, hint: 'Something changed the harness folders during the restore; check them, then restore again.' });
    }
    current = path.dirname(current);
  }
}

/** Hard link from staging (same filesystem), else a copy beside the target hard-linked into place. Never replaces. */
async function place(io: RestoreIO, staged: string, target: string, temp: string, now: Date): Promise<void> {
  try {
    await io.link(staged, target);
    return;
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'EEXIST') throw conflictAppeared(target);
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') throw error;
  }
  await io.copyFile(staged, temp);
  try {
    const handle = await open(temp, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await io.utimes(temp, now, now);
    try {
      await io.link(temp, target);
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') throw conflictAppeared(target);
      throw error;
    }
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

function conflictAppeared(target: string): BlueError {
  return new BlueError('RESTORE_CONFLICT', `${target}: a file appeared there while restoring`, { file: target, hint: 'The harness may be running this session right now; close it, then restore again.' });
}

async function mergeIndex(io: RestoreIO, index: JournalIndex, before: string | null, after: string, mode: number): Promise<void> {
  const dir = path.dirname(index.file);
  if (index.existed) await io.link(index.file, index.backup);
  const handle = await open(index.temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    await io.write(handle, Buffer.from(after, 'utf8'));
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (index.existed) {
    // Last check: the harness may have rewritten its index since the merge was computed.
    const current = await readIfExists(index.file);
    if (current !== before) {
      throw new BlueError('CONCURRENT_MODIFICATION', `${index.file} changed while blue-agent was restoring into it`, { file: index.file, hint: 'Run the restore again; the merge will be made from the new content.' });
    }
    await io.rename(index.temp, index.file);
  } else {
    try {
      await io.link(index.temp, index.file);
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') throw new BlueError('CONCURRENT_MODIFICATION', `${index.file} appeared while blue-agent was restoring`, { file: index.file, hint: 'Run the restore again.' });
      throw error;
    }
    await unlink(index.temp);
  }
  await fsyncDir(dir);
}

async function runImport(ctx: Context, plan: RestorePlan, binary: string): Promise<string> {
  const step = plan.import!;
  const result = await ctx.run(binary, step.args, { timeoutMs: IMPORT_TIMEOUT_MS, cwd: step.cwd, env: ctx.env, maxOutputBytes: 1024 * 1024 });
  const what = `${step.binary} ${step.args[0] ?? ''}`.trim();
  if (result.spawnError !== undefined) throw new BlueError('RESTORE_FAILED', `could not start ${binary} in ${step.cwd} (${result.spawnError})`, { hint: 'Check that the destination folder exists and that the harness binary runs.' });
  if (result.timedOut) throw new BlueError('RESTORE_FAILED', `${what} did not finish within ${IMPORT_TIMEOUT_MS} ms`, { hint: 'The harness may be waiting on its database; close it and restore again.' });
  if (result.exitCode !== 0) {
    const detail = result.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500);
    throw new BlueError('RESTORE_FAILED', `${what} exited with ${String(result.exitCode)}${detail === '' ? '' : `: ${detail}`}`, { hint: 'Check that the harness runs (try it by hand in the destination), then restore again.' });
  }
  const id = step.parseId(result.stdout, result.stderr);
  if (id === undefined) throw new BlueError('RESTORE_FAILED', `${what} did not report the id of the session it imported`, { hint: 'The harness\'s import output changed; use a blue-agent version whose profile matches this harness version.' });
  return id;
}

function mapFailure(error: unknown, plan: RestorePlan): BlueError {
  const code = errnoOf(error);
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new BlueError('RESTORE_NO_SPACE', `the disk filled up while restoring session ${plan.sessionId} into ${plan.root}; everything placed was removed again`, {
      hint: 'Free some space on that disk, then restore again.',
      cause: error,
    });
  }
  if (error instanceof BlueError) return error;
  return new BlueError('RESTORE_FAILED', `restoring session ${plan.sessionId} into ${plan.root} failed (${code ?? (error as Error).message}); everything placed was removed again`, {
    hint: 'Check the permissions and free space of the harness folders, then restore again.',
    cause: error,
  });
}

/** Undoes what the journal says this restore may have done, newest first. Safe to run twice. */
export async function rollBack(ctx: Context, journal: RestoreJournal): Promise<void> {
  if (journal.import !== undefined) {
    const step = journal.import;
    // Deleting a session that is not there fails harmlessly; the session did not exist before (the preflight said so).
    await ctx.run(step.binary, step.remove_args, { timeoutMs: IMPORT_TIMEOUT_MS, cwd: step.cwd, env: ctx.env }).catch(() => undefined);
  }
  for (const index of [...journal.indexes].reverse()) await undoIndex(index);
  for (const target of [...journal.targets].reverse()) {
    await unlink(target.temp).catch(() => undefined);
    if (await isOurs(target.path, target.staged, target.sha256)) await unlinkIfExists(target.path);
  }
  for (const dir of [...journal.dirs].reverse()) {
    try {
      await rmdir(dir);
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT' && errnoOf(error) !== 'ENOTEMPTY' && errnoOf(error) !== 'EEXIST') throw error;
    }
  }
  for (const dir of new Set([...journal.targets.map((t) => path.dirname(t.path)), ...journal.dirs.map((d) => path.dirname(d))])) await fsyncDir(dir);
  await removeStaging(journal.staging);
}

async function undoIndex(index: JournalIndex): Promise<void> {
  await unlinkIfExists(index.temp);
  const current = await lstat(index.file).catch(() => undefined);
  const backup = await lstat(index.backup).catch(() => undefined);
  if (index.existed) {
    if (backup === undefined) return; // The backup link comes first: without it the index was never touched.
    if (current !== undefined && current.ino === backup.ino && current.dev === backup.dev) {
      await unlinkIfExists(index.backup);
    } else if (current !== undefined && current.isFile() && (await sha256File(index.file)) === index.sha256_after) {
      await rename(index.backup, index.file);
    } else {
      // Someone rewrote the index after the merge: theirs is newer than both; keep it.
      await unlinkIfExists(index.backup);
    }
  } else if (current !== undefined && current.isFile() && (await sha256File(index.file)) === index.sha256_after) {
    await unlinkIfExists(index.file);
  }
  await fsyncDir(path.dirname(index.file));
}

/** The target is the file this restore placed: the same inode as its staged file, or (staged gone) the same bytes. */
async function isOurs(target: string, staged: string, sha: string): Promise<boolean> {
  const info = await lstat(target).catch(() => undefined);
  if (info === undefined || !info.isFile()) return false;
  const source = await lstat(staged).catch(() => undefined);
  if (source !== undefined && source.ino === info.ino && source.dev === info.dev) return true;
  return (await sha256File(target)) === sha;
}

async function unlinkIfExists(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw error;
  }
}

export async function removeStaging(staging: string): Promise<void> {
  // Only ever a folder this agent named; never whatever a damaged journal points at.
  if (!path.basename(staging).startsWith(STAGING_MARK) || !path.isAbsolute(staging)) return;
  await rm(staging, { recursive: true, force: true });
}

/** After the commit point: drop the backups, the staging folder and the journal. */
export async function finish(ctx: Context, journal: RestoreJournal): Promise<void> {
  for (const index of journal.indexes) {
    await unlinkIfExists(index.temp);
    await unlinkIfExists(index.backup);
  }
  for (const target of journal.targets) await unlinkIfExists(target.temp);
  await removeStaging(journal.staging);
  await removeJournal(ctx.paths.stateDir, journal.id);
}

export { STAGING_MARK };
