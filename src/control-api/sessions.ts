/**
 * The session routes of the Control API, for the commands people run (`sessions`, `resume`): list and search, one
 * session, its sharing, and downloading its bundle through a fresh signed URL. Answers are checked before use: they
 * come over the network and drive what is written to this machine.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import type { Dispatcher } from 'undici';
import type { Context } from '../context.js';
import { LIMITS } from '../bundle/limits.js';
import { BlueError } from '../errors.js';
import type { SessionUploadDetail } from '../schema/generated/control-session-upload.js';
import type { SessionUploadList } from '../schema/generated/control-session-uploads.js';
import * as validators from '../schema/generated/validators.js';
import { printable } from '../util/terminal-text.js';
import { checkAnswer, ControlClient, unusableAnswer } from './client.js';
import { UploadError } from './errors.js';
import { isRecord } from '../util/record.js';
import { header, readSome } from './http.js';
import { describeNetworkError, safeUrl, scrubText } from './scrub.js';
import { loadUndici } from './undici.js';

export { printable };

/**
 * A session upload as the Control API describes it (`GET /session-uploads/{id}`, schemas/control-session-upload.schema.json),
 * its text fields made fit for a terminal.
 */
export type SessionUpload = Omit<SessionUploadDetail, 'content_type' | 'artifact_format'>;

export interface SessionQuery {
  q?: string;
  harness?: string;
  user_id?: string;
  status?: SessionUpload['status'];
  resumable?: boolean;
  id_prefix?: string;
  updated_from?: string;
  updated_to?: string;
  limit?: number;
}

export interface Sharing {
  upload_id: string;
  mode: 'private' | 'workspace' | 'selected';
  user_ids: string[];
  recipients: { user_id: string; email: string }[];
}

export interface DownloadProgress {
  received: number;
  total: number;
}

/** Upload ids are UUIDs; people may type the first 8 or more characters. */
const FULL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ID_PREFIX = /^[0-9a-f]{8}[0-9a-f-]{0,28}$/;
export const MIN_PREFIX = 8;
/** At most this many pages are walked for one listing (200 sessions a page). */
const MAX_PAGES = 50;
/** The slowest download still waited for. */
const MIN_BYTES_PER_SECOND = 32 * 1024;

export class SessionsApi {
  constructor(readonly client: ControlClient) {}

  static async fromContext(ctx: Context): Promise<SessionsApi> {
    return new SessionsApi(await ControlClient.fromContext(ctx));
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** One page of sessions, newest first, and the cursor of the next page (null at the end). */
  async page(query: SessionQuery, cursor?: string): Promise<{ items: SessionUpload[]; next_cursor: string | null }> {
    const url = this.client.routeUrl('session-uploads');
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    if (cursor !== undefined) url.searchParams.set('cursor', cursor);
    const body = checkAnswer<SessionUploadList>(validators.validateSessionUploadList, await this.call(() => this.client.requestJson('GET', url)), 'GET /session-uploads');
    return { items: body.items.map(forDisplay), next_cursor: body.next_cursor };
  }

  /** Every session matching `query`, walking the pages (bounded). */
  async list(query: SessionQuery, options: { max?: number } = {}): Promise<{ items: SessionUpload[]; truncated: boolean }> {
    const max = options.max ?? 1000;
    const items: SessionUpload[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page = await this.page({ limit: Math.min(200, Math.max(1, max - items.length)), ...query }, cursor);
      items.push(...page.items);
      if (page.next_cursor === null) return { items: items.slice(0, max), truncated: false };
      if (items.length >= max) return { items: items.slice(0, max), truncated: true };
      cursor = page.next_cursor;
    }
    return { items, truncated: true };
  }

  async get(id: string): Promise<SessionUpload> {
    const body = await this.call(() => this.client.requestJson('GET', this.client.routeUrl(`session-uploads/${id}`)), id);
    return parseUpload(body, `GET /session-uploads/${id}`);
  }

  /**
   * The session an id or id prefix names: a full id is fetched, a prefix (at least 8 characters) is searched among
   * what `query` allows. Malformed, not found and ambiguous are distinct errors.
   */
  async resolve(idOrPrefix: string, query: SessionQuery = {}): Promise<SessionUpload> {
    const id = idOrPrefix.trim().toLowerCase();
    if (FULL_ID.test(id)) {
      const upload = await this.get(id);
      if (!matches(upload, query)) throw notFound(idOrPrefix, query);
      return upload;
    }
    if (!ID_PREFIX.test(id)) {
      throw new BlueError('SESSION_ID_MALFORMED', `"${printable(idOrPrefix)}" is not a session id`, {
        hint: `Give the full id or its first ${MIN_PREFIX} or more characters (hexadecimal digits and dashes), as \`blue-agent sessions list\` shows them.`,
        exitCode: 2,
      });
    }
    const found = await this.page({ ...query, id_prefix: id, limit: 20 });
    if (found.items.length === 0) throw notFound(idOrPrefix, query);
    if (found.items.length > 1) {
      const ids = found.items.slice(0, 5).map((u) => `${u.upload_id} (${u.title ?? u.session_id})`);
      throw new BlueError('SESSION_AMBIGUOUS', `"${id}" names ${found.next_cursor === null ? found.items.length : 'more than 20'} sessions: ${ids.join(', ')}`, {
        hint: 'Give more characters of the id.',
        exitCode: 2,
      });
    }
    return found.items[0]!;
  }

  /**
   * The session `resume` may restore: one the caller owns or that was explicitly shared with them (what the Control
   * API's `resumable=true` listing holds), by full id or a prefix of at least 8 characters. Malformed, not found,
   * ambiguous and not resumable (marked not resumable, not a completed upload, or past retention) are distinct errors.
   */
  async resolveForResume(idOrPrefix: string): Promise<SessionUpload> {
    const id = idOrPrefix.trim().toLowerCase();
    if (!FULL_ID.test(id) && !ID_PREFIX.test(id)) throw malformedId(idOrPrefix);
    const pick = (found: { items: SessionUpload[]; next_cursor: string | null }): SessionUpload | undefined => {
      if (found.items.length > 1) throw ambiguous(id, found);
      return found.items[0];
    };
    // The server decides what is owned or shared (administrators included); only then is "resumable" looked at.
    const resumable = pick(await this.page({ id_prefix: id, resumable: true, limit: 20 }));
    if (resumable === undefined) {
      const marked = pick(await this.page({ id_prefix: id, resumable: false, limit: 20 }));
      if (marked === undefined || !(marked.owned || marked.sharing === 'shared')) throw notFound(idOrPrefix, { resumable: true });
      throw notResumable(marked, 'its upload is marked as not resumable (its harness or profile could not restore it)');
    }
    if (resumable.expired) {
      throw new BlueError('SESSION_EXPIRED', `session ${resumable.upload_id} passed its retention deadline; its bundle is gone`, { hint: 'Nothing can be restored from it.' });
    }
    if (resumable.status !== 'complete') {
      const why =
        resumable.status === 'superseded'
          ? 'a newer revision of the same session replaced it'
          : resumable.status === 'pending'
            ? 'its upload has not been completed'
            : 'its upload failed verification';
      throw notResumable(resumable, `it is ${resumable.status}: ${why}`);
    }
    return resumable;
  }

  async sharing(id: string): Promise<Sharing> {
    try {
      return parseSharing(await this.call(() => this.client.requestJson('GET', this.client.routeUrl(`session-uploads/${id}/sharing`)), id));
    } catch (error) {
      if (error instanceof UploadError && error.status === 403) {
        throw new BlueError('SESSION_NOT_OWNED', `only the owner of session ${id} may see its sharing`, { hint: 'Ask the owner; `blue-agent sessions show` names them.' });
      }
      throw error;
    }
  }

  async setSharing(id: string, request: { mode: Sharing['mode']; user_ids?: string[]; emails?: string[] }): Promise<Sharing> {
    try {
      return parseSharing(await this.call(() => this.client.requestJson('PUT', this.client.routeUrl(`session-uploads/${id}/sharing`), request), id));
    } catch (error) {
      // The Control API answers 403 to anyone but the owner, and 400 unknown_user for a recipient it does not know.
      if (error instanceof UploadError && error.status === 403) {
        throw new BlueError('SESSION_NOT_OWNED', `only the owner of session ${id} may change its sharing`, {
          hint: 'Ask the owner to share it; `blue-agent sessions show` names them.',
        });
      }
      if (error instanceof UploadError && error.status === 400 && error.serverCode === 'unknown_user') {
        const who = unknownRecipients(error.message, [...(request.user_ids ?? []), ...(request.emails ?? [])]);
        throw new BlueError(
          'SHARE_RECIPIENT_UNKNOWN',
          `unknown recipient${who.length === 1 ? '' : 's'} ${who.map((w) => printable(w)).join(', ')}: no such user on the Control API`,
          { hint: 'Name people by the e-mail address they use on the Control API (or their user id); its administrator adds users.' },
        );
      }
      throw error;
    }
  }

  /**
   * Downloads the session's bundle into `file` (created new, 0600) through a fresh signed URL, streaming, refusing more
   * bytes than announced, and checking size and SHA-256 against the session's record. Anything wrong removes the file.
   */
  async download(upload: SessionUpload, file: string, onProgress?: (progress: DownloadProgress) => void): Promise<{ size: number; sha256: string }> {
    // No bundle past the limit can be read (capture never makes one): do not even ask for a URL to fetch it.
    if (upload.size_bytes > LIMITS.bundleBytes) {
      throw new BlueError('DOWNLOAD_FAILED', `session ${upload.upload_id} records a bundle of ${upload.size_bytes} bytes, more than the ${LIMITS.bundleBytes} bytes a bundle may have`, {
        hint: 'Nothing was downloaded. The Control API holds a bundle this blue-agent cannot read; tell its administrator.',
      });
    }
    const answer = await this.call(() => this.client.requestJson('POST', this.client.routeUrl(`session-uploads/${upload.upload_id}/download`), {}), upload.upload_id);
    const signed = parseDownload(answer, upload);
    const where = `GET ${safeUrl(signed.url)}`;
    const budgetMs = this.client.timeoutMs + Math.ceil((upload.size_bytes / MIN_BYTES_PER_SECOND) * 1000);
    let response: Dispatcher.ResponseData;
    try {
      const undici = await loadUndici();
      response = await undici.request(signed.url, {
        method: 'GET',
        headers: { ...signed.headers, 'user-agent': this.client.userAgent },
        dispatcher: this.client.dispatcher,
        signal: AbortSignal.timeout(budgetMs),
      });
    } catch (error) {
      throw new BlueError('DOWNLOAD_FAILED', `${where}: ${describeNetworkError(error)}`, { hint: 'Check the network and try again.' });
    }
    if (response.statusCode !== 200) {
      const text = scrubText(await readSome(response, 2048));
      throw new BlueError('DOWNLOAD_FAILED', `${where} answered HTTP ${response.statusCode}${text === '' ? '' : `: ${printable(text).slice(0, 300)}`}`, {
        hint: response.statusCode === 403 || response.statusCode === 401 ? 'The signed URL was refused (it may have expired); try again.' : 'Try again later.',
      });
    }
    const declared = header(response.headers, 'content-length');
    if (declared !== undefined && Number(declared) !== upload.size_bytes) {
      response.body.destroy();
      throw new BlueError('DOWNLOAD_FAILED', `${where} announced ${printable(declared).slice(0, 20)} bytes; the session's bundle has ${upload.size_bytes}`);
    }
    const handle = await open(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const hash = createHash('sha256');
    let received = 0;
    let ok = false;
    try {
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        received += chunk.length;
        if (received > upload.size_bytes) throw new BlueError('DOWNLOAD_FAILED', `${where} sent more than the bundle's ${upload.size_bytes} bytes`);
        hash.update(chunk);
        let offset = 0;
        while (offset < chunk.length) offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten;
        onProgress?.({ received, total: upload.size_bytes });
      }
      const sha256 = hash.digest('hex');
      if (received !== upload.size_bytes || sha256 !== upload.sha256) {
        throw new BlueError('DOWNLOAD_FAILED', `the downloaded bundle has ${received} bytes and SHA-256 ${sha256}; the Control API recorded ${upload.size_bytes} bytes and ${upload.sha256}`, {
          hint: 'The bundle was damaged on the way or in storage: do not restore it. Try again; if it persists, tell the Control API administrator.',
        });
      }
      await handle.sync();
      ok = true;
      return { size: received, sha256 };
    } catch (error) {
      if (error instanceof BlueError) throw error;
      throw new BlueError('DOWNLOAD_FAILED', `${where}: ${describeNetworkError(error)} after ${received} of ${upload.size_bytes} bytes`, { hint: 'Try again.' });
    } finally {
      response.body.destroy();
      await handle.close().catch(() => undefined);
      if (!ok) await unlink(file).catch(() => undefined);
    }
  }

  /** Turns the Control API's "not there" answers into the session errors people see, and outages into CONTROL_API_UNREACHABLE. */
  private async call<T>(request: () => Promise<T>, id?: string): Promise<T> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof UploadError && error.kind === 'transient') throw unreachable(error);
      if (error instanceof UploadError && id !== undefined) {
        if (error.status === 404) throw notFound(id, {});
        if (error.status === 410) {
          throw new BlueError('SESSION_EXPIRED', `session ${id} passed its retention deadline; its bundle is gone`, { hint: 'Nothing can be restored from it.' });
        }
        if (error.status === 409 && error.serverCode === 'not_downloadable') {
          throw new BlueError('SESSION_NOT_RESUMABLE', error.message, { hint: 'Only completed uploads can be downloaded.' });
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

/**
 * Which of the requested recipients the Control API did not know: the ones its message names (it quotes the first
 * unknown one), else all of them.
 */
export function unknownRecipients(message: string, requested: readonly string[]): string[] {
  const lower = message.toLowerCase();
  const named = requested.filter((r) => r !== '' && lower.includes(`"${r.toLowerCase()}"`));
  if (named.length > 0) return named;
  const mentioned = requested.filter((r) => r !== '' && lower.includes(r.toLowerCase()));
  return mentioned.length > 0 ? mentioned : [...requested];
}

function matches(upload: SessionUpload, query: SessionQuery): boolean {
  if (query.resumable === true && !(upload.resumable && (upload.owned || upload.sharing === 'shared'))) return false;
  if (query.harness !== undefined && upload.harness !== query.harness) return false;
  if (query.status !== undefined && upload.status !== query.status) return false;
  return true;
}

function malformedId(idOrPrefix: string): BlueError {
  return new BlueError('SESSION_ID_MALFORMED', `"${printable(idOrPrefix)}" is not a session id`, {
    hint: `Give the full id or its first ${MIN_PREFIX} or more characters (hexadecimal digits and dashes), as \`blue-agent sessions list\` shows them.`,
    exitCode: 2,
  });
}

function ambiguous(id: string, found: { items: SessionUpload[]; next_cursor: string | null }): BlueError {
  const ids = found.items.slice(0, 5).map((u) => `${u.upload_id} (${u.title ?? u.session_id})`);
  return new BlueError('SESSION_AMBIGUOUS', `"${id}" names ${found.next_cursor === null ? found.items.length : 'more than 20'} sessions: ${ids.join(', ')}`, {
    hint: 'Give more characters of the id.',
    exitCode: 2,
  });
}

function notResumable(upload: SessionUpload, why: string): BlueError {
  return new BlueError('SESSION_NOT_RESUMABLE', `session ${upload.upload_id} (${upload.title ?? upload.session_id}) cannot be resumed: ${why}`, {
    hint: 'It may still be downloaded or exported; `blue-agent resume` without an id lists what can be resumed.',
  });
}

function notFound(id: string, query: SessionQuery): BlueError {
  return new BlueError('SESSION_NOT_FOUND', `no session ${printable(id)}${query.resumable === true ? ' that you own or that was shared with you and can be resumed' : ''}`, {
    hint: 'List what you can see with `blue-agent sessions list`.',
  });
}

/** Checks an answer against the contract (schemas/control-session-upload.schema.json); what is shown is made printable. */
export function parseUpload(value: unknown, where: string): SessionUpload {
  return forDisplay(checkAnswer<SessionUploadDetail>(validators.validateSessionUploadDetail, value, where));
}

/** Everything shown bounded and stripped of control characters: names, paths and titles come from other people. */
function forDisplay(u: SessionUploadDetail): SessionUpload {
  const opt = (v: string | null, max = 4096): string | null => (v === null ? null : printable(v).slice(0, max));
  return {
    upload_id: u.upload_id,
    user_id: printable(u.user_id),
    owner_email: opt(u.owner_email, 320),
    owned: u.owned,
    harness: u.harness,
    session_id: u.session_id,
    revision: u.revision,
    status: u.status,
    size_bytes: u.size_bytes,
    sha256: u.sha256,
    compatibility_profile: opt(u.compatibility_profile, 128),
    cwd: opt(u.cwd),
    resumable: u.resumable,
    title: opt(u.title, 500),
    summary: opt(u.summary, 2000),
    captured_at_unix_ms: u.captured_at_unix_ms,
    repository_root: opt(u.repository_root),
    repository_remote: opt(u.repository_remote),
    sharing: u.sharing,
    created_at: printable(u.created_at),
    updated_at: printable(u.updated_at),
    completed_at: opt(u.completed_at, 64),
    retention_deadline: printable(u.retention_deadline),
    expired: u.expired,
  };
}

function parseSharing(value: unknown): Sharing {
  const bad = (why: string) => unusableAnswer('sharing', why);
  if (!isRecord(value)) throw bad('it is not an object');
  const mode = value.mode;
  if (mode !== 'private' && mode !== 'workspace' && mode !== 'selected') throw bad('mode is not private, workspace or selected');
  const recipients = Array.isArray(value.recipients) ? value.recipients : [];
  return {
    upload_id: typeof value.upload_id === 'string' ? printable(value.upload_id).slice(0, 64) : '',
    mode,
    user_ids: Array.isArray(value.user_ids) ? value.user_ids.filter((v): v is string => typeof v === 'string').map((v) => printable(v).slice(0, 64)) : [],
    recipients: recipients
      .filter(isRecord)
      .map((r) => ({ user_id: printable(String(r.user_id ?? '')).slice(0, 64), email: printable(String(r.email ?? '')).slice(0, 320) })),
  };
}

function parseDownload(value: unknown, upload: SessionUpload): { url: string; headers: Record<string, string> } {
  const bad = (why: string) => unusableAnswer(`POST /session-uploads/${upload.upload_id}/download`, why);
  if (!isRecord(value)) throw bad('it is not an object');
  const url = value.download_url;
  if (typeof url !== 'string' || url.length > 8192 || !/^https?:\/\//i.test(url)) throw bad('download_url is not an http(s) URL');
  if (value.method !== undefined && value.method !== 'GET') throw bad('method is not GET');
  if (value.size_bytes !== undefined && value.size_bytes !== upload.size_bytes) throw bad('size_bytes differs from the session record');
  if (value.sha256 !== undefined && value.sha256 !== upload.sha256) throw bad('sha256 differs from the session record');
  const headers: Record<string, string> = {};
  if (isRecord(value.headers)) {
    for (const [name, v] of Object.entries(value.headers)) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) || typeof v !== 'string' || /[\r\n\u0000]/.test(v)) throw bad(`header ${printable(name).slice(0, 40)} is not usable`);
      // The bearer token never goes to the storage service, whatever the answer says.
      if (name.toLowerCase() !== 'authorization') headers[name] = v;
    }
  }
  return { url, headers };
}

/**
 * The name people know a session by, the same everywhere (`sessions list`, `show`, the resume picker): its title,
 * else `Session <first 8 characters of the upload id>`.
 */
export function sessionLabel(s: Pick<SessionUpload, 'title' | 'upload_id'>): string {
  const title = printable(s.title ?? '').replace(/\s+/g, ' ').trim();
  return title === '' ? `Session ${s.upload_id.slice(0, 8)}` : title;
}
