/**
 * Full-text search of what sessions say, on both databases: the server reads a completed bundle's conversation with
 * the harness's transcript reader and indexes it with the title and summary (FTS5, tsvector); `q` finds sessions by a
 * word of their conversation, ranks title matches first, answers a snippet around the match, takes any text without
 * an error, never indexes secrets, and the index follows revisions, deletions and retention exactly.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collectGarbage, reindex } from '../src/admin.js';
import { createLocalBlobStore } from '../src/blobs/local.js';
import { loadProfiles, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { BACKENDS, startTestServer, type TestServer, type TestUser } from '../../../test/support/control-server.js';
import { agentRoot } from '../../../test/support/context.js';
import { newArtifact } from '../../../test/support/store-inputs.js';
import { conversationBundle } from '../../../test/support/conversation-bundle.js';

const CWD = '/home/dev/project';
let work: string;
let profiles: ProfileSet;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'blue-search-'));
  profiles = await loadProfiles(path.join(agentRoot, 'profiles'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** A Claude Code bundle whose conversation is `turns` (user, assistant, user, ...). */
const claudeBundle = (sessionId: string, title: string, turns: string[]): Promise<Buffer> =>
  conversationBundle(work, { sessionId, title, cwd: CWD, turns });

describe.each(BACKENDS)('searching what sessions say (%s)', (backend) => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  async function upload(user: TestUser, sessionId: string, title: string, turns: string[]): Promise<string> {
    const bytes = await claudeBundle(sessionId, title, turns);
    const done = await t.upload(user, bytes, {
      session_id: sessionId,
      title,
      cwd: CWD,
      artifact_format: 'blue-session-bundle-v1',
      compatibility_profile: 'claude-v2_0_12',
      resumable: true,
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    // What it says is read after the answer, by the server's indexer.
    await t.server.searchIdle();
    return done.sessionId;
  }
  const search = async (q: string, user: TestUser = t.alice, extra = '') => {
    const got = await t.call('GET', `/session-uploads?q=${encodeURIComponent(q)}${extra}`, user.token);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    return got.body.items as { id: string; title: string; snippet: string | null }[];
  };

  it('finds a session by a word of its conversation, with a snippet; a word it never said finds nothing', async () => {
    t = await startTestServer({ backend });
    const flaky = await upload(t.alice, 'sess-flaky', 'Fix the flaky test', [
      'The integration suite fails one run in ten.',
      'The retry loop in the uploader races with the watchdog; I serialised them behind one mutex.',
    ]);
    await upload(t.alice, 'sess-docs', 'Write the release notes', [
      'Summarise what changed since 1.4.',
      'Done: three features, two fixes.',
    ]);

    const hits = await search('watchdog');
    expect(hits.map((h) => h.id)).toEqual([flaky]);
    expect(hits[0]!.snippet).toContain('[watchdog]');
    expect(hits[0]!.snippet!.length).toBeLessThan(400);
    // A prefix of the last word, several words (all must match), any case.
    expect((await search('WATCHD')).map((h) => h.id)).toEqual([flaky]);
    expect((await search('retry mutex')).map((h) => h.id)).toEqual([flaky]);
    expect(await search('retry changelog')).toEqual([]);
    expect(await search('kubernetes')).toEqual([]);
    // Titles and folders still match as before, and say no snippet when the index did not match.
    expect((await search('release')).map((h) => h.title)).toEqual(['Write the release notes']);
    expect((await search('/home/dev/proj')).length).toBe(2);
    // Not searched: no snippet field.
    const listed = await t.call('GET', '/session-uploads', t.alice.token);
    expect(listed.body.items[0]).not.toHaveProperty('snippet');
    // Others' private sessions stay out of a member's search.
    expect(await search('watchdog', t.bob)).toEqual([]);
  });

  it(
    'finds a session by its title, summary, native id (its first 8 characters too), folder or repository as soon ' +
      'as complete answers',
    async () => {
      // The indexer never runs here unless asked: nothing is waited for.
      t = await startTestServer({ backend, indexer: { manual: true } });
      const native = '0e2c1a4e-7b1f-4c55-9a51-2b4d7a4d8e10';
      const place = {
        cwd: '/home/dev/airship',
        repository_root: '/home/dev/airship',
        repository_remote: 'git@github.com:example/blimpworks.git',
      };
      const revision = async (title: string, summary: string, turns: string[]) => {
        const bytes = await conversationBundle(work, { sessionId: native, title, cwd: place.cwd, turns });
        const done = await t.upload(t.alice, bytes, {
          session_id: native,
          title,
          summary,
          ...place,
          artifact_format: 'blue-session-bundle-v1',
          compatibility_profile: 'claude-v2_0_12',
          resumable: true,
        });
        expect(done.status, JSON.stringify(done.body)).toBe(200);
        return done.sessionId;
      };
      const found = async (q: string) => (await search(q)).map((h) => h.id);
      const id = await revision('Tidy the zeppelin hangar', 'Patched the quokka enclosure', [
        'The narwhal budget is tight.',
        'Agreed.',
      ]);
      for (const q of [
        'zeppelin',
        'quokka enclosure',
        native,
        native.slice(0, 8),
        native.slice(0, 8).toUpperCase(),
        'airship',
        '/home/dev/airship',
        'blimpworks',
        'github.com:example/blimpworks',
      ]) {
        expect(await found(q), q).toEqual([id]);
      }
      // Blue's listing contract, numbered: the first 8 characters of a native id.
      const listed = await t.call('GET', `/session-uploads?q=${native.slice(0, 8)}&page=1&per_page=25`, t.alice.token);
      expect(listed.body).toMatchObject({ total: 1, items: [{ id, native_session_id: native }] });
      // What it says follows, from the indexer; the metadata stays searchable.
      expect(await found('narwhal')).toEqual([]);
      await t.server.searchIdle();
      for (const q of ['narwhal', 'zeppelin', native.slice(0, 8), 'blimpworks'])
        expect(await found(q), q).toEqual([id]);

      // A new revision: its title and summary at once, the old ones gone; the previous conversation answers until the
      // new one is indexed.
      await revision('Repaint the gondola', 'Chose the walrus grey', ['The pelican paint dries slowly.', 'Fine.']);
      for (const q of ['gondola', 'walrus', native.slice(0, 8), 'narwhal']) expect(await found(q), q).toEqual([id]);
      for (const q of ['zeppelin', 'quokka', 'pelican']) expect(await found(q), q).toEqual([]);
      expect(await storedText(id)).toContain('narwhal');
      await t.server.searchIdle();
      for (const q of ['pelican', 'gondola', 'walrus', native.slice(0, 8), 'blimpworks'])
        expect(await found(q), q).toEqual([id]);
      expect(await found('narwhal')).toEqual([]);
    },
  );

  it('ranks a title match above a match deep in the conversation, in numbered mode', async () => {
    t = await startTestServer({ backend });
    const deep = await upload(t.alice, 'sess-deep', 'Tidy the build', [
      'Tidy it.',
      'While at it I noticed the cache key ignores the lockfile.',
    ]);
    t.clock.advance(60_000);
    const titled = await upload(t.alice, 'sess-titled', 'Cache key ignores the lockfile', [
      'Why is the build stale?',
      'Because of that.',
    ]);
    t.clock.advance(60_000);
    await upload(t.alice, 'sess-newest', 'Unrelated and newest', ['Nothing here.', 'Nothing.']);
    const ranked = await search('lockfile', t.alice, '&per_page=10');
    expect(ranked.map((h) => h.id)).toEqual([titled, deep]);
    // Asked for by date, it is by date.
    const byDate = await search('lockfile', t.alice, '&sort=updated_asc');
    expect(byDate.map((h) => h.id)).toEqual([deep, titled]);
  });

  it(
    "searches the resume picker's listing too (resumable=true, numbered): owned or shared only, `shared` and a " +
      'snippet on each',
    async () => {
      t = await startTestServer({ backend });
      const mine = await upload(t.alice, 'sess-mine', 'Mine', ['Look at the watchdog.', 'Fixed.']);
      t.clock.advance(60_000);
      const shared = await upload(t.bob, 'sess-shared', 'Shared', ['The watchdog again.', 'Fixed too.']);
      expect(
        (
          await t.call('PUT', `/session-uploads/${shared}/sharing`, t.bob.token, {
            mode: 'selected',
            user_ids: [t.alice.id],
          })
        ).status,
      ).toBe(200);
      await upload(t.bob, 'sess-private', 'Private', ['A private watchdog.', 'Kept.']);
      const picked = await t.call(
        'GET',
        '/session-uploads?resumable=true&q=watchdog&page=1&per_page=10',
        t.alice.token,
      );
      expect(picked.status, JSON.stringify(picked.body)).toBe(200);
      expect(picked.body).toMatchObject({ total: 2, page: 1, total_pages: 1 });
      const items = picked.body.items as { id: string; shared: boolean; snippet: string }[];
      expect(items.map((i) => [i.id, i.shared]).sort()).toEqual(
        [
          [mine, false],
          [shared, true],
        ].sort(),
      );
      for (const item of items) expect(item.snippet).toContain('[watchdog]');
      // An administrator's picker is their own and what was shared with them, not the organisation's.
      expect(
        (await t.call('GET', '/session-uploads?resumable=true&q=watchdog&page=1', t.admin.token)).body,
      ).toMatchObject({ total: 0, items: [] });
      // One way of paging at a time, the picker's too.
      expect((await t.call('GET', '/session-uploads?resumable=true&q=watchdog&limit=10', t.alice.token)).status).toBe(
        400,
      );
    },
  );

  it('counts at most 1,000 matches; a search that matches more is newest first, not ranked', async () => {
    t = await startTestServer({ backend });
    const store = t.server.store;
    for (let i = 0; i < 1001; i++) {
      // The first has the word in its title too: ranked, it would come first; newest first, it is last.
      const at = t.clock.now() - 10_000 + i;
      const { artifact } = await store.presign(
        newArtifact(t.alice.id, {
          native_session_id: `many-${i}`,
          sha256: i.toString(16).padStart(64, '0'),
          title: i === 0 ? 'plentiful first' : `Session ${i}`,
        }),
        at,
        86_400_000,
      );
      await store.complete(artifact.id, at, 86_400_000);
      await store.setSearchText(artifact.session_id, artifact.id, 'plentiful words everywhere', at);
    }
    const page = await t.call('GET', '/session-uploads?q=plentiful&per_page=3', t.alice.token);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ total: 1000, total_pages: 334 });
    expect(page.body.items.map((i: { native_session_id: string }) => i.native_session_id)).toEqual([
      'many-1000',
      'many-999',
      'many-998',
    ]);
    // Fewer matches are ranked: the title match first, whatever its age.
    const ranked = await t.call('GET', '/session-uploads?q=plentiful%20first&per_page=3', t.alice.token);
    expect(ranked.body).toMatchObject({ total: 1, items: [{ native_session_id: 'many-0' }] });
  });

  it(
    'reads what sessions say off the request path: queued at complete, claimed for a while, and only ever for the ' +
      'current upload',
    async () => {
      t = await startTestServer({ backend, indexer: { manual: true } });
      const store = t.server.store;
      const first = await t.upload(t.alice, await claudeBundle('sess-q', 'Queued', ['first words', 'ok.']), {
        session_id: 'sess-q',
        title: 'Queued',
        artifact_format: 'blue-session-bundle-v1',
        compatibility_profile: 'claude-v2_0_12',
        resumable: true,
      });
      // Claimed by someone else (another replica) for a minute: nobody else takes it meanwhile.
      const claimed = await store.claimSearchWork(t.clock.now(), 60_000, 10);
      expect(claimed.map((c) => [c.session_id, c.artifact.id])).toEqual([[first.sessionId, first.uploadId]]);
      expect(await store.claimSearchWork(t.clock.now(), 60_000, 10)).toEqual([]);
      // A newer upload completes meanwhile: queued afresh, unclaimed.
      const second = await t.upload(t.alice, await claudeBundle('sess-q', 'Queued', ['second words', 'ok.']), {
        session_id: 'sess-q',
        title: 'Queued',
        artifact_format: 'blue-session-bundle-v1',
        compatibility_profile: 'claude-v2_0_12',
        resumable: true,
      });
      // The one who claimed the first is too late: its text is not written, and its done leaves the new entry queued.
      expect(await store.setSearchText(first.sessionId, first.uploadId, 'first words', t.clock.now())).toBe(false);
      await store.searchWorkDone(first.sessionId, first.uploadId);
      await t.server.searchIdle();
      expect(await search('second')).toHaveLength(1);
      expect(await search('first')).toEqual([]);
      expect(await store.claimSearchWork(t.clock.now(), 60_000, 10)).toEqual([]);
      expect(second.sessionId).toBe(first.sessionId);
    },
  );

  it(
    "writes a claim's texts in one go: each only while its upload is current, and each claimed entry leaves the " +
      'queue',
    async () => {
      t = await startTestServer({ backend, indexer: { manual: true } });
      const store = t.server.store;
      const options = (sessionId: string) => ({
        session_id: sessionId,
        title: 'Batch',
        artifact_format: 'blue-session-bundle-v1',
        compatibility_profile: 'claude-v2_0_12',
        resumable: true,
      });
      const one = await t.upload(
        t.alice,
        await claudeBundle('sess-one', 'Batch', ['alpha words', 'ok.']),
        options('sess-one'),
      );
      const two = await t.upload(
        t.alice,
        await claudeBundle('sess-two', 'Batch', ['beta words', 'ok.']),
        options('sess-two'),
      );
      const claimed = await store.claimSearchWork(t.clock.now(), 60_000, 10);
      expect(claimed.map((c) => c.artifact.id).sort()).toEqual([one.uploadId, two.uploadId].sort());
      // sess-two gets a newer upload while its claim is being read: that text is stale, the new upload queued afresh.
      await t.upload(t.alice, await claudeBundle('sess-two', 'Batch', ['gamma words', 'ok.']), options('sess-two'));
      await store.searchIndexed(
        [
          { session_id: one.sessionId, artifact_id: one.uploadId, text: 'alpha words' },
          { session_id: two.sessionId, artifact_id: two.uploadId, text: 'beta words' },
        ],
        t.clock.now(),
      );
      expect((await search('alpha')).map((h) => h.id)).toEqual([one.sessionId]);
      expect(await search('beta')).toEqual([]);
      // Only the newer upload of sess-two is left to read.
      const left = await store.claimSearchWork(t.clock.now(), 60_000, 10);
      expect(left.map((c) => c.session_id)).toEqual([two.sessionId]);
      expect(left[0]!.artifact.id).not.toBe(two.uploadId);
      await store.searchIndexed([], t.clock.now());
    },
  );

  it('a claim whose server died is taken again once it lapses', async () => {
    t = await startTestServer({ backend, indexer: { manual: true } });
    const store = t.server.store;
    const done = await t.upload(t.alice, await claudeBundle('sess-lapse', 'Lapsing', ['orphaned words', 'ok.']), {
      session_id: 'sess-lapse',
      title: 'Lapsing',
      artifact_format: 'blue-session-bundle-v1',
      compatibility_profile: 'claude-v2_0_12',
      resumable: true,
    });
    // Taken by a server that then died before indexing.
    expect(await store.claimSearchWork(t.clock.now(), 60_000, 10)).toHaveLength(1);
    await t.server.searchIdle();
    expect(await search('orphaned')).toEqual([]);
    t.clock.advance(61_000);
    await t.server.searchIdle();
    expect((await search('orphaned')).map((h) => h.id)).toEqual([done.sessionId]);
  });

  it('takes any text as words only: quotes, operators and symbols are never a syntax error', async () => {
    t = await startTestServer({ backend });
    await upload(t.alice, 'sess-ops', 'Operators', ['Handle NEAR and OR in queries.', 'Fine.']);
    for (const q of [
      '"',
      '*',
      'OR',
      'NEAR(',
      'a:b',
      '!&|()',
      "it's",
      '\\',
      '"unterminated',
      'title:x',
      '-',
      '^',
      '%_',
      'ü',
      '日本',
    ]) {
      const got = await t.call('GET', `/session-uploads?q=${encodeURIComponent(q)}`, t.alice.token);
      expect(got.status, q).toBe(200);
    }
    expect((await search('near OR')).length).toBe(1);
  });

  it('never indexes a secret the conversation holds', async () => {
    t = await startTestServer({ backend });
    const token = `ghp_${'A1b2C3d4'.repeat(5)}`;
    await upload(t.alice, 'sess-secret', 'Set up the CI token', [
      `Use this token: ${token} for the release job.`,
      'Stored it in the CI settings.',
    ]);
    expect(await search(token)).toEqual([]);
    const hits = await search('release job');
    expect(hits).toHaveLength(1);
    expect(hits[0]!.snippet).not.toContain(token);
  });

  it('follows revisions and deletions: the current upload is what is searched, a deleted session nowhere', async () => {
    t = await startTestServer({ backend });
    const id = await upload(t.alice, 'sess-rev', 'Evolving', ['First we tried sqlite.', 'It worked.']);
    expect((await search('sqlite')).map((h) => h.id)).toEqual([id]);
    await upload(t.alice, 'sess-rev', 'Evolving', [
      'First we tried sqlite.',
      'It worked.',
      'Then we moved to postgres.',
      'Migrated.',
    ]);
    expect((await search('postgres')).map((h) => h.id)).toEqual([id]);
    await upload(t.alice, 'sess-rev', 'Evolving', ['Only duckdb now.', 'Fine.']);
    expect(await search('postgres')).toEqual([]);
    expect((await search('duckdb')).map((h) => h.id)).toEqual([id]);

    expect((await t.call('DELETE', `/session-uploads/${id}`, t.alice.token)).status).toBe(204);
    expect(await search('duckdb')).toEqual([]);
    // A new session of the same native id is indexed afresh.
    const again = await upload(t.alice, 'sess-rev', 'Evolving', ['duckdb again.', 'Yes.']);
    expect((await search('duckdb')).map((h) => h.id)).toEqual([again]);
  });

  /** The text the database keeps in the session's search entry (undefined: no entry), read below the store. */
  async function storedText(sessionId: string): Promise<string | undefined> {
    if (backend === 'sqlite') {
      const db = new DatabaseSync(path.join(t.dataDir, 'control.db'));
      try {
        const row = db
          .prepare(
            'SELECT x.body FROM session_search x JOIN session_search_ids i ON i.rowid = x.rowid WHERE i.session_id = ?',
          )
          .get(sessionId) as { body: string } | undefined;
        return row?.body;
      } finally {
        db.close();
      }
    }
    const db = new pg.Client({ connectionString: t.storeOptions.databaseUrl });
    await db.connect();
    try {
      return (await db.query<{ body: string }>('SELECT body FROM session_search WHERE session_id = $1', [sessionId]))
        .rows[0]?.body;
    } finally {
      await db.end();
    }
  }

  it(
    'an upload past its retention deadline is searched no more: no match, no snippet from its deadline on, and gc ' +
      'removes its entry',
    async () => {
      t = await startTestServer({ backend, retentionDays: 1 });
      const old = await upload(t.alice, 'sess-old', 'Airship notes', [
        'The zeppelin hangar leaks.',
        'Patched the zeppelin roof.',
      ]);
      t.clock.advance(12 * 3_600_000);
      const fresh = await upload(t.alice, 'sess-fresh', 'Fresh notes', ['Another zeppelin story.', 'Fine.']);
      expect((await search('zeppelin')).map((h) => h.id).sort()).toEqual([old, fresh].sort());
      expect(await storedText(old)).toContain('zeppelin hangar');

      // Past the first one's deadline, before any gc: its words, its title and a piece of its name find nothing, for
      // its owner or an administrator, in the resume picker neither; it shows no snippet.
      t.clock.advance(13 * 3_600_000);
      expect((await search('zeppelin')).map((h) => h.id)).toEqual([fresh]);
      expect((await search('zeppelin', t.admin)).map((h) => h.id)).toEqual([fresh]);
      expect(await search('hangar')).toEqual([]);
      expect(await search('airship')).toEqual([]);
      expect((await search('-')).map((h) => h.id)).toEqual([fresh]);
      expect(
        (await t.call('GET', '/session-uploads?resumable=true&q=hangar&page=1', t.alice.token)).body,
      ).toMatchObject({
        total: 0,
        items: [],
      });
      expect(await t.server.store.snippets([old, fresh], 'zeppelin', t.clock.now())).toEqual(
        new Map([[fresh, expect.stringContaining('[zeppelin]')]]),
      );
      // Listed still, by what its upload declared: its download is 410, its metadata stays.
      const listed = await t.call('GET', '/session-uploads', t.alice.token);
      expect(listed.body.items.find((i: { id: string }) => i.id === old)).toMatchObject({ title: 'Airship notes' });
      expect((await t.call('POST', `/session-uploads/${old}/download`, t.alice.token, {})).status).toBe(410);

      // gc removes what was read from its bundle, whether or not its object could go yet.
      const blobs = await createLocalBlobStore({ dir: t.blobDir, publicUrl: t.url, secret: 'x'.repeat(32) });
      const collected = await collectGarbage(t.storeOptions, blobs, t.clock.now());
      expect(collected).toMatchObject({ expired_search_entries: 1, failed: [] });
      expect(await storedText(old)).toBeUndefined();
      expect(await storedText(fresh)).toContain('zeppelin');
      expect((await collectGarbage(t.storeOptions, blobs, t.clock.now())).expired_search_entries).toBe(0);
      // reindex gives it no entry either.
      const rebuilt = await reindex(t.storeOptions, blobs, profiles, t.clock.now, { restart: true });
      expect(rebuilt).toMatchObject({ indexed: 1, expired: 1, total: 2 });
      expect(await storedText(old)).toBeUndefined();
      expect((await search('zeppelin')).map((h) => h.id)).toEqual([fresh]);
    },
  );

  it(
    'a session without an entry (not indexed yet, or just replaced by a complete) gets no snippet, never another ' +
      "session's",
    async () => {
      t = await startTestServer({ backend, indexer: { manual: true } });
      const store = t.server.store;
      const options = (sessionId: string) => ({
        session_id: sessionId,
        title: 'Private',
        artifact_format: 'blue-session-bundle-v1',
        compatibility_profile: 'claude-v2_0_12',
        resumable: true,
      });
      const bobs = await t.upload(
        t.bob,
        await claudeBundle('sess-bob', 'Private', ['the narwhal budget is secret', 'ok.']),
        options('sess-bob'),
      );
      await t.server.searchIdle();
      const alices = await t.upload(
        t.alice,
        await claudeBundle('sess-alice', 'Private', ['a narwhal', 'ok.']),
        options('sess-alice'),
      );
      // Alice's is queued, not indexed yet: its entry holds its title, summary and place, and no text.
      expect(await storedText(alices.sessionId)).toBe('');
      expect(await store.snippets([alices.sessionId], 'narwhal', t.clock.now())).toEqual(new Map());
      expect(await store.snippets([alices.sessionId, bobs.sessionId], 'narwhal', t.clock.now())).toEqual(
        new Map([[bobs.sessionId, expect.stringContaining('budget')]]),
      );
    },
  );

  it('a session deleted while the indexer reads it gets no entry back', async () => {
    t = await startTestServer({ backend, indexer: { manual: true } });
    const store = t.server.store;
    const done = await t.upload(t.alice, await claudeBundle('sess-gone', 'Gone', ['the axolotl tank', 'ok.']), {
      session_id: 'sess-gone',
      title: 'Gone',
      artifact_format: 'blue-session-bundle-v1',
      compatibility_profile: 'claude-v2_0_12',
      resumable: true,
    });
    expect(await store.claimSearchWork(t.clock.now(), 60_000, 10)).toHaveLength(1);
    expect((await t.call('DELETE', `/session-uploads/${done.sessionId}`, t.alice.token)).status).toBe(204);
    await store.searchIndexed(
      [{ session_id: done.sessionId, artifact_id: done.uploadId, text: 'the axolotl tank' }],
      t.clock.now(),
    );
    expect(await store.setSearchText(done.sessionId, done.uploadId, 'the axolotl tank', t.clock.now())).toBe(false);
    expect(await storedText(done.sessionId)).toBeUndefined();
    expect(await search('axolotl', t.admin)).toEqual([]);
  });

  it('an upload whose deadline passes before the indexer reads it is never indexed', async () => {
    t = await startTestServer({ backend, retentionDays: 1, indexer: { manual: true } });
    const store = t.server.store;
    const done = await t.upload(t.alice, await claudeBundle('sess-late', 'Late', ['the quokka enclosure', 'ok.']), {
      session_id: 'sess-late',
      title: 'Late',
      artifact_format: 'blue-session-bundle-v1',
      compatibility_profile: 'claude-v2_0_12',
      resumable: true,
    });
    // Claimed by a server that read it, but wrote only after the deadline: no text is written (the entry holds the
    // metadata complete wrote).
    const claimed = await store.claimSearchWork(t.clock.now(), 60_000, 10);
    expect(claimed).toHaveLength(1);
    t.clock.advance(25 * 3_600_000);
    await store.searchIndexed(
      [{ session_id: done.sessionId, artifact_id: done.uploadId, text: 'the quokka enclosure' }],
      t.clock.now(),
    );
    expect(await store.setSearchText(done.sessionId, done.uploadId, 'the quokka enclosure', t.clock.now())).toBe(false);
    expect(await storedText(done.sessionId)).toBe('');
    // Nor is it handed out to be read again.
    t.clock.advance(61_000);
    expect(await store.claimSearchWork(t.clock.now(), 60_000, 10)).toEqual([]);
    await t.server.searchIdle();
    expect(await storedText(done.sessionId)).toBe('');
  });

  it('control-plane reindex rebuilds each entry from the stored bundles, going on where a run stopped', async () => {
    t = await startTestServer({ backend });
    const ids = [
      await upload(t.alice, 'sess-r1', 'One', ['alpha words here.', 'ok.']),
      await upload(t.alice, 'sess-r2', 'Two', ['bravo words here.', 'ok.']),
      await upload(t.bob, 'sess-r3', 'Three', ['charlie words here.', 'ok.']),
    ].sort();
    const raw = await t.upload(t.alice, Buffer.from('raw text'), { session_id: 'raw-r', title: 'Raw one' });
    const all = [...ids, raw.sessionId].sort();
    // An index that has lost what the sessions say (as after an upgrade that indexes more).
    for (const id of ids) {
      const session = (await t.server.store.session(id))!;
      expect(await t.server.store.setSearchText(id, session.current_artifact_id!, '', t.clock.now())).toBe(true);
    }
    expect(await search('bravo')).toEqual([]);

    const blobs = await createLocalBlobStore({ dir: t.blobDir, publicUrl: t.url, secret: 'x'.repeat(32) });
    const seen: number[] = [];
    // Stopped after two sessions: the position is kept.
    await expect(
      reindex(t.storeOptions, blobs, profiles, t.clock.now, {
        onProgress: (done, total) => {
          seen.push(done);
          expect(total).toBe(4);
          if (done === 2) throw new Error('stopped');
        },
      }),
    ).rejects.toThrow('stopped');
    expect(await t.server.store.reindexCursor()).toBe(all[1]);
    const rest = await reindex(t.storeOptions, blobs, profiles, t.clock.now, { onProgress: (done) => seen.push(done) });
    expect(rest.resumed_after).toBe(all[1]);
    expect(rest.indexed + rest.without_text).toBe(2);
    expect(rest.total).toBe(4);
    expect(seen).toEqual([1, 2, 1, 2]);
    expect(await t.server.store.reindexCursor()).toBeUndefined();

    // From the start: every session, the raw upload by its title only.
    const full = await reindex(t.storeOptions, blobs, profiles, t.clock.now, { restart: true });
    expect(full).toEqual({ indexed: 3, without_text: 1, skipped: 0, expired: 0, total: 4, resumed_after: null });
    for (const word of ['alpha', 'bravo']) expect((await search(word)).length, word).toBe(1);
    expect((await search('charlie', t.bob)).length).toBe(1);
  });

  it('indexes the title and summary of uploads it cannot read as a session bundle', async () => {
    t = await startTestServer({ backend });
    const raw = await t.upload(t.alice, Buffer.from('not a bundle at all'), {
      session_id: 'raw-1',
      title: 'Raw transcript of the migration',
    });
    expect(raw.status).toBe(200);
    expect((await search('migration')).map((h) => h.id)).toEqual([raw.sessionId]);
    // Claimed to be a bundle, but is not one: completed all the same, searchable by its title.
    const bad = await t.upload(t.alice, Buffer.from('garbage claiming to be a bundle'), {
      session_id: 'bad-1',
      title: 'Broken bundle upload',
      artifact_format: 'blue-session-bundle-v1',
      compatibility_profile: 'claude-v2_0_12',
    });
    expect(bad.status).toBe(200);
    expect((await search('broken')).map((h) => h.id)).toEqual([bad.sessionId]);
  });
});
