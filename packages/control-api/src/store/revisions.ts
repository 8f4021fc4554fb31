/**
 * A governance revision as both backends keep it: a fresh id, the document served (the body with that id) and its
 * ETag, and the text it was published from; and a stored row read back.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { PolicyRevision } from './types.js';

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
