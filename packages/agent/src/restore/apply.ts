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
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, realpath, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { RestorePlan } from '../harnesses/types.js';
import { findExecutable } from '../profiles/detect.js';
import { fsyncDir, resolveWriteTarget } from '@blue-agent/contract/util/fs.js';
import { readChecked, sha256Checked } from '@blue-agent/contract/util/safe-read.js';
import { isInside, type Inspection } from './inspect.js';
import type { RestoreIO } from './io.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import {
  newJournalId,
  ownerFields,
  removeJournal,
  writeJournal,
  type JournalImport,
  type JournalIndex,
  type JournalTarget,
  type RestoreJournal,
} from './journal.js';

export const IMPORT_TIMEOUT_MS = 120_000;
const STAGING_MARK = '.blue-agent-restore-';
/** The largest native index (a session index, a work-dir list) a restore merges into; it is read whole. */
export const MAX_INDEX_BYTES = 64 * 1024 * 1024;

export interface ApplyResult {
  sessionId: string;
  placed: string[];
  merged: string[];
  skipped: string[];
}

function sha256(bytes: Buffer | null): string | null {
  return bytes === null ? null : createHash('sha256').update(bytes).digest('hex');
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * An index's bytes, exactly as they are (null when there is none); refused past MAX_INDEX_BYTES. Read by the safe-read
 * rule: a hard-linked index (`links` names; 2 once this restore has made its backup link) is refused, never merged.
 */
async function readIfExists(file: string, links = 1): Promise<Buffer | null> {
  let info: Stats;
  try {
    info = await lstat(file);
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return null;
    throw error;
  }
  if (!info.isFile()) {
    throw new BlueError('RESTORE_CONFLICT', `${file}: is not a regular file, so the session cannot be entered in it`, {
      file,
      hint: 'Move it away (it is yours; blue-agent never replaces it), then restore again.',
    });
  }
  if (info.size > MAX_INDEX_BYTES) {
    throw new BlueError(
      'RESTORE_CONFLICT',
      `${file}: is larger than ${MAX_INDEX_BYTES / (1024 * 1024)} MiB, more than blue-agent merges into`,
      {
        file,
        hint: 'The file is left as it is. Let the harness compact it (or move it away), then restore again.',
      },
    );
  }
  return (
    (await readChecked(file, {
      code: 'RESTORE_UNSAFE',
      maxBytes: MAX_INDEX_BYTES,
      links,
      expect: { dev: info.dev, ino: info.ino },
      optional: true,
    })) ?? null
  );
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

/** Right before a placement: no folder between the root and the target became a link since the preflight. */
async function checkParents(root: string, target: string): Promise<void> {
  let current = path.dirname(target);
  while (current !== root && isInside(root, current)) {
    const info = await lstat(current);
    if (info.isSymbolicLink() || !info.isDirectory()) {
      throw new BlueError('RESTORE_UNSAFE', `${current}: became a link or a file while restoring`, {
        file: current,
        hint: 'Something changed the harness folders during the restore; check them, then restore again.',
      });
    }
    current = path.dirname(current);
  }
}

function raced(file: string, why: string): BlueError {
  return new BlueError('RESTORE_UNSAFE', `${file}: ${why} while restoring`, {
    file,
    hint: 'Something changed the harness folders during the restore; check them, then restore again.',
  });
}

/** The folder `file` is in still resolves (links followed) to the session root as inspected, or below it. */
async function checkResolved(realRoot: string, file: string): Promise<void> {
  const real = await realpath(path.dirname(file));
  if (real !== realRoot && !isInside(realRoot, real))
    throw raced(file, `its folder now resolves to ${real}, outside the session root ${realRoot}`);
}

function sameInode(a: Stats, b: Stats): boolean {
  return a.ino === b.ino && a.dev === b.dev;
}

/**
 * Hard link from staging (same filesystem), else a copy into a temp file in the (verified) target folder, hard-linked
 * into place; the temp stays until the commit so that the placed file keeps an identity by inode. Never replaces.
 * Afterwards the folder must still resolve inside the root and the target must be the inode placed.
 */
async function place(io: RestoreIO, realRoot: string, target: JournalTarget, now: Date): Promise<void> {
  await checkResolved(realRoot, target.path);
  let source = target.staged;
  try {
    await io.link(target.staged, target.path);
  } catch (error) {
    const code = errnoOf(error);
    if (code === 'EEXIST') throw conflictAppeared(target.path);
    if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK')
      throw error;
    source = target.temp;
    await io.copyFile(target.staged, target.temp);
    await checkResolved(realRoot, target.temp);
    const handle = await open(target.temp, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await io.utimes(target.temp, now, now);
    try {
      await io.link(target.temp, target.path);
    } catch (linkError) {
      if (errnoOf(linkError) === 'EEXIST') throw conflictAppeared(target.path);
      throw linkError;
    }
  }
  await checkResolved(realRoot, target.path);
  const [placed, from] = await Promise.all([
    lstat(target.path).catch(() => undefined),
    lstat(source).catch(() => undefined),
  ]);
  if (placed === undefined || from === undefined || !sameInode(placed, from))
    throw raced(target.path, 'another file took the place of the one restored');
}

function conflictAppeared(target: string): BlueError {
  return new BlueError('RESTORE_CONFLICT', `${target}: a file appeared there while restoring`, {
    file: target,
    hint: 'The harness may be running this session right now; close it, then restore again.',
  });
}

async function mergeIndex(
  io: RestoreIO,
  index: JournalIndex,
  before: Buffer | null,
  after: Buffer,
  mode: number,
): Promise<void> {
  const dir = path.dirname(index.file);
  if (index.existed) await io.link(index.file, index.backup);
  const handle = await open(
    index.temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    await io.write(handle, after);
    await handle.chmod(mode);
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (index.existed) {
    // Last check: the harness may have rewritten its index since the merge was computed. Still the file backed up
    // (so it has exactly two names: its own and the backup), still the same bytes.
    const [now, backup] = await Promise.all([lstat(index.file).catch(() => undefined), lstat(index.backup)]);
    const current = now !== undefined && sameInode(now, backup) ? await readIfExists(index.file, 2) : null;
    if (current === null || before === null || !current.equals(before)) {
      throw new BlueError('CONCURRENT_MODIFICATION', `${index.file} changed while blue-agent was restoring into it`, {
        file: index.file,
        hint: 'Run the restore again; the merge will be made from the new content.',
      });
    }
    await io.rename(index.temp, index.file);
  } else {
    try {
      await io.link(index.temp, index.file);
    } catch (error) {
      if (errnoOf(error) === 'EEXIST')
        throw new BlueError('CONCURRENT_MODIFICATION', `${index.file} appeared while blue-agent was restoring`, {
          file: index.file,
          hint: 'Run the restore again.',
        });
      throw error;
    }
    await unlink(index.temp);
  }
  await fsyncDir(dir);
}

async function runImport(ctx: Context, plan: RestorePlan, binary: string): Promise<string> {
  const step = plan.import!;
  const result = await ctx.run(binary, step.args, {
    timeoutMs: IMPORT_TIMEOUT_MS,
    cwd: step.cwd,
    env: ctx.env,
    maxOutputBytes: 1024 * 1024,
  });
  const what = `${step.binary} ${step.args[0] ?? ''}`.trim();
  if (result.spawnError !== undefined)
    throw new BlueError('RESTORE_FAILED', `could not start ${binary} in ${step.cwd} (${result.spawnError})`, {
      hint: 'Check that the destination folder exists and that the harness binary runs.',
    });
  if (result.timedOut)
    throw new BlueError('RESTORE_FAILED', `${what} did not finish within ${IMPORT_TIMEOUT_MS} ms`, {
      hint: 'The harness may be waiting on its database; close it and restore again.',
    });
  if (result.exitCode !== 0) {
    const detail = result.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500);
    throw new BlueError(
      'RESTORE_FAILED',
      `${what} exited with ${String(result.exitCode)}${detail === '' ? '' : `: ${detail}`}`,
      { hint: 'Check that the harness runs (try it by hand in the destination), then restore again.' },
    );
  }
  const id = step.parseId(result.stdout, result.stderr);
  if (id === undefined)
    throw new BlueError('RESTORE_FAILED', `${what} did not report the id of the session it imported`, {
      hint: "The harness's import output changed; use a blue-agent version whose profile matches this harness version.",
    });
  return id;
}

function mapFailure(error: unknown, plan: RestorePlan): BlueError {
  const code = errnoOf(error);
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new BlueError(
      'RESTORE_NO_SPACE',
      `the disk filled up while restoring session ${plan.sessionId} into ${plan.root}; everything placed was ` +
        `removed again`,
      {
        hint: 'Free some space on that disk, then restore again.',
        cause: error,
      },
    );
  }
  if (error instanceof BlueError) return error;
  return new BlueError(
    'RESTORE_FAILED',
    `restoring session ${plan.sessionId} into ${plan.root} failed (${code ?? (error as Error).message}); ` +
      `everything placed was removed again`,
    {
      hint: 'Check the permissions and free space of the harness folders, then restore again.',
      cause: error,
    },
  );
}

/** The journal's import entry for `sessionId`: how to remove it and how to check that it is gone. */
function importStep(plan: RestorePlan, binary: string, sessionId: string): JournalImport {
  const step = plan.import!;
  const check = step.existsCheck(sessionId);
  return {
    binary,
    cwd: step.cwd,
    session_id: sessionId,
    remove_args: [...step.removeArgs(sessionId)],
    check_args: [...check.args],
    missing_pattern: check.missing.source,
  };
}

/**
 * Undoes what the journal says this restore may have done, newest first. Safe to run twice. Returns why each file it
 * kept was kept (a placed file that changed since, or one that is not the inode placed).
 */
export async function rollBack(ctx: Context, journal: RestoreJournal): Promise<string[]> {
  const kept: string[] = [];
  if (journal.import !== undefined) await removeImported(ctx, journal.import);
  for (const index of [...journal.indexes].reverse()) await undoIndex(index);
  for (const target of [...journal.targets].reverse()) {
    const state = await ownership(target);
    if (state === 'ours') await unlinkIfExists(target.path);
    else if (state === 'changed')
      kept.push(`${target.path} was kept: it changed after the restore placed it (someone kept working in it)`);
    else if (state === 'foreign') kept.push(`${target.path} was kept: it is not the file the restore placed`);
    else if (state === 'linked')
      kept.push(`${target.path} was kept: it has another hard link now, so it is not only the restore's`);
    // The temp (copy fallback) goes only after the target's identity was checked against it.
    await unlink(target.temp).catch(() => undefined);
  }
  for (const dir of [...journal.dirs].reverse()) {
    try {
      await rmdir(dir);
    } catch (error) {
      // Not empty (someone's files), gone, or no longer a folder (a link now): not this restore's to remove.
      if (
        errnoOf(error) !== 'ENOENT' &&
        errnoOf(error) !== 'ENOTEMPTY' &&
        errnoOf(error) !== 'EEXIST' &&
        errnoOf(error) !== 'ENOTDIR'
      )
        throw error;
    }
  }
  for (const dir of new Set([
    ...journal.targets.map((t) => path.dirname(t.path)),
    ...journal.dirs.map((d) => path.dirname(d)),
  ]))
    await fsyncDir(dir);
  await removeStaging(journal.staging);
  return kept;
}

/** Removes an imported session and confirms it is gone; if that cannot be confirmed, throws (the journal stays). */
async function removeImported(ctx: Context, step: JournalImport): Promise<void> {
  const removed = await ctx.run(step.binary, step.remove_args, {
    timeoutMs: IMPORT_TIMEOUT_MS,
    cwd: step.cwd,
    env: ctx.env,
    maxOutputBytes: 1024 * 1024,
  });
  const removal =
    removed.spawnError ??
    (removed.timedOut
      ? 'timed out'
      : removed.exitCode === 0
        ? undefined
        : `exited with ${String(removed.exitCode)}: ${removed.stderr.trim().slice(-200)}`);
  let gone: boolean | undefined;
  let why = '';
  if (step.check_args === undefined || step.missing_pattern === undefined) {
    // A journal of an older blue-agent: the removal's own exit is all there is.
    gone = removal === undefined ? true : undefined;
  } else {
    const check = await ctx.run(step.binary, step.check_args, {
      timeoutMs: IMPORT_TIMEOUT_MS,
      cwd: step.cwd,
      env: ctx.env,
      maxOutputBytes: 1024 * 1024,
    });
    if (check.spawnError !== undefined || check.timedOut)
      why =
        `checking with \`${[path.basename(step.binary), ...step.check_args].join(' ')}\` failed (` +
        `${check.spawnError ?? 'timed out'})`;
    else if (check.exitCode === 0) [gone, why] = [false, 'it is still there'];
    else if (new RegExp(step.missing_pattern, 'i').test(check.stderr)) gone = true;
    else
      why =
        `\`${[path.basename(step.binary), ...step.check_args].join(' ')}\` exited with ` +
        `${String(check.exitCode)}: ${check.stderr.trim().slice(-200)}`;
  }
  if (gone === true) return;
  const command = [path.basename(step.binary), ...step.remove_args].join(' ');
  throw new BlueError(
    'RESTORE_FAILED',
    printable(
      `the imported session ${step.session_id} may remain in ${path.basename(step.binary)}: \`${command}\` ` +
        `${removal ?? 'succeeded'}${why === '' ? '' : `, and ${why}`}`,
    ),
    {
      hint:
        `The restore journal is kept; \`blue-agent resume\` tries again first. To remove it by hand: cd ` +
        `${step.cwd} && ${command}`,
    },
  );
}

async function undoIndex(index: JournalIndex): Promise<void> {
  await unlinkIfExists(index.temp);
  const current = await lstat(index.file).catch(() => undefined);
  const backup = await lstat(index.backup).catch(() => undefined);
  if (index.existed) {
    if (backup === undefined) return; // The backup link comes first: without it the index was never touched.
    if (current !== undefined && current.ino === backup.ino && current.dev === backup.dev) {
      await unlinkIfExists(index.backup);
    } else if (
      current !== undefined &&
      current.isFile() &&
      (await indexDigest(index.file, current)) === index.sha256_after
    ) {
      await rename(index.backup, index.file);
    } else {
      // Someone rewrote the index after the merge: theirs is newer than both; keep it.
      await unlinkIfExists(index.backup);
    }
  } else if (
    current !== undefined &&
    current.isFile() &&
    (await indexDigest(index.file, current)) === index.sha256_after
  ) {
    await unlinkIfExists(index.file);
  }
  await fsyncDir(path.dirname(index.file));
}

/** The digest of an index this restore wrote (one name, the inode lstat saw); a hard link is refused and the journal
 * stays. */
function indexDigest(file: string, info: Stats): Promise<string | undefined> {
  return sha256Checked(file, {
    code: 'RESTORE_UNSAFE',
    maxBytes: MAX_INDEX_BYTES,
    expect: { dev: info.dev, ino: info.ino },
    optional: true,
  });
}

/**
 * Whether a target is the file this restore placed: the same inode as its staged file or its copy-fallback temp
 * (`foreign` otherwise, `absent` when nothing is there), and still the journal's size and SHA-256 (`changed`
 * otherwise: the harness appended to it in place after a crash).
 */
async function ownership(target: JournalTarget): Promise<'ours' | 'changed' | 'foreign' | 'linked' | 'absent'> {
  const info = await lstat(target.path).catch(() => undefined);
  if (info === undefined) return 'absent';
  if (!info.isFile()) return 'foreign';
  const sources = await Promise.all([
    lstat(target.staged).catch(() => undefined),
    lstat(target.temp).catch(() => undefined),
  ]);
  if (!sources.some((s) => s !== undefined && s.isFile() && sameInode(s, info))) return 'foreign';
  if (info.size !== target.size) return 'changed';
  // Placed by a hard link, so two names: the target and the staged file (or the copy's temp). A third name is not ours.
  let digest: string | undefined;
  try {
    digest = await sha256Checked(target.path, {
      code: 'RESTORE_UNSAFE',
      maxBytes: target.size,
      links: 2,
      expect: { dev: info.dev, ino: info.ino },
      optional: true,
    });
  } catch (error) {
    if (error instanceof BlueError) return 'linked';
    throw error;
  }
  if (digest === undefined) return 'absent';
  return digest === target.sha256 ? 'ours' : 'changed';
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
  await removeJournal(ctx.paths.restoresDir, journal.id);
}

export { STAGING_MARK };
