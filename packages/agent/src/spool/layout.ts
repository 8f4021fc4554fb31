/**
 * The spool's layout: its folder names and the names of the files in them; nothing outside src/spool/ spells them.
 *
 * Under the spool folder (`Paths.spoolDir`, inside the private state directory; folders 0700, files 0600):
 *
 *   intake/<id>.json               a capture the hook accepted, waiting for a worker
 *   building/<id>.<pid>.json       the same record, claimed by the worker with that pid
 *   ready/<id>.json                bundle built: bundles/<id>.bundle holds it
 *   uploading/<id>.<pid>.json      a ready record, claimed by the worker with that pid while it uploads the bundle
 *   failed/<id>.json               given up, with the reason and the attempts
 *   bundles/<id>.bundle            the bundle of a ready record
 *   tmp/<id>.<pid>.<kind>.<r>.tmp  every file is written here first, fsynced, then renamed into place
 *   inbox/<pid>-<n>.hook           a capture the sh hook (bin/blue-agent-hook) handed over, not yet checked; a drain
 *                                  admits it (<pid>-<n>.<drain pid>.admit while it does) into intake/ or refuses it
 */
import type { RecordState } from './record.js';

/** States a record can be claimed from, and the folder its claim lives in while it is held. */
export const CLAIMS = { intake: 'building', ready: 'uploading' } as const satisfies Partial<
  Record<RecordState, RecordState>
>;
export type ClaimableState = keyof typeof CLAIMS;
/** Folders that hold records, in lifecycle order. */
export const RECORD_DIRS: readonly RecordState[] = ['intake', 'building', 'ready', 'uploading', 'failed'];
/** Folders that hold claims (record files named `<id>.<pid>.json`). */
export const CLAIM_DIRS: ReadonlySet<RecordState> = new Set(Object.values(CLAIMS));
/** Every folder of the spool. */
export const ALL_DIRS = [...RECORD_DIRS, 'bundles', 'tmp', 'inbox'] as const;
export type SpoolFolder = (typeof ALL_DIRS)[number];

const ID = '[0-9a-z]{9}-[0-9a-f]{10}';
export const RECORD_NAME = new RegExp(`^(${ID})\\.json$`);
export const CLAIM_NAME = new RegExp(`^(${ID})\\.(\\d{1,10})\\.json$`);
export const TEMP_NAME = new RegExp(`^(${ID})\\.(\\d{1,10})\\.([a-z]+)\\.[0-9a-f]+\\.tmp$`);
/** A bundle renamed aside while its record is removed for good (see removeClaimed). */
export const REMOVED_KIND = 'removed';
/** The sh hook's files in inbox/: handed over, being admitted by a drain, being written. */
export const HOOK_NAME = /^(\d{1,10}-\d{1,6})\.hook$/;
export const ADMIT_NAME = /^(\d{1,10}-\d{1,6})\.(\d{1,10})\.admit$/;
export const HOOK_TEMP_NAME = /^\.hook\.(\d{1,10})\.tmp$/;

/**
 * The temp file a name belongs to and its writer's pid: our own temp names, and the `.<name>.<random>.partial` files
 * the bundle writer makes beside the file it was asked to write.
 */
export function tempOwner(name: string): { name: string; pid: number } | undefined {
  const base = /^\.(.+)\.[0-9a-f]+\.partial$/.exec(name)?.[1] ?? name;
  const match = TEMP_NAME.exec(base);
  return match === null ? undefined : { name: base, pid: Number(match[2]) };
}
