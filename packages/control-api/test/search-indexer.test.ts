/**
 * The search indexer yields to uploads: completes arriving one after another wake it only once they have been quiet
 * for `quietMs`, and never later than `maxDelayMs` after the first one it has not indexed. The store is a counter of
 * the rounds asked for (the indexing itself is tested through the API in api-search.test.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { SearchIndexer } from '../src/search-indexer.js';
import type { ControlStore, SearchIndexed } from '../src/store/index.js';

let indexer: SearchIndexer | undefined;
afterEach(async () => indexer?.close());

function counting(options: { quietMs: number; maxDelayMs: number }): { rounds: () => number; indexer: SearchIndexer } {
  let rounds = 0;
  const store = {
    claimSearchWork: async () => {
      rounds++;
      return [];
    },
    searchIndexed: async () => undefined,
  } as unknown as ControlStore;
  const made = new SearchIndexer({
    store,
    blobs: () => undefined as never,
    profiles: undefined as never,
    log: () => undefined,
    now: Date.now,
    pollMs: 60_000,
    ...options,
  });
  indexer = made;
  return { rounds: () => rounds, indexer: made };
}

describe('SearchIndexer', () => {
  it('waits for completes to be quiet before a round', async () => {
    const { rounds, indexer } = counting({ quietMs: 2_000, maxDelayMs: 60_000 });
    for (let i = 0; i < 10; i++) {
      indexer.kick();
      await sleep(50);
    }
    // Completes every 50 ms: none was followed by 2 s of quiet yet.
    expect(rounds()).toBe(0);
    const deadline = Date.now() + 10_000;
    while (rounds() === 0 && Date.now() < deadline) await sleep(50);
    expect(rounds()).toBe(1);
  });

  it('runs a round at the latest maxDelayMs after the first complete, however busy uploads are', async () => {
    const { rounds, indexer } = counting({ quietMs: 2_000, maxDelayMs: 300 });
    const until = Date.now() + 10_000;
    while (Date.now() < until && rounds() === 0) {
      indexer.kick();
      await sleep(50);
    }
    expect(rounds()).toBe(1);
  });

  it('writes what a claim read even when the blob store fails on one of its sessions', async () => {
    const claim = ['a', 'b', 'c'].map((id) => ({
      session_id: `s-${id}`,
      artifact: { id, blob_key: id, size_bytes: 1, sha256: 'x', artifact_format: 'blue-session-bundle-v1' },
    }));
    const written: SearchIndexed[][] = [];
    const store = {
      claimSearchWork: async () => (written.length === 0 ? claim : []),
      searchIndexed: async (done: readonly SearchIndexed[]) => void written.push([...done]),
    } as unknown as ControlStore;
    const blobs = {
      stat: async (key: string) => {
        if (key === 'b') throw new Error('AccessDenied');
        return undefined; // gone: searchable by title only
      },
    };
    const logged: string[] = [];
    indexer = new SearchIndexer({
      store,
      blobs: () => blobs as never,
      profiles: undefined as never,
      log: (_level, message) => void logged.push(message),
      now: Date.now,
      manual: true,
    });
    await indexer.idle();
    expect(written[0]?.map((d) => d.artifact_id)).toEqual(['a', 'c']);
  });
});
