/**
 * Deleting captured sessions and the audit log, on both databases: who may delete (owner, administrator; a recipient
 * is refused, a stranger told nothing exists), what goes (every revision's metadata, sharing and object, a pending
 * upload's object too once its URL can no longer be used), that a deleted session's signed URLs write nothing that
 * stays (the local store refuses them; what reaches an S3 bucket, which cannot, gc deletes), what is written down
 * (downloads, sharing changes, deletions, administrators' reads of pages, details and search snippets), who may read
 * the log, and that the database keeps it append-only.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collectGarbage } from '../src/admin.js';
import { createLocalBlobStore } from '../src/blobs/local.js';
import { createS3BlobStore } from '../src/blobs/s3.js';
import type { BlobStore } from '../src/blobs/types.js';
import {
  BACKENDS,
  presignBody,
  startTestServer,
  type TestServer,
  type TestUser,
} from '../../../test/support/control-server.js';
import { conversationBundle } from '../../../test/support/conversation-bundle.js';
import { startS3rver, type TestBucket } from '../../../test/support/s3rver.js';

const RESUMABLE = {
  artifact_format: 'blue-session-bundle-v1',
  compatibility_profile: 'claude-v2_0_12',
  resumable: true,
};
const HOUR = 60 * 60_000;
let work: string;
beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'blue-delete-audit-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe.each(BACKENDS)('deleting sessions and the audit log (%s)', (backend) => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  /** Uploads a session of `user` with two revisions; answers the captured session's id and its objects' files. */
  async function twoRevisions(user: TestUser, name: string): Promise<{ id: string; files: string[] }> {
    const first = await t.upload(user, Buffer.from(`${name} one`), { session_id: name, title: name, ...RESUMABLE });
    const second = await t.upload(user, Buffer.from(`${name} two`), { session_id: name, title: name, ...RESUMABLE });
    expect(second.sessionId).toBe(first.sessionId);
    const files = [first.uploadId, second.uploadId].map((id) => path.join(t.blobDir, 'sessions', `${id}.tar.gz`));
    for (const file of files) expect(existsSync(file)).toBe(true);
    return { id: first.sessionId, files };
  }

  const audit = async (query = '') => {
    const got = await t.call('GET', `/audit-events${query}`, t.admin.token);
    expect(got.status).toBe(200);
    return got.body as {
      items: {
        seq: number;
        at: string;
        actor: { kind: string; id: string; email: string | null };
        action: string;
        session_id: string | null;
        owner_id: string | null;
        details: Record<string, unknown>;
        summary: string;
      }[];
      next_after: number | null;
    };
  };

  it(
    'the owner deletes every revision, its sharing and its objects; it is gone for everyone, and the deletion is ' +
      'logged',
    async () => {
      t = await startTestServer({ backend });
      const { id, files } = await twoRevisions(t.alice, 'doomed');
      expect(
        (
          await t.call('PUT', `/session-uploads/${id}/sharing`, t.alice.token, {
            mode: 'selected',
            emails: [t.bob.email],
          })
        ).status,
      ).toBe(200);
      const kept = await twoRevisions(t.alice, 'kept');

      const deleted = await t.call('DELETE', `/session-uploads/${id}`, t.alice.token);
      expect([deleted.status, deleted.body]).toEqual([204, undefined]);
      for (const file of files) expect(existsSync(file)).toBe(false);
      for (const user of [t.alice, t.bob, t.admin]) {
        expect((await t.call('GET', `/session-uploads/${id}`, user.token)).status).toBe(404);
        expect((await t.call('POST', `/session-uploads/${id}/download`, user.token, {})).status).toBe(404);
        const listed = await t.call('GET', '/session-uploads', user.token);
        expect(listed.body.items.map((s: { id: string }) => s.id)).not.toContain(id);
      }
      expect((await t.call('DELETE', `/session-uploads/${id}`, t.alice.token)).status).toBe(404);
      // The other session is untouched.
      expect((await t.call('GET', `/session-uploads/${kept.id}`, t.alice.token)).status).toBe(200);
      for (const file of kept.files) expect(existsSync(file)).toBe(true);
      // Nothing to collect now; the keys are deleted once more when no URL signed for them can deliver bytes any more.
      expect(await t.server.store.blobDeletionsDue(t.clock.now(), 10)).toEqual([]);
      expect((await t.server.store.blobDeletionsDue(t.clock.now() + 2 * HOUR, 10)).sort()).toEqual(
        files.map((f) => `sessions/${path.basename(f)}`).sort(),
      );

      const log = await audit('?action=session.delete');
      expect(log.items).toEqual([
        {
          seq: expect.any(Number),
          at: new Date(t.clock.now()).toISOString(),
          actor: { kind: 'user', id: t.alice.id, email: t.alice.email },
          action: 'session.delete',
          session_id: id,
          owner_id: t.alice.id,
          details: { harness: 'claude', native_session_id: 'doomed', title: 'doomed' },
          summary: 'deleted the claude session doomed "doomed"',
        },
      ]);
      // The same session uploaded again is a new session.
      const again = await t.upload(t.alice, Buffer.from('doomed three'), { session_id: 'doomed', ...RESUMABLE });
      expect(again.status).toBe(200);
      expect(again.sessionId).not.toBe(id);
    },
  );

  it("an administrator deletes anyone's; a recipient may not, and to anyone else it does not exist", async () => {
    t = await startTestServer({ backend });
    const shared = await twoRevisions(t.alice, 'shared');
    expect(
      (await t.call('PUT', `/session-uploads/${shared.id}/sharing`, t.alice.token, { mode: 'workspace' })).status,
    ).toBe(200);
    const refused = await t.call('DELETE', `/session-uploads/${shared.id}`, t.bob.token);
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    expect(refused.body.error).toContain('only the owner');
    const hidden = await twoRevisions(t.alice, 'private');
    expect((await t.call('DELETE', `/session-uploads/${hidden.id}`, t.bob.token)).status).toBe(404);
    expect(
      (await t.call('DELETE', '/session-uploads/00000000-0000-4000-8000-000000000000', t.alice.token)).status,
    ).toBe(404);
    expect((await t.call('DELETE', `/session-uploads/${hidden.id}`, undefined)).status).toBe(401);
    for (const file of [...shared.files, ...hidden.files]) expect(existsSync(file)).toBe(true);

    expect((await t.call('DELETE', `/session-uploads/${hidden.id}`, t.admin.token)).status).toBe(204);
    for (const file of hidden.files) expect(existsSync(file)).toBe(false);
    expect((await audit('?action=session.delete')).items).toMatchObject([
      { actor: { id: t.admin.id }, owner_id: t.alice.id, session_id: hidden.id },
    ]);
  });

  /** presign → PUT → complete by hand: the answers, for a test that uses the upload URL again. */
  async function uploaded(
    user: TestUser,
    bytes: Buffer,
    fields: Record<string, unknown>,
  ): Promise<{
    upload_id: string;
    session_id: string;
    upload_url: string;
    headers: Record<string, string>;
    complete_url: string;
  }> {
    const presigned = await t.call('POST', '/session-uploads/presign', user.token, presignBody(bytes, fields));
    expect(presigned.status).toBe(200);
    expect(
      (
        await fetch(presigned.body.upload_url, {
          method: 'PUT',
          headers: presigned.body.headers,
          body: new Uint8Array(bytes),
        })
      ).status,
    ).toBe(200);
    expect((await t.call('POST', new URL(presigned.body.complete_url).pathname, user.token)).status).toBe(200);
    return presigned.body;
  }

  it("a deleted session's upload URLs, still within their time, write nothing; complete finds nothing", async () => {
    t = await startTestServer({ backend });
    const one = Buffer.from('first revision');
    const two = Buffer.from('second revision');
    const superseded = await uploaded(t.alice, one, { session_id: 'gone' });
    const current = await uploaded(t.alice, two, { session_id: 'gone' });
    const pendingBytes = Buffer.from('third revision, never completed');
    const pending = (
      await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(pendingBytes, { session_id: 'gone' }))
    ).body;
    // Before the delete, a verified upload's URL carries only the same bytes again, which the store takes.
    expect(
      (await fetch(current.upload_url, { method: 'PUT', headers: current.headers, body: new Uint8Array(two) })).status,
    ).toBe(200);

    expect((await t.call('DELETE', `/session-uploads/${current.session_id}`, t.alice.token)).status).toBe(204);
    for (const [signed, bytes] of [
      [superseded, one],
      [current, two],
      [pending, pendingBytes],
    ] as const) {
      const put = await fetch(signed.upload_url, {
        method: 'PUT',
        headers: signed.headers,
        body: new Uint8Array(bytes),
      });
      expect([put.status, ((await put.json()) as { code: string }).code]).toEqual([410, 'UPLOAD_GONE']);
      expect(existsSync(path.join(t.blobDir, 'sessions', `${signed.upload_id}.tar.gz`))).toBe(false);
      expect((await t.call('POST', new URL(signed.complete_url).pathname, t.alice.token)).status).toBe(404);
    }
    expect((await t.call('GET', `/session-uploads/${current.session_id}`, t.alice.token)).status).toBe(404);
  });

  it('a complete that finds its session deleted while checking the bytes answers 404, verifies nothing', async () => {
    let deleteDuringStat: (() => Promise<void>) | undefined;
    const wrapBlobs = (inner: BlobStore): BlobStore => ({
      ...inner,
      stat: async (key, options) => {
        const stored = await inner.stat(key, options);
        // The session's owner deletes it while complete reads the bytes.
        await deleteDuringStat?.();
        deleteDuringStat = undefined;
        return stored;
      },
    });
    t = await startTestServer({ backend, wrapBlobs });
    const bytes = Buffer.from('racing bytes');
    const presigned = (
      await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes, { session_id: 'racing' }))
    ).body;
    expect(
      (await fetch(presigned.upload_url, { method: 'PUT', headers: presigned.headers, body: new Uint8Array(bytes) }))
        .status,
    ).toBe(200);
    deleteDuringStat = async () =>
      void expect((await t.call('DELETE', `/session-uploads/${presigned.session_id}`, t.alice.token)).status).toBe(204);
    const completed = await t.call('POST', new URL(presigned.complete_url).pathname, t.alice.token);
    expect([completed.status, completed.body.code]).toEqual([404, 'not_found']);
    expect(deleteDuringStat).toBeUndefined();
    expect(await t.server.store.artifact(presigned.upload_id)).toBeUndefined();
    expect((await t.call('GET', '/session-uploads', t.alice.token)).body.items).toEqual([]);
  });

  it(
    "gc deletes whatever reaches a deleted session's keys until every URL signed for them has expired, whatever " +
      'their status',
    async () => {
      t = await startTestServer({ backend });
      const verified = await uploaded(t.alice, Buffer.from('verified bytes'), { session_id: 'late' });
      const pending = (
        await t.call(
          'POST',
          '/session-uploads/presign',
          t.alice.token,
          presignBody(Buffer.from('pending bytes'), { session_id: 'late' }),
        )
      ).body;
      expect((await t.call('DELETE', `/session-uploads/${verified.session_id}`, t.alice.token)).status).toBe(204);
      // Bytes that reached the keys after the delete (a PUT to an S3 bucket, which no server can refuse).
      const files = [verified, pending].map((p) => path.join(t.blobDir, 'sessions', `${p.upload_id}.tar.gz`));
      for (const file of files) await writeFile(file, 'landed late');

      const blobs = await createLocalBlobStore({ dir: t.blobDir, publicUrl: t.url, secret: 'x'.repeat(32) });
      // While an upload URL may still deliver bytes, gc leaves the queued keys alone.
      expect(await collectGarbage(t.storeOptions, blobs, t.clock.now() + 15 * 60_000)).toEqual({
        deleted: [],
        deleted_objects: [],
        failed: [],
        expired_search_entries: 0,
        expired_sign_in_records: 0,
      });
      for (const file of files) expect(existsSync(file)).toBe(true);
      const later = t.clock.now() + 2 * HOUR;
      const collected = await collectGarbage(t.storeOptions, blobs, later);
      expect(collected.deleted_objects.sort()).toEqual(files.map((f) => `sessions/${path.basename(f)}`).sort());
      for (const file of files) expect(existsSync(file)).toBe(false);
      expect(await t.server.store.blobDeletionsDue(later + 365 * 24 * HOUR, 10)).toEqual([]);
    },
  );

  it('an object the store cannot delete at once stays queued, and gc deletes it', async () => {
    let failDeletes = true;
    const wrapBlobs = (inner: BlobStore): BlobStore => ({
      ...inner,
      delete: async (key) => {
        if (failDeletes) throw new Error('the bucket is away');
        await inner.delete(key);
      },
    });
    const logged: string[] = [];
    t = await startTestServer({ backend, wrapBlobs, log: (_level, line) => logged.push(line) });
    const { id, files } = await twoRevisions(t.alice, 'stubborn');
    expect((await t.call('DELETE', `/session-uploads/${id}`, t.alice.token)).status).toBe(204);
    expect((await t.call('GET', `/session-uploads/${id}`, t.alice.token)).status).toBe(404);
    for (const file of files) expect(existsSync(file)).toBe(true);
    expect(logged.filter((l) => l.includes(`session ${id} deleted, but not its object`))).toHaveLength(2);

    failDeletes = false;
    const blobs = await createLocalBlobStore({ dir: t.blobDir, publicUrl: t.url, secret: 'x'.repeat(32) });
    const gc = await collectGarbage(t.storeOptions, blobs, t.clock.now());
    expect(gc.deleted_objects.sort()).toEqual(files.map((f) => `sessions/${path.basename(f)}`).sort());
    for (const file of files) expect(existsSync(file)).toBe(false);
  });

  it(
    "logs downloads, sharing changes and administrators' reads of others' sessions, in order, with paging and " +
      'filters',
    async () => {
      t = await startTestServer({ backend });
      const a = await twoRevisions(t.alice, 'audited');
      // The owner's read: not logged.
      expect((await t.call('GET', `/session-uploads/${a.id}`, t.alice.token)).status).toBe(200);
      expect(
        (
          await t.call('PUT', `/session-uploads/${a.id}/sharing`, t.alice.token, {
            mode: 'selected',
            emails: [t.bob.email],
          })
        ).status,
      ).toBe(200);
      const bobDownload = await t.call('POST', `/session-uploads/${a.id}/download`, t.bob.token, {});
      expect(bobDownload.status).toBe(200);
      expect((await t.call('GET', `/session-uploads/${a.id}`, t.admin.token)).status).toBe(200);
      expect((await t.call('GET', `/session-uploads/${a.id}/sharing`, t.admin.token)).status).toBe(200);
      expect((await t.call('PUT', `/session-uploads/${a.id}/sharing`, t.alice.token, { mode: 'private' })).status).toBe(
        200,
      );

      const all = await audit();
      expect(all.next_after).toBeNull();
      expect(all.items.map((e) => [e.action, e.actor.email])).toEqual([
        ['session.share', t.alice.email],
        ['session.download', t.bob.email],
        ['session.read', t.admin.email],
        ['session.read', t.admin.email],
        ['session.share', t.alice.email],
      ]);
      for (const e of all.items) expect(e).toMatchObject({ session_id: a.id, owner_id: t.alice.id });
      expect(all.items[0]!.details).toEqual({ from: 'private', mode: 'selected', user_ids: [t.bob.id] });
      expect(all.items[1]!.details).toEqual({ artifact_id: bobDownload.body.artifact_id });
      expect(all.items[2]!.details).toEqual({ what: 'detail' });
      expect(all.items[4]!.details).toEqual({ from: 'selected', mode: 'private', user_ids: [] });
      const seqs = all.items.map((e) => e.seq);
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
      expect(new Set(seqs).size).toBe(seqs.length);

      // Paging: `after` the last seq of a page; the last page says null.
      const first = await audit('?limit=2');
      expect(first.items.map((e) => e.seq)).toEqual(seqs.slice(0, 2));
      expect(first.next_after).toBe(seqs[1]);
      const rest = await audit(`?after=${first.next_after}&limit=3`);
      expect(rest.items.map((e) => e.seq)).toEqual(seqs.slice(2));
      expect(rest.next_after).toBeNull();
      // Filters.
      expect((await audit(`?actor_id=${t.bob.id}`)).items.map((e) => e.action)).toEqual(['session.download']);
      expect((await audit('?action=session.read')).items).toHaveLength(2);
      expect((await audit(`?session_id=${a.id}&action=session.share`)).items).toHaveLength(2);
      expect((await audit('?session_id=00000000-0000-4000-8000-000000000000')).items).toEqual([]);
    },
  );

  it(
    "logs an administrator's search snippets of sessions not theirs, one read per session shown, as their pages " +
      'are',
    async () => {
      t = await startTestServer({ backend });
      const bundle = (name: string, words: string) =>
        conversationBundle(work, { sessionId: name, title: name, cwd: '/w', turns: [words, 'ok.'] });
      const uploadSaying = async (user: TestUser, name: string, words: string) =>
        (await t.upload(user, await bundle(name, words), { session_id: name, title: name, cwd: '/w', ...RESUMABLE }))
          .sessionId;
      const alices = await uploadSaying(t.alice, 'alice-private', 'the pangolin ledger');
      const bobs = await uploadSaying(t.bob, 'bob-shared', 'a pangolin sighting');
      expect((await t.call('PUT', `/session-uploads/${bobs}/sharing`, t.bob.token, { mode: 'workspace' })).status).toBe(
        200,
      );
      const admins = await uploadSaying(t.admin, 'admin-own', 'my pangolin');
      await uploadSaying(t.alice, 'alice-other', 'nothing to see');
      const before = (await audit()).items.length;

      const searched = await t.call('GET', '/session-uploads?q=pangolin', t.admin.token);
      expect(searched.body.items.map((i: { id: string }) => i.id).sort()).toEqual([alices, bobs, admins].sort());
      for (const item of searched.body.items) expect(item.snippet).toContain('[pangolin]');
      const reads = (await audit()).items.slice(before);
      expect(reads.map((e) => [e.action, e.session_id, e.owner_id, e.actor.id, e.details]).sort()).toEqual(
        [
          ['session.read', alices, t.alice.id, t.admin.id, { what: 'search' }],
          ['session.read', bobs, t.bob.id, t.admin.id, { what: 'search' }],
        ].sort(),
      );
      // The resume picker's search too: the administrator's own and what was shared with them.
      const picked = await t.call('GET', '/session-uploads?resumable=true&q=pangolin&page=1', t.admin.token);
      expect(picked.body.items.map((i: { id: string }) => i.id).sort()).toEqual([bobs, admins].sort());
      expect((await audit(`?session_id=${bobs}&action=session.read`)).items).toHaveLength(2);
      // A member's search reads nothing that is not theirs to read: not logged; nor is a listing without q.
      const logged = (await audit()).items.length;
      expect((await t.call('GET', '/session-uploads?q=pangolin', t.alice.token)).body.items).toHaveLength(2);
      expect((await t.call('GET', '/session-uploads', t.admin.token)).status).toBe(200);
      expect((await audit()).items).toHaveLength(logged);
    },
  );

  it('is for administrators, with every bad parameter named', async () => {
    t = await startTestServer({ backend });
    const member = await t.call('GET', '/audit-events', t.alice.token);
    expect([member.status, member.body.code]).toEqual([403, 'forbidden']);
    expect((await t.call('GET', '/audit-events', undefined)).status).toBe(401);
    for (const [query, said] of [
      ['?limit=0', 'limit must be an integer from 1 to 100'],
      ['?limit=101', 'limit must be an integer from 1 to 100'],
      ['?after=-1', 'after must be an integer'],
      ['?after=abc', 'after must be an integer'],
      [
        '?action=session.delete2',
        'action must be one of session.read, session.download, session.share, session.delete',
      ],
      ['?nope=1', 'unknown query parameter "nope"'],
      ['?limit=1&limit=2', 'query parameter "limit" is given more than once'],
      [`?actor_id=${'x'.repeat(201)}`, 'actor_id is 201 characters long'],
    ] as const) {
      const got = await t.call('GET', `/audit-events${query}`, t.admin.token);
      expect([got.status, got.body.code], query).toEqual([400, 'invalid_request']);
      expect(got.body.error, query).toContain(said);
    }
  });

  it('is append-only in the database itself: an entry cannot be changed or removed, even by hand', async () => {
    t = await startTestServer({ backend });
    const { id } = await twoRevisions(t.alice, 'kept-record');
    expect((await t.call('DELETE', `/session-uploads/${id}`, t.alice.token)).status).toBe(204);
    const attempts = ["UPDATE audit_events SET actor_email = 'someone@else'", 'DELETE FROM audit_events'];
    if (backend === 'sqlite') {
      const db = new DatabaseSync(path.join(t.dataDir, 'control.db'));
      try {
        for (const sql of attempts) expect(() => db.exec(sql), sql).toThrow(/append-only/);
      } finally {
        db.close();
      }
    } else {
      const db = new pg.Client({ connectionString: t.storeOptions.databaseUrl });
      await db.connect();
      try {
        for (const sql of [...attempts, 'TRUNCATE audit_events'])
          await expect(db.query(sql), sql).rejects.toThrow(/append-only/);
      } finally {
        await db.end();
      }
    }
    expect((await audit()).items).toMatchObject([{ action: 'session.delete', actor: { email: t.alice.email } }]);
  });
});

describe.each(BACKENDS)("a deleted session's objects in an S3 bucket (%s)", (backend) => {
  let bucket: TestBucket;
  let blobs: BlobStore;
  let t: TestServer;
  beforeAll(async () => {
    bucket = await startS3rver();
    blobs = await createS3BlobStore(bucket.options);
  });
  afterAll(async () => {
    await blobs?.close();
    await bucket?.close();
  });
  afterEach(async () => {
    await t?.close();
  });

  it('a URL signed before the delete still writes to the bucket; complete refuses, gc deletes the object', async () => {
    // s3rver judges a URL's expiry by the real clock.
    t = await startTestServer({ backend, startAt: Date.now(), blobs: () => createS3BlobStore(bucket.options) });
    const bytes = Buffer.from('bytes for the bucket');
    const presigned = (
      await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes, { session_id: 'bucketed' }))
    ).body;
    const put = () =>
      fetch(presigned.upload_url, { method: 'PUT', headers: presigned.headers, body: new Uint8Array(bytes) });
    expect((await put()).status).toBe(200);
    expect((await t.call('POST', new URL(presigned.complete_url).pathname, t.alice.token)).status).toBe(200);
    const pendingBytes = Buffer.from('presigned, not uploaded yet');
    const pending = (
      await t.call(
        'POST',
        '/session-uploads/presign',
        t.alice.token,
        presignBody(pendingBytes, { session_id: 'bucketed' }),
      )
    ).body;
    const key = `sessions/${presigned.upload_id}.tar.gz`;
    const pendingKey = `sessions/${pending.upload_id}.tar.gz`;
    expect(await blobs.stat(key)).toBeDefined();

    expect((await t.call('DELETE', `/session-uploads/${presigned.session_id}`, t.alice.token)).status).toBe(204);
    expect(await blobs.stat(key)).toBeUndefined();
    // The bucket takes what a URL it signed carries: no server can take a presigned URL back.
    expect((await put()).status).toBe(200);
    expect(
      (await fetch(pending.upload_url, { method: 'PUT', headers: pending.headers, body: new Uint8Array(pendingBytes) }))
        .status,
    ).toBe(200);
    for (const p of [presigned, pending])
      expect((await t.call('POST', new URL(p.complete_url).pathname, t.alice.token)).status).toBe(404);
    expect(await blobs.stat(key)).toBeDefined();

    const soon = await collectGarbage(t.storeOptions, blobs, t.clock.now() + 15 * 60_000);
    expect(soon.deleted_objects).toEqual([]);
    const later = await collectGarbage(t.storeOptions, blobs, t.clock.now() + 2 * HOUR);
    expect(later.deleted_objects.sort()).toEqual([key, pendingKey].sort());
    expect(await blobs.stat(key)).toBeUndefined();
    expect(await blobs.stat(pendingKey)).toBeUndefined();
  });
});
