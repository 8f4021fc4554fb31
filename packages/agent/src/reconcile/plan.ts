/**
 * Planning: for one harness, read every file its managed hook may live in and ask the harness's planner for the next
 * text. Reading is the only effect here; the plan is what both `--dry-run` and a real run show and apply.
 */
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import type { HarnessAdapter, ManagedHook, OwnershipRecord } from '../harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { missingParents, readBytesIfExists, resolveWriteTarget, sha256 } from '@blue-agent/contract/util/fs.js';
import { decodeLossless } from '@blue-agent/contract/util/lossless.js';
import { ownershipFor, type LedgerData } from './ledger.js';

export type FileAction = 'create' | 'update' | 'delete' | 'unchanged';

export interface FilePlan {
  /** The path as the harness knows it (may be a symlink). */
  file: string;
  /** Where the write lands: the symlink's target, or the file itself. */
  target: string;
  desired: ManagedHook | null;
  before: string | null;
  after: string | null;
  ownedBefore: OwnershipRecord | undefined;
  owned: OwnershipRecord | undefined;
  /** Folders a write would create, and those the agent created earlier for this file (from the ledger). */
  createdDirs: string[];
  managedFound: number;
  action: FileAction;
}

export interface FileError {
  file: string;
  error: BlueError;
}

export interface HarnessPlan {
  files: FilePlan[];
  errors: FileError[];
}

/** Files to look at: where the hook should be, every place it may be, and every file the ledger says we wrote. */
export async function hookFilesFor(
  ctx: Context,
  adapter: HarnessAdapter,
  interval: Interval | undefined,
  desired: ManagedHook | null,
  ledger: LedgerData,
): Promise<{ primary: string | undefined; all: string[] }> {
  // Only a wanted hook needs a home; asking for one can fail (an unmigrated legacy config), removal must not.
  if (desired !== null && interval?.capture !== undefined) checkHookFormat(adapter, interval);
  const primary =
    desired === null || interval?.capture === undefined ? undefined : await adapter.hookFile(ctx, interval);
  const all = new Set<string>(primary === undefined ? [] : [primary]);
  for (const file of adapter.knownHookFiles(ctx)) all.add(file);
  for (const [file, entry] of Object.entries(ledger.files)) if (entry.harness === adapter.name) all.add(file);
  return { primary, all: [...all] };
}

/**
 * The profile's capture.hook.format picks the planner: it must be the format this harness's planner writes, or the
 * hook would be written in a format the profile does not describe.
 */
export function checkHookFormat(adapter: HarnessAdapter, interval: Interval): void {
  const format = interval.capture?.hook.format;
  if (format === undefined || format === adapter.hookFormat) return;
  throw new BlueError(
    'PROFILE_INVALID',
    `profile ${interval.profile}: capture.hook.format is "${format}", but ${adapter.displayName}'s hooks are ` +
      `planned as "${adapter.hookFormat}"`,
    {
      path: '/capture/hook/format',
      hint: `Set capture.hook.format to ${adapter.hookFormat} in profiles/${adapter.name}.yaml.`,
    },
  );
}

export function planText(
  adapter: HarnessAdapter,
  file: string,
  text: string | null,
  desired: ManagedHook | null,
  owned: OwnershipRecord | undefined,
): Pick<FilePlan, 'after' | 'owned' | 'managedFound' | 'action'> {
  const plan = adapter.planHook({ text, file, desired, owned });
  return { after: plan.text, owned: plan.owned, managedFound: plan.managedFound, action: actionOf(text, plan.text) };
}

export function actionOf(before: string | null, after: string | null): FileAction {
  if (before === after) return 'unchanged';
  if (before === null) return 'create';
  if (after === null) return 'delete';
  return 'update';
}

export async function planHarness(
  ctx: Context,
  adapter: HarnessAdapter,
  interval: Interval | undefined,
  desired: ManagedHook | null,
  ledger: LedgerData,
): Promise<HarnessPlan> {
  const files: FilePlan[] = [];
  const errors: FileError[] = [];
  let primary: string | undefined;
  let all: string[];
  try {
    ({ primary, all } = await hookFilesFor(ctx, adapter, interval, desired, ledger));
  } catch (error) {
    const blue = toBlueError(error);
    return { files, errors: [{ file: blue.file ?? adapter.configRoot(ctx), error: blue }] };
  }
  for (const file of all) {
    const wanted = file === primary ? desired : null;
    const entry = ledger.files[file];
    try {
      // Read through the path as the harness does: a dangling link reads as no file, a FIFO or device is refused.
      const bytes = await readBytesIfExists(file);
      // Nothing there, nothing wanted and nothing recorded: not a file of this plan. A recorded file that is gone stays
      // in the plan, so its record (and the folders made for it) are cleaned up.
      if (bytes === null && wanted === null && entry === undefined) continue;
      const target = await resolveWriteTarget(file);
      const before = bytes === null ? null : decodeLossless(bytes);
      const ownedBefore = ownershipFor(entry, bytes === null ? null : sha256(bytes));
      const createdDirs = [
        ...new Set([...(entry?.created_dirs ?? []), ...(bytes === null ? await missingParents(target) : [])]),
      ];
      files.push({
        file,
        target,
        desired: wanted,
        before,
        ownedBefore,
        createdDirs,
        ...planText(adapter, file, before, wanted, ownedBefore),
      });
    } catch (error) {
      errors.push({ file, error: toBlueError(error, { action: 'read', file }) });
    }
  }
  return { files, errors };
}
