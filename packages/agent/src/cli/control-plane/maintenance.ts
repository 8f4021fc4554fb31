/** `control-plane gc` and `reindex`: collecting what expired or was deleted, and rebuilding the search entries. */

import type { Context } from '../../context.js';
import { type DataOptions, type BlobOptions, storeOptions, print, openBlobs } from './data.js';

export async function gcCommand(ctx: Context, opts: DataOptions & BlobOptions): Promise<number> {
  const { collectGarbage } = await import('@blue-agent/control-api/admin.js');
  const where = storeOptions(ctx, opts, false);
  // Checked before the blob store is opened (the local one makes its folder): a mistyped --data creates nothing.
  if (where.databaseUrl === undefined) {
    const { requireDataDir } = await import('@blue-agent/control-api/store/index.js');
    requireDataDir(where.dataDir);
  }
  // Only delete is used, so the URL the local store would sign with does not matter here.
  const blobs = await openBlobs(ctx, where.dataDir, opts, 'http://127.0.0.1');
  try {
    const result = await collectGarbage(where, blobs, ctx.clock.now());
    print(
      ctx,
      opts,
      { ok: result.failed.length === 0, ...result },
      `Deleted ${result.deleted.length} expired object${result.deleted.length === 1 ? '' : 's'}` +
        (result.deleted_objects.length === 0 ? '' : ` and ${result.deleted_objects.length} of deleted sessions`) +
        (result.expired_search_entries === 0
          ? ''
          : `; removed the search entries of ${result.expired_search_entries} expired session` +
            `${result.expired_search_entries === 1 ? '' : 's'}`) +
        '.\n' +
        result.failed.map((f) => `  could not delete ${f.id}: ${f.error}\n`).join(''),
    );
    return result.failed.length === 0 ? 0 : 1;
  } finally {
    await blobs.close();
  }
}

/** `control-plane reindex`: rebuilds the search index from the stored bundles, with progress on stderr; resumable. */
export async function reindexCommand(
  ctx: Context,
  opts: DataOptions & BlobOptions & { restart?: boolean },
): Promise<number> {
  const { reindex } = await import('@blue-agent/control-api/admin.js');
  const { loadProfiles } = await import('@blue-agent/contract/profiles/index.js');
  const where = storeOptions(ctx, opts, false);
  if (where.databaseUrl === undefined) {
    const { requireDataDir } = await import('@blue-agent/control-api/store/index.js');
    requireDataDir(where.dataDir);
  }
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const blobs = await openBlobs(ctx, where.dataDir, opts, 'http://127.0.0.1');
  const tty = ctx.stderr.isTTY === true;
  let said = 0;
  const progress = (done: number, total: number): void => {
    // A line on a terminal, rewritten; otherwise one line every 1,000 sessions and at the end.
    if (tty) ctx.stderr.write(`\rreindexing: ${done}/${total} sessions`);
    else if (done - said >= 1000 || done === total) {
      ctx.stderr.write(`reindexing: ${done}/${total} sessions\n`);
      said = done;
    }
  };
  try {
    const result = await reindex(where, blobs, profiles, () => ctx.clock.now(), {
      restart: opts.restart === true,
      onProgress: progress,
    });
    if (tty && result.total > 0) ctx.stderr.write('\n');
    print(
      ctx,
      opts,
      { ok: true, ...result },
      `Reindexed ${result.indexed + result.without_text} session` +
        `${result.indexed + result.without_text === 1 ? '' : 's'}` +
        (`${result.resumed_after === null ? '' : ` (went on after ${result.resumed_after})`}: ${result.indexed} ` +
          `with what they say, `) +
        `${result.without_text} by title and summary only (no readable bundle)` +
        `${result.expired === 0 ? '' : `; ${result.expired} expired and left out of search`}` +
        `${result.skipped === 0 ? '' : `; ${result.skipped} changed meanwhile and were indexed by their new upload`}` +
        '.\n',
    );
    return 0;
  } finally {
    await blobs.close();
  }
}
