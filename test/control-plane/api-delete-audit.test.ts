/**
 * Deleting captured sessions and the audit log, on both databases: who may delete (owner, administrator; a recipient
 * is refused, a stranger told nothing exists), what goes (every revision's metadata, sharing and object, a pending
 * upload's object too once its URL can no longer be used), what is written down (downloads, sharing changes,
 * deletions, administrators' reads), who may read the log, and that the database keeps it append-only.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/control-plane/admin.js';
import { createLocalBlobStore } from '../../src/control-plane/blobs/local.js';
import type { BlobStore } from '../../src/control-plane/blobs/types.js';
import { BACKENDS, presignBody, startTestServer, type TestServer, type TestUser } from '../support/control-server.js';

const RESUMABLE = { artifact_format: 'blue-session-bundle-v1', compatibility_profile: 'claude-v2_0_12', resumable: true };
const HOUR = 60 * 60_000;

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
    return got.body as { items: { seq: number; at: string; actor: { id: string; email: string }; action: string; session_id: string; owner_id: string; details: Record<string, unknown> }[]; next_after: number | null };
  };

  it('the owner deletes every revision, its sharing and its objects; it is gone for everyone, and the deletion is logged', async () => {
    t = await startTestServer({ backend });
    const { id, files } = await twoRevisions(t.alice, 'doomed');
    expect((await t.call('PUT', `/session-uploads/${id}/sharing`, t.alice.token, { mode: 'selected', emails: [t.bob.email] })).status).toBe(200);
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
    // Nothing left to collect.
    expect(await t.server.store.blobDeletionsDue(t.clock.now() + 24 * HOUR, 10)).toEqual([]);

    const log = await audit('?action=session.delete');
    expect(log.items).toEqual([
      {
        seq: expect.any(Number),
        at: new Date(t.clock.now()).toISOString(),
        actor: { id: t.alice.id, email: t.alice.email },
        action: 'session.delete',
        session_id: id,
        owner_id: t.alice.id,
        details: { harness: 'claude', native_session_id: 'doomed', title: 'doomed' },
      },
    ]);
    // The same session uploaded again is a new session.
    const again = await t.upload(t.alice, Buffer.from('doomed three'), { session_id: 'doomed', ...RESUMABLE });
    expect(again.status).toBe(200);
    expect(again.sessionId).not.toBe(id);
  });

  it('an administrator deletes anyone\'s; a recipient may not, and to anyone else it does not exist', async () => {
    t = await startTestServer({ backend });
    const shared = await twoRevisions(t.alice, 'shared');
    expect((await t.call('PUT', `/session-uploads/${shared.id}/sharing`, t.alice.token, { mode: 'workspace' })).status).toBe(200);
    const refused = await t.call('DELETE', `/session-uploads/${shared.id}`, t.bob.token);
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    expect(refused.body.error).toContain('only the owner');
    const hidden = await twoRevisions(t.alice, 'private');
    expect((await t.call('DELETE', `/session-uploads/${hidden.id}`, t.bob.token)).status).toBe(404);
    expect((await t.call('DELETE', '/session-uploads/00000000-0000-4000-8000-000000000000', t.alice.token)).status).toBe(404);
    expect((await t.call('DELETE', `/session-uploads/${hidden.id}`, undefined)).status).toBe(401);
    for (const file of [...shared.files, ...hidden.files]) expect(existsSync(file)).toBe(true);

    expect((await t.call('DELETE', `/session-uploads/${hidden.id}`, t.admin.token)).status).toBe(204);
    for (const file of hidden.files) expect(existsSync(file)).toBe(false);
    expect((await audit('?action=session.delete')).items).toMatchObject([{ actor: { id: t.admin.id }, owner_id: t.alice.id, session_id: hidden.id }]);
  });

  it('a pending upload\'s object is deleted once more after its URL expires, so a PUT that lands after the delete is not kept', async () => {
    t = await startTestServer({ backend });
    const bytes = Buffer.from('late bytes');
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes, { session_id: 'late' }));
    expect(presigned.status).toBe(200);
    expect((await t.call('DELETE', `/session-uploads/${presigned.body.session_id}`, t.alice.token)).status).toBe(204);
    // The URL was signed before the delete: the bytes still land.
    const put = await fetch(presigned.body.upload_url, { method: 'PUT', headers: presigned.body.headers, body: bytes });
    expect(put.status).toBe(200);
    const file = path.join(t.blobDir, 'sessions', `${presigned.body.upload_id}.tar.gz`);
    expect(existsSync(file)).toBe(true);
    // Complete finds nothing to complete.
    expect((await t.call('POST', new URL(presigned.body.complete_url).pathname, t.alice.token)).status).toBe(404);

    const blobs = await createLocalBlobStore({ dir: t.blobDir, publicUrl: t.url, secret: 'x'.repeat(32) });
    // Before the URL's expiry, gc leaves the queued key alone.
    expect(await collectGarbage(t.storeOptions, blobs, t.clock.now() + 60_000)).toEqual({ deleted: [], deleted_objects: [], failed: [], expired_sign_in_records: 0 });
    expect(existsSync(file)).toBe(true);
    const later = t.clock.now() + 2 * HOUR;
    expect(await collectGarbage(t.storeOptions, blobs, later)).toEqual({ deleted: [], deleted_objects: [`sessions/${presigned.body.upload_id}.tar.gz`], failed: [], expired_sign_in_records: 0 });
    expect(existsSync(file)).toBe(false);
    expect(await t.server.store.blobDeletionsDue(later, 10)).toEqual([]);
  });

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

  it('logs downloads, sharing changes and administrators\' reads of others\' sessions, in order, with paging and filters', async () => {
    t = await startTestServer({ backend });
    const a = await twoRevisions(t.alice, 'audited');
    expect((await t.call('GET', `/session-uploads/${a.id}`, t.alice.token)).status).toBe(200); // the owner's read: not logged
    expect((await t.call('PUT', `/session-uploads/${a.id}/sharing`, t.alice.token, { mode: 'selected', emails: [t.bob.email] })).status).toBe(200);
    const bobDownload = await t.call('POST', `/session-uploads/${a.id}/download`, t.bob.token, {});
    expect(bobDownload.status).toBe(200);
    expect((await t.call('GET', `/session-uploads/${a.id}`, t.admin.token)).status).toBe(200);
    expect((await t.call('GET', `/session-uploads/${a.id}/sharing`, t.admin.token)).status).toBe(200);
    expect((await t.call('PUT', `/session-uploads/${a.id}/sharing`, t.alice.token, { mode: 'private' })).status).toBe(200);

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
  });

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
      ['?action=session.delete2', 'action must be one of session.read, session.download, session.share, session.delete'],
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
    const attempts = ['UPDATE audit_events SET actor_email = \'someone@else\'', 'DELETE FROM audit_events'];
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
        for (const sql of [...attempts, 'TRUNCATE audit_events']) await expect(db.query(sql), sql).rejects.toThrow(/append-only/);
      } finally {
        await db.end();
      }
    }
    expect((await audit()).items).toMatchObject([{ action: 'session.delete', actor: { email: t.alice.email } }]);
  });
});
