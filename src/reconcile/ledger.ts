/**
 * The ledger: what the agent wrote into which native file. Removal only ever touches what the ledger and the command
 * signature both say is ours; the ownership records let removal give back the user's original bytes.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import type { OwnershipRecord } from '../harnesses/types.js';
import type { HarnessName } from '../schema/index.js';
import { writeStateFile } from '../util/fs.js';
import { withLock } from '../util/lock.js';

export interface LedgerEntry {
  harness: HarnessName;
  profile: string;
  command: string;
  owned: OwnershipRecord;
  /** SHA-256 of the file as the agent left it. */
  sha256: string;
  updated_at: string;
}

export interface LedgerData {
  version: 1;
  files: Record<string, LedgerEntry>;
}

export function ledgerPath(ctx: Context): string {
  return path.join(ctx.paths.stateDir, 'ledger.json');
}

export async function readLedger(ctx: Context): Promise<LedgerData> {
  try {
    const data = JSON.parse(await readFile(ledgerPath(ctx), 'utf8')) as LedgerData;
    if (data?.version === 1 && typeof data.files === 'object' && data.files !== null) return data;
  } catch {
    // Missing or damaged: the command signature still identifies managed entries.
  }
  return { version: 1, files: {} };
}

/** Read-modify-write under the ledger lock, so concurrent reconciles never lose each other's records. */
export async function updateLedger(ctx: Context, change: (data: LedgerData) => boolean): Promise<void> {
  await withLock(path.join(ctx.paths.stateDir, 'locks'), ledgerPath(ctx), async () => {
    const data = await readLedger(ctx);
    if (change(data)) await writeStateFile(ledgerPath(ctx), `${JSON.stringify(data, null, 2)}\n`);
  });
}
