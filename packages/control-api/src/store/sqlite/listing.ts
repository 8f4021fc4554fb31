/** Listings of captured sessions on SQLite: what a viewer may see, filtered, searched, ranked and counted. */
import { likePattern, toUser } from '../rows.js';
import { type CapturedSession, MAX_SEARCH_TOTAL, type SessionQuery, type User } from '../types.js';
import type { SqliteDb, Value } from './db.js';
import { ftsMatch } from './search.js';
import { SESSION_SELECT, VISIBLE, withCurrent } from './sessions.js';

export function filter(
  viewer: User,
  query: Omit<SessionQuery, 'sort' | 'limit'>,
  now: number,
): { matches: string; match: string | undefined; where: string[]; args: Value[] } {
  const where = ['s.current_artifact_id IS NOT NULL'];
  const args: Value[] = [];
  if (query.resumable === true || !viewer.is_admin) {
    where.push(VISIBLE);
    args.push(viewer.id, viewer.id);
  }
  if (query.resumable === true) {
    where.push(`a.resumable = 1 AND a.status = 'complete' AND a.blob_deleted = 0 AND a.retention_deadline > ?`);
    args.push(now);
  }
  // q: the words of the full-text index (title, summary, what the session says, its folder and native id); a q
  // without a word (punctuation only) is a piece of an id, folder, title or summary, as before. An expired session
  // holds nothing to find any more.
  if (query.q !== undefined) {
    where.push('a.blob_deleted = 0 AND a.retention_deadline > ?');
    args.push(now);
  }
  const match = query.q === undefined ? undefined : ftsMatch(query.q);
  if (query.q !== undefined && match === undefined) {
    const like = likePattern(query.q);
    where.push(`(lower(s.native_session_id) LIKE ? ESCAPE '\\' OR lower(COALESCE(a.cwd, '')) LIKE ? ESCAPE '\\'
      OR lower(COALESCE(a.title, '')) LIKE ? ESCAPE '\\' OR lower(COALESCE(a.summary, '')) LIKE ? ESCAPE '\\')`);
    args.push(like, like, like, like);
  }
  if (query.id_prefix !== undefined) {
    where.push('substr(s.id, 1, ?) = ?');
    args.push(query.id_prefix.length, query.id_prefix);
  }
  if (query.harness !== undefined) {
    where.push('s.harness = ?');
    args.push(query.harness);
  }
  if (query.harnesses !== undefined) {
    where.push(`s.harness IN (${query.harnesses.map(() => '?').join(', ') || 'NULL'})`);
    args.push(...query.harnesses);
  }
  if (query.tag !== undefined) {
    where.push('EXISTS (SELECT 1 FROM json_each(s.tags) WHERE value = ?)');
    args.push(query.tag);
  }
  if (query.owner_id !== undefined) {
    where.push('s.owner_id = ?');
    args.push(query.owner_id);
  }
  if (query.status !== undefined) {
    where.push('a.status = ?');
    args.push(query.status);
  }
  if (query.updated_from !== undefined) {
    where.push('s.updated_at >= ?');
    args.push(query.updated_from);
  }
  if (query.updated_before !== undefined) {
    where.push('s.updated_at < ?');
    args.push(query.updated_before);
  }
  // The matches of the index, with their rank (bm25: lower is better; title weighs most, then summary).
  const matches =
    match === undefined
      ? ''
      : `JOIN (SELECT i.session_id, bm25(session_search, 10.0, 4.0, 2.0, 1.0) AS rank FROM session_search
           JOIN session_search_ids i ON i.rowid = session_search.rowid WHERE session_search MATCH ?)
           m ON m.session_id = s.id`;
  if (match !== undefined) args.unshift(match);
  return { matches, match, where, args };
}

export function countByHarness(
  db: SqliteDb,
  viewer: User,
  query: Omit<SessionQuery, 'sort' | 'limit'>,
  now: number,
): Record<string, number> {
  const { matches, where, args } = filter(viewer, query, now);
  const cap = query.q === undefined ? '' : ` LIMIT ${MAX_SEARCH_TOTAL}`;
  const rows = db.all(
    `SELECT h, COUNT(*) AS n FROM (SELECT s.harness AS h FROM sessions s JOIN artifacts a ON a.id = ` +
      `s.current_artifact_id ${matches} WHERE ${where.join(' AND ')}${cap}) GROUP BY h ORDER BY h`,
    ...args,
  );
  return Object.fromEntries(rows.map((r) => [String(r.h), Number(r.n)]));
}

export function listSessions(
  db: SqliteDb,
  viewer: User,
  query: SessionQuery,
  now: number,
): { sessions: CapturedSession[]; total?: number } {
  const { matches, match, where, args } = filter(viewer, query, now);
  const filtered =
    `FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id ${matches} WHERE ` + `${where.join(' AND ')}`;
  // A search counts at most MAX_SEARCH_TOTAL matches; with no more than that it is ranked, else newest first.
  const searchCount =
    match !== undefined && (query.count === true || query.sort === 'relevance')
      ? Number(db.get(`SELECT COUNT(*) AS n FROM (SELECT 1 ${filtered} LIMIT ${MAX_SEARCH_TOTAL})`, ...args)!.n)
      : undefined;
  let total: number | undefined;
  if (query.count === true) total = searchCount ?? Number(db.get(`SELECT COUNT(*) AS n ${filtered}`, ...args)!.n);
  const page = [...where];
  const pageArgs = [...args];
  if (query.after_id !== undefined) {
    // An unknown cursor matches nothing, as in Blue's server.
    page.push(
      '(s.updated_at < (SELECT updated_at FROM sessions WHERE id = ?) OR (s.updated_at = (SELECT updated_at FROM ' +
        'sessions WHERE id = ?) AND s.id < ?))',
    );
    pageArgs.push(query.after_id, query.after_id, query.after_id);
  }
  const order =
    query.sort === 'updated_asc'
      ? 's.updated_at ASC, s.id ASC'
      : query.sort === 'relevance' && searchCount !== undefined && searchCount < MAX_SEARCH_TOTAL
        ? 'm.rank, s.updated_at DESC, s.id DESC'
        : 's.updated_at DESC, s.id DESC';
  const rows = db.all(
    `${SESSION_SELECT} JOIN artifacts a ON a.id = s.current_artifact_id ${matches} WHERE ${page.join(' AND ')} ` +
      `ORDER BY ${order} LIMIT ? OFFSET ?`,
    ...pageArgs,
    query.limit,
    query.offset ?? 0,
  );
  return { sessions: rows.map((row) => withCurrent(db, row)), ...(total === undefined ? {} : { total }) };
}

export function facets(
  db: SqliteDb,
  viewer: User,
  userQ: string | undefined,
  selectedUserId: string | undefined,
): { users: User[]; harnesses: string[] } {
  const visible = viewer.is_admin ? '1 = 1' : VISIBLE;
  const visibleArgs: Value[] = viewer.is_admin ? [] : [viewer.id, viewer.id];
  const users = db
    .all(
      `SELECT DISTINCT u.* FROM sessions s JOIN users u ON u.id = s.owner_id
     WHERE s.current_artifact_id IS NOT NULL AND ${visible} AND (? IS NULL OR lower(u.email) LIKE ? ESCAPE '\\')
     ORDER BY (u.id = ?) DESC, lower(u.email), u.id LIMIT 10`,
      ...visibleArgs,
      userQ ?? null,
      userQ === undefined ? null : likePattern(userQ),
      selectedUserId ?? '',
    )
    .map(toUser);
  const harnesses = db
    .all(
      `SELECT DISTINCT s.harness FROM sessions s WHERE s.current_artifact_id IS NOT NULL AND ${visible} ORDER BY ` +
        `s.harness`,
      ...visibleArgs,
    )
    .map((r) => String(r.harness));
  return { users, harnesses };
}
