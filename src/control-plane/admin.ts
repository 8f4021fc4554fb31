/**
 * Administration of a Control API data directory: users, policy revisions, retention. These open the same SQLite
 * database as a running server (WAL + busy timeout make that safe), so they work while it serves. Only `users add`
 * (and `serve`) create a data directory; the others refuse one that does not exist or holds no control.db.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { BlueError, usageError } from '../errors.js';
import { MAX_POLICY_BYTES, validatePolicy } from '../policy/validate.js';
import { FIXTURE_CERTIFIED, HARNESSES } from '../schema/generated/harness-names.js';
import { parseYamlText } from '../schema/index.js';
import { originOf } from '../util/url.js';
import type { BlobStore } from './blobs/types.js';
import { ControlStore, type PolicyRevision, type User } from './store.js';

const EMAIL = /^[^\s@]{1,200}@[^\s@]{1,200}$/;

export function addUser(dataDir: string, email: string, isAdmin: boolean, now: number): { user: User; token: string } {
  if (!EMAIL.test(email) || email.length > 320) throw usageError(`"${email}" is not an e-mail address`, 'Give the user\'s e-mail, e.g. ada@example.com.');
  const store = ControlStore.open(dataDir);
  try {
    if (store.userByEmail(email) !== undefined) {
      throw new BlueError('USAGE', `a user ${email} already exists`, { hint: 'Each e-mail address has one user and one token.' });
    }
    return store.addUser(email, isAdmin, now);
  } finally {
    store.close();
  }
}

export function listUsers(dataDir: string): User[] {
  const store = ControlStore.open(dataDir, { create: false });
  try {
    return store.listUsers();
  } finally {
    store.close();
  }
}

/**
 * Validates a policy file with the agent's own validator and publishes it as the next revision. The revision is the
 * server's to number, so whatever the file says is replaced (and reported).
 */
export async function publishPolicy(dataDir: string, file: string, now: number): Promise<{ published: PolicyRevision; ignoredRevision: unknown; warnings: string[] }> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (error) {
    throw new BlueError('POLICY_MISSING', `cannot read the policy file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, { file });
  }
  if (size > MAX_POLICY_BYTES) throw new BlueError('POLICY_INVALID', `the policy file ${file} is larger than ${MAX_POLICY_BYTES} bytes`, { file });
  const text = await readFile(file, 'utf8');
  const parsed = parseYamlText(text, file, 'POLICY_INVALID');
  const data = parsed.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new BlueError('POLICY_INVALID', `${file}: invalid policy: / must be a mapping of policy fields`, { file, path: '/' });
  }
  const record = data as Record<string, unknown>;
  const ignoredRevision = record.revision;
  // Validate with a stand-in revision: the file need not (and should not) carry one.
  validatePolicy({ ...record, revision: 1 }, file, parsed);
  const { revision: _dropped, ...body } = record;
  const store = ControlStore.open(dataDir, { create: false });
  try {
    const warning = presignOriginWarning(body, recordedPublicUrl(dataDir));
    return { published: store.publishPolicy(body, now), ignoredRevision, warnings: warning === undefined ? [] : [warning] };
  } finally {
    store.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// What `serve` knows and the admin commands need: the origin agents reach the server at, and a first start.

/** `<data>/server.json`: written by every `serve` start, read by `policy publish` (which runs without the server). */
const SERVER_FILE = 'server.json';
/** `<data>/admin-token`: the token of the administrator a first start creates (0600; never printed, never logged). */
export const ADMIN_TOKEN_FILE = 'admin-token';
export const FIRST_ADMIN_EMAIL = 'admin@localhost';

/** Atomically writes a private file (0600) in the data directory. */
function writePrivate(file: string, text: string): void {
  const temp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
    renameSync(temp, file);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
    throw error;
  }
}

export function recordPublicUrl(dataDir: string, publicUrl: string): void {
  writePrivate(path.join(dataDir, SERVER_FILE), `${JSON.stringify({ public_url: publicUrl })}\n`);
}

/** The public URL the last `serve` of this data directory ran with; undefined when it never ran (or the file is not ours). */
export function recordedPublicUrl(dataDir: string): string | undefined {
  try {
    const value = (JSON.parse(readFileSync(path.join(dataDir, SERVER_FILE), 'utf8')) as { public_url?: unknown }).public_url;
    return typeof value === 'string' && originOf(value) !== '' ? value : undefined;
  } catch {
    return undefined;
  }
}


/** Why agents of this server would refuse the policy's presign_url, or undefined when it is on the server's origin (or that is not known). */
export function presignOriginWarning(body: Record<string, unknown>, publicUrl: string | undefined): string | undefined {
  const upload = body.session_upload as { presign_url?: unknown } | undefined;
  const presign = typeof upload?.presign_url === 'string' ? upload.presign_url : undefined;
  if (presign === undefined || publicUrl === undefined) return undefined;
  const server = originOf(publicUrl);
  const target = originOf(presign);
  if (target === server) return undefined;
  return (
    `session_upload.presign_url is on ${target || presign}, not on this server's origin ${server} (recorded by \`control-plane serve\`): ` +
    `agents refuse it (POLICY_FOREIGN_ORIGIN) unless their allowed_upload_origins lists it; use ${server}/session-uploads/presign`
  );
}

/**
 * The policy a first start publishes: capture on for every harness, uploads presigned by this server; a harness
 * certified on fixtures rather than on its CLI (FIXTURE_CERTIFIED) also captures on versions past its ceiling.
 */
export function defaultPolicy(publicUrl: string): Record<string, unknown> {
  return {
    contract_version: 1,
    ttl_seconds: 3600,
    required: false,
    allowed_harnesses: [...HARNESSES],
    harnesses: Object.fromEntries(FIXTURE_CERTIFIED.map((h) => [h, { allow_unverified_versions: true }])),
    session_upload: { presign_url: `${publicUrl.replace(/\/+$/, '')}/session-uploads/presign` },
  };
}

export interface FirstStart {
  /** Created because the server had no user: the administrator's e-mail and where its token is. */
  admin?: { email: string; tokenFile: string };
  /** Published because the server had no policy. */
  policy?: PolicyRevision;
}

/**
 * What `serve` does on a data directory without users or without a policy: creates an administrator (its token in a
 * 0600 file, so that it reaches neither a terminal log nor argv) and publishes the default policy.
 */
export function firstStart(store: ControlStore, dataDir: string, publicUrl: string, now: number): FirstStart {
  const started: FirstStart = {};
  const created = store.transaction(() => (store.listUsers().length === 0 ? store.addUser(FIRST_ADMIN_EMAIL, true, now) : undefined));
  if (created !== undefined) {
    const tokenFile = path.join(dataDir, ADMIN_TOKEN_FILE);
    writePrivate(tokenFile, `${created.token}\n`);
    started.admin = { email: created.user.email, tokenFile };
  }
  if (store.currentPolicy() === undefined) {
    const body = defaultPolicy(publicUrl);
    validatePolicy({ ...body, revision: 1 }, '(default policy)');
    started.policy = store.publishPolicy(body, now);
  }
  return started;
}

/** Deletes the objects of uploads past their retention deadline; their metadata stays, marked expired. */
export async function collectGarbage(dataDir: string, blobs: BlobStore, now: number): Promise<{ deleted: string[]; failed: { id: string; error: string }[] }> {
  const store = ControlStore.open(dataDir, { create: false });
  const deleted: string[] = [];
  const failed: { id: string; error: string }[] = [];
  try {
    for (;;) {
      const batch = store.expiredUploads(now, 500).filter((u) => !failed.some((f) => f.id === u.id));
      if (batch.length === 0) break;
      for (const upload of batch) {
        try {
          await blobs.delete(upload.blob_key);
          store.markBlobDeleted(upload.id);
          deleted.push(upload.id);
        } catch (error) {
          failed.push({ id: upload.id, error: (error as Error).message });
        }
      }
      if (batch.every((u) => failed.some((f) => f.id === u.id))) break;
    }
    return { deleted, failed };
  } finally {
    store.close();
  }
}
