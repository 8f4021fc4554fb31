/**
 * Applying a plan: under a per-file lock, confirm the file still holds what the plan was made from (else plan again
 * from the new text), keep a backup, write atomically, read back and confirm, then record ownership in the ledger.
 */
import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '../errors.js';
import type { HarnessAdapter } from '../harnesses/types.js';
import { readTextIfExists, removeFileIfUnchanged, replaceFileAtomically, sha256, writeStateFile } from '../util/fs.js';
import { withLock } from '../util/lock.js';
import { updateLedger } from './ledger.js';
import { planText, type FilePlan } from './plan.js';

const MAX_REPLANS = 5;
const BACKUPS_KEPT = 5;

export interface AppliedFile {
  plan: FilePlan;
  backup?: string;
}

/** Applies one file's plan; returns the plan actually applied (re-made if the file changed meanwhile). */
export async function applyFilePlan(ctx: Context, adapter: HarnessAdapter, initial: FilePlan): Promise<AppliedFile> {
  return withLock(path.join(ctx.paths.stateDir, 'locks'), initial.target, async () => {
    let plan = initial;
    for (let attempt = 0; ; attempt++) {
      const current = await readTextIfExists(plan.target);
      if (current !== plan.before) plan = replan(adapter, plan, current);
      if (plan.action === 'unchanged') return { plan };
      try {
        const backup = plan.before === null ? undefined : await keepBackup(ctx, adapter, plan.target, plan.before);
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
        if (!(error instanceof BlueError) || error.code !== 'CONCURRENT_MODIFICATION' || attempt >= MAX_REPLANS) throw error;
      }
    }
  });
}

function replan(adapter: HarnessAdapter, plan: FilePlan, current: string | null): FilePlan {
  return { ...plan, before: current, ...planText(adapter, plan.file, current, plan.desired, plan.ownedBefore) };
}

/** The written file, planned again, must need no change and hold exactly the managed entries intended. */
function verifyWritten(adapter: HarnessAdapter, plan: FilePlan, written: string): void {
  const again = adapter.planHook({ text: written, file: plan.file, desired: plan.desired, owned: plan.owned });
  const expected = plan.desired === null ? 0 : 1;
  if (again.text !== written || again.managedFound !== expected) {
    throw new BlueError('WRITE_VERIFY_FAILED', `${plan.file} does not read back as intended after writing`, {
      file: plan.file,
      hint: "The previous version is kept under backups/ in blue-agent's state directory; please report this with the file's content.",
    });
  }
}

/** Records in one ledger update what the agent now owns in each planned file (no write when nothing changed). */
export async function recordOwnership(ctx: Context, adapter: HarnessAdapter, plans: readonly FilePlan[]): Promise<void> {
  await updateLedger(ctx, (ledger) => {
    let changed = false;
    for (const plan of plans) {
      const previous = ledger.files[plan.file];
      if (plan.after === null || plan.owned === undefined || plan.desired === null) {
        if (previous !== undefined) {
          delete ledger.files[plan.file];
          changed = true;
        }
        continue;
      }
      const digest = sha256(plan.after);
      const same =
        previous !== undefined &&
        previous.sha256 === digest &&
        previous.command === plan.desired.command &&
        JSON.stringify(previous.owned) === JSON.stringify(plan.owned);
      if (same) continue;
      ledger.files[plan.file] = {
        harness: adapter.name,
        profile: plan.desired.profile,
        command: plan.desired.command,
        owned: plan.owned,
        sha256: digest,
        updated_at: new Date(ctx.clock.now()).toISOString(),
      };
      changed = true;
    }
    return changed;
  });
}

async function keepBackup(ctx: Context, adapter: HarnessAdapter, target: string, content: string): Promise<string> {
  const dir = path.join(ctx.paths.stateDir, 'backups', adapter.name);
  const stamp = new Date(ctx.clock.now()).toISOString().replace(/[:.]/g, '-');
  const prefix = `${path.basename(target)}.${sha256(target).slice(0, 8)}.`;
  const file = path.join(dir, `${prefix}${stamp}.bak`);
  await writeStateFile(file, content);
  const old = (await readdir(dir)).filter((name) => name.startsWith(prefix)).sort();
  for (const name of old.slice(0, Math.max(0, old.length - BACKUPS_KEPT))) await unlink(path.join(dir, name)).catch(() => undefined);
  return file;
}
