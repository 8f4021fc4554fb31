/**
 * The worker behind `blue-agent drain`: recovers what dead workers left, then turns intake records into bundles one
 * at a time. Several drains may run at once (every capture starts one): claims make sure each record is built by
 * exactly one of them.
 *
 * Outcome of a build, by what went wrong:
 *   - nothing: the bundle is committed and the record is ready;
 *   - the session must not or cannot be captured (ARTIFACT_INVALID and kin): failed at once, with the reason;
 *   - the disk is full: the partial bundle is removed, the record goes back to intake untouched, and the drain stops;
 *   - anything else: back to intake with attempts + 1 and a growing delay before the next try (RETRY_DELAYS_MS),
 *     failed after MAX_ATTEMPTS.
 *
 * Then the upload stage (see uploadReady): every due ready record is claimed into uploading/, its bundle re-verified
 * against the record (size and SHA-256: a bundle that changed on disk is failed, never uploaded), and uploaded to the
 * Control API. Uploaded: the local copy goes. Retry: back to ready with the next attempt time. Failed: failed/ with the
 * server's reason. With no Control API configured nothing is uploaded (the bundles wait, with a note in the report);
 * with a policy that has no session_upload block (capture disabled) nothing is uploaded and the records are kept,
 * or discarded with `discard`.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { readManifest, type BundleResult } from '../bundle/index.js';
import { controlSettings, loadAgentConfig, type ControlSettings } from '../config.js';
import { resolvePolicy } from '../policy/index.js';
import { ControlClient, resolvePresignUrl, uploadBundle, type UploadBundleOptions } from '../upload/index.js';
import { authFailedHint } from '../upload/client.js';
import { DEFAULT_RETRY_POLICY, rescheduleDelay } from '../upload/retry.js';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '../errors.js';
import { findInterval, loadProfiles, type ProfileSet } from '../profiles/index.js';
import { DocumentCache } from '../schema/document-cache.js';
import { isDiskFull, MAX_ATTEMPTS, Spool, type Claim, type RecordError, type RecoveryReport, type SpoolIO, type SpoolRecord } from '../spool/index.js';
import { assembleBundle, captureInterval } from './assemble.js';
import { appendCaptureLog } from './log.js';
import type { RepositoryCache } from './repository.js';

/** Records younger than this wait before they are built: the harness may still be writing the session's last lines as it exits. */
export const SETTLE_MS = 1_000;

/** Errors that say the session itself cannot be captured: retrying gives the same answer. */
const PERMANENT = new Set(['ARTIFACT_INVALID', 'BUNDLE_INVALID', 'CAPTURE_REFUSED', 'PROFILE_UNKNOWN', 'UNSAFE_PATH']);

export type BuildFunction = (ctx: Context, record: SpoolRecord, outFile: string, profiles: ProfileSet, repositories: RepositoryCache) => Promise<BundleResult>;

export interface DrainOptions {
  settleMs?: number;
  maxAttempts?: number;
  /** Replaces the session -> bundle step (tests make it fail or stall). */
  build?: BuildFunction;
  io?: SpoolIO;
  /** With a policy that disables capture (no session_upload): remove the ready records instead of keeping them. */
  discard?: boolean;
  /** Passed to every uploadBundle call (tests shorten the retries). */
  upload?: Omit<UploadBundleOptions, 'presignUrl'>;
  /** Build only; leave ready records alone. */
  skipUploads?: boolean;
  /** One pass only: captures that arrive while the drain runs wait for the next drain. */
  once?: boolean;
}

/** Passes a drain makes at most while captures keep arriving (a bound, so a drain always ends). */
export const MAX_DRAIN_PASSES = 5;

export interface UploadedEntry {
  id: string;
  harness: string;
  session_id: string;
  upload_id: string;
  /** The Control API held these bytes already (an earlier, interrupted drain had uploaded them). */
  already: boolean;
  size: number;
  sha256: string;
}

export interface BuiltEntry {
  id: string;
  harness: string;
  profile: string;
  session_id: string;
  size: number;
  sha256: string;
}

export interface FailedEntry {
  id: string;
  harness: string;
  profile: string;
  session_id: string;
  code: string;
  reason: string;
  attempts: number;
  /** Which stage failed; absent means build. */
  stage?: 'build' | 'upload';
  /** Upload retries: when the record is due again. */
  next_attempt_at_unix_ms?: number;
}

/** A record left waiting (in intake or ready) that this drain did not try: it is not due yet after an earlier failure. */
export interface WaitingEntry {
  id: string;
  /** `intake`: waiting to be built; `ready`: built, waiting to be uploaded. */
  state: 'intake' | 'ready';
  harness: string;
  profile: string;
  session_id: string;
  /** The earlier failure that keeps it waiting. */
  code: string;
  reason: string;
  failed_at_unix_ms: number;
  /** Build attempts, or upload attempts for a ready record. */
  attempts: number;
  /** When a drain takes it again (null: the next one). */
  next_attempt_at_unix_ms: number | null;
}

interface Seen {
  intake: Set<string>;
  ready: Set<string>;
}

export interface DrainReport {
  recovered: RecoveryReport & { temps_removed: number };
  built: BuiltEntry[];
  /** Failed for good in this run. */
  failed: FailedEntry[];
  /** Failed in this run, kept in intake for a later drain. */
  retried: FailedEntry[];
  /** Records still waiting in intake when the drain ended. */
  left: number;
  /** Uploaded to the Control API (and removed from the spool) in this run. */
  uploaded: UploadedEntry[];
  /** Ready records removed without upload (`--discard` while the policy disables capture). */
  discarded: string[];
  /** Ready records (built bundles) still waiting for upload when the drain ended. */
  left_ready: number;
  /**
   * Records left waiting in intake or ready that this drain did not try (not due yet), with the earlier failure that
   * keeps them waiting (records retried in this run are in `retried` instead). Any of them makes the drain not ok.
   */
  waiting: WaitingEntry[];
  /**
   * Why uploads were skipped or cut short, when they were: no Control API configured and capture disabled (not
   * errors); the policy could not be checked, the Control API could not be reached, or it refused the token (with
   * the error code and what to do).
   */
  notes: string[];
  /** Why the drain stopped early (a full disk), if it did. */
  stopped?: { code: string; reason: string };
}

/** The default build: the record's recorded profile, its harness adapter, the bundle writer. */
export const buildFromRecord: BuildFunction = (ctx, record, outFile, profiles, repositories) => {
  const { harness, interval } = captureInterval(profiles, record.harness, record.profile);
  return assembleBundle(ctx, { harness, interval, payload: record.payload, capturedAtUnixMs: record.created_at_unix_ms, repositories }, outFile, profiles);
};

export async function drain(ctx: Context, options: DrainOptions = {}): Promise<DrainReport> {
  const spool = await Spool.open(ctx.paths, { now: () => ctx.clock.now(), ...(options.io === undefined ? {} : { io: options.io }) });
  const recovered = await spool.releaseDeadClaims();
  const tempsRemoved = await spool.removeOrphanTemps();
  for (const id of recovered.released) await appendCaptureLog(ctx.paths.captureLogFile, { event: 'recovered', record: id, reason: 'its worker died; released for another build' });
  const report: DrainReport = {
    recovered: { ...recovered, temps_removed: tempsRemoved },
    built: [],
    failed: [],
    retried: [],
    left: 0,
    uploaded: [],
    discarded: [],
    left_ready: 0,
    waiting: [],
    notes: [],
  };

  // Each record is tried at most once per drain (a transient failure waits for the next drain); records that are
  // not due yet join these sets too, so a backlog of delayed records is read once per drain, not once per claim.
  const seen: Seen = { intake: new Set(), ready: new Set() };
  for (let pass = 1; ; pass++) {
    // A pass takes the records that are there when it starts: one that arrives meanwhile waits for the next pass.
    await buildWaiting(ctx, spool, report, options, seen.intake, new Set(await spool.idsIn('intake')));
    if (options.skipUploads !== true && report.stopped === undefined) {
      await uploadReady(ctx, spool, report, options, seen.ready, new Set(await spool.idsIn('ready')));
    }
    if (options.once === true || report.stopped !== undefined || pass >= MAX_DRAIN_PASSES) break;
    // Another pass only for records that arrived meanwhile.
    const fresh = async (state: 'intake' | 'ready', known: Set<string>) => (await spool.idsIn(state)).some((id) => !known.has(id));
    if (!(await fresh('intake', seen.intake)) && (options.skipUploads === true || !(await fresh('ready', seen.ready)))) break;
  }

  const leftIntake = await spool.idsIn('intake');
  const leftReady = await spool.idsIn('ready');
  report.left = leftIntake.length;
  report.left_ready = leftReady.length;
  const retried = new Set(report.retried.map((r) => r.id));
  for (const [state, ids] of [['intake', leftIntake], ['ready', leftReady]] as const) {
    for (const id of ids) {
      if (retried.has(id)) continue;
      const waiting = await waitingEntry(spool, state, id);
      if (waiting !== undefined) report.waiting.push(waiting);
    }
  }
  return report;
}

/** The record's earlier failure, when it has one (a record that never failed is just waiting its turn). */
async function waitingEntry(spool: Spool, state: 'intake' | 'ready', id: string): Promise<WaitingEntry | undefined> {
  const record = await spool.peek(state, id);
  // Moved on meanwhile, or unreadable (the next claim fails it with the reason).
  if (record === undefined) return undefined;
  const error = record.last_error;
  if (error === undefined || typeof error !== 'object' || error === null) return undefined;
  return {
    id,
    state,
    harness: String(record.harness ?? '?'),
    profile: String(record.profile ?? '?'),
    session_id: String(record.payload?.session_id ?? '?'),
    code: String(error.code),
    reason: String(error.message),
    failed_at_unix_ms: Number(error.at_unix_ms),
    attempts: Number((state === 'ready' ? record.upload_attempts : record.attempts) ?? 0),
    next_attempt_at_unix_ms: typeof record.next_attempt_at_unix_ms === 'number' ? record.next_attempt_at_unix_ms : null,
  };
}

/** A note for the report: the error's code, what happened and what to do. */
function problemNote(what: string, code: string, message: string, hint: string | undefined): string {
  return `${what} [${code}]: ${message}${hint === undefined || hint === '' ? '' : ` (${hint.replace(/\.$/, '')})`}`;
}

const CONTROL_HINT = 'check control_url / BLUE_AGENT_CONTROL_URL; run `blue-agent doctor`';

/** What to do about a setup problem met while uploading: the token's origin for AUTH_FAILED, else check the URL. */
async function setupHint(settings: ControlSettings, code: string, hint: string | undefined): Promise<string> {
  if (code === 'AUTH_FAILED') {
    // A 403 (a valid token without the right) keeps the server-side hint; a refused token says where it came from.
    if (hint !== undefined && !/login/.test(hint)) return hint;
    const hasToken = await settings.readToken().then(
      (token) => token !== undefined,
      () => false,
    );
    return authFailedHint(settings.tokenSource, hasToken);
  }
  return hint ?? CONTROL_HINT;
}

/** The upload stage: see the module comment. Never throws for a Control API or policy problem; records it instead. */
async function uploadReady(ctx: Context, spool: Spool, report: DrainReport, options: DrainOptions, tried: Set<string>, only: ReadonlySet<string>): Promise<void> {
  if ([...only].filter((id) => !tried.has(id)).length === 0) return;
  const { config } = await loadAgentConfig(ctx);
  const settings = controlSettings(ctx, config);
  // Records this drain leaves alone on purpose count as tried: a later pass must not take them up again.
  const leaveAll = async (note: string): Promise<void> => {
    for (const id of only) tried.add(id);
    if (!report.notes.includes(note)) report.notes.push(note);
  };
  if (settings.controlUrl === undefined) {
    await leaveAll('no Control API is configured: built bundles stay ready for a later drain (run `blue-agent login`)');
    return;
  }
  const retryPolicy = options.upload?.retry ?? DEFAULT_RETRY_POLICY;
  const random = options.upload?.retryEnv?.random ?? Math.random;

  let policy;
  try {
    const resolved = await resolvePolicy(ctx, { dryRun: false, config });
    policy = resolved.policy;
    if (resolved.source === 'cached') {
      // The Control API did not answer: uploads are tried with the last-known-good policy, and will most likely wait.
      const why = resolved.warnings[0] ?? 'the Control API could not be reached: using the last-known-good policy';
      const note = problemNote('the Control API could not be reached', 'CONTROL_API_UNREACHABLE', why, CONTROL_HINT);
      if (!report.notes.includes(note)) report.notes.push(note);
    }
  } catch (error) {
    // No policy, no upload: every due record waits for a later drain, with the reason.
    const blue = toBlueError(error);
    const note = problemNote('cannot check the governance policy, so nothing was uploaded', blue.code, blue.message, await setupHint(settings, blue.code, blue.hint));
    if (!report.notes.includes(note)) report.notes.push(note);
    for (;;) {
      const claim = await spool.claimNext('ready', { skip: tried, skipNotDue: true, only });
      if (claim === undefined) break;
      tried.add(claim.id);
      await retryUpload(ctx, spool, report, claim, blue.code, `cannot check the governance policy: ${blue.message}`, rescheduleDelay({}, retryPolicy, random));
    }
    return;
  }

  if (policy.session_upload === undefined) {
    if (options.discard !== true) {
      await leaveAll('the governance policy disables session upload (no session_upload): ready bundles are kept, not uploaded (drain --discard removes them)');
      return;
    }
    for (;;) {
      const claim = await spool.claimNext('ready', { skip: tried, skipNotDue: true, only });
      if (claim === undefined) break;
      tried.add(claim.id);
      await spool.discardUpload(claim);
      report.discarded.push(claim.id);
      await appendCaptureLog(ctx.paths.captureLogFile, { event: 'discarded', record: claim.id, reason: 'the governance policy disables session upload' });
    }
    return;
  }

  const profiles = await loadProfiles(ctx.paths.profilesDir, await DocumentCache.open(ctx.paths.documentCacheFile, true));
  const client = await ControlClient.fromContext(ctx);
  try {
    let presignUrl: string | undefined;
    try {
      presignUrl = resolvePresignUrl(client, policy, { allowedOrigins: config.allowed_upload_origins, file: 'the governance policy' });
    } catch (error) {
      const blue = toBlueError(error);
      report.notes.push(`uploads refused: ${blue.message}`);
      report.stopped = { code: blue.code, reason: blue.message };
      return;
    }
    for (;;) {
      const claim = await spool.claimNext('ready', { skip: tried, skipNotDue: true, only });
      if (claim === undefined) break;
      tried.add(claim.id);
      const stop = await uploadOne(ctx, spool, report, claim, client, profiles, { ...options.upload, ...(presignUrl === undefined ? {} : { presignUrl }) });
      if (stop !== undefined) {
        // The agent's setup or the Control API, not the record: the other records wait too.
        const note = problemNote('uploads stopped', stop.code, stop.reason, await setupHint(settings, stop.code, undefined));
        if (!report.notes.includes(note)) report.notes.push(note);
        break;
      }
    }
  } finally {
    await client.close();
  }
}

/** Uploads one claimed ready record and records the outcome; the setup problem when the upload loop should stop. */
async function uploadOne(
  ctx: Context,
  spool: Spool,
  report: DrainReport,
  claim: Claim,
  client: ControlClient,
  profiles: ProfileSet,
  options: UploadBundleOptions,
): Promise<{ code: string; reason: string } | undefined> {
  const { record } = claim;
  const at = ctx.clock.now();
  const failWith = async (code: string, reason: string): Promise<void> => {
    const failed = await spool.fail(claim, { code, message: reason, at_unix_ms: at });
    report.failed.push({ ...entry(failed, code, reason), stage: 'upload' });
    await appendCaptureLog(ctx.paths.captureLogFile, { event: 'upload_failed', record: record.id, session_id: record.payload.session_id, code, reason });
  };
  if (claim.damaged !== undefined) {
    await failWith('SPOOL_RECORD_DAMAGED', claim.damaged);
    return undefined;
  }
  if (record.bundle === undefined) {
    await failWith('SPOOL_RECORD_DAMAGED', 'the ready record names no bundle');
    return undefined;
  }
  const bundleFile = spool.bundleFile(record.id);
  // The spooled bytes must still be the ones built: a bundle changed on disk is never uploaded.
  let actual: { size: number; sha256: string } | undefined;
  try {
    actual = await hashFile(bundleFile);
  } catch (error) {
    await failWith('BUNDLE_INVALID', `the spooled bundle cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    return undefined;
  }
  if (actual.size !== record.bundle.size || actual.sha256 !== record.bundle.sha256) {
    await failWith(
      'BUNDLE_INVALID',
      `the spooled bundle changed on disk: it has ${actual.size} bytes and SHA-256 ${actual.sha256}, the record says ${record.bundle.size} bytes and ${record.bundle.sha256}`,
    );
    return undefined;
  }
  let manifest;
  try {
    manifest = await readManifest(bundleFile);
  } catch (error) {
    await failWith('BUNDLE_INVALID', `the spooled bundle's manifest cannot be read: ${toBlueError(error).message}`);
    return undefined;
  }
  // Resumable when the profile it was captured under can restore it (the resume picker lists only those).
  const resumable = findInterval(profiles, manifest.compatibility_profile)?.interval.operations.includes('session_resume') === true;
  const result = await uploadBundle(client, { bundleFile, size: record.bundle.size, sha256: record.bundle.sha256, manifest, resumable, verified: true }, options);
  if (!(await spool.holds(claim))) return undefined; // judged dead and taken over: the record is another worker's now
  switch (result.kind) {
    case 'uploaded':
      await spool.completeUpload(claim, result.upload_id);
      report.uploaded.push({
        id: record.id,
        harness: record.harness,
        session_id: record.payload.session_id,
        upload_id: result.upload_id,
        already: result.already,
        size: record.bundle.size,
        sha256: record.bundle.sha256,
      });
      await appendCaptureLog(ctx.paths.captureLogFile, {
        event: 'uploaded',
        record: record.id,
        harness: record.harness,
        session_id: record.payload.session_id,
        upload_id: result.upload_id,
        size: record.bundle.size,
      });
      return undefined;
    case 'retry':
      await retryUpload(ctx, spool, report, claim, result.code, result.reason, result.delay_ms);
      return result.stop ? { code: result.code, reason: result.reason } : undefined;
    case 'failed':
      await failWith(result.code, result.reason);
      return undefined;
  }
}

async function retryUpload(ctx: Context, spool: Spool, report: DrainReport, claim: Claim, code: string, reason: string, delayMs: number): Promise<void> {
  const at = ctx.clock.now();
  const next = at + Math.max(0, delayMs);
  const released = await spool.releaseUpload(claim, { error: { code, message: reason, at_unix_ms: at }, retryAtUnixMs: next });
  report.retried.push({ ...entry(released, code, reason), attempts: released.upload_attempts ?? 0, stage: 'upload', next_attempt_at_unix_ms: next });
  await appendCaptureLog(ctx.paths.captureLogFile, { event: 'upload_retry', record: claim.id, session_id: claim.record.payload.session_id, code, reason });
}

async function hashFile(file: string): Promise<{ size: number; sha256: string }> {
  const info = await stat(file);
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  if (size !== info.size) throw new Error('the bundle changed while it was read');
  return { size, sha256: hash.digest('hex') };
}

async function buildWaiting(ctx: Context, spool: Spool, report: DrainReport, options: DrainOptions, tried: Set<string>, only: ReadonlySet<string>): Promise<void> {
  const build = options.build ?? buildFromRecord;
  const settleMs = options.settleMs ?? SETTLE_MS;
  const maxAttempts = options.maxAttempts ?? MAX_ATTEMPTS;
  const repositories: RepositoryCache = new Map();
  let profiles: ProfileSet | undefined;
  let documents: DocumentCache | undefined;
  try {
    for (;;) {
      const claim = await spool.claimNext('intake', { skip: tried, skipNotDue: true, only });
      if (claim === undefined) break;
      tried.add(claim.id);
      const { record } = claim;
      if (claim.damaged !== undefined) {
        await spool.fail(claim, { code: 'SPOOL_RECORD_DAMAGED', message: claim.damaged, at_unix_ms: ctx.clock.now() });
        report.failed.push(entry(record, 'SPOOL_RECORD_DAMAGED', claim.damaged));
        continue;
      }
      const age = ctx.clock.now() - record.created_at_unix_ms;
      if (age >= 0 && age < settleMs) await sleep(settleMs - age);
      const outFile = spool.tempFile(record.id, 'bundle');
      try {
        if (profiles === undefined) {
          documents = await DocumentCache.open(ctx.paths.documentCacheFile, true);
          profiles = await loadProfiles(ctx.paths.profilesDir, documents);
        }
        const result = await build(ctx, record, outFile, profiles, repositories);
        await spool.commitReady(claim, outFile, { size: result.size, sha256: result.sha256 });
        report.built.push({
          id: record.id,
          harness: record.harness,
          profile: record.profile,
          session_id: record.payload.session_id,
          size: result.size,
          sha256: result.sha256,
        });
        await appendCaptureLog(ctx.paths.captureLogFile, {
          event: 'built',
          harness: record.harness,
          profile: record.profile,
          session_id: record.payload.session_id,
          record: record.id,
          size: result.size,
        });
      } catch (error) {
        if (!(await spool.holds(claim))) {
          // Another worker judged this one dead and took the record over: it is theirs now, leave it alone.
          await spool.discardTemp(outFile);
          continue;
        }
        const stop = await settleFailure(ctx, spool, claim, error, report, maxAttempts);
        if (stop) break;
      }
    }
  } finally {
    await documents?.save().catch(() => undefined);
  }
}

/** Records a failed build; true when the drain should stop (the disk is full). */
async function settleFailure(ctx: Context, spool: Spool, claim: Claim, error: unknown, report: DrainReport, maxAttempts: number): Promise<boolean> {
  const { record } = claim;
  const blue = toBlueError(error);
  const at = ctx.clock.now();
  if (blue.code === 'SPOOL_UNSAFE') {
    throw blue;
  }
  if (isDiskFull(error) || isDiskFull(blue.cause)) {
    const reason = 'no space left on the disk while building the bundle; kept for a later drain';
    await spool.release(claim, { error: { code: 'SPOOL_FULL', message: reason, at_unix_ms: at }, countAttempt: false });
    report.retried.push(entry(record, 'SPOOL_FULL', reason));
    report.stopped = { code: 'SPOOL_FULL', reason: blue.message };
    await appendCaptureLog(ctx.paths.captureLogFile, { event: 'retry', record: record.id, session_id: record.payload.session_id, code: 'SPOOL_FULL', reason });
    return true;
  }
  const failure: RecordError = { code: blue.code, message: describe(blue), at_unix_ms: at };
  const permanent = PERMANENT.has(blue.code);
  if (permanent || record.attempts + 1 >= maxAttempts) {
    const failed = await spool.fail(
      claim,
      { ...failure, message: permanent ? failure.message : `${failure.message} (after ${record.attempts + 1} attempts)` },
      { countAttempt: true },
    );
    report.failed.push(entry(failed, blue.code, failed.last_error!.message));
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'build_failed',
      harness: record.harness,
      profile: record.profile,
      session_id: record.payload.session_id,
      record: record.id,
      code: blue.code,
      reason: failed.last_error!.message,
    });
  } else {
    const released = await spool.release(claim, { error: failure });
    report.retried.push(entry(released, blue.code, failure.message));
    await appendCaptureLog(ctx.paths.captureLogFile, { event: 'retry', record: record.id, session_id: record.payload.session_id, code: blue.code, reason: failure.message });
  }
  return false;
}

function describe(error: BlueError): string {
  return error.hint === undefined ? error.message : `${error.message} (${error.hint})`;
}

function entry(record: SpoolRecord, code: string, reason: string): FailedEntry {
  return {
    id: record.id,
    harness: record.harness,
    profile: record.profile,
    session_id: record.payload.session_id,
    code,
    reason,
    attempts: record.attempts,
  };
}
