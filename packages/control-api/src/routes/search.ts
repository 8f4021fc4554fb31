/**
 * Finding sessions: the list (numbered pages or a cursor, filters, full-text search), the people a session may be
 * shared with, and the filters' choices.
 */
import type { CapturedSessionList } from '@blue-agent/contract/schema/generated/control-captured-sessions.js';
import { searchSnippets, snippetText, type Snippet } from '../session-actions.js';
import { caller, type Request, type RouteContext } from '../route-context.js';
import { badRequest, sendJson } from '../http.js';
import { ARTIFACT_STATUSES, type ArtifactStatus, type CapturedSession, type SessionQuery } from '../store/index.js';
import {
  boundedText,
  dayParam,
  DEFAULT_CURSOR_PAGE,
  DEFAULT_NUMBERED_PAGE,
  intParam,
  MAX_PAGE,
  queryParams,
} from './params.js';
import { UUID } from './route.js';
import { sessionView } from './sessions.js';

export async function members(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const params = queryParams(req, ['q']);
  const q = boundedText(params.one('q'), 'q');
  const found = await rc.store.searchUsers(q, user.id, 10);
  sendJson(req.reply, 200, { items: found.map((u) => ({ id: u.id, email: u.email })) });
}

export async function facets(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const params = queryParams(req, ['user_q', 'selected_user_id']);
  const userQ = boundedText(params.one('user_q'), 'user_q');
  const selected = params.one('selected_user_id');
  if (selected !== undefined && !new RegExp(`^${UUID}$`).test(selected))
    throw badRequest('selected_user_id must be a user id (a UUID)');
  const found = await rc.store.facets(user, userQ, selected);
  sendJson(req.reply, 200, {
    users: found.users.map((u) => ({ id: u.id, email: u.email })),
    harnesses: found.harnesses,
  });
}

const CURSOR_PARAMS = ['cursor', 'limit'];

const NUMBERED_PARAMS = ['page', 'per_page', 'offset', 'q', 'updated_from', 'updated_to', 'sort'];

const LIST_PARAMS = [
  ...CURSOR_PARAMS,
  ...NUMBERED_PARAMS,
  'harness',
  'tag',
  'user_id',
  'status',
  'resumable',
  'id_prefix',
];

/** The schema's provider and tag rules (schemas/session-record.schema.json), for query parameters. */
const PROVIDER = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

const TAG = /^[^\s\u0000-\u001f\u007f,]{1,64}$/;

/**
 * Two ways of paging, as Blue's server: numbered (`page`, `per_page`, `q`, `sort` or `updated_*` given: total and
 * total_pages) and cursor. `resumable=true` is the resume picker's listing in either: owned or shared sessions,
 * `shared` on each (numbered when it searches as the person types).
 */
export async function listSessions(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const params = queryParams(req, LIST_PARAMS);
  const numbered = NUMBERED_PARAMS.some((name) => params.has(name));
  const picker = params.one('resumable') === 'true';
  if (numbered && CURSOR_PARAMS.some((name) => params.has(name))) {
    throw badRequest(
      `page, per_page, q, sort and updated_from/updated_to cannot be combined with cursor or limit; use one way of ` +
        `paging`,
    );
  }
  const query: SessionQuery = { sort: 'updated_desc', limit: DEFAULT_CURSOR_PAGE };
  const q = boundedText(params.one('q'), 'q');
  if (q !== undefined && q.trim() !== '') query.q = q.trim();
  const idPrefix = params.one('id_prefix');
  if (idPrefix !== undefined) {
    // Resolves the short ids people type (`resume 3f2a91c0`): lower-case hex and dashes, a prefix of a session id.
    if (!/^[0-9a-f-]{1,36}$/.test(idPrefix))
      throw badRequest('id_prefix must be 1 to 36 lower-case hexadecimal digits and dashes');
    query.id_prefix = idPrefix;
  }
  const harness = params.one('harness');
  if (harness !== undefined) {
    // One name, or several separated by commas (extension): sessions of any of them.
    const names = [...new Set(harness.split(','))];
    if (names.length > 32 || names.some((n) => !PROVIDER.test(n)))
      throw badRequest(
        'harness must be harness or provider names (lower-case letters, digits, _, . and -), separated by commas',
      );
    if (names.length === 1) query.harness = names[0];
    else query.harnesses = names;
  }
  const tag = params.one('tag');
  if (tag !== undefined) {
    if (!TAG.test(tag))
      throw badRequest('tag must be 1 to 64 characters without white space, commas or control characters');
    query.tag = tag;
  }
  const userId = params.one('user_id');
  if (userId !== undefined) {
    if (!new RegExp(`^${UUID}$`).test(userId)) throw badRequest('user_id must be a user id (a UUID)');
    query.owner_id = userId;
  }
  const status = params.one('status');
  if (status !== undefined) {
    if (!(ARTIFACT_STATUSES as readonly string[]).includes(status))
      throw badRequest(`status must be one of ${ARTIFACT_STATUSES.join(', ')}`);
    query.status = status as ArtifactStatus;
  }
  const resumable = params.one('resumable');
  if (resumable !== undefined && resumable !== 'true' && resumable !== 'false')
    throw badRequest('resumable must be true or false');
  if (picker) query.resumable = true;
  const from = dayParam('updated_from', params.one('updated_from'));
  const to = dayParam('updated_to', params.one('updated_to'));
  if (from !== undefined && to !== undefined && from > to)
    throw badRequest('updated_from must be on or before updated_to');
  if (from !== undefined) query.updated_from = from;
  if (to !== undefined) query.updated_before = to + 86_400_000;
  const sort = params.one('sort');
  if (sort !== undefined) {
    if (sort !== 'updated_desc' && sort !== 'updated_asc' && sort !== 'relevance')
      throw badRequest('sort must be updated_desc, updated_asc or relevance');
    query.sort = sort;
  } else if (query.q !== undefined) {
    // A search is ranked: the best matches of what sessions say first.
    query.sort = 'relevance';
  }
  const now = rc.now();
  let snippets = new Map<string, Snippet>();
  const view = (s: CapturedSession) => {
    const snippet = snippets.get(s.id);
    return {
      ...sessionView(s, now),
      ...(picker ? { shared: s.owner_id !== user.id } : {}),
      ...(query.q === undefined ? {} : { snippet: snippet === undefined ? null : snippetText(snippet) }),
    };
  };
  const withSnippets = async (sessions: CapturedSession[]) => {
    if (query.q !== undefined) snippets = await searchSnippets(rc, user, sessions, query.q);
    return sessions;
  };
  if (numbered) {
    const perPage = intParam('per_page', params.one('per_page'), 1, MAX_PAGE) ?? DEFAULT_NUMBERED_PAGE;
    // Extension: `offset` instead of `page`, for callers that page by items (`sessions list --offset`).
    const offset = intParam('offset', params.one('offset'), 0, Number.MAX_SAFE_INTEGER);
    if (offset !== undefined && params.has('page')) throw badRequest('page and offset cannot be combined; use one');
    const page =
      offset === undefined
        ? (intParam('page', params.one('page'), 1, Number.MAX_SAFE_INTEGER) ?? 1)
        : Math.floor(offset / perPage) + 1;
    const found = await rc.store.listSessions(
      user,
      { ...query, limit: perPage, offset: offset ?? (page - 1) * perPage, count: true },
      now,
    );
    const total = found.total ?? 0;
    const body: CapturedSessionList = {
      items: (await withSnippets(found.sessions)).map(view),
      page,
      per_page: perPage,
      total,
      total_pages: total === 0 ? 0 : Math.ceil(total / perPage),
    };
    sendJson(req.reply, 200, body);
    return;
  }
  const limit = intParam('limit', params.one('limit'), 1, MAX_PAGE) ?? DEFAULT_CURSOR_PAGE;
  const cursor = params.one('cursor');
  if (cursor !== undefined) {
    if (!new RegExp(`^${UUID}$`).test(cursor))
      throw badRequest(
        'cursor is not one this server handed out (a session id); start again without it',
        'invalid_cursor',
      );
    query.after_id = cursor;
  }
  // One row more than asked tells whether another page exists.
  const found = await rc.store.listSessions(user, { ...query, sort: 'updated_desc', limit: limit + 1 }, now);
  const page = await withSnippets(found.sessions.slice(0, limit));
  const body: CapturedSessionList = {
    items: page.map(view),
    next_cursor: found.sessions.length > limit ? page.at(-1)!.id : null,
  };
  sendJson(req.reply, 200, body);
}
