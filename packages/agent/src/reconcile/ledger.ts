/**
 * The ledger: what the agent wrote into which native file. Removal only ever touches what the ledger and the command
 * signature both say is ours; the ownership records let removal give back the user's original bytes.
 *
 * It is written ahead: before a native file changes, its entry already describes the new content and keeps, under
 * `pending`, the record that describes the file as it still is. A run that cannot write the ledger changes no native
 * file, and a run cut short between the two writes leaves a ledger the next run reads correctly, whichever content the
 * file holds.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { OwnershipRecord } from '../harnesses/types.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { writeStateFile } from '@blue-agent/contract/util/fs.js';
import { withLock } from '../lock/lock.js';

export interface LedgerEntry {
  harness: HarnessName;
  profile: string;
  command: string;
  owned: OwnershipRecord;
  /** SHA-256 of the file's bytes as the agent left it (or is about to leave it, while `pending` is set). */
  sha256: string;
  updated_at: string;
  /** Folders that did not exist before the agent first wrote the file; removed again, when empty, with the file. */
  created_dirs?: string[];
  /** Write-ahead: the file is being changed; while it still holds the bytes of `sha256` here, `owned` here applies. */
  pending?: { sha256: string | null; owned?: OwnershipRecord };
}

export interface LedgerData {
  version: 1;
  files: Record<string, LedgerEntry>;
}

export function ledgerPath(ctx: Context): string {
  return ctx.paths.ledgerFile;
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

/**
 * The ownership record that describes a file holding bytes of digest `current` (null: no file): the pending one when
 * a write was recorded but the file still holds what came before it, else the entry's own.
 */
export function ownershipFor(entry: LedgerEntry | undefined, current: string | null): OwnershipRecord | undefined {
  if (entry === undefined) return undefined;
  if (entry.pending !== undefined && entry.pending.sha256 === current && entry.sha256 !== current)
    return entry.pending.owned;
  return entry.owned;
}

/** Read-modify-write under the ledger lock, so concurrent reconciles never lose each other's records. */
export async function updateLedger(ctx: Context, change: (data: LedgerData) => boolean): Promise<void> {
  await withLock(ctx.paths.locksDir, ledgerPath(ctx), async () => {
    const data = await readLedger(ctx);
    if (!change(data)) return;
    try {
      await writeStateFile(ledgerPath(ctx), `${JSON.stringify(data, null, 2)}\n`);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new BlueError('LEDGER_WRITE_FAILED', `cannot write the ledger ${ledgerPath(ctx)}: ${why}`, {
        file: ledgerPath(ctx),
        hint:
          `blue-agent records what it owns before it changes a harness file, so no harness file was changed; ` +
          `make ${ctx.paths.stateDir} writable (and ${path.basename(ctx.paths.ledgerFile)} a regular file), then ` +
          `run the command again.`,
        cause: error,
      });
    }
  });
}
