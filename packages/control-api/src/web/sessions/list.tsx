/**
 * The sessions list: search, filters, facets, paging and sorting. Every access rule is session-actions.ts's, as for
 * the API; administrators see the organisation's sessions.
 */
import { formatBytes } from '@blue-agent/contract/bundle/limits.js';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';
import type { Request, RouteContext } from '../../route-context.js';
import { searchSnippets, type Snippet } from '../../session-actions.js';
import { ARTIFACT_STATUSES, type ArtifactStatus, type SessionQuery } from '../../store/index.js';
import { sendPage } from '../http.js';
import { Page, when } from '../layout.js';
import { signedIn } from './signed-in.js';
import { titleOf } from './title.js';

const PER_PAGE = 25;

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
