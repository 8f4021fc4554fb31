/**
 * What each native session's last capture held, so that capturing the same content again uploads nothing: a session
 * that ends twice without a new turn (a harness that fires a hook after every turn and again at exit, a session
 * resumed and closed at once) gives one upload, not two.
 *
 * One small file per session, `<Paths.capturedDir>/<harness>/<sha256 of the session id>.json`, written atomically
 * when a bundle is built, so concurrent drains need no lock (two builds of the same content write the same digest).
 * The content digest covers the profile and every file's role, native path, size and SHA-256: not the capture time,
 * the title or anything else that changes without the session changing. It is forgotten when that bundle is not
 * uploaded after all (it failed for good or was discarded), so the next capture of the same content is not skipped.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { BundleManifest } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../context.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import { writeStateFile } from '@blue-agent/contract/util/startup/fs-light.js';

const FORMAT = 'blue-agent-captured-v1';
/** A record is a few hundred bytes; anything larger is not one. */
const MAX_RECORD_BYTES = 4096;
const RECORD_NAME = /^[0-9a-f]{64}\.json$/;
/** A harness keeps at most this many records: past it, the oldest go (a session that old is not ended again). */
export const MAX_CAPTURED_PER_HARNESS = 2000;

export interface CapturedRecord {
  format: typeof FORMAT;
  harness: string;
  session_id: string;
  /** contentDigest of the bundle built. */
  content_sha256: string;
  /** The spool record that built it. */
  record: string;
  at_unix_ms: number;
  /**
   * When the build started reading the session: a session whose files have not changed since (their modification
   * time is older) holds nothing this capture did not (the idle sweep's test). Absent in older records.
   */
  read_started_at_unix_ms?: number;
}

/** The session's content as a bundle holds it: profile, and each file's role, native path, size and SHA-256. */
export function contentDigest(manifest: Pick<BundleManifest, 'compatibility_profile' | 'files'>): string {
  const files = manifest.files
    .map((f) => [f.role, f.native_path ?? '', f.size, f.sha256] as const)
    .sort((a, b) => (a.join('\0') < b.join('\0') ? -1 : a.join('\0') > b.join('\0') ? 1 : 0));
  return createHash('sha256')
    .update(JSON.stringify({ profile: manifest.compatibility_profile, files }))
    .digest('hex');
}

function recordFile(ctx: Context, harness: string, sessionId: string): string {
  return path.join(ctx.paths.capturedDir, harness, `${createHash('sha256').update(sessionId).digest('hex')}.json`);
}

/** The last capture of this session, or undefined (none, or a record that cannot be read, which counts as none). */
export async function lastCapture(
  ctx: Context,
  harness: string,
  sessionId: string,
): Promise<CapturedRecord | undefined> {
  let bytes: Buffer | undefined;
  try {
    bytes = await readChecked(recordFile(ctx, harness, sessionId), {
      code: 'SPOOL_UNSAFE',
      maxBytes: MAX_RECORD_BYTES,
      optional: true,
    });
  } catch {
    return undefined;
  }
  if (bytes === undefined) return undefined;
  try {
    const doc = JSON.parse(bytes.toString('utf8')) as unknown;
    if (
      !isRecord(doc) ||
      doc.format !== FORMAT ||
      doc.harness !== harness ||
      doc.session_id !== sessionId ||
      typeof doc.content_sha256 !== 'string'
    )
      return undefined;
    return doc as unknown as CapturedRecord;
  } catch {
    return undefined;
  }
}

export async function rememberCapture(
  ctx: Context,
  entry: Omit<CapturedRecord, 'format' | 'at_unix_ms'>,
): Promise<void> {
  const record: CapturedRecord = { format: FORMAT, ...entry, at_unix_ms: ctx.clock.now() };
  await writeStateFile(recordFile(ctx, entry.harness, entry.session_id), `${JSON.stringify(record)}\n`);
  await pruneCaptures(ctx, entry.harness);
}

/** Forgets the session's last capture when it is still the one built by `record` (a later capture is kept). */
export async function forgetCapture(ctx: Context, harness: string, sessionId: string, record: string): Promise<void> {
  const last = await lastCapture(ctx, harness, sessionId);
  if (last?.record !== record) return;
  await unlink(recordFile(ctx, harness, sessionId)).catch(() => undefined);
}

/**
 * Keeps a harness's records under MAX_CAPTURED_PER_HARNESS, oldest (by modification time) first out; returns how many
 * went. Cheap while under the bound: one directory read.
 */
export async function pruneCaptures(ctx: Context, harness: string, max = MAX_CAPTURED_PER_HARNESS): Promise<number> {
  const dir = path.join(ctx.paths.capturedDir, harness);
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => RECORD_NAME.test(n));
  if (names.length <= max) return 0;
  const aged: { file: string; mtime: number }[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    const info = await lstat(file).catch(() => undefined);
    aged.push({ file, mtime: info?.mtimeMs ?? 0 });
  }
  aged.sort((a, b) => a.mtime - b.mtime || (a.file < b.file ? -1 : 1));
  const doomed = aged.slice(0, aged.length - max);
  for (const { file } of doomed) await rm(file, { force: true });
  return doomed.length;
}
