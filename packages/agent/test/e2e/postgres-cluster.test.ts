/**
 * The throwaway PostgreSQL cluster the Control API's tests run against (test/support/postgres.ts) and the run's shared
 * one (test/support/postgres-global-setup.ts, freshDatabase()): real server processes, so they are tested here, with
 * the other whole-process tests (the test layout keeps test/support/ for helpers only).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { TestProject } from 'vitest/node';
import { startPostgres, type PgCluster } from '../../../../test/support/postgres.js';
import { freshDatabase } from '../../../../test/support/postgres-db.js';
import setupPostgres from '../../../../test/support/postgres-global-setup.js';

const hasProc = existsSync('/proc/self/status');

/**
 * A connected client whose connection may be cut by the server without crashing the test process. The timeout only
 * bounds a server that never answers: 200 backends starting and authenticating at once take long on one loaded core.
 */
async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 60_000 });
  client.on('error', () => {});
  await client.connect();
  return client;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = await connect(url);
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** Whether `pid` runs (a zombie does not). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (!hasProc) return true;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

const canListen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

describe('a throwaway PostgreSQL cluster', () => {
  let cluster: PgCluster;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it(
    'accepts connections with pg, on 127.0.0.1, with the password of its URL and settings that do not depend on ' +
      'the machine',
    async () => {
      expect(cluster.url).toMatch(
        new RegExp(`^postgres://postgres:[A-Za-z0-9_-]{20,}@127\\.0\\.0\\.1:${cluster.port}/postgres$`),
      );
      expect(cluster.major).toBeGreaterThanOrEqual(13);
      const [row] = await query<Record<string, string>>(
        cluster.url,
        `SELECT current_setting('server_version_num') AS version, current_setting('TimeZone') AS tz,
              current_setting('lc_collate') AS collate, current_setting('server_encoding') AS encoding,
              current_setting('fsync') AS fsync, current_setting('max_connections') AS max_connections,
              current_setting('listen_addresses') AS listen, current_setting('data_directory') AS data,
              current_setting('password_encryption') AS encryption`,
      );
      expect(row).toMatchObject({
        tz: 'UTC',
        collate: 'C',
        encoding: 'UTF8',
        fsync: 'off',
        listen: '127.0.0.1',
        data: cluster.dataDir,
        encryption: 'scram-sha-256',
      });
      expect(Math.floor(Number(row!.version) / 10_000)).toBe(cluster.major);
      expect(Number(row!.max_connections)).toBeGreaterThanOrEqual(200);

      const wrong = new URL(cluster.url);
      wrong.password = 'not-the-password';
      await expect(query(wrong.toString(), 'SELECT 1')).rejects.toThrow(/password authentication failed/);
    },
  );

  it('gives each createDatabase() its own empty database', async () => {
    const [a, b] = await Promise.all([cluster.createDatabase(), cluster.createDatabase()]);
    expect(a).not.toBe(b);
    await query(a, 'CREATE TABLE items (id int PRIMARY KEY); INSERT INTO items VALUES (1)');
    expect(await query(a, 'SELECT id FROM items')).toEqual([{ id: 1 }]);
    expect(await query(b, "SELECT to_regclass('public.items') AS t")).toEqual([{ t: null }]);

    const named = await cluster.createDatabase('named_db');
    expect(new URL(named).pathname).toBe('/named_db');
    expect(await query(named, 'SELECT current_database() AS db')).toEqual([{ db: 'named_db' }]);
    await expect(cluster.createDatabase('Bad-Name')).rejects.toThrow(/not a plain lowercase SQL name/);
  });

  it('takes 200 concurrent connections', async () => {
    const url = await cluster.createDatabase();
    const clients = await Promise.all(Array.from({ length: 200 }, () => connect(url)));
    try {
      const [row] = (
        await clients[0]!.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend'",
        )
      ).rows;
      expect(Number(row!.n)).toBeGreaterThanOrEqual(200);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });

  it.runIf(hasProc)('runs its processes as an unprivileged user (nobody when the tests run as root)', () => {
    const pids = cluster.processIds();
    expect(pids.length).toBeGreaterThan(1);
    const expected =
      process.getuid!() === 0
        ? Number(/^nobody:[^:]*:(\d+):/m.exec(readFileSync('/etc/passwd', 'utf8'))?.[1] ?? 65534)
        : process.getuid!();
    expect(expected).not.toBe(0);
    // A backend may end between the listing and the read (an autovacuum worker, a connection closing): it is skipped.
    const uids = pids.map((pid) => statusUid(pid)).filter((uid) => uid !== undefined);
    expect(uids.length).toBeGreaterThan(1);
    for (const uid of uids) expect(uid).toBe(expected);
    expect(statSync(cluster.dataDir).uid).toBe(expected);
  });

  it('restart() keeps the data and the port; queries fail meanwhile, and clients reconnect after', async () => {
    const url = await cluster.createDatabase();
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    pool.on('error', () => {});
    try {
      await pool.query('CREATE TABLE kept (v text); INSERT INTO kept VALUES ($$before$$)');
      const { port } = cluster;
      const before = cluster.processIds();
      const sleeper = await connect(url);
      const sleeping = sleeper.query('SELECT pg_sleep(60)');
      sleeping.catch(() => {});

      const restarting = cluster.restart();
      await expect(sleeping).rejects.toThrow();
      // The old server is shutting down or gone and the new one not up yet.
      await expect(query(url, 'SELECT 1')).rejects.toThrow();
      await restarting;

      expect(cluster.port).toBe(port);
      expect(new URL(cluster.url).port).toBe(String(port));
      expect(cluster.processIds()[0]).not.toBe(before[0]);
      expect(before.filter(running)).toEqual([]);
      // The pool drops the cut connections and opens new ones.
      expect((await pool.query('SELECT v FROM kept')).rows).toEqual([{ v: 'before' }]);
      await pool.query('INSERT INTO kept VALUES ($$after$$)');
      expect(await query(url, 'SELECT v FROM kept ORDER BY v')).toEqual([{ v: 'after' }, { v: 'before' }]);
    } finally {
      await pool.end();
    }
  });

  it('kill() is a crash: every process dies at once, and restart() recovers every committed transaction', async () => {
    const url = await cluster.createDatabase();
    await query(url, 'CREATE TABLE crash (n int)');
    for (let n = 1; n <= 20; n++) await query(url, 'INSERT INTO crash VALUES ($1)', [n]);
    const open = await connect(url);
    const before = cluster.processIds();

    await cluster.kill();
    expect(cluster.processIds()).toEqual([]);
    expect(before.filter(running)).toEqual([]);
    await expect(open.query('SELECT 1')).rejects.toThrow();
    await expect(query(url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);

    await cluster.restart();
    expect(await query(url, 'SELECT count(*)::int AS n, sum(n)::int AS total FROM crash')).toEqual([
      { n: 20, total: 210 },
    ]);
  });

  it('stop() leaves no process, port or directory behind', async () => {
    const other = await startPostgres();
    const client = await connect(other.url);
    const pids = other.processIds();
    expect(pids.length).toBeGreaterThan(1);
    expect(pids.every(running)).toBe(true);

    await other.stop();
    expect(pids.filter(running)).toEqual([]);
    expect(other.processIds()).toEqual([]);
    expect(existsSync(path.dirname(other.dataDir))).toBe(false);
    expect(await canListen(other.port)).toBe(true);
    await expect(client.query('SELECT 1')).rejects.toThrow();
    await other.stop();
    await expect(other.restart()).rejects.toThrow(/stopped/);
  });
});

describe("the run's shared cluster (freshDatabase)", () => {
  it('gives every caller a new empty database in the cluster the global setup started', async () => {
    const shared = new URL(inject('postgresUrl'));
    const [a, b] = await Promise.all([freshDatabase(), freshDatabase()]);
    expect(a).not.toBe(b);
    for (const url of [a, b]) expect(new URL(url).host).toBe(shared.host);
    await query(a, 'CREATE TABLE mine (v int)');
    expect(await query(b, "SELECT to_regclass('public.mine') AS t")).toEqual([{ t: null }]);
  });

  it("is one for every project of a run, stopped by the last project's teardown", async () => {
    // Each project of the root's run calls the global setup in vitest's one main process; this worker stands in.
    const project = () => {
      const provided = new Map<string, unknown>();
      return { provided, provide: (key: string, value: unknown) => void provided.set(key, value) };
    };
    const [first, second] = [project(), project()];
    const teardownFirst = await setupPostgres(first as unknown as TestProject);
    const teardownSecond = await setupPostgres(second as unknown as TestProject);
    const url = first.provided.get('postgresUrl') as string;
    expect(first.provided.get('postgresProblem')).toBe('');
    expect(second.provided.get('postgresUrl')).toBe(url);
    await teardownFirst();
    expect(await query(url, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await teardownSecond();
    await expect(query(url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
  });
});

/** The real uid of a process from /proc, or undefined when it is gone. */
function statusUid(pid: number): number | undefined {
  try {
    return Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
