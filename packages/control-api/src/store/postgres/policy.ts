/** Governance revisions and the settings of the organisation on PostgreSQL. */
import { policyPublished } from '../audit.js';
import { newRevision, toPolicyRevision } from '../revisions.js';
import type { PolicyRevision, PublishOptions } from '../types.js';
import { insertAudit } from './audit.js';
import { type Db, type Pg, storable } from './db.js';
import { LOCK_NAMESPACE, LOCKS } from './migrations.js';

export async function publishPolicy(
  pg: Pg,
  body: Record<string, unknown>,
  now: number,
  options: PublishOptions = {},
): Promise<PolicyRevision> {
  return pg.transaction(async (db) => {
    // Exclusive once its audit entry names the revision it follows: publishes run one after the other.
    await db.run(
      options.by === undefined ? 'SELECT pg_advisory_xact_lock_shared($1, $2)' : 'SELECT pg_advisory_xact_lock($1, $2)',
      LOCK_NAMESPACE,
      LOCKS.policy,
    );
    return insertPolicy(db, body, now, options);
  });
}

export async function publishFirstPolicy(
  pg: Pg,
  body: Record<string, unknown>,
  now: number,
  options: PublishOptions = {},
): Promise<PolicyRevision | undefined> {
  return pg.transaction(async (db) => {
    await db.run('SELECT pg_advisory_xact_lock($1, $2)', LOCK_NAMESPACE, LOCKS.policy);
    return (await db.get('SELECT 1 FROM policy_revisions LIMIT 1')) === undefined
      ? insertPolicy(db, body, now, options)
      : undefined;
  });
}

export async function publishPolicyOver(
  pg: Pg,
  body: Record<string, unknown>,
  base: string | undefined,
  now: number,
  options: PublishOptions = {},
): Promise<PolicyRevision | undefined> {
  return pg.transaction(async (db) => {
    // Exclusive: every other publish waits, so the revision read here is still the current one when this one is
    // added.
    await db.run('SELECT pg_advisory_xact_lock($1, $2)', LOCK_NAMESPACE, LOCKS.policy);
    const current = await db.get('SELECT revision FROM policy_revisions ORDER BY seq DESC LIMIT 1');
    return (current === undefined ? undefined : String(current.revision)) === base
      ? insertPolicy(db, body, now, options)
      : undefined;
  });
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

/** A new revision (and, with `by`, its audit entry: what changed since the current one), in the caller's transaction.
 * */
async function insertPolicy(
  db: Db,
  body: Record<string, unknown>,
  now: number,
  { text, by }: PublishOptions,
): Promise<PolicyRevision> {
  const previous = by === undefined ? undefined : await currentPolicyIn(db);
  const { published, served } = newRevision(body, now, text);
  await db.run(
    'INSERT INTO policy_revisions (revision, body, etag, created_at, published_text) VALUES ($1, $2, $3, $4, $5)',
    published.revision,
    served,
    published.etag,
    now,
    published.text,
  );
  if (by !== undefined) await insertAudit(db, policyPublished(by, previous, published), now);
  return published;
}
