import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlStore, hashToken } from '../../src/control-plane/store.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-control-store-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('control store', () => {
  it('lets two connections (server and an admin command) write the same database', () => {
    const server = ControlStore.open(dir);
    const admin = ControlStore.open(dir);
    try {
      const { token } = admin.addUser('ada@example.com', false, 1);
      expect(server.userByToken(token)?.email).toBe('ada@example.com');
      server.publishPolicy({}, 2);
      admin.publishPolicy({}, 3);
      expect(server.currentPolicy()?.revision).toBe(2);
    } finally {
      admin.close();
      server.close();
    }
  });

  it('finds users by the hash of their token only', () => {
    const store = ControlStore.open(dir);
    try {
      const { user, token } = store.addUser('ada@example.com', true, 1);
      expect(store.tokenHashOf(user.id)).toBe(hashToken(token));
      expect(store.userByToken(`${token}x`)).toBeUndefined();
      expect(store.userByToken(hashToken(token))).toBeUndefined();
      expect(store.userByEmail('ADA@example.com')?.id).toBe(user.id);
    } finally {
      store.close();
    }
  });

  it('numbers upload revisions per owner, harness and session', () => {
    const store = ControlStore.open(dir);
    try {
      const { user } = store.addUser('ada@example.com', false, 1);
      const base = { owner_id: user.id, harness: 'claude', session_id: 's', size_bytes: 1, content_type: 'x' };
      const a = store.presign({ ...base, sha256: 'a'.repeat(64) }, 1, 1000).upload;
      const b = store.presign({ ...base, sha256: 'b'.repeat(64) }, 1, 1000).upload;
      const c = store.presign({ ...base, harness: 'codex', sha256: 'b'.repeat(64) }, 1, 1000).upload;
      expect([a.revision, b.revision, c.revision]).toEqual([1, 2, 1]);
      expect(store.presign({ ...base, sha256: 'a'.repeat(64) }, 2, 1000)).toMatchObject({ created: false, upload: { id: a.id } });
    } finally {
      store.close();
    }
  });
});
