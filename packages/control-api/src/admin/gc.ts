/**
 * Garbage collection: the objects of uploads past their retention and of deleted sessions, the search entries of
 * expired uploads, and expired sign-in records. Idempotent: `control-plane gc` and every server run it alike.
 */
import type { BlobStore } from '../blobs/types.js';
import type { ControlStore, StoreOptions } from '../store/index.js';
import { withStore } from './with-store.js';

/** Deletes the objects of artifacts past their retention deadline; their metadata stays, marked expired. */
export interface GarbageCollected {
  /** Artifacts past their retention deadline whose objects went. */
  deleted: string[];
  /** Keys of deleted sessions' objects that went. */
  deleted_objects: string[];
  failed: { id: string; error: string }[];
  /** Search entries of sessions whose current upload expired: what their bundle said, deleted. */
  expired_search_entries: number;
  /** Expired device codes, browser sessions, sign-in links and tokens, and sign-ins that ended long ago, deleted. */
  expired_sign_in_records: number;
}

/** `control-plane gc`: collectWith on the store `where` names. */
export async function collectGarbage(where: StoreOptions, blobs: BlobStore, now: number): Promise<GarbageCollected> {
  return withStore({ ...where, create: false }, (store) => collectWith(store, blobs, now));
}

/**
 * Deletes the objects that are due: past their retention (the artifact stays, marked expired) and of deleted sessions;
 * the search entries of sessions whose current upload expired (what was read from the bundle goes with it); and the
 * sign-in records that expired. Idempotent, so replicas (and the CLI) may run it at the same time.
 */
export async function collectWith(store: ControlStore, blobs: BlobStore, now: number): Promise<GarbageCollected> {
  const deleted: string[] = [];
  const deletedObjects: string[] = [];
  const failed: { id: string; error: string }[] = [];
  const failedIds = new Set<string>();
  // First, whatever becomes of the objects: search has left these sessions out since their deadline.
  const expiredSearch = await store.dropExpiredSearch(now);
  /** Deletes each object of `batch` not failed before; false when nothing was left to try. */
  const sweep = async <T>(
    batch: T[],
    idOf: (item: T) => string,
    keyOf: (item: T) => string,
    done: (item: T) => Promise<void>,
  ): Promise<boolean> => {
    const todo = batch.filter((item) => !failedIds.has(idOf(item)));
    for (const item of todo) {
      try {
        await blobs.delete(keyOf(item));
        await done(item);
      } catch (error) {
        failed.push({ id: idOf(item), error: (error as Error).message });
        failedIds.add(idOf(item));
      }
    }
    return todo.length > 0;
  };
  // Objects past their retention deadline: the artifact stays, marked expired.
  while (
    await sweep(
      await store.expiredArtifacts(now, 500),
      (a) => a.id,
      (a) => a.blob_key,
      async (a) => {
        await store.markBlobDeleted(a.id);
        deleted.push(a.id);
      },
    )
  );
  // Objects of deleted sessions that could not be deleted at once, or may have been uploaded after (a PUT to a URL
  // signed before the delete).
  while (
    await sweep(
      await store.blobDeletionsDue(now, 500),
      (key) => key,
      (key) => key,
      async (key) => {
        await store.blobDeleted(key, now);
        deletedObjects.push(key);
      },
    )
  );
  const expired = await store.identity.purgeExpired(now);
  return {
    deleted,
    deleted_objects: deletedObjects,
    failed,
    expired_search_entries: expiredSearch,
    expired_sign_in_records: expired,
  };
}
