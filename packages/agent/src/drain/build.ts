/**
 * The drain's build stage: intake records become bundles one at a time. Several drains may run at once (every
 * capture starts one): claims make sure each record is built by exactly one of them.
 *
 * Outcome of a build, by what went wrong:
 *   - nothing: the bundle is committed and the record is ready (or, when the session holds exactly what its last
 *     capture held, the record is removed: unchanged, nothing to upload; see captured.ts);
 *   - (not built at all) a later capture of the same session waits for the same harness process: superseded;
 *   - the session must not or cannot be captured (ARTIFACT_INVALID and kin): failed at once, with the reason;
 *   - the disk is full: the partial bundle is removed, the record goes back to intake untouched, and the drain stops;
 *   - anything else: back to intake with attempts + 1 and a growing delay before the next try (RETRY_DELAYS_MS),
 *     failed after MAX_ATTEMPTS.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BundleRedaction, BundleResult } from '@blue-agent/contract/bundle/index.js';
import { appendCaptureLog } from '../capture/log.js';
import type { Context } from '../context.js';
import { type BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import type { ResolvedPolicy } from '../policy/index.js';
import { loadProfiles, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { withLock } from '../lock/lock.js';
import { DocumentCache } from '@blue-agent/contract/schema/document-cache.js';
import {
  isDiskFull,
  MAX_ATTEMPTS,
  type Claim,
  type RecordError,
  type Spool,
  type SpoolRecord,
} from '../spool/index.js';
import { assembleBundle, captureInterval } from './assemble.js';
import { contentDigest, lastCapture, rememberCapture, type CapturedRecord } from './captured.js';
import { failedEntry, type DrainReport } from './report.js';
import type { RepositoryCache } from './repository.js';

/** Records younger than this wait before they are built: the harness may still be writing the session's last lines as
 * it exits. */
export const SETTLE_MS = 1_000;

/** Errors that say the session itself cannot be captured: retrying gives the same answer. */
const PERMANENT = new Set(['ARTIFACT_INVALID', 'BUNDLE_INVALID', 'CAPTURE_REFUSED', 'PROFILE_UNKNOWN', 'UNSAFE_PATH']);

/** The largest manifest kept in a ready record (characters of its JSON); a larger one is read from the bundle. */
export const RECORD_MANIFEST_MAX = 64 * 1024;

export type BuildFunction = (
  ctx: Context,
  record: SpoolRecord,
  outFile: string,
  profiles: ProfileSet,
  repositories: RepositoryCache,
  redaction?: BundleRedaction,
) => Promise<BundleResult>;

export interface BuildOptions {
  settleMs?: number;
  /** Waits out what is left of a fresh record's settle time; tests record the wait instead. */
  wait?: (ms: number) => Promise<unknown>;
  maxAttempts?: number;
  /** Replaces the session -> bundle step (tests make it fail or stall). */
  build?: BuildFunction;
  /** The policy in force, asked once per drain (shared with the upload stage): its session_upload.redact. */
  policy?: () => Promise<ResolvedPolicy>;
}

/** The default build: the record's recorded profile, its harness adapter, the bundle writer. */
export const buildFromRecord: BuildFunction = (ctx, record, outFile, profiles, repositories, redaction) => {
  const { harness, interval } = captureInterval(profiles, record.harness, record.profile);
  return assembleBundle(
    ctx,
    {
      harness,
      interval,
      payload: record.payload,
      capturedAtUnixMs: record.created_at_unix_ms,
      repositories,
      ...(record.capture_reason === undefined ? {} : { captureReason: record.capture_reason }),
      ...(record.resumable === undefined ? {} : { resumable: record.resumable }),
      ...(redaction === undefined ? {} : { redaction }),
    },
    outFile,
    profiles,
  );
};

/** The build stage: claims the due intake records of `only` not yet `tried`, one at a time, and builds each. */
export async function buildWaiting(
  ctx: Context,
  spool: Spool,
  report: DrainReport,
  options: BuildOptions,
  tried: Set<string>,
  only: ReadonlySet<string>,
): Promise<void> {
  const build = options.build ?? buildFromRecord;
  const settleMs = options.settleMs ?? SETTLE_MS;
  const maxAttempts = options.maxAttempts ?? MAX_ATTEMPTS;
  const repositories: RepositoryCache = new Map();
  let profiles: ProfileSet | undefined;
  let documents: DocumentCache | undefined;
  let redaction: BundleRedaction | undefined | null = null;
  try {
    for (;;) {
      const claim = await spool.claimNext('intake', { skip: tried, skipNotDue: true, only });
      if (claim === undefined) break;
      tried.add(claim.id);
      const { record } = claim;
      if (claim.damaged !== undefined) {
        await spool.fail(claim, { code: 'SPOOL_RECORD_DAMAGED', message: claim.damaged, at_unix_ms: ctx.clock.now() });
        report.failed.push(failedEntry(record, 'SPOOL_RECORD_DAMAGED', claim.damaged));
        continue;
      }
      const by = record.wait_for_exit === undefined ? undefined : await laterCaptureOfRun(spool, record);
      if (by !== undefined) {
        await spool.discardBuild(claim);
        report.superseded.push({ id: record.id, harness: record.harness, session_id: record.payload.session_id, by });
        await appendCaptureLog(ctx.paths.captureLogFile, {
          event: 'superseded',
          harness: record.harness,
          profile: record.profile,
          session_id: record.payload.session_id,
          record: record.id,
          by,
        });
        continue;
      }
      const age = ctx.clock.now() - record.created_at_unix_ms;
      if (age >= 0 && age < settleMs) await (options.wait ?? sleep)(settleMs - age);
      const outFile = spool.tempFile(record.id, 'bundle');
      try {
        if (profiles === undefined) {
          documents = await DocumentCache.open(ctx.paths.documentCacheFile, true);
          profiles = await loadProfiles(ctx.paths.profilesDir, documents);
        }
        if (redaction === null) redaction = await redactionInForce(ctx, options.policy);
        const readStarted = ctx.clock.now();
        const result = await build(ctx, record, outFile, profiles, repositories, redaction);
        const content = contentDigest(result.manifest);
        // One session at a time from here to the commit: two captures of the same content built at once (a harness
        // that fires its end hook twice) must not both see "not captured yet".
        const outcome = await withLock(
          ctx.paths.locksDir,
          `captured:${record.harness}:` +
            `${createHash('sha256').update(record.payload.session_id).digest('hex').slice(0, 32)}`,
          () => commitUnlessUnchanged(ctx, spool, claim, outFile, result, content, readStarted),
        );
        if (outcome.unchanged !== undefined) {
          const last = outcome.unchanged;
          report.unchanged.push({
            id: record.id,
            harness: record.harness,
            session_id: record.payload.session_id,
            same_as: last.record,
          });
          await appendCaptureLog(ctx.paths.captureLogFile, {
            event: 'unchanged',
            harness: record.harness,
            profile: record.profile,
            session_id: record.payload.session_id,
            record: record.id,
            same_as: last.record,
          });
          continue;
        }
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
          capture_reason: record.capture_reason ?? 'hook',
        });
      } catch (error) {
        if (!(await spool.holds(claim))) {
          // Another drain judged this one dead and took the record over: it is theirs now, leave it alone.
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

/**
 * The redactor the policy in force asks for (`session_upload.redact: secrets`), or none. A policy that cannot be read
 * now means none: the upload stage, which cannot upload without the policy, refuses a bundle built without the
 * redaction the policy asks for, so nothing unredacted leaves the machine either way.
 */
async function redactionInForce(
  ctx: Context,
  policy: (() => Promise<ResolvedPolicy>) | undefined,
): Promise<BundleRedaction | undefined> {
  let mode: string | undefined;
  try {
    mode = (await policy?.())?.policy.session_upload?.redact;
  } catch (error) {
    ctx.logger.debug('no policy to say whether to redact; building without', { error: (error as Error).message });
  }
  if (mode !== 'secrets') return undefined;
  const { secretsRedaction } = await import('../redaction/index.js');
  return secretsRedaction();
}

/**
 * A later intake record of the same session waiting for the same harness process: once that process has exited it
 * captures the session's last state, so building `record` too would only find the same content (each turn of a
 * harness whose capture event fires after every turn leaves one such record).
 */
async function laterCaptureOfRun(spool: Spool, record: SpoolRecord): Promise<string | undefined> {
  const wait = record.wait_for_exit!;
  for (const id of (await spool.idsIn('intake')).reverse()) {
    if (id === record.id) continue;
    const other = await spool.peek('intake', id);
    const theirs = other?.wait_for_exit;
    if (
      other?.harness === record.harness &&
      other.payload?.session_id === record.payload.session_id &&
      theirs?.pid === wait.pid &&
      theirs.proc_start === wait.proc_start &&
      theirs.started_at_unix_ms === wait.started_at_unix_ms &&
      typeof other.created_at_unix_ms === 'number' &&
      (other.created_at_unix_ms > record.created_at_unix_ms ||
        (other.created_at_unix_ms === record.created_at_unix_ms && id > record.id))
    ) {
      return id;
    }
  }
  return undefined;
}

/**
 * Commits the built bundle and remembers what it holds, or, when the session's last capture held exactly this
 * content (uploaded, or on its way), removes the record and the bundle: nothing new to upload. Run under the
 * session's lock.
 */
async function commitUnlessUnchanged(
  ctx: Context,
  spool: Spool,
  claim: Claim,
  outFile: string,
  result: BundleResult,
  content: string,
  readStarted: number,
): Promise<{ unchanged?: CapturedRecord }> {
  const { record } = claim;
  const last = await lastCapture(ctx, record.harness, record.payload.session_id);
  if (last?.content_sha256 === content) {
    await spool.discardTemp(outFile);
    await spool.discardBuild(claim);
    // The content read now is the content captured then: the idle sweep need not look at this session again.
    await rememberCapture(ctx, {
      harness: last.harness,
      session_id: last.session_id,
      content_sha256: last.content_sha256,
      record: last.record,
      read_started_at_unix_ms: readStarted,
    }).catch(() => undefined);
    return { unchanged: last };
  }
  // The manifest rides along in the record (a few KiB, usually): the manifest is the bundle's last entry, so reading
  // it back for the upload would inflate the whole bundle.
  const manifest = JSON.stringify(result.manifest).length <= RECORD_MANIFEST_MAX ? { manifest: result.manifest } : {};
  await spool.commitReady(claim, outFile, { size: result.size, sha256: result.sha256, ...manifest });
  await rememberCapture(ctx, {
    harness: record.harness,
    session_id: record.payload.session_id,
    content_sha256: content,
    record: record.id,
    read_started_at_unix_ms: readStarted,
  }).catch((error: unknown) => {
    // Only costs a second upload of the same content later; the bundle itself is safe in ready/.
    ctx.logger.warn('could not remember what the capture held', { record: record.id, error: (error as Error).message });
  });
  return {};
}

/** Records a failed build; true when the drain should stop (the disk is full). */
async function settleFailure(
  ctx: Context,
  spool: Spool,
  claim: Claim,
  error: unknown,
  report: DrainReport,
  maxAttempts: number,
): Promise<boolean> {
  const { record } = claim;
  const blue = toBlueError(error);
  const at = ctx.clock.now();
  if (blue.code === 'SPOOL_UNSAFE') {
    throw blue;
  }
  if (isDiskFull(error) || isDiskFull(blue.cause)) {
    const reason = 'no space left on the disk while building the bundle; kept for a later drain';
    await spool.release(claim, { error: { code: 'SPOOL_FULL', message: reason, at_unix_ms: at }, countAttempt: false });
    report.retried.push(failedEntry(record, 'SPOOL_FULL', reason));
    report.stopped = { code: 'SPOOL_FULL', reason: blue.message };
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'retry',
      record: record.id,
      session_id: record.payload.session_id,
      code: 'SPOOL_FULL',
      reason,
    });
    return true;
  }
  if (blue.code === 'SESSION_CHANGING' && record.capture_reason !== undefined) {
    // Nobody said the session ended, and it is being written to: not idle after all. The sweep captures it once it is.
    await spool.discardBuild(claim);
    report.changing.push({
      id: record.id,
      harness: record.harness,
      session_id: record.payload.session_id,
      reason: blue.message,
    });
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'changing',
      harness: record.harness,
      profile: record.profile,
      session_id: record.payload.session_id,
      record: record.id,
      code: blue.code,
      reason: blue.message,
    });
    return false;
  }
  const failure: RecordError = { code: blue.code, message: describe(blue), at_unix_ms: at };
  const permanent = PERMANENT.has(blue.code);
  if (permanent || record.attempts + 1 >= maxAttempts) {
    const failed = await spool.fail(
      claim,
      {
        ...failure,
        message: permanent ? failure.message : `${failure.message} (after ${record.attempts + 1} attempts)`,
      },
      { countAttempt: true },
    );
    report.failed.push(failedEntry(failed, blue.code, failed.last_error!.message));
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
    report.retried.push(failedEntry(released, blue.code, failure.message));
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'retry',
      record: record.id,
      session_id: record.payload.session_id,
      code: blue.code,
      reason: failure.message,
    });
  }
  return false;
}

function describe(error: BlueError): string {
  return error.hint === undefined ? error.message : `${error.message} (${error.hint})`;
}
