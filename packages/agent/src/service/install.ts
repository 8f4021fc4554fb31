/**
 * Applying an install plan, all or nothing: when a step fails (no user manager in this session, a unit that does not
 * start, a file that cannot be written), what the steps before it did is undone — the unit file removed, or the one it
 * replaced put back, the enable link and the folders it made removed — so a failed install leaves nothing behind.
 */
import { lstat, readlink, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import { ensurePrivateDir, removeFileIfUnchanged, replaceFileAtomically } from '@blue-agent/contract/util/fs.js';
import {
  launchdAvailability,
  launchdDomain,
  quoteWord,
  runCommand,
  systemdAvailability,
  unavailableReason,
  unreachable,
  type Availability,
  type ManagerFailure,
} from './manager.js';
import { isOurs, type ServicePlan, type Step } from './plan.js';
import { SYSTEMD_UNIT_NAME } from './systemd.js';

export interface InstallResult {
  /** The commands run (or, on a dry run, that would run), in order. */
  commands: string[][];
}

/** Carries out `plan` (an install); on failure undoes the steps done and throws what failed, with what was undone. */
export async function applyInstall(
  ctx: Context,
  plan: ServicePlan,
  options: { dryRun: boolean },
): Promise<InstallResult> {
  const commands: string[][] = [];
  const done: Step[] = [];
  for (const step of plan.steps) {
    if (step.kind === 'run') commands.push(step.argv);
    if (options.dryRun) continue;
    let failure: ManagerFailure | BlueError | undefined;
    try {
      failure = await applyStep(ctx, step);
    } catch (error) {
      failure = toBlueError(error);
    }
    if (failure === undefined) {
      done.push(step);
      continue;
    }
    const undo = await undoInstall(ctx, plan, done, step);
    throw await installFailed(ctx, plan, failure, undo);
  }
  return { commands };
}

async function applyStep(ctx: Context, step: Step): Promise<ManagerFailure | undefined> {
  switch (step.kind) {
    case 'mkdir':
      await ensurePrivateDir(step.dir).catch(named('create the folder', step.dir));
      return undefined;
    case 'write':
      await replaceFileAtomically(step.file, step.content, {
        expected: step.before,
        newFileMode: 0o644,
        verify: (text) => {
          if (!isOurs(ctx, text))
            throw new BlueError('WRITE_VERIFY_FAILED', `${step.file} does not hold the unit blue-agent wrote`, {
              file: step.file,
            });
        },
      }).catch(named('write the service unit', step.file));
      return undefined;
    case 'run':
      return runCommand(ctx, step.argv);
    default:
      throw new BlueError('INTERNAL', `an install plan has no ${step.kind} step`);
  }
}

/** A failed file step, named by the unit's path rather than the temporary beside it. */
export function named(action: string, file: string): (error: unknown) => never {
  return (error) => {
    throw toBlueError(error, { action, file });
  };
}

interface Undo {
  /** What was taken back, for a person: "removed /…/blue-agent.service". */
  undone: string[];
  /** What could not be taken back, with the command or step that finishes it. */
  left: string[];
}

/**
 * Takes back `done` (in reverse) and what the failed step may have done before failing (`enable --now` makes its link
 * before starting the service; a write makes its folders first). Manager commands are run only when the manager
 * answered before: after a first command that failed, nothing else would reach it either.
 */
async function undoInstall(ctx: Context, plan: ServicePlan, done: readonly Step[], failed: Step): Promise<Undo> {
  const undo: Undo = { undone: [], left: [] };
  const answered = done.some((s) => s.kind === 'run');
  const command = async (argv: string[]): Promise<void> => {
    const failure = await runCommand(ctx, argv);
    if (failure === undefined) undo.undone.push(`ran ${argv.map(quoteWord).join(' ')}`);
    else undo.left.push(`${failure.message} (run it by hand)`);
  };
  const enabled = [...done, failed].some(
    (s) => s.kind === 'run' && s.argv[0] === 'systemctl' && s.argv[2] === 'enable',
  );
  const link = plan.enableLink;
  if (enabled && link !== undefined && !link.existed) {
    // Stop what `enable --now` may have started, then drop the link, by hand when systemctl cannot.
    if (answered || failed.kind === 'run')
      await command([
        'systemctl',
        '--user',
        'disable',
        ...(plan.file === 'create' ? ['--now'] : []),
        SYSTEMD_UNIT_NAME,
      ]);
    await removeOurLink(link.file, plan.unitFile).then(
      (removed) => removed && undo.undone.push(`removed ${link.file}`),
      (error: unknown) => undo.left.push(`${link.file} (${toBlueError(error).message}): rm ${quoteWord(link.file)}`),
    );
  }
  for (const step of [...done, failed].reverse()) {
    if (step.kind === 'write') {
      const wasWritten = done.includes(step);
      if (wasWritten) await putBack(step, undo);
      await removeDirs(step.created, undo);
    } else if (step.kind === 'mkdir') {
      await removeDirs(step.created, undo);
    }
  }
  if (plan.manager === 'systemd' && answered) await command(['systemctl', '--user', 'daemon-reload']);
  // launchd: the previous agent was booted out to load the new plist, which failed: load the previous one again.
  const bootedOut = done.some((s) => s.kind === 'run' && s.argv[1] === 'bootout');
  if (plan.manager === 'launchd' && bootedOut)
    await command(['launchctl', 'bootstrap', launchdDomain(), plan.unitFile]);
  return undo;
}

/** The unit file as it was before: removed when the install created it, its previous text when it replaced one. */
async function putBack(step: Extract<Step, { kind: 'write' }>, undo: Undo): Promise<void> {
  try {
    if (step.before === null) {
      await removeFileIfUnchanged(step.file, step.content);
      undo.undone.push(`removed ${step.file}`);
    } else {
      await replaceFileAtomically(step.file, step.before, { expected: step.content });
      undo.undone.push(`put the previous ${step.file} back`);
    }
  } catch (error) {
    const blue = toBlueError(error, { action: 'restore the service unit', file: step.file });
    undo.left.push(
      step.before === null
        ? `${step.file} (${blue.message}): rm ${quoteWord(step.file)}`
        : `${step.file} (${blue.message})`,
    );
  }
}

/** Removes the folders an install made, innermost first, as long as they are empty. */
async function removeDirs(dirs: readonly string[], undo: Undo): Promise<void> {
  for (const dir of dirs) {
    try {
      await rmdir(dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      // Not empty: something else put files there meanwhile, which are not ours to remove.
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') undo.left.push(`${dir} (${toBlueError(error).message})`);
      return;
    }
  }
}

/** Removes `link` when it is a symbolic link to `unitFile`. Resolves true when it removed it. */
export async function removeOurLink(link: string, unitFile: string): Promise<boolean> {
  const info = await lstat(link).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (info === undefined || !info.isSymbolicLink()) return false;
  const target = path.resolve(path.dirname(link), await readlink(link));
  if (target !== unitFile) return false;
  await unlink(link);
  return true;
}

/** The error a failed install ends with: what failed, why the manager could not, and what was undone or left. */
async function installFailed(
  ctx: Context,
  plan: ServicePlan,
  failure: ManagerFailure | BlueError,
  undo: Undo,
): Promise<BlueError> {
  const undone = undo.left.length === 0 ? 'Nothing was left installed' : `Not undone: ${undo.left.join('; ')}`;
  const what = `${undo.undone.length === 0 ? '' : ` (${undo.undone.join(', ')})`}`;
  if (failure instanceof BlueError) {
    return new BlueError(failure.code, failure.message, {
      ...(failure.file === undefined ? {} : { file: failure.file }),
      hint: `${failure.hint === undefined ? '' : `${failure.hint.replace(/\.?$/, '.')} `}${undone}${what}.`,
    });
  }
  const reason = unavailableReason(ctx, await whyUnavailable(ctx, plan, failure));
  const next =
    reason === undefined
      ? 'To install it by hand instead, `blue-agent service install --dry-run` shows the unit and the commands.'
      : `The service cannot run here: ${reason.why}. What works: ${reason.fix}.`;
  return new BlueError('SERVICE_FAILED', failure.message, { hint: `${undone}${what}. ${next}` });
}

/** When the manager could not be reached at all: why, from what it answers now. */
async function whyUnavailable(
  ctx: Context,
  plan: ServicePlan,
  failure: ManagerFailure,
): Promise<Availability | undefined> {
  if (failure.spawnError !== undefined) return 'no_manager_command';
  if (plan.manager === 'systemd') {
    if (!unreachable(failure)) return undefined;
    const why = await systemdAvailability(ctx);
    // The manager could not be reached, though nothing tells why: the likeliest cause is a session without one.
    return why === 'unknown' ? 'no_user_manager' : why;
  }
  if (failure.argv[1] !== 'bootstrap' && failure.argv[1] !== 'enable') return undefined;
  const why = await launchdAvailability(ctx);
  return why === 'available' ? undefined : why;
}
