/** Finding a session by its full id or by the prefix of at least 8 characters people type. */
import { FULL_SESSION_ID, SESSION_ID_PREFIX } from '@blue-agent/contract/util/session-ref.js';
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import type { CapturedSession, SessionDetail, SessionQuery } from './captured-session.js';
import { aRecord, ambiguous, expiredSession, malformedId, notFound, notResumable } from './session-errors.js';

/** At most this many pages are walked for one listing. */
export const MAX_PAGES = 50;

/** What finding a session asks of the session client. */
export interface SessionLookup {
  page(
    query: Omit<SessionQuery, 'q'>,
    cursor?: string,
  ): Promise<{ items: CapturedSession[]; next_cursor: string | null }>;
  detail(id: string): Promise<SessionDetail>;
  expired(session: Pick<CapturedSession, 'retention_expires_at'>): boolean;
}

/** The session a full id names (its detail), or a prefix of at least 8 characters names among what `query` lists. */
export async function resolveSession(
  api: SessionLookup,
  idOrPrefix: string,
  query: Omit<SessionQuery, 'id_prefix'> = {},
): Promise<CapturedSession> {
  const id = idOrPrefix.trim().toLowerCase();
  if (FULL_SESSION_ID.test(id)) {
    const { session } = await api.detail(id);
    if (query.harness !== undefined && session.harness !== query.harness) throw notFound(idOrPrefix, query);
    return session;
  }
  if (!SESSION_ID_PREFIX.test(id)) throw malformedId(idOrPrefix);
  const found = await byPrefix(api, id, query);
  if (found.items.length === 0) throw notFound(idOrPrefix, query);
  if (found.items.length > 1) throw ambiguous(id, found);
  return found.items[0]!;
}

/**
 * The sessions whose id starts with `prefix`: our server filters (`id_prefix`), Blue's does not, so pages are walked
 * (bounded) and filtered here until the listing ends or two are found.
 */
async function byPrefix(
  api: SessionLookup,
  prefix: string,
  query: Omit<SessionQuery, 'id_prefix'>,
): Promise<{ items: CapturedSession[]; more: boolean }> {
  const found: CapturedSession[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < MAX_PAGES; pages++) {
    const page = await api.page(
      {
        ...(query.resumable === true ? { resumable: true } : {}),
        ...(query.harness === undefined ? {} : { harness: query.harness }),
        id_prefix: prefix,
      },
      cursor,
    );
    found.push(...page.items);
    if (found.length > 5 || page.next_cursor === null) return { items: found, more: page.next_cursor !== null };
    cursor = page.next_cursor;
  }
  return { items: found, more: true };
}

/**
 * The session `resume` may restore: one the caller owns or that was shared with them, resumable (what the
 * `resumable=true` listing holds), by full id or a prefix of at least 8 characters. Malformed, not found, ambiguous,
 * not resumable and past retention are distinct errors.
 */
export async function resolveForResume(api: SessionLookup, idOrPrefix: string): Promise<CapturedSession> {
  const id = idOrPrefix.trim().toLowerCase();
  if (!FULL_SESSION_ID.test(id) && !SESSION_ID_PREFIX.test(id)) throw malformedId(idOrPrefix);
  // The server decides what is owned or shared (administrators included); only then is "resumable" looked at.
  const picker = await byPrefix(api, id, { resumable: true });
  if (picker.items.length > 1) throw ambiguous(id, picker);
  const resumable = picker.items[0];
  if (resumable === undefined) {
    // Visible but not in the picker: marked not resumable, or (for an administrator) neither owned nor shared.
    const visible = await byPrefix(api, id, {}).catch(() => ({ items: [] as CapturedSession[], more: false }));
    const marked = visible.items.length === 1 ? visible.items[0] : undefined;
    if (marked === undefined || marked.resumable) throw notFound(idOrPrefix, { resumable: true });
    if (marked.artifact_format === RECORD_FORMAT) throw aRecord(marked);
    throw notResumable(marked, 'its upload is marked as not resumable (its harness or profile could not restore it)');
  }
  if (api.expired(resumable)) throw expiredSession(resumable);
  if (resumable.status !== null && resumable.status !== 'complete')
    throw notResumable(resumable, `its current upload is ${resumable.status}, not complete`);
  return resumable;
}
