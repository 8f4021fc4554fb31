/** Governance revisions and the settings of the organisation on SQLite: the repository of the publish flow. */
import type { PolicyRepository } from '../revisions.js';
import { toPolicyRevision } from '../revisions.js';
import type { NewAuditEvent, PolicyRevision } from '../types.js';
import { insertAudit } from './audit.js';
import type { SqliteDb } from './db.js';

/** In one IMMEDIATE transaction: the write lock, taken first, is every lock the flow asks for. */
export class SqlitePolicies implements PolicyRepository {
  constructor(private readonly db: SqliteDb) {}

  lockPolicy(): void {}

  currentPolicy(): PolicyRevision | undefined {
    const row = this.db.get('SELECT * FROM policy_revisions ORDER BY seq DESC LIMIT 1');
    return row === undefined ? undefined : toPolicyRevision(row);
  }

  insertPolicy(published: PolicyRevision, served: string): void {
    this.db.run(
      'INSERT INTO policy_revisions (revision, body, etag, created_at, published_text) VALUES (?, ?, ?, ?, ?)',
      published.revision,
      served,
      published.etag,
      published.created_at,
      published.text,
    );
  }

  audit(event: NewAuditEvent, now: number): void {
    insertAudit(this.db, event, now);
  }

  policyRevision(revision: string): PolicyRevision | undefined {
    const row = this.db.get('SELECT * FROM policy_revisions WHERE revision = ?', revision);
    return row === undefined ? undefined : toPolicyRevision(row);
  }

  /** A setting's value (organization_id, public_url, reindex_after). */
  setting(key: string): string | undefined {
    const row = this.db.get('SELECT value FROM settings WHERE key = ?', key);
    return row === undefined ? undefined : String(row.value);
  }

  /** Sets a setting; undefined removes it. */
  setSetting(key: string, value: string | undefined): void {
    if (value === undefined) this.db.run('DELETE FROM settings WHERE key = ?', key);
    else
      this.db.run(
        'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        key,
        value,
      );
  }
}
