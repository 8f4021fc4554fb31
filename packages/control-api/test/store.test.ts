/**
 * The store on both databases, below the routes: two connections (a server and an admin command, or two replicas)
 * writing the same database, tokens found by their hash only, artifacts numbered per captured session, attempts
 * limited by one statement and machines per person bounded, whatever the concurrency.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  API_SCOPES,
  hashToken,
  MAX_MACHINES_PER_USER,
  openStore,
  type ControlStore,
  type StoreOptions,
} from '../src/store/index.js';
import { BACKENDS } from '../../../test/support/control-server.js';
import { freshDatabase } from '../../../test/support/postgres-db.js';
import { newArtifact } from '../../../test/support/store-inputs.js';

/** Makes the database refuse a session whose tags are `tags` (a trigger of the test's, on the database itself). */
async function refuseTags(where: StoreOptions, tags: string[]): Promise<void> {
  const refused = JSON.stringify(tags).replaceAll("'", "''");
  if (where.databaseUrl === undefined) {
    const db = new DatabaseSync(path.join(where.dataDir, 'control.db'));
    try {
      for (const event of ['INSERT', 'UPDATE OF tags']) {
        db.exec(
          `CREATE TRIGGER "refuse ${event}" BEFORE ${event} ON sessions WHEN NEW.tags = '${refused}' BEGIN SELECT ` +
            `RAISE(ABORT, 'tags refused'); END`,
        );
      }
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: where.databaseUrl });
  await client.connect();
  try {
    await client.query(`CREATE FUNCTION refuse_tags() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.tags = '${refused}' THEN RAISE EXCEPTION 'tags refused'; END IF; RETURN NEW; END $$`);
    await client.query(
      'CREATE TRIGGER refuse_tags BEFORE INSERT OR UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION refuse_tags()',
    );
  } finally {
    await client.end();
  }
}

describe.each(BACKENDS)('control store (%s)', (backend) => {
  let dir: string;
  let where: StoreOptions;
  const open: ControlStore[] = [];
  const store = async (): Promise<ControlStore> => {
    const opened = await openStore(where);
    open.push(opened);
    return opened;
  };
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blue-control-store-'));
    where = { dataDir: dir, databaseUrl: backend === 'postgres' ? await freshDatabase() : undefined };
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('lets two connections (server and an admin command) write the same database', async () => {
    const server = await store();
    const admin = await store();
    const { token } = await admin.addUser('ada@example.com', false, 1);
    expect(await server.identity.authenticate(token, 2)).toMatchObject({ user: { email: 'ada@example.com' } });
    await server.publishPolicy({ allowed_harnesses: ['claude'] }, 2);
    const latest = await admin.publishPolicy({ allowed_harnesses: ['codex'] }, 3);
    expect((await server.currentPolicy())?.revision).toBe(latest.revision);
    expect(await server.organizationId()).toBe(await admin.organizationId());
  });

  it("keeps a policy revision's text as published beside the document it serves; finds a revision by id", async () => {
    const s = await store();
    const text =
      '# Capture on.\nallowed_harnesses: [claude]   # only Claude\r\nsession_upload: { presign_url: ' +
      '"https://c.example/p" }\n';
    const first = await s.publishPolicy(
      { allowed_harnesses: ['claude'], session_upload: { presign_url: 'https://c.example/p' } },
      1,
      { text },
    );
    const second = await s.publishPolicyOver({ allowed_harnesses: ['codex'] }, first.revision, 2, {
      text: 'allowed_harnesses: [codex]\n',
    });
    const untold = await (await store()).publishPolicy({ ttl_seconds: 60 }, 3);
    expect(first.text).toBe(text);
    expect(await s.policyRevision(first.revision)).toEqual({
      revision: first.revision,
      body: {
        allowed_harnesses: ['claude'],
        session_upload: { presign_url: 'https://c.example/p' },
        revision: first.revision,
      },
      text,
      etag: first.etag,
      created_at: 1,
    });
    expect((await s.policyRevision(second!.revision))?.text).toBe('allowed_harnesses: [codex]\n');
    expect(await s.currentPolicy()).toEqual({ ...untold, text: null });
    expect(await s.policyRevision('no-such-revision')).toBeUndefined();
    expect(await s.publishFirstPolicy({ ttl_seconds: 1 }, 4, { text: 'ttl_seconds: 1\n' })).toBeUndefined();
  });

  it('finds users by their token only (never by its hash), and by e-mail whatever its case', async () => {
    const s = await store();
    const { user, token } = await s.addUser('ada@example.com', true, 1);
    expect(await s.identity.authenticate(token, 2)).toMatchObject({
      user: { id: user.id, is_admin: true },
      scopes: [...API_SCOPES],
    });
    expect(await s.identity.authenticate(`${token}x`, 2)).toBeUndefined();
    expect(await s.identity.authenticate(hashToken(token), 2)).toBeUndefined();
    expect((await s.userByEmail('ADA@example.com'))?.id).toBe(user.id);
    await expect(s.addUser('Ada@Example.com', false, 2)).rejects.toThrow();
  });

  it('numbers artifacts per captured session (owner, harness, native id), one session each', async () => {
    const s = await store();
    const { user } = await s.addUser('ada@example.com', false, 1);
    const base = newArtifact(user.id, { native_session_id: 's', size_bytes: 1, content_type: 'x' });
    const a = await s.presign(base, 1, 1000);
    const b = await s.presign({ ...base, sha256: 'b'.repeat(64) }, 1, 1000);
    const c = await s.presign({ ...base, harness: 'codex', sha256: 'b'.repeat(64) }, 1, 1000);
    expect([a.artifact.revision, b.artifact.revision, c.artifact.revision]).toEqual([1, 2, 1]);
    expect(a.artifact.session_id).toBe(b.artifact.session_id);
    expect(c.artifact.session_id).not.toBe(a.artifact.session_id);
    expect(await s.presign(base, 2, 1000)).toMatchObject({ outcome: 'reused', artifact: { id: a.artifact.id } });
  });

  it("changes a session's tags with its presign, all or none, whether the session is new or not", async () => {
    const s = await store();
    const { user } = await s.addUser('ada@example.com', false, 1);
    await refuseTags(where, ['refused']);
    const first = newArtifact(user.id, { tags: ['refused'] });
    await expect(s.presign(first, 1, 1000)).rejects.toThrow(/tags refused/);
    // Nothing of the refused presign was kept: the same bytes make a new session's first artifact.
    const made = await s.presign({ ...first, tags: ['kept'] }, 2, 1000);
    expect(made).toMatchObject({ outcome: 'created', artifact: { revision: 1 } });
    const other = { ...first, sha256: 'b'.repeat(64) };
    await expect(s.presign(other, 3, 1000)).rejects.toThrow(/tags refused/);
    expect(await s.presign({ ...other, tags: undefined }, 4, 1000)).toMatchObject({
      outcome: 'created',
      artifact: { revision: 2 },
    });
    expect((await s.session(made.artifact.session_id))?.tags).toEqual(['kept']);
  });

  it('answers a change of role alike whatever an id holds, for a user who is not there', async () => {
    const s = await store();
    const { user: ada } = await s.addUser('ada@example.com', true, 1);
    const byAda = { by: { kind: 'user' as const, id: ada.id, email: ada.email }, now: 2 };
    // A user who is gone is left as they are (unchanged), even by an id no database could hold (a NUL in it).
    expect(await s.setAdmin('no-such-user', true, byAda)).toBe(true);
    expect(await s.setAdmin('no\u0000such-user', true, byAda)).toBe(true);
    // A change asked by someone who is not there is refused.
    const byNobody = { by: { kind: 'user' as const, id: 'no\u0000body', email: 'nobody@example.com' }, now: 2 };
    expect(await s.setAdmin(ada.id, false, byNobody)).toBe(false);
    expect((await s.userById(ada.id))?.is_admin).toBe(true);
  });

  it("keeps no more than each person's bound of machines, however many four connections report at once", async () => {
    const stores = [await store(), await store(), await store(), await store()];
    const { user: ada } = await stores[0]!.addUser('ada@example.com', false, 1);
    const { user: bob } = await stores[0]!.addUser('bob@example.com', false, 1);
    await stores[0]!.recordClientStatus(bob.id, 'bob-1', { n: 0 }, 1);
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => stores[i % 4]!.recordClientStatus(ada.id, `ada-${i}`, { n: i }, 1000 + i)),
    );
    const kept = await stores[1]!.clientStatuses({ user_id: ada.id, limit: 100, offset: 0 });
    expect([kept.total, kept.items.length]).toEqual([MAX_MACHINES_PER_USER, MAX_MACHINES_PER_USER]);
    expect((await stores[2]!.clientStatuses({ limit: 100, offset: 0 })).total).toBe(MAX_MACHINES_PER_USER + 1);
    // A machine already kept reports again without pushing another out.
    await stores[3]!.recordClientStatus(ada.id, kept.items[0]!.instance_id, { n: 'again' }, 2000);
    expect((await stores[0]!.clientStatuses({ user_id: ada.id, limit: 1, offset: 0 })).total).toBe(
      MAX_MACHINES_PER_USER,
    );
  });

  it('takes no more attempts than allowed in a window, however many four connections ask for at once', async () => {
    const stores = [await store(), await store(), await store(), await store()];
    const limit = { allowed: 10, windowMs: 60_000 };
    const taken = await Promise.all(
      Array.from({ length: 200 }, (_, i) => stores[i % 4]!.identity.takeAttempt('k', limit, 1000)),
    );
    expect(taken.filter((end) => end !== undefined)).toEqual(Array(10).fill(61_000));
    // Another key has a window of its own.
    expect(await stores[0]!.identity.takeAttempt('other', limit, 2000)).toBe(62_000);
    // One given back is one more to take, once; given back to a window that is over, it is not.
    await stores[1]!.identity.returnAttempt('k', 61_000);
    const again = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stores[i % 4]!.identity.takeAttempt('k', limit, 5000)),
    );
    expect(again.filter((end) => end !== undefined)).toEqual([61_000]);
    await stores[2]!.identity.returnAttempt('k', 60_999);
    expect(await stores[3]!.identity.takeAttempt('k', limit, 5000)).toBeUndefined();
    // The window ends a window's length after its first attempt; the next starts with the next attempt.
    expect(await stores[0]!.identity.takeAttempt('k', limit, 60_999)).toBeUndefined();
    const next = await Promise.all(
      Array.from({ length: 40 }, (_, i) => stores[i % 4]!.identity.takeAttempt('k', limit, 61_000)),
    );
    expect(next.filter((end) => end !== undefined)).toEqual(Array(10).fill(121_000));
    await stores[0]!.identity.returnAttempt('k', 61_000);
    expect(await stores[0]!.identity.takeAttempt('k', limit, 61_000)).toBeUndefined();
    // Windows that are over go with the other expired sign-in records.
    expect(await stores[0]!.identity.purgeExpired(121_000)).toBe(2);
    expect(await stores[0]!.identity.takeAttempt('k', limit, 121_000)).toBe(181_000);
  });
});
