/** Governance revisions and the settings of the organisation on SQLite. */
import { policyPublished } from '../audit.js';
import { newRevision, toPolicyRevision } from '../revisions.js';
import type { PolicyRevision, PublishOptions } from '../types.js';
import { insertAudit } from './audit.js';
import type { SqliteDb } from './db.js';

/** A new revision (and, with `by`, its audit entry: what changed since the current one); in the caller's transaction.
 * */
export function insertPolicy(
  db: SqliteDb,
  body: Record<string, unknown>,
  now: number,
  { text, by }: PublishOptions,
): PolicyRevision {
  const previous = by === undefined ? undefined : currentPolicy(db);
  const { published, served } = newRevision(body, now, text);
  db.run(
    'INSERT INTO policy_revisions (revision, body, etag, created_at, published_text) VALUES (?, ?, ?, ?, ?)',
    published.revision,
    served,
    published.etag,
    now,
    published.text,
  );
  if (by !== undefined) insertAudit(db, policyPublished(by, previous, published), now);
  return published;
}

export function currentPolicy(db: SqliteDb): PolicyRevision | undefined {
  const row = db.get('SELECT * FROM policy_revisions ORDER BY seq DESC LIMIT 1');
  return row === undefined ? undefined : toPolicyRevision(row);
}

export function policyRevision(db: SqliteDb, revision: string): PolicyRevision | undefined {
  const row = db.get('SELECT * FROM policy_revisions WHERE revision = ?', revision);
  return row === undefined ? undefined : toPolicyRevision(row);
}

/** A setting's value (organization_id, public_url, reindex_after). */
export function setting(db: SqliteDb, key: string): string | undefined {
  const row = db.get('SELECT value FROM settings WHERE key = ?', key);
  return row === undefined ? undefined : String(row.value);
}

/** Sets a setting; undefined removes it. */
export function setSetting(db: SqliteDb, key: string, value: string | undefined): void {
  if (value === undefined) db.run('DELETE FROM settings WHERE key = ?', key);
  else
    db.run(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      key,
      value,
    );
}
