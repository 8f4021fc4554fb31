/**
 * Administration of a Control API data directory: users, policy revisions, retention. These open the same SQLite
 * database as a running server (WAL + busy timeout make that safe), so they work while it serves. Only `users add`
 * (and `serve`) create a data directory; the others refuse one that does not exist or holds no control.db.
 */
import { readFile, stat } from 'node:fs/promises';
import { BlueError, usageError } from '../errors.js';
import { MAX_POLICY_BYTES, validatePolicy } from '../policy/validate.js';
import { parseYamlText } from '../schema/index.js';
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
export async function publishPolicy(dataDir: string, file: string, now: number): Promise<{ published: PolicyRevision; ignoredRevision: unknown }> {
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
    return { published: store.publishPolicy(body, now), ignoredRevision };
  } finally {
    store.close();
  }
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
