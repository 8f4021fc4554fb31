/** What the agents report of themselves (client status) on SQLite, bounded per person. */
import { toClientStatus } from '../rows.js';
import { type ClientStatusQuery, type ClientStatusRecord, MAX_MACHINES_PER_USER } from '../types.js';
import type { SqliteDb } from './db.js';

export function recordClientStatus(db: SqliteDb, userId: string, instanceId: string, report: unknown, now: number) {
  db.transaction(() => {
    db.run(
      `INSERT INTO client_status (user_id, instance_id, report, received_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (user_id, instance_id) DO UPDATE SET report = excluded.report, received_at = excluded.received_at`,
      userId,
      instanceId,
      JSON.stringify(report),
      now,
    );
    // The person's other machines beyond the bound, those that reported least recently.
    db.run(
      `DELETE FROM client_status WHERE user_id = ? AND instance_id IN
         (SELECT instance_id FROM client_status WHERE user_id = ? AND instance_id <> ?
          ORDER BY received_at DESC, instance_id DESC LIMIT -1 OFFSET ?)`,
      userId,
      userId,
      instanceId,
      MAX_MACHINES_PER_USER - 1,
    );
  });
}

export function clientStatuses(db: SqliteDb, query: ClientStatusQuery): { items: ClientStatusRecord[]; total: number } {
  const userId = query.user_id ?? null;
  const rows = db.all(
    `SELECT c.*, u.email AS user_email FROM client_status c JOIN users u ON u.id = c.user_id
     WHERE (? IS NULL OR c.user_id = ?) ORDER BY u.email, u.id, c.instance_id LIMIT ? OFFSET ?`,
    userId,
    userId,
    query.limit,
    query.offset,
  );
  const total = Number(
    db.get('SELECT COUNT(*) AS n FROM client_status WHERE (? IS NULL OR user_id = ?)', userId, userId)!.n,
  );
  return { items: rows.map(toClientStatus), total };
}
