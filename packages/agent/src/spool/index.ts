/**
 * The spool: captured sessions on their way from the capture hook to the Control API, kept in the private state
 * directory so that a crash, a full disk or a reboot at any moment loses nothing and builds nothing twice.
 *
 *   record.ts       the record format, its ids and retry limits
 *   layout.ts       folder and file names (nothing outside src/spool/ spells them)
 *   view.ts         the read-only view (status, doctor, the agent, a drain's report)
 *   claims.ts       claims and state changes, and the invariant they keep
 *   recovery.ts     what dead workers left: their claims and temp files
 *   spool.ts        the writer, opened: folders created and checked, new captures, the sh hook's inbox
 *   fs.ts, disk-full.ts, private-dir.ts   the spool's own file system helpers
 */
export type { Claim, SpoolIO } from './claims.js';
export { isDiskFull } from './disk-full.js';
export type { ClaimableState } from './layout.js';
export {
  harnessRuns,
  MAX_ATTEMPTS,
  MAX_INTERRUPTIONS,
  newRecordId,
  RECORD_FORMAT,
  RETRY_DELAYS_MS,
  WAIT_FOR_EXIT_MAX_MS,
  type CaptureReason,
  type IntakeInput,
  type RecordError,
  type RecordState,
  type SpoolRecord,
  type WaitForExit,
} from './record.js';
export type { HeldRecord, RecoveryReport } from './recovery.js';
export { Spool, type InboxClaim, type SpoolOptions } from './spool.js';
export { SpoolView, type ListedRecord, type SpoolLocation } from './view.js';
