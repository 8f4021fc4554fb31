/**
 * Administration of a Control API: users, policy revisions, retention. These open the same database as the running
 * servers (SQLite in the data directory, WAL + busy timeout making that safe; or PostgreSQL), so they work while it
 * serves. Only `users add` (and `serve`) create a data directory; the others refuse one that does not exist or holds
 * no control.db.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { BlueError, lineColumnAt, usageError } from '@blue-agent/contract/errors.js';
import { validatePolicy } from '@blue-agent/contract/policy/validate.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import { FIXTURE_CERTIFIED, HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';
import { parseYamlText } from '@blue-agent/contract/schema/index.js';
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { originOf } from '@blue-agent/contract/util/url.js';
import type { BlobStore } from './blobs/types.js';
import { storedSearchText } from './search-text.js';
import { governanceProblems } from './governance.js';
import { captureStops, type CaptureStop } from './policy-review.js';
import {
  API_SCOPES,
  isExpired,
  MEMBER_SCOPES,
  openStore,
  READABLE_FORMATS,
  requireDataDir,
  type AuditActor,
  type ControlStore,
  type Grant,
  type PolicyRevision,
  type StoreOptions,
  type User,
} from './store/index.js';

const EMAIL = /^[^\s@]{1,200}@[^\s@]{1,200}$/;

/**
 * Administration commands record what they do in the audit log, by `by` (the local operator: `cli` and their OS
 * user), in the transaction of the change itself.
 */
export async function addUser(
  where: StoreOptions,
  email: string,
  isAdmin: boolean,
  now: number,
  by?: AuditActor,
): Promise<{ user: User; token: string }> {
  if (!EMAIL.test(email) || email.length > 320)
    throw usageError(`"${email}" is not an e-mail address`, "Give the user's e-mail, e.g. ada@example.com.");
  return withStore({ ...where, create: true }, async (store) => {
    if ((await store.userByEmail(email)) !== undefined) {
      throw new BlueError('USAGE', `a user ${email} already exists`, {
        hint: 'Each e-mail address has one user and one token.',
      });
    }
    return store.addUser(email, isAdmin, now, { by });
  });
}

export async function listUsers(where: StoreOptions): Promise<User[]> {
  return withStore({ ...where, create: false }, (store) => store.listUsers());
}

/** The user of `email`, or a USAGE error naming it. */
async function userNamed(store: ControlStore, email: string): Promise<User> {
  const user = await store.userByEmail(email);
  if (user === undefined)
    throw new BlueError('USAGE', `there is no user ${email}`, { hint: 'See `blue-agent control-plane users list`.' });
  return user;
}

/** `control-plane tokens add`: a new personal token for an existing user (every scope their role allows). */
export async function addToken(
  where: StoreOptions,
  email: string,
  label: string | undefined,
  now: number,
  by?: AuditActor,
): Promise<{ user: User; token: string; grant: Grant }> {
  return withStore({ ...where, create: false }, async (store) => {
    const user = await userNamed(store, email);
    const scopes = user.is_admin ? API_SCOPES : MEMBER_SCOPES;
    const made = await store.identity.addPersonalToken(
      user.id,
      scopes,
      (label ?? 'token from tokens add').slice(0, 200),
      now,
      by,
    );
    return { user, ...made };
  });
}

/** How long a sign-in link made by `users link` or a first start works. */
export const SIGN_IN_LINK_TTL_MS = 15 * 60_000;

/** The browser URL of a sign-in link: its secret in the fragment, which browsers never send to a server. */
export function signInLinkUrl(publicUrl: string, secret: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/auth/link#${secret}`;
}

/** `control-plane users link`: a one-time browser sign-in link for a user, on the URL `serve` recorded. */
export async function makeSignInLink(
  where: StoreOptions,
  email: string,
  now: number,
  by?: AuditActor,
): Promise<{ user: User; url: string; expires_at: number }> {
  return withStore({ ...where, create: false }, async (store) => {
    const user = await userNamed(store, email);
    const publicUrl = await store.publicUrl();
    if (publicUrl === undefined) {
      throw new BlueError('USAGE', 'this Control API has not been served yet, so its address is not known', {
        hint: 'Start `blue-agent control-plane serve` once, then make the link.',
      });
    }
    const secret = await store.identity.createSignInLink(user.id, now, SIGN_IN_LINK_TTL_MS, by);
    return { user, url: signInLinkUrl(publicUrl, secret), expires_at: now + SIGN_IN_LINK_TTL_MS };
  });
}

/** `control-plane tokens list`: everyone's sign-ins, or one user's, newest first. */
export async function listTokens(where: StoreOptions, email: string | undefined): Promise<Grant[]> {
  return withStore({ ...where, create: false }, async (store) =>
    store.identity.grants(email === undefined ? undefined : (await userNamed(store, email)).id),
  );
}

/** `control-plane tokens revoke`: ends a sign-in; its tokens fail at the next request to any replica. */
export async function revokeToken(where: StoreOptions, id: string, now: number, by?: AuditActor): Promise<Grant> {
  return withStore({ ...where, create: false }, async (store) => {
    const revoked = await store.identity.revokeGrant(id, now, by);
    if (revoked === undefined)
      throw new BlueError('USAGE', `there is no token ${id}`, { hint: 'See `blue-agent control-plane tokens list`.' });
    return revoked;
  });
}

/** Opens the database, runs `fn`, closes it. */
async function withStore<T>(where: StoreOptions, fn: (store: ControlStore) => Promise<T>): Promise<T> {
  const store = await openStore(where);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * A policy document (YAML or JSON) checked as agents will check it, and by Blue's rules for what clients it needs:
 * the body to publish (without a revision: the server makes it) and the revision the text named, if any. `where`
 * names the text in errors (a file, or the dashboard's form).
 */
export function checkPolicyText(
  text: string,
  where: string,
): { body: Record<string, unknown>; ignoredRevision: unknown } {
  if (Buffer.byteLength(text) > MAX_POLICY_BYTES)
    throw new BlueError('POLICY_INVALID', `${where} is larger than ${MAX_POLICY_BYTES} bytes`, { file: where });
  // The text is kept as published, and PostgreSQL's text holds no NUL (nor does a YAML document).
  const nul = text.indexOf('\u0000');
  if (nul >= 0) {
    const at = lineColumnAt(text, nul);
    throw new BlueError(
      'POLICY_INVALID',
      `${where}:${at.line}:${at.column}: a policy is text, and this one holds a NUL character`,
      { file: where, ...at, hint: 'Check that the file is the policy, saved as UTF-8 text.' },
    );
  }
  const parsed = parseYamlText(text, where, 'POLICY_INVALID');
  const data = parsed.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new BlueError('POLICY_INVALID', `${where}: invalid policy: / must be a mapping of policy fields`, {
      file: where,
      path: '/',
    });
  }
  const record = data as Record<string, unknown>;
  // Validate with a stand-in revision: the text need not (and should not) carry one.
  validatePolicy({ ...record, revision: 1 }, where, parsed, 'authored');
  const problems = governanceProblems(record);
  if (problems.length > 0)
    throw new BlueError('POLICY_INVALID', `${where}: ${problems[0]!}`, {
      file: where,
      hint: problems.length > 1 ? `Also: ${problems.slice(1).join('; ')}` : undefined,
    });
  const { revision: ignoredRevision, ...given } = record;
  // The contract requires allowed_harnesses: a revision that leaves it out allows every harness this server knows.
  return {
    body: given.allowed_harnesses === undefined ? { ...given, allowed_harnesses: [...HARNESSES] } : given,
    ignoredRevision,
  };
}

export interface Published {
  published: PolicyRevision;
  ignoredRevision: unknown;
  warnings: string[];
  /** Set when the revision stops capture on every machine (published because it was confirmed). */
  captureStop?: CaptureStop;
}

/** How many times a publish looks again when other revisions are published between its check and its write. */
const PUBLISH_ATTEMPTS = 5;

/**
 * Validates a policy file with the agent's own validator, and Blue's rules for what clients it needs, and publishes it
 * as the next revision, its text kept as written. The revision id is the server's to make, so whatever the file says
 * is replaced (and reported). A revision that would stop capture on every machine (captureStops) is refused
 * (POLICY_CONFIRMATION_REQUIRED) unless `confirm`; the check and the publish see the same current revision.
 */
export async function publishPolicy(
  where: StoreOptions,
  file: string,
  now: number,
  options: { confirm?: boolean; by?: AuditActor } = {},
): Promise<Published> {
  // A mistyped --data is the first thing to say, before anything about the file.
  if (where.databaseUrl === undefined || where.databaseUrl === '') requireDataDir(where.dataDir);
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (error) {
    throw new BlueError(
      'POLICY_MISSING',
      `cannot read the policy file ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      { file },
    );
  }
  if (size > MAX_POLICY_BYTES)
    throw new BlueError('POLICY_INVALID', `the policy file ${file} is larger than ${MAX_POLICY_BYTES} bytes`, { file });
  const text = await readFile(file, 'utf8');
  const { body, ignoredRevision } = checkPolicyText(text, file);
  return withStore({ ...where, create: false }, async (store) => {
    const warning = presignOriginWarning(body, await store.publicUrl());
    const warnings = warning === undefined ? [] : [warning];
    for (let attempt = 0; attempt < PUBLISH_ATTEMPTS; attempt++) {
      const current = await store.currentPolicy();
      const captureStop = captureStops(current?.body, body);
      if (captureStop !== undefined && options.confirm !== true)
        throw confirmationRequired(file, current!.revision, captureStop);
      const published = await store.publishPolicyOver(body, current?.revision, now, { text, by: options.by });
      if (published !== undefined)
        return { published, ignoredRevision, warnings, ...(captureStop === undefined ? {} : { captureStop }) };
    }
    throw new BlueError(
      'CONCURRENT_MODIFICATION',
      `other policy revisions kept being published while ${file} was: nothing was published`,
      {
        file,
        hint: 'Run the command again (see the current revision with `blue-agent control-plane policy show`).',
      },
    );
  });
}

function confirmationRequired(file: string, current: string, stop: CaptureStop): BlueError {
  return new BlueError(
    'POLICY_CONFIRMATION_REQUIRED',
    `${file} would stop session capture on every machine: ${stop.reasons.join('; ')} (the current revision is ` +
      `${current}); once it is published, ${stop.effect}. Nothing was published`,
    { file, hint: `If that is what you want, publish it again with --confirm; if not, fix ${file}.` },
  );
}

/** `control-plane policy show`: the current revision, or the one named. */
export async function showPolicy(where: StoreOptions, revision: string | undefined): Promise<PolicyRevision> {
  return withStore({ ...where, create: false }, async (store) => {
    const found = revision === undefined ? await store.currentPolicy() : await store.policyRevision(revision);
    if (found !== undefined) return found;
    if (revision === undefined)
      throw new BlueError('POLICY_MISSING', 'no policy has been published yet', {
        hint:
          'Publish one with `blue-agent control-plane policy publish FILE` (or start `control-plane serve`, ' +
          'which publishes a default one).',
      });
    throw new BlueError('POLICY_MISSING', `there is no policy revision ${JSON.stringify(revision.slice(0, 128))}`, {
      hint: 'Give a revision id as `policy publish` printed it, or leave --revision out for the current one.',
    });
  });
}

/**
 * The text a revision was published as; for one published before texts were kept, its document as YAML (without the
 * revision id, which the server makes).
 */
export function publishedText(revision: Pick<PolicyRevision, 'body' | 'text'>): string {
  if (revision.text !== null) return revision.text;
  const { revision: _id, ...rest } = revision.body;
  return stringify(rest);
}

// ---------------------------------------------------------------------------------------------------------------
// What `serve` knows and the admin commands need: the origin agents reach the server at, and a first start.

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

/** Why agents of this server would refuse the policy's presign_url, or undefined when it is on the server's origin (or
 * that is not known). */
export function presignOriginWarning(body: Record<string, unknown>, publicUrl: string | undefined): string | undefined {
  const upload = body.session_upload as { presign_url?: unknown } | undefined;
  const presign = typeof upload?.presign_url === 'string' ? upload.presign_url : undefined;
  if (presign === undefined || publicUrl === undefined) return undefined;
  const server = originOf(publicUrl);
  const target = originOf(presign);
  if (target === server) return undefined;
  return (
    `session_upload.presign_url is on ${target || presign}, not on this server's origin ${server} (recorded by ` +
    `\`control-plane serve\`): ` +
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
  /** Created because the server had no user: the administrator's e-mail, where its token is, and a sign-in link. */
  admin?: { email: string; tokenFile: string; signInUrl: string };
  /** Published because the server had no policy. */
  policy?: PolicyRevision;
}

/**
 * What `serve` does on a Control API without users or without a policy: creates an administrator (its token in a
 * 0600 file of the data directory, so that it reaches neither a terminal log nor argv) and publishes the default
 * policy. Both happen at most once, however many replicas start at the same time; the audit log says `by` did them.
 */
export async function firstStart(
  store: ControlStore,
  dataDir: string,
  publicUrl: string,
  now: number,
  by?: AuditActor,
): Promise<FirstStart> {
  const started: FirstStart = {};
  const created = await store.addFirstAdmin(FIRST_ADMIN_EMAIL, now, by);
  if (created !== undefined) {
    const tokenFile = path.join(dataDir, ADMIN_TOKEN_FILE);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writePrivate(tokenFile, `${created.token}\n`);
    const secret = await store.identity.createSignInLink(created.user.id, now, SIGN_IN_LINK_TTL_MS, by);
    started.admin = { email: created.user.email, tokenFile, signInUrl: signInLinkUrl(publicUrl, secret) };
  }
  const body = defaultPolicy(publicUrl);
  validatePolicy({ ...body, revision: 1 }, '(default policy)', undefined, 'authored');
  const text =
    `# The policy a first start publishes: capture on for every harness, uploads presigned by this ` +
    `server.\n${stringify(body)}`;
  const published = await store.publishFirstPolicy(body, now, { text, by });
  if (published !== undefined) started.policy = published;
  return started;
}

/** Deletes the objects of artifacts past their retention deadline; their metadata stays, marked expired. */
export interface GarbageCollected {
  /** Artifacts past their retention deadline whose objects went. */
  deleted: string[];
  /** Keys of deleted sessions' objects that went. */
  deleted_objects: string[];
  failed: { id: string; error: string }[];
  /** Search entries of sessions whose current upload expired: what their bundle said, deleted. */
  expired_search_entries: number;
  /** Expired device codes, browser sessions, sign-in links and tokens, and sign-ins that ended long ago, deleted. */
  expired_sign_in_records: number;
}

/** `control-plane gc`: collectWith on the store `where` names. */
export async function collectGarbage(where: StoreOptions, blobs: BlobStore, now: number): Promise<GarbageCollected> {
  return withStore({ ...where, create: false }, (store) => collectWith(store, blobs, now));
}

/**
 * Deletes the objects that are due: past their retention (the artifact stays, marked expired) and of deleted sessions;
 * the search entries of sessions whose current upload expired (what was read from the bundle goes with it); and the
 * sign-in records that expired. Idempotent, so replicas (and the CLI) may run it at the same time.
 */
export async function collectWith(store: ControlStore, blobs: BlobStore, now: number): Promise<GarbageCollected> {
  const deleted: string[] = [];
  const deletedObjects: string[] = [];
  const failed: { id: string; error: string }[] = [];
  const failedIds = new Set<string>();
  // First, whatever becomes of the objects: search has left these sessions out since their deadline.
  const expiredSearch = await store.dropExpiredSearch(now);
  /** Deletes each object of `batch` not failed before; false when nothing was left to try. */
  const sweep = async <T>(
    batch: T[],
    idOf: (item: T) => string,
    keyOf: (item: T) => string,
    done: (item: T) => Promise<void>,
  ): Promise<boolean> => {
    const todo = batch.filter((item) => !failedIds.has(idOf(item)));
    for (const item of todo) {
      try {
        await blobs.delete(keyOf(item));
        await done(item);
      } catch (error) {
        failed.push({ id: idOf(item), error: (error as Error).message });
        failedIds.add(idOf(item));
      }
    }
    return todo.length > 0;
  };
  // Objects past their retention deadline: the artifact stays, marked expired.
  while (
    await sweep(
      await store.expiredArtifacts(now, 500),
      (a) => a.id,
      (a) => a.blob_key,
      async (a) => {
        await store.markBlobDeleted(a.id);
        deleted.push(a.id);
      },
    )
  );
  // Objects of deleted sessions that could not be deleted at once, or may have been uploaded after (a PUT to a URL
  // signed before the delete).
  while (
    await sweep(
      await store.blobDeletionsDue(now, 500),
      (key) => key,
      (key) => key,
      async (key) => {
        await store.blobDeleted(key, now);
        deletedObjects.push(key);
      },
    )
  );
  const expired = await store.identity.purgeExpired(now);
  return {
    deleted,
    deleted_objects: deletedObjects,
    failed,
    expired_search_entries: expiredSearch,
    expired_sign_in_records: expired,
  };
}

export interface ReindexResult {
  /** Sessions whose entry was rebuilt, with what their bundle says. */
  indexed: number;
  /** Sessions indexed by title and summary only: no session bundle, its object gone (retention) or unreadable. */
  without_text: number;
  /** Sessions whose current upload changed while they were read: their complete indexed the new one. */
  skipped: number;
  /** Sessions whose current upload is past its retention deadline: no entry (search leaves them out). */
  expired: number;
  total: number;
  /** Where an interrupted run was taken up (a session id), or null for a run from the start. */
  resumed_after: string | null;
}

/**
 * `control-plane reindex`: rebuilds every session's search entry from its current upload's object, one session at a
 * time (memory bounded by one bundle's text), in session id order. The position is saved after each session, so a run
 * that is stopped goes on from there next time (`restart` starts over). A session whose upload expired gets no entry.
 */
export async function reindex(
  where: StoreOptions,
  blobs: BlobStore,
  profiles: ProfileSet,
  now: () => number,
  options: { restart?: boolean; onProgress?: (done: number, total: number) => void } = {},
): Promise<ReindexResult> {
  return withStore({ ...where, create: false }, async (store) => {
    const saved = options.restart === true ? undefined : await store.reindexCursor();
    const total = await store.countIndexable();
    const result: ReindexResult = {
      indexed: 0,
      without_text: 0,
      skipped: 0,
      expired: 0,
      total,
      resumed_after: saved ?? null,
    };
    await store.dropExpiredSearch(now());
    let after = saved ?? '';
    let done = 0;
    for (;;) {
      const batch = await store.indexable(after, 50);
      if (batch.length === 0) break;
      for (const { session_id: sessionId, artifact } of batch) {
        const expired = isExpired(artifact, now());
        const text =
          READABLE_FORMATS.has(artifact.artifact_format) && !expired
            ? await storedSearchText(blobs, artifact, profiles)
            : undefined;
        if (expired) result.expired++;
        else if (!(await store.setSearchText(sessionId, artifact.id, text ?? '', now()))) result.skipped++;
        else if (text === undefined) result.without_text++;
        else result.indexed++;
        after = sessionId;
        await store.setReindexCursor(after);
        options.onProgress?.(++done, total);
      }
    }
    await store.setReindexCursor(undefined);
    return result;
  });
}
