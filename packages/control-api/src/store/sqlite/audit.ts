/** The audit log on SQLite. */
import { auditEventOf, auditRow } from '../audit.js';
import type { AuditEvent, AuditQuery, NewAuditEvent } from '../types.js';
import type { SqliteDb, Value } from './db.js';

/** Appends an entry, in the caller's transaction when there is one. */
export function insertAudit(db: SqliteDb, event: NewAuditEvent, now: number): void {
  db.run(
    'INSERT INTO audit_events (at, actor_kind, actor_id, actor_email, action, session_id, owner_id, details) ' +
      'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    now,
    ...auditRow(event),
  );
}

export function auditEvents(db: SqliteDb, query: AuditQuery): AuditEvent[] {
  const where = ['seq > ?'];
  const args: Value[] = [query.after ?? 0];
  if (query.action !== undefined) {
    where.push('action = ?');
    args.push(query.action);
  }
  if (query.actor_id !== undefined) {
    where.push('actor_id = ?');
    args.push(query.actor_id);
  }
  if (query.session_id !== undefined) {
    where.push('session_id = ?');
    args.push(query.session_id);
  }
  return db
    .all(`SELECT * FROM audit_events WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ?`, ...args, query.limit)
    .map(auditEventOf);
}
