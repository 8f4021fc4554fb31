/**
 * The Sessions dashboard: the list (search, filters, facets, paging, sorting) and a session's page (metadata,
 * revisions, download, the resume command, sharing for its owner, deletion, and the transcript). Every access rule
 * is session-actions.ts's, as for the API; administrators see the organisation's sessions.
 */
import { RECORD_FORMAT } from '@blue-agent/contract/bundle/record.js';
import { formatBytes } from '@blue-agent/contract/bundle/limits.js';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';
import { MIN_SESSION_PREFIX, sessionRef, type SessionRef } from '@blue-agent/contract/util/session-ref.js';
import { HttpError } from '../http.js';
import type { Request, RouteContext } from '../route-context.js';
import { storedTranscript, type Conversation } from '../search-text.js';
import {
  auditAdminRead,
  changeSharing,
  downloadLink,
  removeSession,
  searchSnippets,
  visibleSession,
  type Snippet,
} from '../session-actions.js';
import {
  ARTIFACT_STATUSES,
  isExpired,
  SHARING_MODES,
  type Artifact,
  type ArtifactStatus,
  type BrowserSession,
  type CapturedSession,
  type SessionQuery,
  type SharingMode,
} from '../store/index.js';
import { browserSession, readPagePost, redirect, sendPage, toSignIn } from './http.js';
import { Page, when } from './layout.js';
import { bounded, TranscriptView } from './transcript.js';

const PER_PAGE = 25;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const titleOf = (s: CapturedSession): string => {
  const title = (s.current?.title ?? '').replace(/\s+/g, ' ').trim();
  return title === '' ? `Session ${s.id.slice(0, 8)}` : maskSecrets(title);
};

/** The signed-in person, or a redirect to the sign-in page (undefined: answered). */
async function signedIn(rc: RouteContext, req: Request): Promise<BrowserSession | undefined> {
  const session = await browserSession(rc, req);
  if (session === undefined) toSignIn(req);
  return session;
}

interface ListParams {
  q: string;
  harness: string;
  tag: string;
  owner: string;
  status: string;
  from: string;
  to: string;
  sort: string;
  page: number;
}

/** The list's query string from its form, each value bounded; what cannot be read is reported, not guessed. */
function listParams(url: URL): { params: ListParams; problems: string[] } {
  const get = (name: string) => (url.searchParams.get(name) ?? '').trim().slice(0, 200);
  const problems: string[] = [];
  const day = (name: string, label: string) => {
    const value = get(name);
    if (value !== '' && (!/^\d{4}-\d{2}-\d{2}$/.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`)))) {
      problems.push(`${label} must be a date (YYYY-MM-DD).`);
      return '';
    }
    return value;
  };
  const page = Number(get('page') || '1');
  return {
    params: {
      q: get('q'),
      harness: /^[a-z0-9][a-z0-9_.-]{0,63}$/.test(get('harness')) ? get('harness') : '',
      tag: /^[^\s\u0000-\u001f\u007f,]{1,64}$/.test(get('tag')) ? get('tag') : '',
      owner: get('owner'),
      status: (ARTIFACT_STATUSES as readonly string[]).includes(get('status')) ? get('status') : '',
      from: day('from', 'From'),
      to: day('to', 'To'),
      sort: ['updated_desc', 'updated_asc', 'relevance'].includes(get('sort')) ? get('sort') : '',
      page: Number.isSafeInteger(page) && page >= 1 && page <= 100_000 ? page : 1,
    },
    problems,
  };
}

function listHref(params: ListParams, change: Partial<ListParams>): string {
  const merged = { ...params, ...change };
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(merged))
    if (value !== '' && !(key === 'page' && value === 1)) query.set(key, String(value));
  const text = query.toString();
  return text === '' ? '/sessions' : `/sessions?${text}`;
}

/** GET /sessions. */
export async function sessionsPage(rc: RouteContext, req: Request): Promise<void> {
  const browser = await signedIn(rc, req);
  if (browser === undefined) return;
  const user = browser.user;
  const { params, problems } = listParams(req.url);
  const now = rc.now();
  const query: SessionQuery = {
    sort: 'updated_desc',
    limit: PER_PAGE,
    offset: (params.page - 1) * PER_PAGE,
    count: true,
  };
  if (params.q !== '') query.q = params.q;
  if (params.harness !== '') query.harness = params.harness;
  if (params.tag !== '') query.tag = params.tag;
  if (params.status !== '') query.status = params.status as ArtifactStatus;
  if (params.from !== '') query.updated_from = Date.parse(`${params.from}T00:00:00Z`);
  if (params.to !== '') query.updated_before = Date.parse(`${params.to}T00:00:00Z`) + 86_400_000;
  if (params.owner !== '' && user.is_admin) {
    const owner = await rc.store.userByEmail(params.owner);
    if (owner === undefined) problems.push(`There is no user ${params.owner}.`);
    // An unknown owner owns nothing: the list is empty rather than everyone's.
    query.owner_id = owner?.id ?? '00000000-0000-0000-0000-000000000000';
  }
  query.sort =
    params.sort === '' ? (query.q === undefined ? 'updated_desc' : 'relevance') : (params.sort as SessionQuery['sort']);
  const { sort: _sort, limit: _limit, offset: _offset, count: _count, ...filter } = query;
  const [found, counts] = await Promise.all([
    rc.store.listSessions(user, query, now),
    rc.store.countByHarness(user, { ...filter, harness: undefined }, now),
  ]);
  const snippets =
    query.q === undefined ? new Map<string, Snippet>() : await searchSnippets(rc, user, found.sessions, query.q);
  const total = found.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / PER_PAGE));
  const harnesses = Object.keys(counts).sort();
  sendPage(
    req.reply,
    200,
    <Page title="Sessions" session={browser} nav="sessions">
      <h1>{user.is_admin ? 'Sessions of the organisation' : 'Your sessions and those shared with you'}</h1>
      <form method="get" action="/sessions" class="filters" role="search" aria-label="Search and filter sessions">
        <div class="field grow">
          <label for="q">Search</label>
          <input
            type="search"
            id="q"
            name="q"
            value={params.q}
            placeholder="Words from titles, summaries, what was said, folders, ids"
          />
        </div>
        <div class="field">
          <label for="tag">Tag</label>
          <input type="text" id="tag" name="tag" value={params.tag} autocomplete="off" size={12} />
        </div>
        <div class="field">
          <label for="harness">Harness</label>
          <select id="harness" name="harness">
            <option value="">Any</option>
            {[...new Set([...harnesses, ...(params.harness === '' ? [] : [params.harness])])].map((h) => (
              <option value={h} selected={h === params.harness} key={h}>
                {h} ({counts[h] ?? 0})
              </option>
            ))}
          </select>
        </div>
        {user.is_admin ? (
          <div class="field">
            <label for="owner">Owner (e-mail)</label>
            <input type="text" id="owner" name="owner" value={params.owner} autocomplete="off" />
          </div>
        ) : null}
        <div class="field">
          <label for="status">Status</label>
          <select id="status" name="status">
            <option value="">Any</option>
            {ARTIFACT_STATUSES.map((s) => (
              <option value={s} selected={s === params.status} key={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="from">Updated from</label>
          <input type="date" id="from" name="from" value={params.from} />
        </div>
        <div class="field">
          <label for="to">to</label>
          <input type="date" id="to" name="to" value={params.to} />
        </div>
        <div class="field">
          <label for="sort">Order</label>
          <select id="sort" name="sort">
            <option value="">{params.q === '' ? 'Newest first' : 'Best match'}</option>
            <option value="updated_desc" selected={params.sort === 'updated_desc'}>
              Newest first
            </option>
            <option value="updated_asc" selected={params.sort === 'updated_asc'}>
              Oldest first
            </option>
            <option value="relevance" selected={params.sort === 'relevance'}>
              Best match
            </option>
          </select>
        </div>
        <div class="field">
          <button type="submit" class="primary">
            Search
          </button>
        </div>
      </form>
      {problems.map((p) => (
        <p class="warning" role="alert" key={p}>
          {p}
        </p>
      ))}
      <p class="muted" role="status">
        {total === 0
          ? 'No sessions match.'
          : `${total.toLocaleString('en')}${query.q !== undefined && total >= 1000 ? '+' : ''} session` +
            `${total === 1 ? '' : 's'}`}
        {harnesses.length > 1 ? ` · ${harnesses.map((h) => `${h} ${counts[h]}`).join(' · ')}` : ''}
      </p>
      <ul class="sessions">
        {found.sessions.map((s) => {
          const owned = s.owner_id === user.id;
          const snippet = snippets.get(s.id);
          return (
            <li class="session" key={s.id}>
              <a class="title clamp" href={`/sessions/${s.id}`}>
                {titleOf(s)}
              </a>
              <div class="meta">
                <span class="badge">{s.harness}</span>
                {s.tags.map((t) => (
                  <a class="badge" href={listHref(params, { tag: t, page: 1 })} key={t}>
                    #{t}
                  </a>
                ))}
                <span>
                  {owned ? 'yours' : s.sharing_mode === 'private' ? s.owner_email : `shared by ${s.owner_email}`}
                </span>
                <span>{s.current?.status ?? '—'}</span>
                <span>{s.current === undefined ? '—' : formatBytes(s.current.size_bytes)}</span>
                <span>
                  <time datetime={new Date(s.updated_at).toISOString()}>{when(s.updated_at)}</time>
                </span>
              </div>
              {snippet === undefined ? null : <SnippetText snippet={snippet} />}
            </li>
          );
        })}
      </ul>
      {pages <= 1 ? null : (
        <nav class="pager" aria-label="Pages">
          {params.page > 1 ? (
            <a href={listHref(params, { page: params.page - 1 })} rel="prev">
              ← Newer
            </a>
          ) : null}
          <span>
            Page {params.page} of {pages}
          </span>
          {params.page < pages ? (
            <a href={listHref(params, { page: params.page + 1 })} rel="next">
              Older →
            </a>
          ) : null}
        </nav>
      )}
    </Page>,
  );
}

/**
 * A search's passage with its matches highlighted. Each part is text to Preact (escaped); only the parts the store
 * marked are <mark>. Masked as one text first: when masking changes it, it is shown masked and unmarked rather than a
 * secret split across a mark being missed.
 */
function SnippetText({ snippet }: { snippet: Snippet }) {
  const plain = snippet.map((p) => p.text).join('');
  const masked = maskSecrets(plain);
  return (
    <p class="snippet">
      {masked !== plain ? masked : snippet.map((p, i) => (p.match ? <mark key={i}>{p.text}</mark> : p.text))}
    </p>
  );
}

/**
 * Uploads are immutable: a read transcript (bounded) is kept for the next views, the last few of them, until its
 * upload's retention deadline (what was read of a bundle goes with it).
 */
const transcripts = new Map<string, { conversation: Conversation | undefined; deadline: number }>();
const KEPT_TRANSCRIPTS = 16;
/** Bundles read at once for pages, at most; more wait their turn (each read unpacks a bundle). */
const READS_AT_ONCE = 2;
let reading = 0;
const waiting: (() => void)[] = [];

/** Drops the kept transcripts whose upload passed its retention deadline. */
function forgetExpiredTranscripts(now: number): void {
  for (const [id, kept] of transcripts) if (kept.deadline <= now) transcripts.delete(id);
}

/** The conversation of a verified upload as a page shows it, or undefined when it cannot be read as a session. */
async function transcriptOf(rc: RouteContext, artifact: Artifact): Promise<Conversation | undefined> {
  if (rc.bundleProfiles === undefined) return undefined;
  if (isExpired(artifact, rc.now())) return undefined;
  if (transcripts.has(artifact.id)) return transcripts.get(artifact.id)!.conversation;
  while (reading >= READS_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
  reading++;
  try {
    const read = await storedTranscript(rc.blobs, artifact, rc.bundleProfiles);
    const shown = read === undefined ? undefined : bounded(read);
    transcripts.set(artifact.id, { conversation: shown, deadline: artifact.retention_deadline });
    if (transcripts.size > KEPT_TRANSCRIPTS) transcripts.delete(transcripts.keys().next().value!);
    return shown;
  } finally {
    reading--;
    waiting.shift()?.();
  }
}

/** Sessions an ambiguous id prefix lists at most. */
const PREFIX_MATCHES = 20;

/**
 * A session named as the CLI takes it, by the start of its id (or its id in capitals): to its page when one session
 * the person may see starts so, a page listing them when several do (409: the address names none of them alone).
 */
async function sessionByRef(rc: RouteContext, req: Request, browser: BrowserSession, ref: SessionRef): Promise<void> {
  if (ref.kind === 'id') return redirect(req.reply, `/sessions/${ref.id}${req.url.search}`);
  const { sessions } = await rc.store.listSessions(
    browser.user,
    { id_prefix: ref.prefix, sort: 'updated_desc', limit: PREFIX_MATCHES + 1, offset: 0 },
    rc.now(),
  );
  if (sessions.length === 0)
    throw new HttpError(404, 'not_found', `No session you may see has an id starting with ${ref.prefix}.`);
  if (sessions.length === 1) return redirect(req.reply, `/sessions/${sessions[0]!.id}${req.url.search}`);
  sendPage(
    req.reply,
    409,
    <Page title={`Sessions starting with ${ref.prefix}`} session={browser} nav="sessions">
      <h1>Several sessions start with {ref.prefix}</h1>
      <p role="alert">The address names none of them alone: choose one, or give more characters of its id.</p>
      <ul class="sessions">
        {sessions.slice(0, PREFIX_MATCHES).map((s) => (
          <li class="session" key={s.id}>
            <a class="title clamp" href={`/sessions/${s.id}`}>
              {titleOf(s)}
            </a>
            <div class="meta">
              <code>{s.id}</code>
              <span class="badge">{s.harness}</span>
              <span>{s.owner_id === browser.user.id ? 'yours' : s.owner_email}</span>
              <span>
                <time datetime={new Date(s.updated_at).toISOString()}>{when(s.updated_at)}</time>
              </span>
            </div>
          </li>
        ))}
      </ul>
      {sessions.length > PREFIX_MATCHES ? <p class="muted">And more: give more characters of the id.</p> : null}
    </Page>,
  );
}

/**
 * GET /sessions/{id}: the session's page; `?revision=` shows an earlier upload's transcript, `?find=` looks for people
 * to share with. The id may be given as the CLI takes it: the start of it (sessionByRef).
 */
export async function sessionPage(rc: RouteContext, req: Request): Promise<void> {
  const browser = await signedIn(rc, req);
  if (browser === undefined) return;
  const user = browser.user;
  const ref = sessionRef(req.params[0]!);
  if (ref === undefined) {
    throw new HttpError(
      404,
      'not_found',
      `${req.params[0]!} is not a session id: give its full id, or its first ${MIN_SESSION_PREFIX} or more ` +
        `characters, as the list shows them.`,
    );
  }
  if (ref.kind === 'prefix' || ref.id !== req.params[0]) return sessionByRef(rc, req, browser, ref);
  const session = await visibleSession(rc, user, ref.id);
  await auditAdminRead(rc, user, session, 'page');
  const now = rc.now();
  forgetExpiredTranscripts(now);
  const artifacts = await rc.store.artifactsOf(session.id);
  const owned = session.owner_id === user.id;
  const wanted = req.url.searchParams.get('revision');
  const shown = (wanted === null ? session.current : artifacts.find((a) => a.id === wanted)) ?? session.current;
  const readable = (a: Artifact) => (a.status === 'complete' || a.status === 'superseded') && !isExpired(a, now);
  const transcript = shown !== undefined && readable(shown) ? await transcriptOf(rc, shown) : undefined;
  const recipients = owned ? await rc.store.recipients(session) : [];
  const find = (req.url.searchParams.get('find') ?? '').trim().slice(0, 200);
  const found =
    owned && find !== ''
      ? (await rc.store.searchUsers(find, user.id, 10)).filter((u) => !recipients.some((r) => r.id === u.id))
      : [];
  const current = session.current;
  // A stored or imported record: no harness folder, no profile, nothing to resume.
  const record = current?.artifact_format === RECORD_FORMAT;
  const saved = req.url.searchParams.get('saved');
  sendPage(
    req.reply,
    200,
    <Page title={titleOf(session)} session={browser} nav="sessions">
      <p>
        <a href="/sessions">← Sessions</a>
      </p>
      <h1 class="session-title">{titleOf(session)}</h1>
      {saved === null ? null : (
        <p class="notice" role="status">
          {saved === 'sharing' ? 'Sharing saved.' : 'Saved.'}
        </p>
      )}
      {/* The transcript is what the page is for: first, and the widest column; what is said about the session beside it. */}
      <div class="session-page">
        <div class="session-main">
          <section aria-labelledby="transcript">
            <h2 id="transcript">
              Transcript{shown !== undefined && shown.id !== current?.id ? ` (revision ${shown.revision})` : ''}
            </h2>
            {transcript === undefined ? (
              <p class="muted">
                No readable transcript: the upload is not a session bundle, is not verified yet, or has expired.
              </p>
            ) : (
              <TranscriptView transcript={transcript} />
            )}
          </section>

          <section aria-labelledby="revisions">
            <h2 id="revisions">Revisions</h2>
            <table class="responsive">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Status</th>
                  <th scope="col">Size</th>
                  <th scope="col">SHA-256</th>
                  <th scope="col">Captured</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {artifacts.map((a) => (
                  <tr key={a.id} aria-current={a.id === shown?.id ? 'true' : undefined}>
                    <td>{a.revision}</td>
                    <td>{isExpired(a, now) && a.status !== 'pending' ? `${a.status}, expired` : a.status}</td>
                    <td>{formatBytes(a.size_bytes)}</td>
                    <td>
                      <code class="digest" title={a.sha256}>
                        {a.sha256.slice(0, 16)}…
                      </code>
                    </td>
                    <td>{when(a.captured_at_unix_ms ?? a.created_at)}</td>
                    <td>
                      {readable(a) ? (
                        <>
                          <a href={`/sessions/${session.id}/download?artifact=${a.id}`}>Download</a>
                          {a.id === shown?.id ? null : (
                            <>
                              {' · '}
                              <a href={`/sessions/${session.id}?revision=${a.id}#transcript`}>Transcript</a>
                            </>
                          )}
                        </>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </div>
        <aside class="session-side" aria-labelledby="about">
          <h2 id="about">About this session</h2>
          <dl class="facts">
            <dt>{record ? 'Provider' : 'Harness'}</dt>
            <dd>{session.harness}</dd>
            {session.tags.length === 0 ? null : (
              <>
                <dt>Tags</dt>
                <dd>{session.tags.map((t) => `#${t}`).join(' ')}</dd>
              </>
            )}
            <dt>Owner</dt>
            <dd>{owned ? `you (${session.owner_email})` : session.owner_email}</dd>
            {record ? null : (
              <>
                <dt>Recorded in</dt>
                <dd>
                  <code>{current?.cwd ?? '(unknown)'}</code>
                </dd>
              </>
            )}
            {current?.repository_remote == null ? null : (
              <>
                <dt>Repository</dt>
                <dd>
                  <code>{current.repository_remote}</code>
                </dd>
              </>
            )}
            <dt>Native session id</dt>
            <dd>
              <code>{session.native_session_id}</code>
            </dd>
            <dt>Updated</dt>
            <dd>{when(session.updated_at)}</dd>
            <dt>Status</dt>
            <dd>{current?.status ?? 'no verified upload yet'}</dd>
            <dt>{record ? 'Kind' : 'Profile'}</dt>
            <dd>{record ? 'a stored record (not resumable)' : (current?.compatibility_profile ?? '—')}</dd>
            {current?.summary == null ? null : (
              <>
                <dt>Summary</dt>
                <dd>{maskSecrets(current.summary)}</dd>
              </>
            )}
          </dl>

          {current !== undefined && current.resumable && readable(current) ? (
            <section aria-labelledby="resume">
              <h2 id="resume">Resume it on your machine</h2>
              <div class="copy">
                <input
                  type="text"
                  readonly
                  value={`blue-agent resume ${session.id}`}
                  id="resume-command"
                  aria-label="Resume command"
                  class="command"
                />
                <button type="button" data-copy="resume-command">
                  Copy
                </button>
              </div>
            </section>
          ) : null}

          {owned ? (
            <SharingForm csrf={browser.csrf} session={session} recipients={recipients} find={find} found={found} />
          ) : session.sharing_mode === 'private' ? null : (
            <p class="muted">Shared with you by {session.owner_email}.</p>
          )}

          {owned || user.is_admin ? (
            <section aria-labelledby="delete">
              <h2 id="delete">Delete</h2>
              <form method="post" action={`/sessions/${session.id}/delete`} class="danger-zone">
                <input type="hidden" name="csrf" value={browser.csrf} />
                <p>
                  Deletes every revision of this session, its sharing and its search entry, for everyone. This cannot be
                  undone.
                </p>
                <label class="check">
                  <input type="checkbox" name="confirm" value="yes" required /> I want to delete this session
                </label>
                <button type="submit" class="danger">
                  Delete session
                </button>
              </form>
            </section>
          ) : null}
        </aside>
      </div>
    </Page>,
  );
}

function SharingForm({
  csrf,
  session,
  recipients,
  find,
  found,
}: {
  csrf: string;
  session: CapturedSession;
  recipients: { id: string; email: string }[];
  find: string;
  found: { id: string; email: string }[];
}) {
  const modes: Record<SharingMode, string> = {
    private: 'Private: only you (and administrators)',
    workspace: 'Workspace: every member',
    selected: 'Selected members',
  };
  return (
    <section aria-labelledby="sharing">
      <h2 id="sharing">Sharing</h2>
      <form method="post" action={`/sessions/${session.id}/sharing`}>
        <input type="hidden" name="csrf" value={csrf} />
        <input type="hidden" name="action" value="mode" />
        <fieldset>
          <legend>Who may see and resume it</legend>
          {SHARING_MODES.map((m) => (
            <label class="check" key={m}>
              <input type="radio" name="mode" value={m} checked={session.sharing_mode === m} /> {modes[m]}
            </label>
          ))}
        </fieldset>
        <button type="submit">Save</button>
      </form>
      <h3>Selected members</h3>
      {session.sharing_mode === 'workspace' ? (
        <p class="muted">
          Every member may see it now. To name people instead, add them here: it is then shared with them alone.
        </p>
      ) : null}
      {recipients.length === 0 || session.sharing_mode !== 'selected' ? (
        <p class="muted">Nobody by name.</p>
      ) : (
        <ul class="people">
          {recipients.map((r) => (
            <li key={r.id}>
              {r.email}{' '}
              <form method="post" action={`/sessions/${session.id}/sharing`} class="inline">
                <input type="hidden" name="csrf" value={csrf} />
                <input type="hidden" name="action" value="remove" />
                <input type="hidden" name="user" value={r.id} />
                <button type="submit" class="link" aria-label={`Stop sharing with ${r.email}`}>
                  Remove
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
      <form
        method="get"
        action={`/sessions/${session.id}#sharing`}
        role="search"
        aria-label="Find people to share with"
      >
        <label for="find">Add people</label>
        <input type="search" id="find" name="find" value={find} placeholder="Part of an e-mail" />
        <button type="submit">Find</button>
      </form>
      {find === '' ? null : found.length === 0 ? (
        <p class="muted">Nobody else matches.</p>
      ) : (
        <ul class="people">
          {found.map((u) => (
            <li key={u.id}>
              {u.email}{' '}
              <form method="post" action={`/sessions/${session.id}/sharing`} class="inline">
                <input type="hidden" name="csrf" value={csrf} />
                <input type="hidden" name="action" value="add" />
                <input type="hidden" name="user" value={u.id} />
                <button type="submit" aria-label={`Share with ${u.email}`}>
                  Share
                </button>
              </form>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** POST /sessions/{id}/sharing: a mode, or a person added or removed (selected members). */
export async function sessionSharing(rc: RouteContext, req: Request): Promise<void> {
  const browser = await browserSession(rc, req);
  if (browser === undefined) throw new HttpError(401, 'unauthenticated', 'sign in first');
  const form = await readPagePost(rc, req, browser);
  const session = await visibleSession(rc, browser.user, req.params[0]!);
  const current = session.owner_id === browser.user.id ? (await rc.store.recipients(session)).map((u) => u.id) : [];
  const selected = session.sharing_mode === 'selected' ? current : [];
  const action = form.get('action');
  const who = form.get('user') ?? '';
  if (action === 'mode') {
    const mode = form.get('mode') as SharingMode;
    if (!SHARING_MODES.includes(mode)) throw new HttpError(400, 'invalid_request', 'choose who may see the session');
    if (mode === 'selected' && selected.length === 0)
      throw new HttpError(400, 'invalid_request', 'add at least one person first: find them under "Add people"');
    await changeSharing(rc, browser.user, session, mode, mode === 'selected' ? selected : []);
  } else if ((action === 'add' || action === 'remove') && UUID.test(who)) {
    const next = action === 'add' ? [...new Set([...selected, who])] : selected.filter((id) => id !== who);
    await changeSharing(rc, browser.user, session, next.length === 0 ? 'private' : 'selected', next);
  } else {
    throw new HttpError(400, 'invalid_request', 'the form does not say what to change');
  }
  redirect(req.reply, `/sessions/${session.id}?saved=sharing#sharing`);
}

/** POST /sessions/{id}/delete. */
export async function sessionDelete(rc: RouteContext, req: Request): Promise<void> {
  const browser = await browserSession(rc, req);
  if (browser === undefined) throw new HttpError(401, 'unauthenticated', 'sign in first');
  const form = await readPagePost(rc, req, browser);
  if (form.get('confirm') !== 'yes')
    throw new HttpError(400, 'invalid_request', 'tick the box to confirm the deletion');
  await removeSession(rc, browser.user, await visibleSession(rc, browser.user, req.params[0]!));
  redirect(req.reply, '/sessions?deleted=1');
}

/** GET /sessions/{id}/download?artifact=: to a short-lived URL of that verified upload (recorded in the audit log). */
export async function sessionDownload(rc: RouteContext, req: Request): Promise<void> {
  const browser = await signedIn(rc, req);
  if (browser === undefined) return;
  const session = await visibleSession(rc, browser.user, req.params[0]!);
  const artifact = req.url.searchParams.get('artifact') ?? undefined;
  const link = await downloadLink(
    rc,
    browser.user,
    session,
    artifact !== undefined && UUID.test(artifact) ? artifact : undefined,
  );
  if (link.method !== 'GET' || Object.keys(link.headers).length > 0)
    throw new HttpError(
      501,
      'not_supported',
      'this blob store needs a client that sends headers: resume the session with blue-agent instead',
    );
  void req.reply
    .code(303)
    .headers({ location: link.url, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' })
    .send();
}
