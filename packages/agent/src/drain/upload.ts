/**
 * The drain's upload stage: every due ready record is claimed into uploading/, its bundle re-verified against the
 * record (size and SHA-256, or the file identity the spool recorded at commit with the digest checked on the way out,
 * by the upload or by the storage service: a bundle that changed on disk is failed, never uploaded), and uploaded to
 * the Control API. Uploaded: the local copy goes. Retry: back to ready with the next attempt time. Failed: failed/
 * with the server's reason. With no Control API configured nothing is uploaded (the bundles wait, with a note in the
 * report); with a policy that has no session_upload block (capture disabled) nothing is uploaded and the records are
 * kept, or discarded with `discard`.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { readManifest, validManifest } from '@blue-agent/contract/bundle/index.js';
import { appendCaptureLog } from '../capture/log.js';
import { loadAgentConfig } from '../config.js';
import { controlClient, controlSettings, type ControlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { toBlueError } from '@blue-agent/contract/errors.js';
import { resolvePolicy, type ResolvedPolicy } from '../policy/index.js';
import { findInterval, loadProfiles, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { DocumentCache } from '@blue-agent/contract/schema/document-cache.js';
import type { Claim, Spool } from '../spool/index.js';
import { authFailedHint, type ControlClient } from '../control-api/client.js';
import { resolvePresignUrl, uploadBundle, type UploadBundleOptions } from '../upload/index.js';
import { DEFAULT_RETRY_POLICY, rescheduleDelay } from '../upload/retry.js';
import { forgetCapture } from './captured.js';
import { failedEntry, type DrainReport } from './report.js';

export interface UploadOptions {
  /** With a policy that disables capture (no session_upload): remove the ready records instead of keeping them. */
  discard?: boolean;
  /** Passed to every uploadBundle call (tests shorten the retries). */
  upload?: Omit<UploadBundleOptions, 'presignUrl'>;
  /** The policy in force, asked once per drain (shared with the build stage). */
  policy?: () => Promise<ResolvedPolicy>;
  /** Uploads in flight at once (default UPLOAD_WINDOW). */
  uploadWindow?: number;
}

/**
 * Uploads in flight at once: enough to overlap the Control API's per-upload work, few enough to spare a laptop. A small
 * upload mostly waits on disks (the Control API's fsyncs, the spool's renames and removals): more in flight drain a
 * backlog faster up to about this many, and more than this gain nothing (bench/drain.mjs).
 */
export const UPLOAD_WINDOW = 16;

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
export async function uploadReady(
  ctx: Context,
  spool: Spool,
  report: DrainReport,
  options: UploadOptions,
  tried: Set<string>,
  only: ReadonlySet<string>,
): Promise<void> {
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
    const resolved = await (options.policy?.() ?? resolvePolicy(ctx, { dryRun: false, config }));
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
    const note = problemNote(
      'cannot check the governance policy, so nothing was uploaded',
      blue.code,
      blue.message,
      await setupHint(settings, blue.code, blue.hint),
    );
    if (!report.notes.includes(note)) report.notes.push(note);
    for (;;) {
      const claim = await spool.claimNext('ready', { skip: tried, skipNotDue: true, only });
      if (claim === undefined) break;
      tried.add(claim.id);
      await retryUpload(
        ctx,
        spool,
        report,
        claim,
        blue.code,
        `cannot check the governance policy: ${blue.message}`,
        rescheduleDelay({}, retryPolicy, random),
      );
    }
    return;
  }

  if (policy.session_upload === undefined) {
    if (options.discard !== true) {
      await leaveAll(
        'the governance policy disables session upload (no session_upload): ready bundles are kept, not uploaded ' +
          '(drain --discard removes them)',
      );
      return;
    }
    for (;;) {
      const claim = await spool.claimNext('ready', { skip: tried, skipNotDue: true, only });
      if (claim === undefined) break;
      tried.add(claim.id);
      await spool.discardUpload(claim);
      await forgetCapture(ctx, claim.record.harness, claim.record.payload.session_id, claim.id);
      report.discarded.push(claim.id);
      await appendCaptureLog(ctx.paths.captureLogFile, {
        event: 'discarded',
        record: claim.id,
        reason: 'the governance policy disables session upload',
      });
    }
    return;
  }

  const profiles = await loadProfiles(
    ctx.paths.profilesDir,
    await DocumentCache.open(ctx.paths.documentCacheFile, true),
  );
  const client = await controlClient(ctx);
  try {
    let presignUrl: string | undefined;
    try {
      presignUrl = resolvePresignUrl(client, policy, {
        allowedOrigins: config.allowed_upload_origins,
        file: 'the governance policy',
      });
    } catch (error) {
      const blue = toBlueError(error);
      report.notes.push(`uploads refused: ${blue.message}`);
      report.stopped = { code: blue.code, reason: blue.message };
      return;
    }
    // A bounded window of uploads in flight, over the client's keep-alive connections: the Control API's own work per
    // upload (its database, the object's fsync, re-hashing on complete) overlaps instead of adding up. Claims keep
    // every record with exactly one worker.
    let stopped = false;
    const redactionRequired = policy.session_upload.redact === 'secrets';
    // The pass's records, listed once and shared by the workers.
    const claimNext = spool.claimer('ready', [...only], { skip: tried, skipNotDue: true });
    const worker = async (): Promise<void> => {
      while (!stopped) {
        const claim = await claimNext();
        if (claim === undefined) return;
        tried.add(claim.id);
        const stop = await uploadOne(
          ctx,
          spool,
          report,
          claim,
          client,
          profiles,
          { ...options.upload, ...(presignUrl === undefined ? {} : { presignUrl }) },
          redactionRequired,
        );
        if (stop !== undefined && !stopped) {
          // The agent's setup or the Control API, not the record: the other records wait too.
          stopped = true;
          const note = problemNote(
            'uploads stopped',
            stop.code,
            stop.reason,
            await setupHint(settings, stop.code, undefined),
          );
          if (!report.notes.includes(note)) report.notes.push(note);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.uploadWindow ?? UPLOAD_WINDOW) }, () => worker()));
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
  redactionRequired: boolean,
): Promise<{ code: string; reason: string } | undefined> {
  const { record } = claim;
  const at = ctx.clock.now();
  const failWith = async (code: string, reason: string): Promise<void> => {
    const failed = await spool.fail(claim, { code, message: reason, at_unix_ms: at });
    // Not uploaded: the next capture of the same content must not be taken for a duplicate.
    if (claim.damaged === undefined) await forgetCapture(ctx, record.harness, record.payload.session_id, record.id);
    report.failed.push({ ...failedEntry(failed, code, reason), stage: 'upload' });
    await appendCaptureLog(ctx.paths.captureLogFile, {
      event: 'upload_failed',
      record: record.id,
      session_id: record.payload.session_id,
      code,
      reason,
    });
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
  // The spooled bytes must still be the ones built: a bundle changed on disk is never uploaded. The very file that was
  // committed (its identity unchanged) is not read twice: the upload hashes it on the way out and refuses to complete
  // other bytes (or, when the signed URL carries the digest as a checksum, the storage service refuses them), and the
  // Control API checks the digest too.
  const unchanged = await spool.bundleUnchanged(record);
  if (!unchanged) {
    let actual: { size: number; sha256: string } | undefined;
    try {
      actual = await hashFile(bundleFile);
    } catch (error) {
      await failWith(
        'BUNDLE_INVALID',
        `the spooled bundle cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      );
      return undefined;
    }
    if (actual.size !== record.bundle.size || actual.sha256 !== record.bundle.sha256) {
      await failWith(
        'BUNDLE_INVALID',
        `the spooled bundle changed on disk: it has ${actual.size} bytes and SHA-256 ${actual.sha256}, the record ` +
          `says ${record.bundle.size} bytes and ${record.bundle.sha256}`,
      );
      return undefined;
    }
  }
  let manifest;
  try {
    // The manifest the record kept is the bundle's own while the bundle is the very file committed.
    manifest =
      unchanged && record.bundle.manifest !== undefined
        ? validManifest(record.bundle.manifest, bundleFile)
        : await readManifest(bundleFile);
  } catch (error) {
    await failWith('BUNDLE_INVALID', `the spooled bundle's manifest cannot be read: ${toBlueError(error).message}`);
    return undefined;
  }
  if (redactionRequired && manifest.redaction === undefined) {
    // Built before the policy asked for redaction: these bytes never leave the machine. The session's own files are
    // still there, so backfill captures it again, redacted (the failed record's capture is forgotten).
    await failWith(
      'REDACTION_REQUIRED',
      `the bundle was built without redaction, and the policy now asks for session_upload.redact: secrets; it is ` +
        `not uploaded (run \`blue-agent backfill --harness ${record.harness}\` to capture the session again, ` +
        `redacted)`,
    );
    return undefined;
  }
  // Resumable when the profile it was captured under can restore it (the resume picker lists only those).
  // A session whose files predate its profile (backfill found it so) is not resumable, whatever the profile says.
  const resumable =
    manifest.resumable !== false &&
    findInterval(profiles, manifest.compatibility_profile)?.interval.operations.includes('session_resume') === true;
  const result = await uploadBundle(
    client,
    { bundleFile, size: record.bundle.size, sha256: record.bundle.sha256, manifest, resumable, verified: !unchanged },
    options,
  );
  if (!(await spool.holds(claim))) return undefined; // judged dead and taken over: the record is another drain's now
  switch (result.kind) {
    case 'uploaded':
      await spool.completeUpload(claim, result.upload_id);
      report.uploaded.push({
        id: record.id,
        harness: record.harness,
        session_id: record.payload.session_id,
        upload_id: result.upload_id,
        ...(result.session_id === undefined ? {} : { captured_session_id: result.session_id }),
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

async function retryUpload(
  ctx: Context,
  spool: Spool,
  report: DrainReport,
  claim: Claim,
  code: string,
  reason: string,
  delayMs: number,
): Promise<void> {
  const at = ctx.clock.now();
  const next = at + Math.max(0, delayMs);
  const released = await spool.releaseUpload(claim, {
    error: { code, message: reason, at_unix_ms: at },
    retryAtUnixMs: next,
  });
  report.retried.push({
    ...failedEntry(released, code, reason),
    attempts: released.upload_attempts ?? 0,
    stage: 'upload',
    next_attempt_at_unix_ms: next,
  });
  await appendCaptureLog(ctx.paths.captureLogFile, {
    event: 'upload_retry',
    record: claim.id,
    session_id: claim.record.payload.session_id,
    code,
    reason,
  });
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
