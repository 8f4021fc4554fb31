/**
 * The session routes of the Control API, for the commands people run (`sessions`, `resume`), in the shapes of Blue's
 * service contract (docs/contract.md): captured sessions listed and searched, one session with its artifacts, who it
 * is shared with, the members it may be shared with, who the caller is, and downloading its current artifact through
 * a fresh signed URL. Every answer is held to its generated validator before use: they come over the network and
 * drive what is shown and written on this machine. Works against this project's server and Blue's own, whose listing
 * ignores our `id_prefix` extension and whose answers carry no digest (see `page`, `download`).
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import type { Context } from '../context.js';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { CapturedSession as CapturedSessionAnswer } from '@blue-agent/contract/schema/generated/control-captured-session.js';
import type { CapturedSessionList } from '@blue-agent/contract/schema/generated/control-captured-sessions.js';
import type { SessionDownload } from '@blue-agent/contract/schema/generated/control-download.js';
import type { Identity as IdentityAnswer } from '@blue-agent/contract/schema/generated/control-identity.js';
import type { ShareMembers } from '@blue-agent/contract/schema/generated/control-members.js';
import type { SessionDetail as SessionDetailAnswer } from '@blue-agent/contract/schema/generated/control-session-detail.js';
import type { SessionSharing } from '@blue-agent/contract/schema/generated/control-sharing-state.js';
import type { SharingUpdated } from '@blue-agent/contract/schema/generated/control-sharing-updated.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import { FULL_SESSION_ID, MIN_SESSION_PREFIX, SESSION_ID_PREFIX } from '@blue-agent/contract/util/session-ref.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { checkAnswer, type ControlClient, unusableAnswer } from './client.js';
import { UploadError } from './errors.js';
import { header, readSome } from './http.js';
import { describeNetworkError, safeUrl, scrubText } from './scrub.js';
import { controlClient } from './settings.js';
import { loadUndici } from './undici.js';

export { printable };

export type SharingMode = CapturedSessionAnswer['sharing_mode'];

/**
 * A captured session (Blue's CapturedSession: `id` is the captured session's id, the artifact fields are its current
 * artifact's), every optional field made explicit (null when the server did not say), its text fit for a terminal.
 * `shared` is there only in the resume picker's listing (`resumable=true`); `sha256` and `artifact_id` are this
 * project's extensions, null from Blue's server.
 */
export interface CapturedSession {
  id: string;
  user_id: string;
  user_email: string;
  harness: string;
  compatibility_profile: string;
  native_session_id: string;
  cwd: string | null;
  artifact_format: string;
  resumable: boolean;
  title: string | null;
  summary: string | null;
  source_captured_at: string | null;
  repository: { root: string | null; remote: string | null };
  sharing_mode: SharingMode;
  share_recipient_count: number;
  /** Words a stored or imported record carries (this project's extension; none from Blue's server). */
  tags: string[];
  shared?: boolean;
  updated_at: string;
  status: string | null;
  size_bytes: number | null;
  content_type: string | null;
  retention_expires_at: string | null;
  sha256: string | null;
  artifact_id: string | null;
  /** With a search: what the session says around the match, the matched words in [brackets] (blue-agent's Control API).
   * */
  snippet?: string;
}

/** One upload of a session (`artifacts` of GET /session-uploads/{id}), newest first. */
export interface SessionArtifact {
  id: string;
  status: string;
  size_bytes: number;
  sha256: string;
  created_at: string;
  completed_at: string | null;
  retention_expires_at: string | null;
}

/** GET /session-uploads/{id}: the session, the user ids it is shared with, its artifacts. */
export interface SessionDetail {
  session: CapturedSession;
  shared_with: string[];
  artifacts: SessionArtifact[];
}

/** GET /session-uploads/{id}/sharing. */
export interface Sharing {
  mode: SharingMode;
  /** The caller owns the session (only the owner changes its sharing). */
  can_edit: boolean;
  recipient_count: number;
  recipients: { id: string; email: string }[];
}

/** PUT /session-uploads/{id}/sharing's answer. */
export interface SharingUpdate {
  id: string;
  mode: SharingMode;
  user_ids: string[];
}

/** GET /auth/me: who the token belongs to. */
export interface Identity {
  id: string;
  email: string;
  role: 'admin' | 'member';
}

export interface SessionQuery {
  /** Searched by the server in titles, summaries, native ids and directories. */
  q?: string;
  harness?: string;
  /** The resume picker's listing: sessions the caller owns or that were shared with them, resumable. */
  resumable?: boolean;
  /** Our extension: sessions whose id starts with it (Blue's server ignores it: see `page`). */
  id_prefix?: string;
}

export interface DownloadProgress {
  received: number;
  /** Undefined when neither the server nor the listing says how large the bundle is. */
  total: number | undefined;
}

/** Session ids are UUIDs; people may type the first 8 or more characters (util/session-ref.ts, the dashboard's rule
 * too). */
const FULL_ID = FULL_SESSION_ID;
const ID_PREFIX = SESSION_ID_PREFIX;
export const MIN_PREFIX = MIN_SESSION_PREFIX;
/** The contract's largest page. */
const PAGE_LIMIT = 100;
/** At most this many pages are walked for one listing. */
const MAX_PAGES = 50;
/** The slowest download still waited for. */
const MIN_BYTES_PER_SECOND = 32 * 1024;
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
    const body = checkAnswer<SessionDetailAnswer>(
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
  async resolve(idOrPrefix: string, query: Omit<SessionQuery, 'id_prefix'> = {}): Promise<CapturedSession> {
    const id = idOrPrefix.trim().toLowerCase();
    if (FULL_ID.test(id)) {
      const { session } = await this.detail(id);
      if (query.harness !== undefined && session.harness !== query.harness) throw notFound(idOrPrefix, query);
      return session;
    }
    if (!ID_PREFIX.test(id)) throw malformedId(idOrPrefix);
    const found = await this.byPrefix(id, query);
    if (found.items.length === 0) throw notFound(idOrPrefix, query);
    if (found.items.length > 1) throw ambiguous(id, found);
    return found.items[0]!;
  }

  /**
   * The sessions whose id starts with `prefix`: our server filters (`id_prefix`), Blue's does not, so pages are walked
   * (bounded) and filtered here until the listing ends or two are found.
   */
  private async byPrefix(
    prefix: string,
    query: Omit<SessionQuery, 'id_prefix'>,
  ): Promise<{ items: CapturedSession[]; more: boolean }> {
    const found: CapturedSession[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page = await this.page(
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
  async resolveForResume(idOrPrefix: string): Promise<CapturedSession> {
    const id = idOrPrefix.trim().toLowerCase();
    if (!FULL_ID.test(id) && !ID_PREFIX.test(id)) throw malformedId(idOrPrefix);
    // The server decides what is owned or shared (administrators included); only then is "resumable" looked at.
    const picker = await this.byPrefix(id, { resumable: true });
    if (picker.items.length > 1) throw ambiguous(id, picker);
    const resumable = picker.items[0];
    if (resumable === undefined) {
      // Visible but not in the picker: marked not resumable, or (for an administrator) neither owned nor shared.
      const visible = await this.byPrefix(id, {}).catch(() => ({ items: [] as CapturedSession[], more: false }));
      const marked = visible.items.length === 1 ? visible.items[0] : undefined;
      if (marked === undefined || marked.resumable) throw notFound(idOrPrefix, { resumable: true });
      if (marked.artifact_format === RECORD_FORMAT) {
        throw new BlueError(
          'SESSION_WRONG_KIND',
          `session ${marked.id} (${marked.title ?? marked.native_session_id}) is a record stored from ` +
            `${marked.harness}, not a session a harness captured: there is nothing to resume`,
          {
            hint: `Read it with \`blue-agent sessions export ${marked.id.slice(0, 8)} --format markdown\`.`,
          },
        );
      }
      throw notResumable(marked, 'its upload is marked as not resumable (its harness or profile could not restore it)');
    }
    if (this.expired(resumable)) {
      throw new BlueError(
        'SESSION_EXPIRED',
        `session ${resumable.id} passed its retention deadline (${resumable.retention_expires_at}); its bundle is gone`,
        { hint: 'Nothing can be restored from it.' },
      );
    }
    if (resumable.status !== null && resumable.status !== 'complete')
      throw notResumable(resumable, `its current upload is ${resumable.status}, not complete`);
    return resumable;
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
      if (error instanceof UploadError && error.status === 403) {
        throw new BlueError('SESSION_NOT_OWNED', `only the owner of session ${id} or an administrator may delete it`, {
          hint: 'Ask the owner; `blue-agent sessions show` names them.',
        });
      }
      if (error instanceof UploadError && error.status === 405) {
        throw new BlueError(
          'UPLOAD_REJECTED',
          `this Control API does not delete sessions (DELETE /session-uploads/${id} answered 405)`,
          {
            hint: "Ask the Control API's administrators to delete it, or let its retention run out.",
          },
        );
      }
      throw error;
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
      if (error instanceof BlueError && error.code === 'SESSION_NOT_FOUND') throw error;
      // 403 to anyone but the owner; 400 for a recipient that is not an active member (ours says unknown_user).
      if (error instanceof UploadError && error.status === 403) {
        throw new BlueError('SESSION_NOT_OWNED', `only the owner of session ${id} may change its sharing`, {
          hint: 'Ask the owner to share it; `blue-agent sessions show` names them.',
        });
      }
      if (
        error instanceof UploadError &&
        error.status === 400 &&
        (error.serverCode === 'unknown_user' || /recipients must be active/i.test(error.message))
      ) {
        throw recipientsUnknown(userIds, 'no such member on the Control API');
      }
      throw error;
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
    const signed = signedDownload(answer, session, where);
    if (signed.size !== undefined && signed.size > LIMITS.bundleBytes) throw tooLarge(session.id, signed.size);
    const cap = signed.size ?? LIMITS.bundleBytes;
    const get = `GET ${safeUrl(signed.url)}`;
    const budgetMs = this.client.timeoutMs + Math.ceil((cap / MIN_BYTES_PER_SECOND) * 1000);
    let response: Dispatcher.ResponseData;
    try {
      const undici = await loadUndici();
      response = await undici.request(signed.url, {
        method: 'GET',
        headers: { ...signed.headers, 'user-agent': this.client.userAgent },
        dispatcher: await this.client.connectionPool(),
        signal: AbortSignal.timeout(budgetMs),
      });
    } catch (error) {
      throw new BlueError('DOWNLOAD_FAILED', `${get}: ${describeNetworkError(error)}`, {
        hint: 'Check the network and try again.',
      });
    }
    if (response.statusCode !== 200) {
      const text = scrubText(await readSome(response, 2048));
      throw new BlueError(
        'DOWNLOAD_FAILED',
        `${get} answered HTTP ${response.statusCode}${text === '' ? '' : `: ${printable(text).slice(0, 300)}`}`,
        {
          hint:
            response.statusCode === 403 || response.statusCode === 401
              ? 'The signed URL was refused (it may have expired); try again.'
              : 'Try again later.',
        },
      );
    }
    const declared = header(response.headers, 'content-length');
    // An abandoned body reports its abort as an error: expected here, never to surface as an unhandled one.
    response.body.on('error', () => undefined);
    if (
      declared !== undefined &&
      (signed.size === undefined ? Number(declared) > cap : Number(declared) !== signed.size)
    ) {
      response.body.destroy();
      throw new BlueError(
        'DOWNLOAD_FAILED',
        `${get} announced ${printable(declared).slice(0, 20)} bytes; ` +
          `${signed.size === undefined ? `a bundle has at most ${cap}` : `the session's bundle has ${signed.size}`}`,
      );
    }
    const handle = await open(
      file,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    const hash = createHash('sha256');
    let received = 0;
    let ok = false;
    try {
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        received += chunk.length;
        if (received > cap)
          throw new BlueError(
            'DOWNLOAD_FAILED',
            `${get} sent more than the ${signed.size === undefined ? 'largest bundle' : "bundle's"} ${cap} bytes`,
          );
        hash.update(chunk);
        let offset = 0;
        while (offset < chunk.length) offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten;
        onProgress?.({ received, total: signed.size });
      }
      const sha256 = hash.digest('hex');
      if (
        (signed.size !== undefined && received !== signed.size) ||
        (signed.sha256 !== undefined && sha256 !== signed.sha256)
      ) {
        const recorded = [
          signed.size === undefined ? undefined : `${signed.size} bytes`,
          signed.sha256 === undefined ? undefined : `SHA-256 ${signed.sha256}`,
        ]
          .filter(Boolean)
          .join(' and ');
        throw new BlueError(
          'DOWNLOAD_FAILED',
          `the downloaded bundle has ${received} bytes and SHA-256 ${sha256}; the Control API recorded ${recorded}`,
          {
            hint:
              'The bundle was damaged on the way or in storage: do not restore it. Try again; if it persists, ' +
              'tell the Control API administrator.',
          },
        );
      }
      await handle.sync();
      ok = true;
      return { size: received, sha256 };
    } catch (error) {
      if (error instanceof BlueError) throw error;
      throw new BlueError(
        'DOWNLOAD_FAILED',
        `${get}: ${describeNetworkError(error)} after ${received}` +
          `${signed.size === undefined ? '' : ` of ${signed.size}`} bytes`,
        { hint: 'Try again.' },
      );
    } finally {
      response.body.destroy();
      await handle.close().catch(() => undefined);
      if (!ok) await unlink(file).catch(() => undefined);
    }
  }

  /**
   * Turns the Control API's "not there" answers into the session errors people see, and outages into
   * CONTROL_API_UNREACHABLE. A session the caller may not see is "not found" whether the server says 404 (ours) or
   * 403 (Blue's): the two must read the same. On an owner-only route a 403 means "not yours" and is left to the caller.
   */
  private async call<T>(request: () => Promise<T>, id?: string, options: { ownerOnly?: boolean } = {}): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof UploadError && error.kind === 'transient') throw unreachable(error);
      if (error instanceof UploadError && id !== undefined) {
        if (error.status === 404) throw notFound(id, {});
        if (error.status === 403 && options.ownerOnly !== true) throw notFound(id, {});
        if (error.status === 410) {
          throw new BlueError('SESSION_EXPIRED', `session ${id} passed its retention deadline; its bundle is gone`, {
            hint: 'Nothing can be restored from it.',
          });
        }
        if (error.status === 409 && error.serverCode === 'not_downloadable') {
          throw new BlueError('SESSION_NOT_RESUMABLE', error.message, {
            hint: 'Only completed uploads can be downloaded.',
          });
        }
      }
      throw error;
    }
  }
}

/**
 * A network error, a timeout, a 5xx/408/429 or an answer that is not JSON: the Control API is not there (or not
 * itself) right now. Not an upload failure: these are read paths.
 */
function unreachable(error: UploadError): BlueError {
  return new BlueError('CONTROL_API_UNREACHABLE', `cannot reach the Control API: ${error.message}`, {
    hint: 'check control_url / BLUE_AGENT_CONTROL_URL; run `blue-agent doctor`',
    cause: error,
  });
}

function recipientsUnknown(who: readonly string[], why: string): BlueError {
  return new BlueError(
    'SHARE_RECIPIENT_UNKNOWN',
    `unknown recipient${who.length === 1 ? '' : 's'} ${who.map((w) => printable(w).slice(0, 320)).join(', ')}: ${why}`,
    {
      hint:
        'Name people by the e-mail address they use on the Control API (or their user id); its administrator ' +
        'adds members.',
    },
  );
}

function tooLarge(id: string, size: number): BlueError {
  return new BlueError(
    'DOWNLOAD_FAILED',
    `session ${id} records a bundle of ${size} bytes, more than the ${LIMITS.bundleBytes} bytes a bundle may have`,
    {
      hint:
        'Nothing was downloaded. The Control API holds a bundle this blue-agent cannot read; tell its ' +
        'administrator.',
    },
  );
}

function malformedId(idOrPrefix: string): BlueError {
  return new BlueError('SESSION_ID_MALFORMED', `"${printable(idOrPrefix)}" is not a session id`, {
    hint:
      `Give the full id or its first ${MIN_PREFIX} or more characters (hexadecimal digits and dashes), as ` +
      `\`blue-agent sessions list\` shows them.`,
    exitCode: 2,
  });
}

function ambiguous(id: string, found: { items: CapturedSession[]; more: boolean }): BlueError {
  const ids = found.items.slice(0, 5).map((s) => `${s.id} (${s.title ?? s.native_session_id})`);
  return new BlueError(
    'SESSION_AMBIGUOUS',
    `"${id}" names ${found.more || found.items.length > 5 ? 'more than 5' : found.items.length} sessions: ` +
      `${ids.join(', ')}`,
    {
      hint: 'Give more characters of the id.',
      exitCode: 2,
    },
  );
}

function notResumable(session: CapturedSession, why: string): BlueError {
  return new BlueError(
    'SESSION_NOT_RESUMABLE',
    `session ${session.id} (${session.title ?? session.native_session_id}) cannot be resumed: ${why}`,
    {
      hint: 'It may still be downloaded or exported; `blue-agent resume` without an id lists what can be resumed.',
    },
  );
}

function notFound(id: string, query: Pick<SessionQuery, 'resumable'>): BlueError {
  return new BlueError(
    'SESSION_NOT_FOUND',
    `no session ${printable(id)}` +
      `${query.resumable === true ? ' that you own or that was shared with you and can be resumed' : ''}`,
    {
      hint: 'List what you can see with `blue-agent sessions list --all`.',
    },
  );
}

function opt(value: string | null | undefined, max = 4096): string | null {
  return value === null || value === undefined ? null : printable(value).slice(0, max);
}

/** Checks one listing item against the contract (schemas/control-captured-session.schema.json); made printable. */
export function parseSession(value: unknown, where: string): CapturedSession {
  return forDisplay(checkAnswer<CapturedSessionAnswer>(validators.validateCapturedSession, value, where));
}

/** Every optional field explicit, everything shown bounded and stripped of control characters: it comes from other
 * people. */
function forDisplay(s: CapturedSessionAnswer): CapturedSession {
  return {
    id: s.id,
    user_id: printable(s.user_id),
    user_email: printable(s.user_email).slice(0, 320),
    harness: printable(s.harness),
    compatibility_profile: printable(s.compatibility_profile).slice(0, 256),
    native_session_id: printable(s.native_session_id),
    cwd: opt(s.cwd),
    artifact_format: printable(s.artifact_format),
    resumable: s.resumable,
    title: opt(s.title, 500),
    summary: opt(s.summary, 2000),
    source_captured_at: opt(s.source_captured_at, 64),
    repository: { root: opt(s.repository?.root), remote: opt(s.repository?.remote) },
    sharing_mode: s.sharing_mode,
    share_recipient_count: s.share_recipient_count,
    tags: (s.tags ?? []).map((t) => printable(t).slice(0, 64)),
    ...(s.shared === undefined ? {} : { shared: s.shared }),
    updated_at: printable(s.updated_at),
    status: opt(s.status, 32),
    size_bytes: s.size_bytes ?? null,
    content_type: opt(s.content_type, 256),
    retention_expires_at: opt(s.retention_expires_at, 64),
    sha256: s.sha256 ?? null,
    artifact_id: s.artifact_id ?? null,
    ...(typeof s.snippet === 'string' && s.snippet !== ''
      ? { snippet: printable(s.snippet).replace(/\s+/g, ' ').slice(0, 2000) }
      : {}),
  };
}

/**
 * The download answer, checked: an http(s) URL without credentials, GET only, headers safe to send (never an
 * Authorization), and what to expect. When the server names the artifact it signed and it is not the listing's
 * current one (a newer upload landed meanwhile), its own size and digest apply; otherwise what it and the listing
 * both state must agree.
 */
function signedDownload(
  answer: SessionDownload,
  session: CapturedSession,
  where: string,
): { url: string; headers: Record<string, string>; size?: number; sha256?: string } {
  const bad = (why: string) => unusableAnswer(where, why);
  let url: URL;
  try {
    url = new URL(answer.download_url);
  } catch {
    throw bad('download_url is not a URL');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '')
    throw bad('download_url is not an http(s) URL without credentials');
  const headers: Record<string, string> = {};
  for (const [name, v] of Object.entries(answer.headers ?? {})) {
    if (v === undefined) continue;
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || /[\r\n\u0000]/.test(v))
      throw bad(`header ${printable(name).slice(0, 40)} is not usable`);
    // The bearer token never goes to the storage service, whatever the answer says.
    if (name.toLowerCase() !== 'authorization') headers[name] = v;
  }
  const sameArtifact =
    answer.artifact_id === undefined || session.artifact_id === null || answer.artifact_id === session.artifact_id;
  if (
    sameArtifact &&
    answer.size_bytes !== undefined &&
    session.size_bytes !== null &&
    answer.size_bytes !== session.size_bytes
  )
    throw bad('size_bytes differs from the session record');
  if (sameArtifact && answer.sha256 !== undefined && session.sha256 !== null && answer.sha256 !== session.sha256)
    throw bad('sha256 differs from the session record');
  const size = answer.size_bytes ?? (sameArtifact ? (session.size_bytes ?? undefined) : undefined);
  const sha256 = answer.sha256 ?? (sameArtifact ? (session.sha256 ?? undefined) : undefined);
  return {
    url: answer.download_url,
    headers,
    ...(size === undefined ? {} : { size }),
    ...(sha256 === undefined ? {} : { sha256 }),
  };
}

/**
 * The name people know a session by, the same everywhere (`sessions list`, `show`, the resume picker): its title,
 * else `Session <first 8 characters of its id>`.
 */
export function sessionLabel(s: Pick<CapturedSession, 'title' | 'id'>): string {
  const title = printable(s.title ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  return title === '' ? `Session ${s.id.slice(0, 8)}` : title;
}
