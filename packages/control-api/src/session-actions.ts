/**
 * What may be done to a captured session, by whom, and what the audit log records of it: the one place the API's
 * routes and the dashboard's pages both go through. Owners do everything with their sessions, administrators see,
 * download and delete everything, people a session is shared with may view and download it but never change its
 * sharing. A session the person may not see is "not found", whether or not it exists.
 */
import { randomBytes } from 'node:crypto';
import { badRequest, forbidden, HttpError, notFound } from './http.js';
import type { RouteContext } from './route-context.js';
import {
  isExpired,
  userActor,
  type Artifact,
  type AuditAction,
  type CapturedSession,
  type NewAuditEvent,
  type SharingMode,
  type User,
} from './store/index.js';

/** Named recipients of one session, at most (as Blue's server). */
export const MAX_RECIPIENTS = 500;

/**
 * How long after its upload URL expires a PUT may still be arriving: S3 checks a presigned URL's expiry when the
 * request begins, and a bundle takes a while to arrive (at the local store, no longer than the server's request
 * timeout).
 */
export const UPLOAD_LANDING_MS = 60 * 60_000;

/** The session when `user` may see it; otherwise 404, whether or not it exists. */
export async function visibleSession(rc: RouteContext, user: User, id: string): Promise<CapturedSession> {
  const session = await rc.store.session(id);
  if (session === undefined || !(await rc.store.canView(session, user))) throw notFound(`no session ${id}`);
  return session;
}

/** The audit entry of `action` on `session` by `user`. */
export function audited(
  user: User,
  session: CapturedSession,
  action: AuditAction,
  details: Record<string, unknown> = {},
): NewAuditEvent {
  return { actor: userActor(user), action, session_id: session.id, owner_id: session.owner_id, details };
}

/** Whether `user` reads `session` as an administrator (a session not theirs): such a read is in the audit log. */
function adminRead(user: User, session: CapturedSession): boolean {
  return user.is_admin && session.owner_id !== user.id;
}

/** An administrator reading a session that is not theirs is in the audit log. */
export async function auditAdminRead(
  rc: RouteContext,
  user: User,
  session: CapturedSession,
  what: string,
): Promise<void> {
  if (adminRead(user, session)) await rc.store.appendAudit(audited(user, session, 'session.read', { what }), rc.now());
}

/** A search snippet: passages of what a session says, the ones the search matched marked. */
export type Snippet = readonly { text: string; match: boolean }[];

/**
 * The snippets of a search's `sessions` for `user` (see ControlStore.snippets): passages of what each says, so an
 * administrator's snippets of sessions not theirs are reads like their pages: one `session.read` entry (`search`) for
 * each session shown with one, written before any is shown. The matches are marked by the store with marks made for
 * this call alone, so nothing a session says (a `[` of its own, say) can pass for a match.
 */
export async function searchSnippets(
  rc: RouteContext,
  user: User,
  sessions: readonly CapturedSession[],
  q: string,
): Promise<Map<string, Snippet>> {
  const now = rc.now();
  const nonce = randomBytes(16).toString('hex');
  const marks = { start: `MATCH${nonce}START`, stop: `MATCH${nonce}STOP` };
  const marked = await rc.store.snippets(
    sessions.map((s) => s.id),
    q,
    now,
    marks,
  );
  const read = sessions.filter((s) => marked.has(s.id) && adminRead(user, s));
  if (read.length > 0)
    await rc.store.appendAudits(
      read.map((s) => audited(user, s, 'session.read', { what: 'search' })),
      now,
    );
  return new Map([...marked].map(([id, text]) => [id, snippetParts(text, marks)]));
}

/** The passages of a marked snippet; a mark without its pair is dropped, never shown. */
function snippetParts(text: string, marks: { start: string; stop: string }): Snippet {
  const parts: { text: string; match: boolean }[] = [];
  let rest = text;
  while (rest !== '') {
    const start = rest.indexOf(marks.start);
    const stop = start === -1 ? -1 : rest.indexOf(marks.stop, start + marks.start.length);
    if (stop === -1) {
      parts.push({ text: rest.replaceAll(marks.start, '').replaceAll(marks.stop, ''), match: false });
      break;
    }
    if (start > 0) parts.push({ text: rest.slice(0, start).replaceAll(marks.stop, ''), match: false });
    parts.push({ text: rest.slice(start + marks.start.length, stop), match: true });
    rest = rest.slice(stop + marks.stop.length);
  }
  return parts.filter((p) => p.text !== '');
}

/** A snippet as text (the API's `snippet`, the CLI's): each match between `[` and `]`. */
export function snippetText(snippet: Snippet): string {
  return snippet.map((p) => (p.match ? `[${p.text}]` : p.text)).join('');
}

/**
 * A short-lived download URL for a verified upload of the session (its current one unless `artifactId` names an
 * earlier revision), recorded in the audit log before it is given out.
 */
export async function downloadLink(
  rc: RouteContext,
  user: User,
  session: CapturedSession,
  artifactId?: string,
): Promise<{ artifact: Artifact; url: string; method: string; headers: Record<string, string>; expiresAt: number }> {
  const artifact =
    artifactId === undefined
      ? session.current
      : (await rc.store.artifactsOf(session.id)).find((a) => a.id === artifactId);
  if (artifact === undefined || (artifact.status !== 'complete' && artifact.status !== 'superseded')) {
    throw new HttpError(
      404,
      'no_artifact',
      `session ${session.id} has no verified upload${artifactId === undefined ? '' : ` ${artifactId}`} to download`,
    );
  }
  const now = rc.now();
  if (isExpired(artifact, now)) {
    throw new HttpError(
      410,
      'expired',
      `that upload of session ${session.id} passed its retention deadline (` +
        `${new Date(artifact.retention_deadline).toISOString()}) and its bundle is gone`,
    );
  }
  const signed = await rc.blobs.presignDownload(artifact.blob_key, now + rc.downloadUrlTtlMs);
  // Written before the URL is given out: no download the log does not know of.
  await rc.store.appendAudit(audited(user, session, 'session.download', { artifact_id: artifact.id }), now);
  return {
    artifact,
    url: signed.url,
    method: signed.method,
    headers: signed.headers,
    expiresAt: signed.expiresAtUnixMs,
  };
}

/**
 * Replaces who the session is shared with: its owner only; recipients by user id or e-mail, resolved here. Answers
 * the recipients' ids, sorted.
 */
export async function changeSharing(
  rc: RouteContext,
  user: User,
  session: CapturedSession,
  mode: SharingMode,
  named: readonly string[],
): Promise<string[]> {
  if (session.owner_id !== user.id) throw forbidden(`only the owner of session ${session.id} may change its sharing`);
  if (mode !== 'selected' && named.length > 0)
    throw badRequest(`recipients are only given with mode "selected", not "${mode}"`);
  const ids = new Set<string>();
  for (const who of named) {
    // People name colleagues by e-mail more often than by id: either is taken.
    const recipient =
      (await rc.store.userById(who)) ?? (who.includes('@') ? await rc.store.userByEmail(who) : undefined);
    if (recipient === undefined) throw badRequest(`unknown user "${who.slice(0, 320)}"`, 'unknown_user');
    ids.add(recipient.id);
  }
  ids.delete(user.id);
  if (ids.size > MAX_RECIPIENTS)
    throw badRequest(
      `a session is shared with at most ${MAX_RECIPIENTS} people by name; share it with the workspace instead`,
    );
  if (mode === 'selected' && ids.size === 0)
    throw badRequest('mode "selected" needs at least one recipient other than you');
  const sorted = [...ids].sort();
  await rc.store.setSharing(session.id, mode, sorted);
  await rc.store.appendAudit(
    audited(user, session, 'session.share', { from: session.sharing_mode, mode, user_ids: sorted }),
    rc.now(),
  );
  return sorted;
}

/**
 * Deletes a captured session, every revision of it — metadata, sharing, search entry, objects — by its owner or an
 * administrator, and records it in the audit log. The database forgets it first (in one transaction with the audit
 * entry, the objects' keys queued); the objects go next, and `gc` deletes them once more after every upload URL signed
 * for them has expired: the local store refuses a PUT to a deleted session's URL, an S3 bucket cannot.
 */
export async function removeSession(rc: RouteContext, user: User, session: CapturedSession): Promise<void> {
  if (session.owner_id !== user.id && !user.is_admin)
    throw forbidden(`only the owner of session ${session.id} or an administrator may delete it`);
  const now = rc.now();
  const details = {
    harness: session.harness,
    native_session_id: session.native_session_id,
    title: session.current?.title ?? null,
  };
  // Every upload URL signed for the session is expired by then, and what it was still carrying has landed.
  const keys = await rc.store.deleteSession(
    session.id,
    audited(user, session, 'session.delete', details),
    now,
    now + rc.uploadUrlTtlMs + UPLOAD_LANDING_MS,
  );
  if (keys === undefined) throw notFound(`no session ${session.id}`);
  for (const key of keys) {
    try {
      await rc.blobs.delete(key);
      await rc.store.blobDeleted(key, now);
    } catch (error) {
      rc.log(
        'error',
        `session ${session.id} deleted, but not its object ${key} yet (gc will): ` +
          `${error instanceof Error ? error.message : String(error)}`,
        { event: 'blob_delete_failed' },
      );
    }
  }
}
