/**
 * Applying a plan: under a per-file lock, confirm the file still holds what the plan was made from (else plan again
 * from the new text), record the intended ownership in the ledger (write-ahead: no ledger, no change), keep a byte
 * copy of the file as a backup, write atomically, read back and confirm; once every file is written, settle the ledger.
 */
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import type { HarnessAdapter } from '../harnesses/types.js';
import {
  readBytesIfExists,
  removeFileIfUnchanged,
  replaceFileAtomically,
  sha256,
  writeStateFile,
} from '@blue-agent/contract/util/fs.js';
import { decodeLossless, encodeLossless } from '@blue-agent/contract/util/lossless.js';
import { withLock } from '../lock/lock.js';
import { updateLedger, type LedgerData, type LedgerEntry } from './ledger.js';
import { planText, type FilePlan } from './plan.js';

const MAX_REPLANS = 5;
const BACKUPS_KEPT = 5;

export interface AppliedFile {
  plan: FilePlan;
  backup?: string;
}

/** Applies one file's plan; returns the plan actually applied (re-made if the file changed meanwhile). */
export async function applyFilePlan(ctx: Context, adapter: HarnessAdapter, initial: FilePlan): Promise<AppliedFile> {
  return withLock(ctx.paths.locksDir, initial.target, async () => {
    let plan = initial;
    for (let attempt = 0; ; attempt++) {
      const bytes = await readBytesIfExists(plan.target);
      const current = bytes === null ? null : decodeLossless(bytes);
      if (current !== plan.before) plan = replan(adapter, plan, current);
      if (plan.action === 'unchanged') return { plan };
      try {
        await recordIntent(ctx, adapter, plan, bytes);
        const backup = bytes === null ? undefined : await keepBackup(ctx, adapter, plan.target, bytes);
        try {
          if (plan.after === null) {
            await removeFileIfUnchanged(plan.target, plan.before ?? '');
          } else {
            await replaceFileAtomically(plan.target, plan.after, {
              expected: plan.before,
              verify: (written) => verifyWritten(adapter, plan, written),
            });
          }
        } catch (error) {
          // Named by the harness's file, not the temporary beside it that the call may have failed on.
          throw toBlueError(error, { action: plan.after === null ? 'remove' : 'update', file: plan.file });
        }
        return backup === undefined ? { plan } : { plan, backup };
      } catch (error) {
        if (!(error instanceof BlueError) || error.code !== 'CONCURRENT_MODIFICATION' || attempt >= MAX_REPLANS)
          throw error;
      }
    }
  });
}

function replan(adapter: HarnessAdapter, plan: FilePlan, current: string | null): FilePlan {
  return { ...plan, before: current, ...planText(adapter, plan.file, current, plan.desired, plan.ownedBefore) };
}

/** What the ledger should hold for a plan once it is applied: the entry, or undefined when nothing is owned. */
export function settledEntry(ctx: Context, adapter: HarnessAdapter, plan: FilePlan): LedgerEntry | undefined {
  if (plan.after === null || plan.owned === undefined || plan.desired === null) return undefined;
  return {
    harness: adapter.name,
    profile: plan.desired.profile,
    command: plan.desired.command,
    owned: plan.owned,
    sha256: sha256(encodeLossless(plan.after)),
    updated_at: new Date(ctx.clock.now()).toISOString(),
    ...(plan.createdDirs.length === 0 ? {} : { created_dirs: plan.createdDirs }),
  };
}

/** Whether an entry already says what `next` says (the time aside). */
export function sameEntry(previous: LedgerEntry | undefined, next: LedgerEntry | undefined): boolean {
  if (previous === undefined || next === undefined) return previous === next;
  return (
    previous.pending === undefined &&
    previous.sha256 === next.sha256 &&
    previous.command === next.command &&
    JSON.stringify(previous.owned) === JSON.stringify(next.owned) &&
    JSON.stringify(previous.created_dirs ?? []) === JSON.stringify(next.created_dirs ?? [])
  );
}

/**
 * Write-ahead, before the native file changes: the entry for the new content, with the record of the content the
 * file still holds kept under `pending`. A removal needs none: the current entry describes the file until it is gone.
 */
export async function recordIntent(
  ctx: Context,
  adapter: HarnessAdapter,
  plan: FilePlan,
  before: Buffer | null,
): Promise<void> {
  const next = settledEntry(ctx, adapter, plan);
  if (next === undefined) return;
  const pending = {
    sha256: before === null ? null : sha256(before),
    ...(plan.ownedBefore === undefined ? {} : { owned: plan.ownedBefore }),
  };
  await updateLedger(ctx, (ledger) => {
    ledger.files[plan.file] = { ...next, pending };
    return true;
  });
}

/** Whether settling these plans would change the ledger. */
export function needsLedgerUpdate(
  ctx: Context,
  adapter: HarnessAdapter,
  ledger: LedgerData,
  plans: readonly FilePlan[],
): boolean {
  return plans.some((plan) => !sameEntry(ledger.files[plan.file], settledEntry(ctx, adapter, plan)));
}

/** The written file, planned again, must need no change and hold exactly the managed entries intended. */
function verifyWritten(adapter: HarnessAdapter, plan: FilePlan, written: string): void {
  const again = adapter.planHook({ text: written, file: plan.file, desired: plan.desired, owned: plan.owned });
  const expected = plan.desired === null ? 0 : 1;
  if (again.text !== written || again.managedFound !== expected) {
    throw new BlueError('WRITE_VERIFY_FAILED', `${plan.file} does not read back as intended after writing`, {
      file: plan.file,
      hint:
        "The previous version is kept under backups/ in blue-agent's state directory; please report this with " +
        "the file's content.",
    });
  }
}

/** Settles in one ledger update what the agent now owns in each planned file (no write when nothing changed). */
export async function recordOwnership(
  ctx: Context,
  adapter: HarnessAdapter,
  plans: readonly FilePlan[],
): Promise<void> {
  await updateLedger(ctx, (ledger) => {
    let changed = false;
    for (const plan of plans) {
      const previous = ledger.files[plan.file];
      const next = settledEntry(ctx, adapter, plan);
      if (sameEntry(previous, next)) continue;
      if (next === undefined) delete ledger.files[plan.file];
      else ledger.files[plan.file] = next;
      changed = true;
    }
    return changed;
  });
}

/** A byte copy of the file as it was on disk. */
async function keepBackup(ctx: Context, adapter: HarnessAdapter, target: string, content: Buffer): Promise<string> {
  const dir = path.join(ctx.paths.backupsDir, adapter.name);
  const stamp = new Date(ctx.clock.now()).toISOString().replace(/[:.]/g, '-');
  const prefix = `${path.basename(target)}.${sha256(target).slice(0, 8)}.`;
  const file = path.join(dir, `${prefix}${stamp}.bak`);
  await writeStateFile(file, content);
  const old = (await readdir(dir)).filter((name) => name.startsWith(prefix)).sort();
  for (const name of old.slice(0, Math.max(0, old.length - BACKUPS_KEPT)))
    await unlink(path.join(dir, name)).catch(() => undefined);
  return file;
}
