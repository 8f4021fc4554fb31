/** The audit log on PostgreSQL. */
import { auditEventOf, auditRow } from '../audit.js';
import type { AuditEvent, AuditQuery, NewAuditEvent } from '../types.js';
import { type Db, Params, type Pg } from './db.js';

export async function appendAudit(pg: Pg, event: NewAuditEvent, now: number): Promise<void> {
  await insertAudit(pg.db, event, now);
}

export async function appendAudits(pg: Pg, events: readonly NewAuditEvent[], now: number): Promise<void> {
  await pg.transaction(async (db) => {
    for (const event of events) await insertAudit(db, event, now);
  });
}

export async function auditEvents(pg: Pg, query: AuditQuery): Promise<AuditEvent[]> {
  const p = new Params();
  const where = [`seq > ${p.add(query.after ?? 0)}`];
  if (query.action !== undefined) where.push(`action = ${p.add(query.action)}`);
  if (query.actor_id !== undefined) where.push(`actor_id = ${p.add(query.actor_id)}`);
  if (query.session_id !== undefined) where.push(`session_id = ${p.add(query.session_id)}`);
  const rows = await pg.db.all(
    `SELECT * FROM audit_events WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ${p.add(query.limit)}`,
    ...p.values,
  );
  return rows.map(auditEventOf);
}

export async function insertAudit(db: Pick<Db, 'run'>, event: NewAuditEvent, now: number): Promise<void> {
  await db.run(
    'INSERT INTO audit_events (at, actor_kind, actor_id, actor_email, action, session_id, owner_id, details) ' +
      'VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    now,
    ...auditRow(event),
  );
}
