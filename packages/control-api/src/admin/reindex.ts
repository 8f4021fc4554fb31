/** Rebuilding the search entries from the stored bundles. */
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { BlobStore } from '../blobs/types.js';
import { storedSearchText } from '../search-text.js';
import { isExpired, READABLE_FORMATS, type StoreOptions } from '../store/index.js';
import { withStore } from './with-store.js';

export interface ReindexResult {
  /** Sessions whose entry was rebuilt, with what their bundle says. */
  indexed: number;
  /** Sessions indexed by title and summary only: no session bundle, its object gone (retention) or unreadable. */
  without_text: number;
  /** Sessions whose current upload changed while they were read: their complete indexed the new one. */
  skipped: number;
  /** Sessions whose current upload is past its retention deadline: no entry (search leaves them out). */
  expired: number;
  total: number;
  /** Where an interrupted run was taken up (a session id), or null for a run from the start. */
  resumed_after: string | null;
}

/**
 * `control-plane reindex`: rebuilds every session's search entry from its current upload's object, one session at a
 * time (memory bounded by one bundle's text), in session id order. The position is saved after each session, so a run
 * that is stopped goes on from there next time (`restart` starts over). A session whose upload expired gets no entry.
 */
export async function reindex(
  where: StoreOptions,
  blobs: BlobStore,
  profiles: ProfileSet,
  now: () => number,
  options: { restart?: boolean; onProgress?: (done: number, total: number) => void } = {},
): Promise<ReindexResult> {
  return withStore({ ...where, create: false }, async (store) => {
    const saved = options.restart === true ? undefined : await store.reindexCursor();
    const total = await store.countIndexable();
    const result: ReindexResult = {
      indexed: 0,
      without_text: 0,
      skipped: 0,
      expired: 0,
      total,
      resumed_after: saved ?? null,
    };
    await store.dropExpiredSearch(now());
    let after = saved ?? '';
    let done = 0;
    for (;;) {
      const batch = await store.indexable(after, 50);
      if (batch.length === 0) break;
      for (const { session_id: sessionId, artifact } of batch) {
        const expired = isExpired(artifact, now());
        const text =
          READABLE_FORMATS.has(artifact.artifact_format) && !expired
            ? await storedSearchText(blobs, artifact, profiles)
            : undefined;
        if (expired) result.expired++;
        else if (!(await store.setSearchText(sessionId, artifact.id, text ?? '', now()))) result.skipped++;
        else if (text === undefined) result.without_text++;
        else result.indexed++;
        after = sessionId;
        await store.setReindexCursor(after);
        options.onProgress?.(++done, total);
      }
    }
    await store.setReindexCursor(undefined);
    return result;
  });
}
