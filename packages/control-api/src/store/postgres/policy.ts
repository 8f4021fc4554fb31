/** Governance revisions and the settings of the organisation on PostgreSQL: the repository of the publish flow. */
import { type PolicyRepository, toPolicyRevision } from '../revisions.js';
import type { NewAuditEvent, PolicyRevision } from '../types.js';
import { insertAudit } from './audit.js';
import { type Db, type Pg, storable } from './db.js';
import { LOCK_NAMESPACE, LOCKS } from './migrations.js';

/** On one transaction's client. */
export class PgPolicies implements PolicyRepository {
  constructor(private readonly db: Db) {}

  async lockPolicy(mode: 'shared' | 'exclusive'): Promise<void> {
    await this.db.run(
      mode === 'shared' ? 'SELECT pg_advisory_xact_lock_shared($1, $2)' : 'SELECT pg_advisory_xact_lock($1, $2)',
      LOCK_NAMESPACE,
      LOCKS.policy,
    );
  }

  async currentPolicy(): Promise<PolicyRevision | undefined> {
    return currentPolicyIn(this.db);
  }

  async insertPolicy(published: PolicyRevision, served: string): Promise<void> {
    await this.db.run(
      'INSERT INTO policy_revisions (revision, body, etag, created_at, published_text) VALUES ($1, $2, $3, $4, $5)',
      published.revision,
      served,
      published.etag,
      published.created_at,
      published.text,
    );
  }

  async audit(event: NewAuditEvent, now: number): Promise<void> {
    await insertAudit(this.db, event, now);
  }
}

export async function publicUrl(pg: Pg): Promise<string | undefined> {
  const row = await pg.db.get(`SELECT value FROM settings WHERE key = 'public_url'`);
  return row === undefined ? undefined : String(row.value);
}

export async function setPublicUrl(pg: Pg, url: string): Promise<void> {
  await pg.db.run(
    `INSERT INTO settings (key, value) VALUES ('public_url', $1) ON CONFLICT (key) DO UPDATE SET value = ` +
      `excluded.value`,
    url,
  );
}

export async function currentPolicy(pg: Pg): Promise<PolicyRevision | undefined> {
  return currentPolicyIn(pg.db);
}

export async function policyRevision(pg: Pg, revision: string): Promise<PolicyRevision | undefined> {
  if (!storable(revision)) return undefined;
  const row = await pg.db.get('SELECT * FROM policy_revisions WHERE revision = $1', revision);
  return row === undefined ? undefined : toPolicyRevision(row);
}

export async function reindexCursor(pg: Pg): Promise<string | undefined> {
  const row = await pg.db.get(`SELECT value FROM settings WHERE key = 'reindex_after'`);
  return row === undefined ? undefined : String(row.value);
}

export async function setReindexCursor(pg: Pg, after: string | undefined): Promise<void> {
  if (after === undefined) await pg.db.run(`DELETE FROM settings WHERE key = 'reindex_after'`);
  else
    await pg.db.run(
      `INSERT INTO settings (key, value) VALUES ('reindex_after', $1) ON CONFLICT (key) DO UPDATE SET value = ` +
        `excluded.value`,
      after,
    );
}

async function currentPolicyIn(db: Db): Promise<PolicyRevision | undefined> {
  const row = await db.get('SELECT * FROM policy_revisions ORDER BY seq DESC LIMIT 1');
  return row === undefined ? undefined : toPolicyRevision(row);
}
