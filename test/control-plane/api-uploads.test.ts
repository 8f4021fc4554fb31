import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BUNDLE_TYPE, presignBody, sha256, startTestServer, type TestServer } from '../support/control-server.js';

let t: TestServer;
beforeEach(async () => {
  t = await startTestServer({ retentionDays: 30 });
});
afterEach(async () => {
  await t.close();
});

const bundle = (text: string): Buffer => Buffer.from(`bundle:${text}`);

describe('presign and complete', () => {
  it('uploads through the local blob store and completes after checking the stored bytes', async () => {
    const bytes = bundle('one');
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes, { title: 'Fix the parser', resumable: true }));
    expect(presigned.status).toBe(201);
    expect(presigned.body).toMatchObject({ status: 'pending', method: 'PUT', revision: 1 });
    expect(presigned.body.complete_url).toBe(`${t.url}/session-uploads/${presigned.body.upload_id}/complete`);
    expect(presigned.body.headers['x-amz-checksum-sha256']).toBe(Buffer.from(sha256(bytes), 'hex').toString('base64'));

    const early = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('object_missing');

    const put = await fetch(presigned.body.upload_url, { method: 'PUT', headers: presigned.body.headers, body: bytes });
    expect(put.status).toBe(200);
    const done = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'complete', sha256: sha256(bytes), size_bytes: bytes.length, title: 'Fix the parser', owned: true });

    // A retry of a lost answer is answered the same.
    const again = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token, {});
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('complete');
  });

  it('returns the same pending upload when the same bundle is presigned again', async () => {
    const bytes = bundle('same');
    const first = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    const second = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    expect(second.status).toBe(200);
    expect(second.body.upload_id).toBe(first.body.upload_id);
    const other = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('different')));
    expect(other.body.upload_id).not.toBe(first.body.upload_id);
    expect(other.body.revision).toBe(2);
    // Another user's identical session is their own upload.
    const bobs = await t.call('POST', '/session-uploads/presign', t.bob.token, presignBody(bytes));
    expect(bobs.body.upload_id).not.toBe(first.body.upload_id);
  });

  it('marks the upload failed and answers 400 when the stored object does not match the presign', async () => {
    const bytes = bundle('claimed');
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    // An object with other bytes at the key: the server must check the object, not the client's claim.
    const upload = t.server.store.upload(presigned.body.upload_id)!;
    const file = path.join(t.blobDir, ...upload.blob_key.split('/'));
    await (await import('node:fs/promises')).mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, bundle('tampered'));
    const done = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
    expect(done.status).toBe(400);
    expect(done.body.error.code).toBe('digest_mismatch');
    expect(done.body.error.message).toMatch(/SHA-256/);
    const after = await t.call('GET', `/session-uploads/${presigned.body.upload_id}`, t.alice.token);
    expect(after.body.status).toBe('failed');
    const retry = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
    expect(retry.status).toBe(409);
    // The unvouched bytes are gone.
    expect(await t.server.blobs.stat(upload.blob_key)).toBeUndefined();
  });

  it('rejects a complete body whose digest disagrees with the presign', async () => {
    const bytes = bundle('x');
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    const done = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token, { sha256: 'a'.repeat(64) });
    expect(done.status).toBe(400);
  });

  it('supersedes the previous complete revision of the same session', async () => {
    const first = await t.upload(t.alice, bundle('v1'));
    const second = await t.upload(t.alice, bundle('v2'));
    expect(second.body).toMatchObject({ status: 'complete', revision: 2 });
    const old = await t.call('GET', `/session-uploads/${first.uploadId}`, t.alice.token);
    expect(old.body.status).toBe('superseded');
    // Another session is unaffected.
    const other = await t.upload(t.alice, bundle('v1'), { session_id: 'sess-2' });
    expect(other.body.revision).toBe(1);
    expect((await t.call('GET', `/session-uploads/${second.uploadId}`, t.alice.token)).body.status).toBe('complete');
  });

  it('answers status complete when the same bytes are already the current revision', async () => {
    const bytes = bundle('done');
    const { uploadId } = await t.upload(t.alice, bytes);
    const again = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ upload_id: uploadId, status: 'complete', revision: 1 });
  });

  it('keeps the newest revision current when revisions complete out of order', async () => {
    const one = bundle('r1');
    const two = bundle('r2');
    const p1 = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(one));
    const p2 = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(two));
    await fetch(p2.body.upload_url, { method: 'PUT', headers: p2.body.headers, body: two });
    await fetch(p1.body.upload_url, { method: 'PUT', headers: p1.body.headers, body: one });
    expect((await t.call('POST', `/session-uploads/${p2.body.upload_id}/complete`, t.alice.token)).body.status).toBe('complete');
    expect((await t.call('POST', `/session-uploads/${p1.body.upload_id}/complete`, t.alice.token)).body.status).toBe('superseded');
    const current = await t.call('GET', '/session-uploads?status=complete', t.alice.token);
    expect(current.body.items.map((i: any) => i.upload_id)).toEqual([p2.body.upload_id]);
  });

  it('carries the sharing of the current revision over to the next one', async () => {
    const first = await t.upload(t.alice, bundle('s1'));
    await t.call('PUT', `/session-uploads/${first.uploadId}/sharing`, t.alice.token, { mode: 'selected', user_ids: [t.bob.id] });
    const second = await t.upload(t.alice, bundle('s2'));
    const sharing = await t.call('GET', `/session-uploads/${second.uploadId}/sharing`, t.alice.token);
    expect(sharing.body).toMatchObject({ mode: 'selected', user_ids: [t.bob.id] });
    expect((await t.call('POST', `/session-uploads/${second.uploadId}/download`, t.bob.token)).status).toBe(200);
  });

  it('sharing follows the session: set between presign and complete, the new revision becomes current with it', async () => {
    const first = await t.upload(t.alice, bundle('f1'));
    // The drain presigns the next revision; the owner shares the session (by the id they know) before it completes.
    const bytes = bundle('f2');
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    expect((await t.call('PUT', `/session-uploads/${first.uploadId}/sharing`, t.alice.token, { mode: 'selected', user_ids: [t.bob.id] })).status).toBe(200);
    await fetch(presigned.body.upload_url, { method: 'PUT', headers: presigned.body.headers, body: bytes });
    expect((await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token)).body.status).toBe('complete');
    const sharing = await t.call('GET', `/session-uploads/${presigned.body.upload_id}/sharing`, t.alice.token);
    expect(sharing.body).toMatchObject({ mode: 'selected', user_ids: [t.bob.id] });
    expect((await t.call('POST', `/session-uploads/${presigned.body.upload_id}/download`, t.bob.token)).status).toBe(200);
    // Changed again while the next one is pending (set on the pending revision itself this time): the change wins.
    const p3 = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('f3')));
    expect((await t.call('PUT', `/session-uploads/${p3.body.upload_id}/sharing`, t.alice.token, { mode: 'workspace' })).status).toBe(200);
    await fetch(p3.body.upload_url, { method: 'PUT', headers: p3.body.headers, body: bundle('f3') });
    await t.call('POST', `/session-uploads/${p3.body.upload_id}/complete`, t.alice.token);
    expect((await t.call('GET', `/session-uploads/${p3.body.upload_id}/sharing`, t.alice.token)).body).toMatchObject({ mode: 'workspace', user_ids: [] });
    expect((await t.call('GET', `/session-uploads/${first.uploadId}/sharing`, t.alice.token)).body).toMatchObject({ mode: 'workspace' });
  });

  it('sharing set through a superseded revision reaches the current one and the revisions after it', async () => {
    const first = await t.upload(t.alice, bundle('o1'));
    const second = await t.upload(t.alice, bundle('o2'));
    expect((await t.call('GET', `/session-uploads/${first.uploadId}`, t.alice.token)).body.status).toBe('superseded');
    // The owner still has the first id (an earlier `sessions list`) and shares with it.
    expect((await t.call('PUT', `/session-uploads/${first.uploadId}/sharing`, t.alice.token, { mode: 'selected', user_ids: [t.bob.id] })).status).toBe(200);
    expect((await t.call('GET', `/session-uploads/${second.uploadId}/sharing`, t.alice.token)).body).toMatchObject({ mode: 'selected', user_ids: [t.bob.id] });
    expect((await t.call('POST', `/session-uploads/${second.uploadId}/download`, t.bob.token)).status).toBe(200);
    const third = await t.upload(t.alice, bundle('o3'));
    expect((await t.call('GET', `/session-uploads/${third.uploadId}/sharing`, t.alice.token)).body).toMatchObject({ mode: 'selected', user_ids: [t.bob.id] });
    const bobs = await t.call('GET', '/session-uploads?status=complete', t.bob.token);
    expect(bobs.body.items.map((i: any) => i.upload_id)).toEqual([third.uploadId]);
    // Another session of the same owner is not touched.
    const other = await t.upload(t.alice, bundle('x1'), { session_id: 'sess-other' });
    expect((await t.call('GET', `/session-uploads/${other.uploadId}/sharing`, t.alice.token)).body.mode).toBe('private');
  });

  it('changing the sharing does not change updated_at, so listings keep their order', async () => {
    const older = await t.upload(t.alice, bundle('a1'), { session_id: 'sess-older' });
    t.clock.advance(60_000);
    const newer = await t.upload(t.alice, bundle('b1'), { session_id: 'sess-newer' });
    const before = (await t.call('GET', `/session-uploads/${older.uploadId}`, t.alice.token)).body.updated_at;
    t.clock.advance(60_000);
    expect((await t.call('PUT', `/session-uploads/${older.uploadId}/sharing`, t.alice.token, { mode: 'workspace' })).status).toBe(200);
    expect((await t.call('GET', `/session-uploads/${older.uploadId}`, t.alice.token)).body.updated_at).toBe(before);
    const listed = await t.call('GET', '/session-uploads', t.alice.token);
    expect(listed.body.items.map((i: any) => i.upload_id)).toEqual([newer.uploadId, older.uploadId]);
  });

  it('lets only the owner complete an upload', async () => {
    const bytes = bundle('mine');
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    await fetch(presigned.body.upload_url, { method: 'PUT', headers: presigned.body.headers, body: bytes });
    const byBob = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.bob.token);
    expect(byBob.status).toBe(404);
    const byAdmin = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.admin.token);
    expect(byAdmin.status).toBe(403);
    expect((await t.call('GET', `/session-uploads/${presigned.body.upload_id}`, t.alice.token)).body.status).toBe('pending');
  });
});

describe('expired uploads are never current', () => {
  const DAY = 86_400_000;

  it('presigning the bytes of an expired upload whose object gc has not deleted yet makes a new revision', async () => {
    const bytes = bundle('expiring');
    const first = await t.upload(t.alice, bytes, { resumable: true });
    // Before the deadline the same bytes are the current revision: nothing to upload.
    const before = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes, { resumable: true }));
    expect(before.body).toMatchObject({ status: 'complete', upload_id: first.uploadId });

    t.clock.advance(31 * DAY);
    expect(await t.server.blobs.stat(t.server.store.upload(first.uploadId)!.blob_key)).toBeDefined();
    expect((await t.call('POST', `/session-uploads/${first.uploadId}/download`, t.alice.token)).status).toBe(410);
    // Not the session's current revision, nor resumable; listed (as expired) only among all revisions.
    expect((await t.call('GET', '/session-uploads?status=complete', t.alice.token)).body.items).toEqual([]);
    expect((await t.call('GET', '/session-uploads?resumable=true', t.alice.token)).body.items).toEqual([]);
    expect((await t.call('GET', '/session-uploads', t.alice.token)).body.items).toMatchObject([{ upload_id: first.uploadId, status: 'complete', expired: true }]);

    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes, { resumable: true }));
    expect(presigned.status).toBe(201);
    expect(presigned.body).toMatchObject({ status: 'pending', revision: 2 });
    expect(presigned.body.upload_id).not.toBe(first.uploadId);
    const again = await t.upload(t.alice, bytes, { resumable: true });
    expect(again.uploadId).toBe(presigned.body.upload_id);
    expect(again.body).toMatchObject({ status: 'complete', revision: 2, expired: false });
    expect((await t.call('GET', '/session-uploads?status=complete', t.alice.token)).body.items).toMatchObject([{ upload_id: again.uploadId }]);
    expect((await t.call('GET', '/session-uploads?resumable=true', t.alice.token)).body.items).toMatchObject([{ upload_id: again.uploadId }]);
    expect((await t.call('GET', `/session-uploads/${first.uploadId}`, t.alice.token)).body.status).toBe('superseded');
    expect((await t.call('POST', `/session-uploads/${again.uploadId}/download`, t.alice.token)).status).toBe(200);
  });

  it('a pending upload past its deadline is not handed out again', async () => {
    const bytes = bundle('left-pending');
    const first = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    t.clock.advance(31 * DAY);
    const second = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ status: 'pending', revision: 2 });
    expect(second.body.upload_id).not.toBe(first.body.upload_id);
  });
});

describe('download and retention', () => {
  it('hands out a fresh URL that serves the bundle, and 410 after the retention deadline', async () => {
    const bytes = bundle('keep');
    const { uploadId } = await t.upload(t.alice, bytes);
    const answer = await t.call('POST', `/session-uploads/${uploadId}/download`, t.alice.token);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ method: 'GET', sha256: sha256(bytes), size_bytes: bytes.length, content_type: BUNDLE_TYPE });
    const got = await fetch(answer.body.download_url);
    expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);

    t.clock.advance(31 * 86_400_000);
    const late = await t.call('POST', `/session-uploads/${uploadId}/download`, t.alice.token);
    expect(late.status).toBe(410);
    expect(late.body.error.code).toBe('expired');
  });

  it('gc deletes objects past their deadline', async () => {
    const { collectGarbage } = await import('../../src/control-plane/admin.js');
    const { uploadId } = await t.upload(t.alice, bundle('old'));
    const blobs = t.server.blobs;
    const key = t.server.store.upload(uploadId)!.blob_key;
    expect(await collectGarbage(t.dataDir, blobs, t.clock.now())).toEqual({ deleted: [], failed: [] });
    expect(await blobs.stat(key)).toBeDefined();
    const { deleted } = await collectGarbage(t.dataDir, blobs, t.clock.now() + 31 * 86_400_000);
    expect(deleted).toEqual([uploadId]);
    expect(await blobs.stat(key)).toBeUndefined();
    const late = await t.call('POST', `/session-uploads/${uploadId}/download`, t.alice.token);
    expect(late.status).toBe(410);
  });

  it('does not download a pending upload', async () => {
    const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('p')));
    const answer = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/download`, t.alice.token);
    expect(answer.status).toBe(409);
  });
});
