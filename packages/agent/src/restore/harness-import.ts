/** A harness restored through its own import command: running it, journaling it, and undoing it. */
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { RestorePlan } from '../harnesses/types.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import type { JournalImport } from './journal.js';
import { errnoOf } from './files.js';

export const IMPORT_TIMEOUT_MS = 120_000;
export async function runImport(ctx: Context, plan: RestorePlan, binary: string): Promise<string> {
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

export function mapFailure(error: unknown, plan: RestorePlan): BlueError {
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
export function importStep(plan: RestorePlan, binary: string, sessionId: string): JournalImport {
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
/** Removes an imported session and confirms it is gone; if that cannot be confirmed, throws (the journal stays). */
export async function removeImported(ctx: Context, step: JournalImport): Promise<void> {
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
