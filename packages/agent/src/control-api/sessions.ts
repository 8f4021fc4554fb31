/**
 * The session routes of the Control API, for the commands people run (`sessions`, `resume`), in the shapes of Blue's
 * service contract (docs/contract.md): captured sessions listed and searched, one session with its artifacts, who it
 * is shared with, the members it may be shared with, who the caller is, and downloading its current artifact through
 * a fresh signed URL. Every answer is held to its generated validator before use: they come over the network and
 * drive what is shown and written on this machine. Works against this project's server and Blue's own, whose listing
 * ignores our `id_prefix` extension and whose answers carry no digest (see `page`, `download`).
 */
import type { Context } from '../context.js';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import type { CapturedSessionList } from '@blue-agent/contract/schema/generated/control-captured-sessions.js';
import type { SessionDownload } from '@blue-agent/contract/schema/generated/control-download.js';
import type { Identity as IdentityAnswer } from '@blue-agent/contract/schema/generated/control-identity.js';
import type { ShareMembers } from '@blue-agent/contract/schema/generated/control-members.js';
import type { SessionDetail as DetailAnswer } from '@blue-agent/contract/schema/generated/control-session-detail.js';
import type { SessionSharing } from '@blue-agent/contract/schema/generated/control-sharing-state.js';
import type { SharingUpdated } from '@blue-agent/contract/schema/generated/control-sharing-updated.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import { FULL_SESSION_ID, MIN_SESSION_PREFIX } from '@blue-agent/contract/util/session-ref.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { checkAnswer, type ControlClient, unusableAnswer } from './client.js';
import { controlClient } from './settings.js';
import { signedDownload, fetchSigned } from './session-download.js';
import {
  type SharingMode,
  type CapturedSession,
  type SessionDetail,
  type Sharing,
  type SharingUpdate,
  type Identity,
  type SessionQuery,
  type DownloadProgress,
  opt,
  forDisplay,
} from './captured-session.js';
export {
  type SharingMode,
  type CapturedSession,
  type SessionArtifact,
  type SessionDetail,
  type Sharing,
  type SharingUpdate,
  type Identity,
  type SessionQuery,
  type DownloadProgress,
  parseSession,
  sessionLabel,
} from './captured-session.js';
import { recipientsUnknown, deleteError, sharingError, tooLarge, readError } from './session-errors.js';

import { MAX_PAGES, resolveForResume, resolveSession } from './session-ids.js';

export { printable };

/** Session ids are UUIDs; people may type the first 8 or more characters (util/session-ref.ts, the dashboard's rule
 * too). */
const FULL_ID = FULL_SESSION_ID;
export const MIN_PREFIX = MIN_SESSION_PREFIX;
/** The contract's largest page. */
const PAGE_LIMIT = 100;
/** Blue's server refuses longer searches (`q` of members and listings). */
const MAX_QUERY = 200;

export class SessionsApi {
  constructor(
    readonly client: ControlClient,
    /** For retention: a session past `retention_expires_at` is expired. */
    private readonly now: () => number = Date.now,
  ) {}

  static async fromContext(ctx: Context): Promise<SessionsApi> {
    return new SessionsApi(await controlClient(ctx, { requireToken: true }), () => ctx.clock.now());
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** Whether a session passed its retention deadline (its bundle may be gone; a download answers 410). */
  expired(session: Pick<CapturedSession, 'retention_expires_at'>): boolean {
    if (session.retention_expires_at === null) return false;
    const at = Date.parse(session.retention_expires_at);
    return !Number.isNaN(at) && at <= this.now();
  }

  /** GET /auth/me. */
  async me(): Promise<Identity> {
    const body = checkAnswer<IdentityAnswer>(
      validators.validateIdentity,
      await this.call(() => this.client.requestJson('GET', this.client.routeUrl('auth/me'))),
      'GET /auth/me',
    );
    return { id: body.id, email: printable(body.email), role: body.role };
  }

  /**
   * One page in cursor mode (the resume picker's too), newest first, and the cursor of the next page (null at the
   * end): `cursor` is the last item's id. `id_prefix` is filtered here as well, since Blue's server ignores it.
   */
  async page(
    query: Omit<SessionQuery, 'q'>,
    cursor?: string,
    limit = PAGE_LIMIT,
  ): Promise<{ items: CapturedSession[]; next_cursor: string | null }> {
    const url = this.client.routeUrl('session-uploads');
    if (query.resumable === true) url.searchParams.set('resumable', 'true');
    if (query.harness !== undefined) url.searchParams.set('harness', query.harness);
    if (query.id_prefix !== undefined) url.searchParams.set('id_prefix', query.id_prefix);
    url.searchParams.set('limit', String(Math.min(PAGE_LIMIT, Math.max(1, limit))));
    if (cursor !== undefined) url.searchParams.set('cursor', cursor);
    const body = checkAnswer<CapturedSessionList>(
      validators.validateCapturedSessionList,
      await this.call(() => this.client.requestJson('GET', url)),
      'GET /session-uploads',
    );
    const items = body.items.map(forDisplay);
    const prefix = query.id_prefix;
    return {
      items: prefix === undefined ? items : items.filter((s) => s.id.startsWith(prefix)),
      next_cursor: body.next_cursor ?? null,
    };
  }

  /**
   * Every session matching `query`, newest first, walking the pages (bounded). A search (`q`) uses the numbered mode,
   * as Blue's server requires (it refuses `q` beside `cursor` or `limit`).
   */
  async list(
    query: Omit<SessionQuery, 'id_prefix'>,
    options: { max?: number } = {},
  ): Promise<{ items: CapturedSession[]; truncated: boolean }> {
    const max = options.max ?? 1000;
    const items: CapturedSession[] = [];
    const { q, ...listing } = query;
    if (q !== undefined) {
      for (let page = 1; page <= MAX_PAGES; page++) {
        const found = await this.numbered({ ...listing, q }, page);
        items.push(...found.items);
        if (items.length >= max)
          return { items: items.slice(0, max), truncated: items.length > max || page < found.pages };
        if (found.items.length === 0 || page >= found.pages) return { items, truncated: false };
      }
      return { items, truncated: true };
    }
    let cursor: string | undefined;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page = await this.page(listing, cursor);
      items.push(...page.items);
      if (page.next_cursor === null) return { items: items.slice(0, max), truncated: items.length > max };
      if (items.length >= max) return { items: items.slice(0, max), truncated: true };
      cursor = page.next_cursor;
    }
    return { items, truncated: true };
  }

  /**
   * One page of sessions by position, newest first (or best match first with `q`), with how many there are in all:
   * what `sessions list --limit --offset` shows. Pages of at most 100 are asked for until `limit` are there.
   */
  async window(
    query: { q?: string; harnesses?: readonly string[]; tag?: string; owner?: string },
    offset: number,
    limit: number,
  ): Promise<{ items: CapturedSession[]; total: number }> {
    const items: CapturedSession[] = [];
    let total = 0;
    while (items.length < limit) {
      const url = this.client.routeUrl('session-uploads');
      if (query.harnesses !== undefined && query.harnesses.length > 0)
        url.searchParams.set('harness', query.harnesses.join(','));
      if (query.owner !== undefined) url.searchParams.set('user_id', query.owner);
      if (query.tag !== undefined) url.searchParams.set('tag', query.tag);
      if (query.q !== undefined) url.searchParams.set('q', query.q.slice(0, MAX_QUERY));
      const want = Math.min(PAGE_LIMIT, limit - items.length);
      url.searchParams.set('offset', String(offset + items.length));
      url.searchParams.set('per_page', String(want));
      const body = checkAnswer<CapturedSessionList>(
        validators.validateCapturedSessionList,
        await this.call(() => this.client.requestJson('GET', url)),
        'GET /session-uploads',
      );
      total = body.total ?? total;
      items.push(...body.items.map(forDisplay));
      if (body.items.length < want) break;
    }
    return { items: items.slice(0, limit), total: Math.max(total, offset + items.length) };
  }

  /**
   * The first `limit` sessions a search (`q`) finds, best matches first, each with its snippet where the server has
   * one: what the resume picker asks for as the person types (`resumable: true`).
   */
  async search(query: Omit<SessionQuery, 'id_prefix'> & { q: string }, limit = PAGE_LIMIT): Promise<CapturedSession[]> {
    return (await this.numbered(query, 1, limit)).items;
  }

  private async numbered(
    query: SessionQuery,
    page: number,
    perPage = PAGE_LIMIT,
  ): Promise<{ items: CapturedSession[]; pages: number }> {
    const url = this.client.routeUrl('session-uploads');
    if (query.resumable === true) url.searchParams.set('resumable', 'true');
    if (query.harness !== undefined) url.searchParams.set('harness', query.harness);
    url.searchParams.set('q', (query.q ?? '').slice(0, MAX_QUERY));
    url.searchParams.set('page', String(page));
    url.searchParams.set('per_page', String(Math.min(PAGE_LIMIT, Math.max(1, perPage))));
    const body = checkAnswer<CapturedSessionList>(
      validators.validateCapturedSessionList,
      await this.call(() => this.client.requestJson('GET', url)),
      'GET /session-uploads',
    );
    return {
      items: body.items.map(forDisplay),
      pages: body.total_pages ?? (body.items.length < perPage ? page : page + 1),
    };
  }

  /** GET /session-uploads/{id}: the session, who it is shared with (user ids) and its artifacts, newest first. */
  async detail(id: string): Promise<SessionDetail> {
    const where = `GET /session-uploads/${id}`;
    const body = checkAnswer<DetailAnswer>(
      validators.validateSessionDetail,
      await this.call(() => this.client.requestJson('GET', this.client.routeUrl(`session-uploads/${id}`)), id),
      where,
    );
    if (body.session.id !== id) throw unusableAnswer(where, `it describes session ${body.session.id}, not ${id}`);
    return {
      session: forDisplay(body.session),
      shared_with: (body.sharing?.user_ids ?? []).map((u) => printable(u)),
      artifacts: body.artifacts.map((a) => ({
        id: a.id,
        status: printable(a.status),
        size_bytes: a.size_bytes,
        sha256: printable(a.sha256),
        created_at: printable(a.created_at),
        completed_at: opt(a.completed_at, 64),
        retention_expires_at: opt(a.retention_expires_at, 64),
      })),
    };
  }

  /** The detail of the session a full id or a prefix of at least 8 characters names (`resolve`). */
  async resolveDetail(idOrPrefix: string): Promise<SessionDetail> {
    const id = idOrPrefix.trim().toLowerCase();
    return this.detail(FULL_ID.test(id) ? id : (await this.resolve(idOrPrefix)).id);
  }

  /** The session a full id names (its detail), or a prefix of at least 8 characters names among what `query` lists. */
  resolve(idOrPrefix: string, query: Omit<SessionQuery, 'id_prefix'> = {}): Promise<CapturedSession> {
    return resolveSession(this, idOrPrefix, query);
  }

  /** The session `resume` may restore (`resolveForResume` of session-ids.ts). */
  resolveForResume(idOrPrefix: string): Promise<CapturedSession> {
    return resolveForResume(this, idOrPrefix);
  }

  /** GET /session-uploads/{id}/sharing: anyone who may see the session may read it; `can_edit` is the owner's. */
  async sharing(id: string): Promise<Sharing> {
    const where = `GET /session-uploads/${id}/sharing`;
    const body = checkAnswer<SessionSharing>(
      validators.validateSessionSharing,
      await this.call(() => this.client.requestJson('GET', this.client.routeUrl(`session-uploads/${id}/sharing`)), id),
      where,
    );
    return {
      mode: body.mode,
      can_edit: body.can_edit,
      recipient_count: body.recipient_count,
      recipients: body.recipients.map((r) => ({ id: printable(r.id), email: printable(r.email) })),
    };
  }

  /**
   * PUT /session-uploads/{id}/sharing with `{mode, user_ids}` only (Blue's server refuses any other field, and
   * `user_ids` outside `selected`): e-mail addresses are resolved first (`memberIds`).
   */
  /**
   * `DELETE /session-uploads/{id}` (blue-agent's Control API): the session, every revision and its objects, for good.
   * The owner or an administrator only; a Control API without the route says so.
   */
  async delete(id: string): Promise<void> {
    try {
      await this.call(() => this.client.requestJson('DELETE', this.client.routeUrl(`session-uploads/${id}`)), id, {
        ownerOnly: true,
      });
    } catch (error) {
      throw deleteError(error, id);
    }
  }

  async setSharing(id: string, mode: SharingMode, userIds: readonly string[]): Promise<SharingUpdate> {
    const where = `PUT /session-uploads/${id}/sharing`;
    const request = mode === 'selected' ? { mode, user_ids: [...userIds] } : { mode };
    let answer: unknown;
    try {
      answer = await this.call(
        () => this.client.requestJson('PUT', this.client.routeUrl(`session-uploads/${id}/sharing`), request),
        id,
        { ownerOnly: true },
      );
    } catch (error) {
      throw sharingError(error, id, userIds);
    }
    const body = checkAnswer<SharingUpdated>(validators.validateSharingUpdated, answer, where);
    if (body.id !== id) throw unusableAnswer(where, `it describes session ${body.id}, not ${id}`);
    return { id: body.id, mode: body.mode, user_ids: body.user_ids.map((u) => printable(u)) };
  }

  /**
   * The user id of each member named by e-mail address (address → id), through GET /session-uploads/members?q=EMAIL:
   * exactly one member whose address equals it, case-insensitively (the search is a substring match of at most 10
   * members). None, or more than one, is SHARE_RECIPIENT_UNKNOWN naming every such address. The caller is never a
   * member there.
   */
  async memberIds(emails: readonly string[]): Promise<Map<string, string>> {
    const ids = new Map<string, string>();
    const unknown: string[] = [];
    for (const email of emails) {
      const wanted = email.trim().toLowerCase();
      if (wanted.length > MAX_QUERY) {
        unknown.push(email);
        continue;
      }
      const url = this.client.routeUrl('session-uploads/members');
      url.searchParams.set('q', wanted);
      const body = checkAnswer<ShareMembers>(
        validators.validateShareMembers,
        await this.call(() => this.client.requestJson('GET', url)),
        'GET /session-uploads/members',
      );
      const exact = body.items.filter((m) => m.email.trim().toLowerCase() === wanted);
      if (exact.length === 1) ids.set(email, exact[0]!.id);
      else unknown.push(email);
    }
    if (unknown.length > 0)
      throw recipientsUnknown(unknown, 'no such member on the Control API (or more than one with that address)');
    return ids;
  }

  /**
   * Downloads the session's current artifact into `file` (created new, 0600) through a fresh signed URL: streamed,
   * refusing more bytes than expected, never sending the bearer token to the storage service. What is expected comes
   * from the download answer (this project's server says size and SHA-256) or else from the listing; Blue's server
   * states no digest, so then only the size is checked here, and the bundle's own verification, which every caller
   * runs next (resume: `verifyBundle`; export: `extractBundle`), checks each file against its manifest. Anything
   * wrong removes the file.
   */
  async download(
    session: CapturedSession,
    file: string,
    onProgress?: (progress: DownloadProgress) => void,
  ): Promise<{ size: number; sha256: string }> {
    const where = `POST /session-uploads/${session.id}/download`;
    // No bundle past the limit can be read (capture never makes one): do not even ask for a URL to fetch it.
    if (session.size_bytes !== null && session.size_bytes > LIMITS.bundleBytes)
      throw tooLarge(session.id, session.size_bytes);
    const answer = checkAnswer<SessionDownload>(
      validators.validateSessionDownload,
      await this.call(
        () => this.client.requestJson('POST', this.client.routeUrl(`session-uploads/${session.id}/download`), {}),
        session.id,
      ),
      where,
    );
    return fetchSigned(this.client, signedDownload(answer, session, where), session.id, file, onProgress);
  }

  /** Runs one request, its failure read as the session errors people see (`readError`). */
  private async call<T>(request: () => Promise<T>, id?: string, options: { ownerOnly?: boolean } = {}): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw readError(error, id, options);
    }
  }
}
