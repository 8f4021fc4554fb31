/**
 * Presign, upload, complete and download through the real server, on both databases: artifacts of a captured session
 * (the same bytes reused, the newest completed artifact current, out-of-order completes superseded), the object's
 * real bytes checked at complete, sharing that belongs to the session, retention and gc.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BACKENDS,
  BUNDLE_TYPE,
  presignBody,
  sha256,
  startTestServer,
  type TestServer,
} from '../../../test/support/control-server.js';

const DAY = 86_400_000;
const bundle = (text: string): Buffer => Buffer.from(`bundle:${text}`);
const RESUMABLE = {
  artifact_format: 'blue-session-bundle-v1',
  compatibility_profile: 'claude-v2_0_12',
  resumable: true,
};

describe.each(BACKENDS)('uploads (%s)', (backend) => {
  let t: TestServer;
  beforeEach(async () => {
    t = await startTestServer({ backend, retentionDays: 30 });
  });
  afterEach(async () => {
    await t.close();
  });

  const detail = async (sessionId: string) =>
    (await t.call('GET', `/session-uploads/${sessionId}`, t.alice.token)).body;

  describe('presign and complete', () => {
    it('uploads through the local blob store and completes after checking the stored bytes', async () => {
      const bytes = bundle('one');
      const presigned = await t.call(
        'POST',
        '/session-uploads/presign',
        t.alice.token,
        presignBody(bytes, { title: 'Fix the parser', ...RESUMABLE }),
      );
      expect(presigned.status).toBe(200);
      expect(presigned.body).toMatchObject({ status: 'pending', method: 'PUT' });
      expect(presigned.body.complete_url).toBe(`${t.url}/session-uploads/${presigned.body.upload_id}/complete`);
      expect(presigned.body.headers['x-amz-checksum-sha256']).toBe(
        Buffer.from(sha256(bytes), 'hex').toString('base64'),
      );

      const early = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
      expect(early.status).toBe(400);
      expect(early.body.code).toBe('object_missing');

      const put = await fetch(presigned.body.upload_url, {
        method: 'PUT',
        headers: presigned.body.headers,
        body: new Uint8Array(bytes),
      });
      expect(put.status).toBe(200);
      const done = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
      expect(done.status).toBe(200);
      expect(done.body).toEqual({
        id: presigned.body.upload_id,
        status: 'complete',
        session_id: presigned.body.session_id,
      });
      expect((await detail(presigned.body.session_id)).session).toMatchObject({
        id: presigned.body.session_id,
        native_session_id: 'sess-1',
        status: 'complete',
        sha256: sha256(bytes),
        size_bytes: bytes.length,
        title: 'Fix the parser',
        resumable: true,
        artifact_id: presigned.body.upload_id,
        user_email: t.alice.email,
      });

      // A retry of a lost answer is answered the same.
      const again = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token, {});
      expect(again.body).toEqual(done.body);
    });

    it(
      'gives a pending artifact of the same bytes again, a new artifact for other bytes, and other people their ' +
        'own sessions',
      async () => {
        const bytes = bundle('same');
        const first = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
        const second = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
        expect(second.status).toBe(200);
        expect(second.body.upload_id).toBe(first.body.upload_id);
        const other = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('different')));
        expect(other.body.upload_id).not.toBe(first.body.upload_id);
        expect(other.body.session_id).toBe(first.body.session_id);
        const bobs = await t.call('POST', '/session-uploads/presign', t.bob.token, presignBody(bytes));
        expect(bobs.body.upload_id).not.toBe(first.body.upload_id);
        expect(bobs.body.session_id).not.toBe(first.body.session_id);
      },
    );

    it(
      'marks the artifact failed, deletes the object and answers 400 when the stored bytes do not match; the same ' +
        'bytes may be presigned again',
      async () => {
        const bytes = bundle('claimed');
        const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
        // An object with other bytes at the key: the server must check the object, not the client's claim.
        const key = (await t.server.store.artifact(presigned.body.upload_id))!.artifact.blob_key;
        const file = path.join(t.blobDir, ...key.split('/'));
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, bundle('tampered'));
        const done = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
        expect(done.status).toBe(400);
        expect(done.body.code).toBe('digest_mismatch');
        expect(done.body.error).toMatch(/SHA-256/);
        expect((await detail(presigned.body.session_id)).artifacts).toMatchObject([
          { id: presigned.body.upload_id, status: 'failed' },
        ]);
        const retry = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
        expect([retry.status, retry.body.code]).toEqual([400, 'upload_failed']);
        expect(await t.server.blobs.stat(key)).toBeUndefined();
        // The agent presigns again: the same artifact, pending, uploadable.
        const again = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
        expect(again.body).toMatchObject({ upload_id: presigned.body.upload_id, status: 'pending' });
        await fetch(again.body.upload_url, { method: 'PUT', headers: again.body.headers, body: new Uint8Array(bytes) });
        expect(
          (await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token)).body.status,
        ).toBe('complete');
      },
    );

    it('rejects a complete body whose digest disagrees with the presign', async () => {
      const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('x')));
      const done = await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token, {
        sha256: 'a'.repeat(64),
      });
      expect([done.status, done.body.code]).toEqual([400, 'digest_mismatch']);
    });

    it('makes the newest completed artifact current and the previous one superseded', async () => {
      const first = await t.upload(t.alice, bundle('v1'));
      const second = await t.upload(t.alice, bundle('v2'));
      expect(second.body.status).toBe('complete');
      expect(second.sessionId).toBe(first.sessionId);
      const shown = await detail(first.sessionId);
      expect(shown.session.artifact_id).toBe(second.uploadId);
      expect(shown.artifacts.map((a: any) => [a.id, a.status])).toEqual([
        [second.uploadId, 'complete'],
        [first.uploadId, 'superseded'],
      ]);
      // Another session is unaffected.
      const other = await t.upload(t.alice, bundle('v1'), { session_id: 'sess-2' });
      expect(other.sessionId).not.toBe(first.sessionId);
      expect((await detail(other.sessionId)).artifacts).toHaveLength(1);
    });

    it('answers status complete with no URL when the same bytes are already the current artifact', async () => {
      const bytes = bundle('done');
      const { uploadId, sessionId } = await t.upload(t.alice, bytes);
      const again = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
      expect(again.status).toBe(200);
      expect(again.body).toEqual({
        upload_id: uploadId,
        status: 'complete',
        upload_url: null,
        method: null,
        headers: {},
        complete_url: null,
        session_id: sessionId,
        expires_at: null,
      });
    });

    it('keeps the newest presigned artifact current when artifacts complete out of order', async () => {
      const one = bundle('r1');
      const two = bundle('r2');
      const p1 = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(one));
      const p2 = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(two));
      await fetch(p2.body.upload_url, { method: 'PUT', headers: p2.body.headers, body: new Uint8Array(two) });
      await fetch(p1.body.upload_url, { method: 'PUT', headers: p1.body.headers, body: new Uint8Array(one) });
      expect((await t.call('POST', `/session-uploads/${p2.body.upload_id}/complete`, t.alice.token)).body.status).toBe(
        'complete',
      );
      expect((await t.call('POST', `/session-uploads/${p1.body.upload_id}/complete`, t.alice.token)).body.status).toBe(
        'superseded',
      );
      const listed = await t.call('GET', '/session-uploads?status=complete', t.alice.token);
      expect(listed.body.items.map((i: any) => i.artifact_id)).toEqual([p2.body.upload_id]);
    });

    it('lets the owner and administrators complete an upload; others do not see it', async () => {
      const bytes = bundle('mine');
      const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
      await fetch(presigned.body.upload_url, {
        method: 'PUT',
        headers: presigned.body.headers,
        body: new Uint8Array(bytes),
      });
      expect((await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.bob.token)).status).toBe(
        404,
      );
      expect((await detail(presigned.body.session_id)).artifacts[0].status).toBe('pending');
      expect(
        (await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.admin.token)).body.status,
      ).toBe('complete');
    });

    it('lists only sessions with a completed artifact; their owner sees a pending one in detail', async () => {
      const presigned = await t.call(
        'POST',
        '/session-uploads/presign',
        t.alice.token,
        presignBody(bundle('p'), { title: 'Not yet' }),
      );
      expect((await t.call('GET', '/session-uploads', t.alice.token)).body.items).toEqual([]);
      const shown = await detail(presigned.body.session_id);
      expect(shown.session).toMatchObject({ title: 'Not yet', status: null, artifact_id: null, resumable: false });
      expect(shown.artifacts).toMatchObject([{ id: presigned.body.upload_id, status: 'pending' }]);
    });
  });

  describe('sharing belongs to the session', () => {
    it('sharing set while a new artifact uploads reaches it when it completes, and later ones', async () => {
      const first = await t.upload(t.alice, bundle('f1'));
      const bytes = bundle('f2');
      const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes));
      expect(
        (
          await t.call('PUT', `/session-uploads/${first.sessionId}/sharing`, t.alice.token, {
            mode: 'selected',
            user_ids: [t.bob.id],
          })
        ).status,
      ).toBe(200);
      await fetch(presigned.body.upload_url, {
        method: 'PUT',
        headers: presigned.body.headers,
        body: new Uint8Array(bytes),
      });
      await t.call('POST', `/session-uploads/${presigned.body.upload_id}/complete`, t.alice.token);
      const download = await t.call('POST', `/session-uploads/${first.sessionId}/download`, t.bob.token);
      expect(download.body).toMatchObject({ artifact_id: presigned.body.upload_id, sha256: sha256(bytes) });
      const third = await t.upload(t.alice, bundle('f3'));
      expect((await t.call('GET', `/session-uploads/${third.sessionId}/sharing`, t.alice.token)).body).toMatchObject({
        mode: 'selected',
        recipient_count: 1,
      });
      // Another session of the same owner is not touched.
      const other = await t.upload(t.alice, bundle('x1'), { session_id: 'sess-other' });
      expect((await t.call('GET', `/session-uploads/${other.sessionId}/sharing`, t.alice.token)).body.mode).toBe(
        'private',
      );
    });

    it('changing the sharing does not change updated_at, so listings keep their order', async () => {
      const older = await t.upload(t.alice, bundle('a1'), { session_id: 'sess-older' });
      t.clock.advance(60_000);
      const newer = await t.upload(t.alice, bundle('b1'), { session_id: 'sess-newer' });
      const before = (await detail(older.sessionId)).session.updated_at;
      t.clock.advance(60_000);
      expect(
        (await t.call('PUT', `/session-uploads/${older.sessionId}/sharing`, t.alice.token, { mode: 'workspace' }))
          .status,
      ).toBe(200);
      expect((await detail(older.sessionId)).session.updated_at).toBe(before);
      const listed = await t.call('GET', '/session-uploads', t.alice.token);
      expect(listed.body.items.map((i: any) => i.id)).toEqual([newer.sessionId, older.sessionId]);
    });
  });

  describe('retention', () => {
    it(
      'an expired current artifact is neither resumable nor downloadable; presigning its bytes again makes a new ' +
        'artifact',
      async () => {
        const bytes = bundle('expiring');
        const first = await t.upload(t.alice, bytes, RESUMABLE);
        const before = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes, RESUMABLE));
        expect(before.body).toMatchObject({ status: 'complete', upload_id: first.uploadId });

        t.clock.advance(31 * DAY);
        expect((await t.call('POST', `/session-uploads/${first.sessionId}/download`, t.alice.token)).status).toBe(410);
        expect((await t.call('GET', '/session-uploads?resumable=true', t.alice.token)).body.items).toEqual([]);
        expect((await t.call('GET', '/session-uploads', t.alice.token)).body.items).toMatchObject([
          { id: first.sessionId, resumable: false },
        ]);

        const presigned = await t.call(
          'POST',
          '/session-uploads/presign',
          t.alice.token,
          presignBody(bytes, RESUMABLE),
        );
        expect(presigned.body.status).toBe('pending');
        expect(presigned.body.upload_id).not.toBe(first.uploadId);
        const again = await t.upload(t.alice, bytes, RESUMABLE);
        expect(again.uploadId).toBe(presigned.body.upload_id);
        expect((await t.call('GET', '/session-uploads?resumable=true', t.alice.token)).body.items).toMatchObject([
          { id: first.sessionId, artifact_id: again.uploadId, resumable: true },
        ]);
        expect((await t.call('POST', `/session-uploads/${first.sessionId}/download`, t.alice.token)).status).toBe(200);
      },
    );

    it('hands out a fresh URL that serves the bundle, and 410 after the retention deadline', async () => {
      const bytes = bundle('keep');
      const { sessionId, uploadId } = await t.upload(t.alice, bytes);
      const answer = await t.call('POST', `/session-uploads/${sessionId}/download`, t.alice.token);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({
        method: 'GET',
        artifact_id: uploadId,
        sha256: sha256(bytes),
        size_bytes: bytes.length,
        content_type: BUNDLE_TYPE,
        expires_in_seconds: 300,
      });
      const got = await fetch(answer.body.download_url);
      expect(Buffer.from(await got.arrayBuffer()).equals(bytes)).toBe(true);

      t.clock.advance(31 * DAY);
      const late = await t.call('POST', `/session-uploads/${sessionId}/download`, t.alice.token);
      expect([late.status, late.body.code]).toEqual([410, 'expired']);
    });

    it('gc deletes objects past their deadline', async () => {
      const { collectGarbage } = await import('../src/admin.js');
      const { uploadId, sessionId } = await t.upload(t.alice, bundle('old'));
      const blobs = t.server.blobs;
      const key = (await t.server.store.artifact(uploadId))!.artifact.blob_key;
      expect(await collectGarbage(t.storeOptions, blobs, t.clock.now())).toEqual({
        deleted: [],
        deleted_objects: [],
        failed: [],
        expired_search_entries: 0,
        expired_sign_in_records: 0,
      });
      expect(await blobs.stat(key)).toBeDefined();
      const { deleted } = await collectGarbage(t.storeOptions, blobs, t.clock.now() + 31 * DAY);
      expect(deleted).toEqual([uploadId]);
      expect(await blobs.stat(key)).toBeUndefined();
      expect((await t.call('POST', `/session-uploads/${sessionId}/download`, t.alice.token)).status).toBe(410);
    });

    it('an upload URL still in its time writes nothing once its upload expired and gc deleted the object', async () => {
      // A retention shorter than an upload URL's lifetime: the URL outlives the artifact's object.
      await t.close();
      t = await startTestServer({ backend, retentionDays: 0.0001 });
      const { collectGarbage } = await import('../src/admin.js');
      const bytes = bundle('brief');
      const presigned = (await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bytes))).body;
      const put = () =>
        fetch(presigned.upload_url, { method: 'PUT', headers: presigned.headers, body: new Uint8Array(bytes) });
      expect((await put()).status).toBe(200);
      expect((await t.call('POST', new URL(presigned.complete_url).pathname, t.alice.token)).status).toBe(200);
      t.clock.advance(60_000);
      expect((await collectGarbage(t.storeOptions, t.server.blobs, t.clock.now())).deleted).toEqual([
        presigned.upload_id,
      ]);
      const again = await put();
      expect([again.status, ((await again.json()) as { code: string }).code]).toEqual([410, 'UPLOAD_GONE']);
      expect(await t.server.blobs.stat(`sessions/${presigned.upload_id}.tar.gz`)).toBeUndefined();
    });

    it('does not download a session that has no verified artifact', async () => {
      const presigned = await t.call('POST', '/session-uploads/presign', t.alice.token, presignBody(bundle('p')));
      const answer = await t.call('POST', `/session-uploads/${presigned.body.session_id}/download`, t.alice.token);
      expect([answer.status, answer.body.code]).toEqual([404, 'no_artifact']);
    });
  });
});
