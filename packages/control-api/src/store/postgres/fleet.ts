/** What the agents report of themselves (client status) on PostgreSQL, bounded per person. */
import { toClientStatus } from '../rows.js';
import { type ClientStatusQuery, type ClientStatusRecord, MAX_MACHINES_PER_USER } from '../types.js';
import { type Pg, storable } from './db.js';

export async function recordClientStatus(
  pg: Pg,
  userId: string,
  instanceId: string,
  report: unknown,
  now: number,
): Promise<void> {
  await pg.transaction(async (db) => {
    // One person's reports one after the other (the person's row locked, from any replica): concurrent reports of
    // new machines never leave more than the bound.
    await db.get('SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE', userId);
    await db.run(
      `INSERT INTO client_status (user_id, instance_id, report, received_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (user_id, instance_id) DO UPDATE SET report = excluded.report, received_at = excluded.received_at`,
      userId,
      instanceId,
      JSON.stringify(report),
      now,
    );
    // The person's other machines beyond the bound, those that reported least recently.
    await db.run(
      `DELETE FROM client_status WHERE user_id = $1 AND instance_id IN
         (SELECT instance_id FROM client_status WHERE user_id = $1 AND instance_id <> $2
            ORDER BY received_at DESC, instance_id COLLATE "C" DESC OFFSET $3)`,
      userId,
      instanceId,
      MAX_MACHINES_PER_USER - 1,
    );
  });
}

export async function clientStatuses(
  pg: Pg,
  query: ClientStatusQuery,
): Promise<{ items: ClientStatusRecord[]; total: number }> {
  if (query.user_id !== undefined && !storable(query.user_id)) return { items: [], total: 0 };
  const userId = query.user_id ?? null;
  const [rows, count] = await Promise.all([
    pg.db.all(
      `SELECT c.*, u.email AS user_email FROM client_status c JOIN users u ON u.id = c.user_id
       WHERE ($1::text IS NULL OR c.user_id = $1)
        ORDER BY lower(u.email), u.id, c.instance_id COLLATE "C" LIMIT $2 OFFSET $3`,
      userId,
      query.limit,
      query.offset,
    ),
    pg.db.get('SELECT COUNT(*) AS n FROM client_status WHERE ($1::text IS NULL OR user_id = $1)', userId),
  ]);
  return { items: rows.map(toClientStatus), total: Number(count!.n) };
}
