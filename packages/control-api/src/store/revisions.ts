/**
 * Governance revisions, once for both backends: what a new one is (a fresh id, the document served (the body with that
 * id) and its ETag, the text it was published from), a stored row read back, and publishing one: always, only while
 * there is none (a first start), or only over the revision its author saw. Each runs in one transaction over the
 * backend's PolicyRepository, which holds the SQL.
 */
import { createHash, randomUUID } from 'node:crypto';
import { policyPublished } from './audit.js';
import { type Flow, step, type Step, type Transactions } from './flow.js';
import type { NewAuditEvent, PolicyRevision, PublishOptions } from './types.js';

/** The ETag of a governance revision's document. */
export function etagOf(text: string): string {
  return `"${createHash('sha256').update(text).digest('base64url').slice(0, 32)}"`;
}

/** A new revision of `body`, and the document it serves as stored (`served`). */
export function newRevision(
  body: Record<string, unknown>,
  now: number,
  text: string | undefined,
): { published: PolicyRevision; served: string } {
  const revision = randomUUID();
  const full = { ...body, revision };
  const served = JSON.stringify(full);
  return { published: { revision, body: full, text: text ?? null, etag: etagOf(served), created_at: now }, served };
}

export function toPolicyRevision(row: Record<string, unknown>): PolicyRevision {
  return {
    revision: String(row.revision),
    body: JSON.parse(String(row.body)) as Record<string, unknown>,
    text: row.published_text === null || row.published_text === undefined ? null : String(row.published_text),
    etag: String(row.etag),
    created_at: Number(row.created_at),
  };
}

export interface PolicyRepository {
  /**
   * Taken before the current revision is read or a new one added: `exclusive` when what is published depends on the
   * current one, else `shared` (PostgreSQL: an advisory lock across replicas; SQLite's write lock is taken already).
   */
  lockPolicy(mode: 'shared' | 'exclusive'): Step<void>;
  currentPolicy(): Step<PolicyRevision | undefined>;
  /** Stores `published`, serving `served`. */
  insertPolicy(published: PolicyRevision, served: string): Step<void>;
  audit(event: NewAuditEvent, now: number): Step<void>;
}

export type Publish = 'always' | 'first' | { over: string | undefined };

/**
 * A new revision of `body`, or undefined when `when` says not: `first` only while there is none, `over` only while the
 * current revision is the one named. With `by`, its audit entry says what changed since the current one.
 */
export async function publish(
  policies: Transactions<PolicyRepository>,
  when: Publish,
  body: Record<string, unknown>,
  now: number,
  { text, by }: PublishOptions,
): Promise<PolicyRevision | undefined> {
  return policies.run(function* (repo): Flow<PolicyRevision | undefined> {
    // Exclusive once the outcome or its audit entry depends on the current revision: publishes run one after another.
    yield* step(repo.lockPolicy(when === 'always' && by === undefined ? 'shared' : 'exclusive'));
    const current = when === 'always' && by === undefined ? undefined : yield* step(repo.currentPolicy());
    if (when === 'first' && current !== undefined) return undefined;
    if (typeof when === 'object' && current?.revision !== when.over) return undefined;
    const { published, served } = newRevision(body, now, text);
    yield* step(repo.insertPolicy(published, served));
    if (by !== undefined) yield* step(repo.audit(policyPublished(by, current, published), now));
    return published;
  });
}
