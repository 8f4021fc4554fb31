/**
 * The PostgreSQL store beyond what the API tests (run on both databases) show: what several replicas sharing one
 * database do at once — first start and migrations, presigns and completes of one session, the first administrator
 * and policy — and how it opens: a newer schema refused, the password kept out of its location and errors.
 * Each replica is a store of its own (its own pool), on a fresh database of the run's cluster.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresStore } from '../src/store/postgres.js';
import { migratePostgres, POSTGRES_MIGRATIONS } from '../src/store/postgres/migrations.js';
import { hashToken } from '../src/store/tokens.js';
import { API_SCOPES, type Artifact, type NewArtifact } from '../src/store/types.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { newArtifact } from '../../../test/support/store-inputs.js';
import { freshDatabase } from '../../../test/support/postgres-db.js';

const DAY = 86_400_000;
let opened: PostgresStore[] = [];

async function open(url: string): Promise<PostgresStore> {
  const store = await PostgresStore.open(url);
  opened.push(store);
  return store;
}

afterEach(async () => {
  await Promise.all(opened.map((store) => store.close()));
  opened = [];
});

/** Rows of one statement, on a connection of the test's own. */
async function query(url: string, sql: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const count = async (url: string, table: string): Promise<number> =>
  Number((await query(url, `SELECT COUNT(*) AS n FROM ${table}`))[0]!.n);

function artifactInput(ownerId: string, bytes: string): NewArtifact {
  return newArtifact(ownerId, { sha256: bytes.repeat(64).slice(0, 64) });
}

/** Caught rejection of `promise`, which must be a BlueError. */
async function blueErrorOf(promise: Promise<unknown>): Promise<BlueError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BlueError);
  return error as BlueError;
}

describe('PostgreSQL store', () => {
  describe('opening', () => {
    it('migrates a new database once when five replicas open it at the same time', async () => {
      const url = await freshDatabase();
      const stores = await Promise.all(Array.from({ length: 5 }, () => open(url)));
      const versions = await query(url, 'SELECT version FROM schema_version ORDER BY version');
      expect(versions.map((r) => r.version)).toEqual(POSTGRES_MIGRATIONS.map((_, i) => i + 1));
      expect(await query(url, `SELECT value FROM settings WHERE key = 'organization_id'`)).toHaveLength(1);
      const ids = await Promise.all(stores.map((store) => store.organizationId()));
      expect(new Set(ids).size).toBe(1);
      for (const store of stores) await store.check();
      // And once more, on a database that is current: nothing to do.
      await open(url);
      expect(await count(url, 'schema_version')).toBe(POSTGRES_MIGRATIONS.length);
    });

    it("carries each user's version 4 token over as a personal sign-in (all scopes, admin for admins)", async () => {
      const url = await freshDatabase();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await migratePostgres(client, 'test', POSTGRES_MIGRATIONS.slice(0, 4));
        await client.query(
          `INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES ('u-ada', 'ada@example.com', ` +
            `true, $1, 1), ('u-bea', 'bea@example.com', false, $2, 2)`,
          [hashToken('blue_ada'), hashToken('blue_bea')],
        );
      } finally {
        await client.end();
      }
      const store = await open(url);
      expect(await store.identity.authenticate('blue_ada', 10)).toMatchObject({
        user: { id: 'u-ada', is_admin: true },
        scopes: [...API_SCOPES],
      });
      expect(await store.identity.authenticate('blue_bea', 10)).toMatchObject({
        user: { id: 'u-bea', is_admin: false },
        scopes: API_SCOPES.filter((s) => s !== 'admin'),
      });
      expect((await store.identity.grants('u-ada')).map((g) => [g.kind, g.label])).toEqual([
        ['personal', 'token from users add'],
      ]);
      expect(
        (await query(url, `SELECT column_name FROM information_schema.columns WHERE table_name = 'users'`)).map(
          (r) => r.column_name,
        ),
      ).not.toContain('token_hash');
    });

    it('keeps the policy revisions of version 8, without a published text, current and readable', async () => {
      const url = await freshDatabase();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await migratePostgres(client, 'test', POSTGRES_MIGRATIONS.slice(0, 8));
        await client.query(
          `INSERT INTO policy_revisions (revision, body, etag, created_at) VALUES ('r1', ` +
            `'{"revision":"r1","ttl_seconds":60}', '"e1"', 5)`,
        );
      } finally {
        await client.end();
      }
      const store = await open(url);
      expect(await store.currentPolicy()).toEqual({
        revision: 'r1',
        body: { revision: 'r1', ttl_seconds: 60 },
        text: null,
        etag: '"e1"',
        created_at: 5,
      });
      const next = await store.publishPolicyOver({ ttl_seconds: 30 }, 'r1', 6, { text: 'ttl_seconds: 30 # shorter\n' });
      expect((await store.policyRevision(next!.revision))?.text).toBe('ttl_seconds: 30 # shorter\n');
    });

    it('refuses a database whose schema is newer than this code, at open and in check()', async () => {
      const url = await freshDatabase();
      const running = await open(url);
      const newer = POSTGRES_MIGRATIONS.length + 1;
      await query(url, 'INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)', [newer, Date.now()]);
      const refused = await blueErrorOf(PostgresStore.open(url));
      expect(refused.code).toBe('CONFIG_INVALID');
      expect(refused.message).toMatch(
        new RegExp(
          `schema version ${newer}, newer than this blue-agent understands \\(${POSTGRES_MIGRATIONS.length}\\)`,
        ),
      );
      await expect(running.check()).rejects.toThrow(/schema version/);
    });

    it('names the database without its password in location', async () => {
      const url = await freshDatabase();
      const password = new URL(url).password;
      expect(password).not.toBe('');
      const store = await open(url);
      expect(store.backend).toBe('postgres');
      expect(store.location).not.toContain(password);
      const expected = new URL(url);
      expected.password = '';
      expect(store.location).toBe(expected.toString());
    });

    it('reports a wrong password as a BlueError whose message and hint hold no password', async () => {
      const url = new URL(await freshDatabase());
      const right = url.password;
      const wrong = `wrong-${randomBytes(12).toString('hex')}`;
      url.password = wrong;
      const error = await blueErrorOf(PostgresStore.open(url.toString()));
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.message).toMatch(/password authentication failed/);
      expect(error.hint).toMatch(/user name and password/);
      for (const text of [error.message, error.hint ?? '', JSON.stringify(error)]) {
        expect(text).not.toContain(wrong);
        expect(text).not.toContain(right);
      }
    });

    it('reports a database that does not exist, naming it, with what to do', async () => {
      const url = new URL(await freshDatabase());
      url.pathname = '/no_such_database';
      const error = await blueErrorOf(PostgresStore.open(url.toString()));
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.message).toMatch(/no_such_database/);
      expect(error.hint).toMatch(/CREATE DATABASE/);
      expect(`${error.message} ${error.hint ?? ''}`).not.toContain(url.password);
    });

    it('reports a server that does not answer as a BlueError with what to check', async () => {
      // A port nobody listens on.
      const port = await new Promise<number>((resolve) => {
        const server = net.createServer().listen(0, '127.0.0.1', () => {
          const { port: p } = server.address() as net.AddressInfo;
          server.close(() => resolve(p));
        });
      });
      const secret = randomBytes(12).toString('hex');
      const error = await blueErrorOf(PostgresStore.open(`postgres://blue:${secret}@127.0.0.1:${port}/blue`));
      expect(error.code).toBe('IO_ERROR');
      expect(error.message).toContain(`cannot reach the PostgreSQL server of postgres://blue@127.0.0.1:${port}/blue`);
      expect(error.hint).toMatch(/server runs/);
      expect(`${error.message} ${error.hint ?? ''}`).not.toContain(secret);
    });
  });

  describe('replicas at the same time', () => {
    it('makes one session and one artifact from 20 concurrent presigns of a new session on two replicas', async () => {
      const url = await freshDatabase();
      const [a, b] = [await open(url), await open(url)];
      const { user } = await a.addUser('ada@example.com', false, 1);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? a : b).presign(artifactInput(user.id, 'a'), 1000 + i, 30 * DAY),
        ),
      );
      expect(new Set(results.map((r) => r.artifact.session_id)).size).toBe(1);
      expect(new Set(results.map((r) => r.artifact.id)).size).toBe(1);
      expect(results.filter((r) => r.outcome === 'created')).toHaveLength(1);
      expect(results.filter((r) => r.outcome === 'reused')).toHaveLength(19);
      expect(await count(url, 'sessions')).toBe(1);
      expect(await count(url, 'artifacts')).toBe(1);
    });

    it('makes one artifact from 20 concurrent presigns of the same new bytes of a session on 2 replicas', async () => {
      const url = await freshDatabase();
      const [a, b] = [await open(url), await open(url)];
      const { user } = await a.addUser('ada@example.com', false, 1);
      const first = await a.presign(artifactInput(user.id, 'a'), 1000, 30 * DAY);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? b : a).presign(artifactInput(user.id, 'b'), 2000 + i, 30 * DAY),
        ),
      );
      expect(new Set(results.map((r) => r.artifact.session_id))).toEqual(new Set([first.artifact.session_id]));
      expect(new Set(results.map((r) => r.artifact.id)).size).toBe(1);
      expect(results.map((r) => r.artifact.revision)).toEqual(Array(20).fill(2));
      expect(results.filter((r) => r.outcome === 'created')).toHaveLength(1);
      expect(await count(url, 'artifacts')).toBe(2);
    });

    it('numbers concurrent presigns of different bytes 1, 2, ... without a gap or a repeat', async () => {
      const url = await freshDatabase();
      const [a, b] = [await open(url), await open(url)];
      const { user } = await a.addUser('ada@example.com', false, 1);
      const digits = '0123456789';
      const results = await Promise.all(
        [...digits].map((d, i) => (i % 2 === 0 ? a : b).presign(artifactInput(user.id, d), 1000, 30 * DAY)),
      );
      expect(results.every((r) => r.outcome === 'created')).toBe(true);
      expect(new Set(results.map((r) => r.artifact.session_id)).size).toBe(1);
      expect(results.map((r) => r.artifact.revision).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });

    it('leaves one complete artifact when two artifacts of one session complete at once on 2 replicas', async () => {
      const url = await freshDatabase();
      const [a, b] = [await open(url), await open(url)];
      const { user } = await a.addUser('ada@example.com', false, 1);
      for (let round = 0; round < 10; round++) {
        const input = { ...artifactInput(user.id, 'a'), native_session_id: `sess-${round}` };
        const older = (await a.presign(input, 1000, 30 * DAY)).artifact;
        const newer = (await a.presign({ ...input, sha256: 'b'.repeat(64) }, 1001, 30 * DAY)).artifact;
        // Alternate which replica completes which, and which call starts first.
        const calls =
          round % 2 === 0
            ? [a.complete(older.id, 2000, 30 * DAY), b.complete(newer.id, 2000, 30 * DAY)]
            : [b.complete(newer.id, 2000, 30 * DAY), a.complete(older.id, 2000, 30 * DAY)];
        await Promise.all(calls);
        const artifacts = await a.artifactsOf(older.session_id);
        expect(artifacts.filter((x) => x.status === 'complete').map((x) => x.id)).toEqual([newer.id]);
        expect(artifacts.find((x) => x.id === older.id)?.status).toBe('superseded');
        expect((await b.session(older.session_id))?.current_artifact_id).toBe(newer.id);
      }
    });

    it(
      'writes no entry for a session deleted on another replica while the indexer writes its text, and the rest ' +
        "of the indexer's batch",
      async () => {
        const url = await freshDatabase();
        const [server, other] = [await open(url), await open(url)];
        const { user } = await server.addUser('ada@example.com', false, 1);
        const bundles = await Promise.all(
          ['a', 'b'].map(async (bytes, i) => {
            const { artifact } = await server.presign(
              {
                ...artifactInput(user.id, bytes),
                native_session_id: `sess-${i}`,
                artifact_format: 'blue-session-bundle-v1',
              },
              1000,
              30 * DAY,
            );
            return server.complete(artifact.id, 1000, 30 * DAY);
          }),
        );
        const [doomed, kept] = bundles as [Artifact, Artifact];
        expect((await server.claimSearchWork(2000, 60_000, 10)).map((c) => c.session_id).sort()).toEqual(
          [doomed.session_id, kept.session_id].sort(),
        );

        // The delete is held just before it commits (its audit entry waits on a lock of the test's), having removed
        // the session and its search and queue entries.
        const holder = new pg.Client({ connectionString: url });
        await holder.connect();
        const waiting = async (n: number): Promise<void> => {
          for (let i = 0; i < 500; i++) {
            const rows = await holder.query(
              `SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = ` +
                `'Lock'`,
            );
            if (Number(rows.rows[0].n) >= n) return;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
          throw new Error(`fewer than ${n} statements came to wait on a lock`);
        };
        try {
          await holder.query('BEGIN');
          await holder.query('LOCK TABLE audit_events IN SHARE MODE');
          const audit = {
            actor: { kind: 'user' as const, id: user.id, email: user.email },
            action: 'session.delete' as const,
            session_id: doomed.session_id,
            owner_id: user.id,
            details: {},
          };
          const deleted = other.deleteSession(doomed.session_id, audit, 3000, 4000);
          await waiting(1);
          const indexed = server.searchIndexed(
            [
              { session_id: kept.session_id, artifact_id: kept.id, text: 'kept words' },
              { session_id: doomed.session_id, artifact_id: doomed.id, text: 'doomed words' },
            ],
            3000,
          );
          await waiting(2);
          await holder.query('COMMIT');
          expect(await deleted).toEqual([doomed.blob_key]);
          await indexed;
        } finally {
          await holder.end();
        }
        expect(await query(url, 'SELECT session_id, body FROM session_search')).toEqual([
          { session_id: kept.session_id, body: 'kept words' },
        ]);
        expect(await count(url, 'search_queue')).toBe(0);
      },
    );

    it('makes one first administrator and one first policy however many replicas start at once', async () => {
      const url = await freshDatabase();
      const stores = await Promise.all(Array.from({ length: 5 }, () => open(url)));
      const admins = await Promise.all(stores.map((store, i) => store.addFirstAdmin('admin@example.com', 1000 + i)));
      expect(admins.filter((x) => x !== undefined)).toHaveLength(1);
      expect(await stores[0]!.listUsers()).toMatchObject([{ email: 'admin@example.com', is_admin: true }]);
      const policies = await Promise.all(
        stores.map((store, i) => store.publishFirstPolicy({ version: 1, replica: i }, 1000)),
      );
      const published = policies.filter((x) => x !== undefined);
      expect(published).toHaveLength(1);
      expect(await count(url, 'policy_revisions')).toBe(1);
      expect((await stores[4]!.currentPolicy())?.revision).toBe(published[0]!.revision);
    });
  });

  it('finds nothing, rather than failing, when looking up by text holding NUL (PostgreSQL cannot store)', async () => {
    const store = await open(await freshDatabase());
    const { user } = await store.addUser('ada@example.com', true, 1);
    await store.presign(artifactInput(user.id, 'a'), 1000, 30 * DAY);
    expect(await store.userByEmail('ada@example.com\u0000')).toBeUndefined();
    expect(await store.userById('\u0000')).toBeUndefined();
    expect(await store.searchUsers('a\u0000', undefined, 10)).toEqual([]);
    expect(
      await store.listSessions(user, { q: 'sess\u0000', sort: 'updated_desc', limit: 10, count: true }, 1000),
    ).toEqual({ sessions: [], total: 0 });
    expect((await store.facets(user, '\u0000', undefined)).users).toEqual([]);
    expect(await store.policyRevision('r\u0000')).toBeUndefined();
  });
});
