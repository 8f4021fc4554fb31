/** Listings of captured sessions on PostgreSQL: what a viewer may see, filtered, searched, ranked and counted. */
import { likePattern, toUser } from '../rows.js';
import { type CapturedSession, MAX_SEARCH_TOTAL, type SessionQuery, type User } from '../types.js';
import { Params, type Pg, storable } from './db.js';
import { tsQuery } from './search.js';
import { SESSION_SELECT, sessionOf, visible } from './sessions.js';

/** The sessions `query` selects for `viewer`: the joins and conditions every listing and count shares (in `p`). */
function filter(
  p: Params,
  viewer: User,
  query: Omit<SessionQuery, 'sort' | 'limit'>,
  now: number,
): { matches: string; matched: string | undefined; tsquery: string | undefined; where: string[] } {
  const where = ['s.current_artifact_id IS NOT NULL'];
  if (query.resumable === true || !viewer.is_admin) where.push(visible(p.add(viewer.id)));
  if (query.resumable === true)
    where.push(`a.resumable AND a.status = 'complete' AND NOT a.blob_deleted AND a.retention_deadline > ${p.add(now)}`);
  // q: the words of the full-text index (title, summary, what the session says, its folder and native id), through
  // its GIN index; a q without a word (punctuation only) is a piece of an id, folder, title or summary, as before. An
  // expired session holds nothing to find any more.
  if (query.q !== undefined) where.push(`NOT a.blob_deleted AND a.retention_deadline > ${p.add(now)}`);
  const tsquery = query.q === undefined ? undefined : tsQuery(query.q);
  const matched = tsquery === undefined ? undefined : p.add(tsquery);
  const matches =
    matched === undefined
      ? ''
      : `JOIN (SELECT x.session_id, x.document FROM session_search x WHERE x.document @@ to_tsquery('simple', ` +
        `${matched})) m ON m.session_id = s.id`;
  if (query.q !== undefined && matched === undefined) {
    const like = p.add(likePattern(query.q));
    where.push(`(lower(s.native_session_id) LIKE ${like} ESCAPE '\\'
        OR lower(COALESCE(a.cwd, '')) LIKE ${like} ESCAPE '\\'
        OR lower(COALESCE(a.title, '')) LIKE ${like} ESCAPE '\\'
        OR lower(COALESCE(a.summary, '')) LIKE ${like} ESCAPE '\\')`);
  }
  if (query.id_prefix !== undefined)
    where.push(`substr(s.id, 1, ${p.add(query.id_prefix.length)}::integer) = ${p.add(query.id_prefix)}`);
  if (query.harness !== undefined) where.push(`s.harness = ${p.add(query.harness)}`);
  if (query.harnesses !== undefined) where.push(`s.harness = ANY(${p.add([...query.harnesses])}::text[])`);
  if (query.tag !== undefined) where.push(`s.tags::jsonb ? ${p.add(query.tag)}`);
  if (query.owner_id !== undefined) where.push(`s.owner_id = ${p.add(query.owner_id)}`);
  if (query.status !== undefined) where.push(`a.status = ${p.add(query.status)}`);
  if (query.updated_from !== undefined) where.push(`s.updated_at >= ${p.add(query.updated_from)}`);
  if (query.updated_before !== undefined) where.push(`s.updated_at < ${p.add(query.updated_before)}`);
  return { matches, matched, tsquery, where };
}

/** Whether any text of `query` cannot be held by PostgreSQL (a NUL): it matches nothing. */
function unmatchable(query: Omit<SessionQuery, 'sort' | 'limit'>): boolean {
  return [query.q, query.harness, query.owner_id, query.id_prefix, query.after_id].some(
    (text) => text !== undefined && !storable(text),
  );
}

export async function countByHarness(
  pg: Pg,
  viewer: User,
  query: Omit<SessionQuery, 'sort' | 'limit'>,
  now: number,
): Promise<Record<string, number>> {
  if (unmatchable(query)) return {};
  const p = new Params();
  const { matches, where } = filter(p, viewer, query, now);
  const cap = query.q === undefined ? '' : ` LIMIT ${MAX_SEARCH_TOTAL}`;
  const rows = await pg.db.all(
    `SELECT h, COUNT(*) AS n FROM (SELECT s.harness AS h FROM sessions s JOIN artifacts a ON a.id = ` +
      `s.current_artifact_id ${matches} WHERE ${where.join(' AND ')}${cap}) c GROUP BY h ORDER BY h`,
    ...p.values,
  );
  return Object.fromEntries(rows.map((r) => [String(r.h), Number(r.n)]));
}

export async function listSessions(
  pg: Pg,
  viewer: User,
  query: SessionQuery,
  now: number,
): Promise<{ sessions: CapturedSession[]; total?: number }> {
  if (unmatchable(query)) return { sessions: [], ...(query.count === true ? { total: 0 } : {}) };
  const p = new Params();
  const { matches, matched, tsquery, where } = filter(p, viewer, query, now);
  const filterArgs = [...p.values];
  const page = [...where];
  if (query.after_id !== undefined) {
    // An unknown cursor matches nothing, as in Blue's server.
    const after = p.add(query.after_id);
    page.push(
      `(s.updated_at < (SELECT updated_at FROM sessions WHERE id = ${after}) OR (s.updated_at = (SELECT ` +
        `updated_at FROM sessions WHERE id = ${after}) AND s.id < ${after}))`,
    );
  }
  // A search counts at most MAX_SEARCH_TOTAL matches; with no more than that it is ranked (title A, summary B, text
  // C, place D), else newest first.
  // Whether to rank is told by the index alone (its matches, whoever may see them), so that the page and the count
  // can then run at once.
  const candidates =
    matched !== undefined && query.sort === 'relevance'
      ? Number(
          (await pg.db.get(
            `SELECT COUNT(*) AS n FROM (SELECT 1 FROM session_search WHERE document @@ to_tsquery('simple', $1) ` +
              `LIMIT ${MAX_SEARCH_TOTAL}) c`,
            tsquery!,
          ))!.n,
        )
      : undefined;
  const ranked = candidates !== undefined && candidates < MAX_SEARCH_TOTAL;
  const cap = matched === undefined ? '' : ` LIMIT ${MAX_SEARCH_TOTAL}`;
  const countSql =
    `SELECT COUNT(*) AS n FROM (SELECT 1 FROM sessions s JOIN artifacts a ON a.id = ` +
    `s.current_artifact_id ${matches} WHERE ${where.join(' AND ')}${cap}) c`;
  const order =
    query.sort === 'updated_asc'
      ? 's.updated_at ASC, s.id ASC'
      : ranked
        ? `ts_rank(m.document, to_tsquery('simple', ${matched!})) DESC, s.updated_at DESC, s.id DESC`
        : 's.updated_at DESC, s.id DESC';
  // The current artifact comes in the same row (SESSION_SELECT's join): one query for the page, another for the
  // count.
  const [rows, counted] = await Promise.all([
    pg.db.all(
      `${SESSION_SELECT} ${matches} WHERE ${page.join(' AND ')} ORDER BY ${order} LIMIT ${p.add(query.limit)} ` +
        `OFFSET ${p.add(query.offset ?? 0)}`,
      ...p.values,
    ),
    query.count === true ? pg.db.get(countSql, ...filterArgs) : undefined,
  ]);
  const total = counted === undefined ? undefined : Number(counted.n);
  return { sessions: rows.map(sessionOf), ...(total === undefined ? {} : { total }) };
}

export async function facets(
  pg: Pg,
  viewer: User,
  userQ: string | undefined,
  selectedUserId: string | undefined,
): Promise<{ users: User[]; harnesses: string[] }> {
  const p = new Params();
  const shown = viewer.is_admin ? 'TRUE' : visible(p.add(viewer.id));
  const harnessArgs = [...p.values];
  const selected = selectedUserId !== undefined && storable(selectedUserId) ? selectedUserId : '';
  // SQLite's SELECT DISTINCT u.* ... ORDER BY lower(u.email) as an EXISTS (PostgreSQL orders DISTINCT rows only by
  // what they select): the same users, in the same order.
  const users =
    userQ !== undefined && !storable(userQ)
      ? []
      : await pg.db.all(
          `SELECT u.* FROM users u
           WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.owner_id = u.id AND s.current_artifact_id IS NOT NULL AND
           ${shown})
             AND (${p.add(userQ ?? null)}::text IS NULL OR lower(u.email) LIKE
             ${p.add(userQ === undefined ? null : likePattern(userQ))} ESCAPE '\\')
           ORDER BY (u.id = ${p.add(selected)}) DESC, lower(u.email), u.id LIMIT 10`,
          ...p.values,
        );
  const harnesses = await pg.db.all(
    `SELECT DISTINCT s.harness FROM sessions s WHERE s.current_artifact_id IS NOT NULL AND ${shown} ORDER BY ` +
      `s.harness`,
    ...harnessArgs,
  );
  return { users: users.map(toUser), harnesses: harnesses.map((r) => String(r.harness)) };
}
