/**
 * The Control API as an organisation runs it: three `control-plane serve` processes (the built CLI) sharing one
 * PostgreSQL database and one S3 bucket (s3rver), behind a loopback round-robin proxy, each with a data directory of
 * its own that nothing is kept in. Started all at once, they make exactly one administrator and one default policy.
 * Then 50 agents upload concurrently through the agent's own upload code (presign, PUT to the bucket, complete, with
 * its retries), while policy revisions are published, one replica is SIGKILLed and the database restarted: every
 * session is registered exactly once with its bytes intact, and every replica agrees on the revisions in order.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/control-api/client.js';
import { publishPolicy, addUser } from '@blue-agent/control-api/admin.js';
import { uploadBundle, type UploadItem } from '../../src/upload/index.js';
import { runCli } from '../../../../test/support/cli-process.js';
import { startPostgres, type PgCluster } from '../../../../test/support/postgres.js';
import { startRoundRobinProxy, type RoundRobinProxy } from '../../../../test/support/round-robin-proxy.js';
import { openEventStream, nextEvent } from '../../../../test/support/event-stream.js';

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
}
const S3rver = createRequire(import.meta.url)('s3rver') as new (options: Record<string, unknown>) => S3rverInstance;

const REPLICAS = 3;
const AGENTS = 50;
const SESSIONS_PER_AGENT = 4;
const BUCKET = 'bundles';

let root: string;
let cluster: PgCluster;
let databaseUrl: string;
let s3: S3rverInstance;
let s3Url: string;
let proxy: RoundRobinProxy;
const backends: { port: number }[] = [];
const replicas: Replica[] = [];

interface Replica {
  index: number;
  url: string;
  stdout: () => string;
  child: ReturnType<typeof runCli>['child'];
  done: ReturnType<typeof runCli>;
}

function env(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: path.join(root, 'home'),
    BLUE_CONTROL_DATABASE_URL: databaseUrl,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_REGION: 'us-east-1',
    // No ambient AWS profile or instance metadata lookups on the test machine.
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: path.join(root, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: path.join(root, 'no-aws-credentials'),
  };
}

/** Starts replica `index` (its own, empty data directory) and waits until it listens. */
async function startReplica(index: number): Promise<Replica> {
  const data = path.join(root, `replica-${index}`);
  const args = [
    'control-plane',
    'serve',
    '--listen',
    '127.0.0.1:0',
    '--data',
    data,
    '--public-url',
    proxy.url,
    '--blob-store',
    's3',
    '--s3-endpoint',
    s3Url,
    '--s3-bucket',
    BUCKET,
    '--s3-path-style',
  ];
  const done = runCli(args, { env: env(), timeoutMs: 10 * 60_000 });
  let out = '';
  done.child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const deadline = Date.now() + 30_000;
  let url: string | undefined;
  while (url === undefined) {
    const m = /Control API listening on (http:\/\/\S+)/.exec(out);
    if (m !== null) url = m[1]!;
    else if (done.child.exitCode !== null || Date.now() > deadline) {
      const result = await Promise.race([done, sleep(1_000).then(() => undefined)]);
      throw new Error(`replica ${index} did not start: ${out}\n${result?.stderr ?? ''}`);
    } else await sleep(25);
  }
  // Everything the first start prints comes with the line above; wait for the rest of it.
  await sleep(100);
  const replica = { index, url, stdout: () => out, child: done.child, done };
  replicas[index] = replica;
  backends[index] = { port: Number(new URL(url).port) };
  return replica;
}

async function json(
  url: string,
  token: string,
  init: RequestInit = {},
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(url, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), headers: response.headers };
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'blue-replicas-'));
  await mkdir(path.join(root, 'home'), { recursive: true });
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase();
  const s3Dir = path.join(root, 's3');
  s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: s3Dir,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  s3Url = `http://127.0.0.1:${(await s3.run()).port}`;
  proxy = await startRoundRobinProxy(backends);
}, 120_000);

afterAll(async () => {
  for (const r of replicas) if (r !== undefined && r.child.exitCode === null) r.child.kill('SIGKILL');
  await Promise.all(replicas.map((r) => r?.done.catch(() => undefined)));
  await proxy?.close();
  await s3?.close();
  await cluster?.stop();
  await rm(root, { recursive: true, force: true });
}, 60_000);

describe('three stateless replicas on PostgreSQL and S3', () => {
  it('start together with one administrator and one policy, take 50 agents through a replica kill and a database ' +
    'restart, and lose nothing', async () => {
    // --- First start, all at once, against an empty database.
    await Promise.all(Array.from({ length: REPLICAS }, (_, i) => startReplica(i)));
    const outs = replicas.map((r) => r.stdout());
    expect(
      outs.filter((o) => o.includes('Created the administrator')),
      outs.join('\n---\n'),
    ).toHaveLength(1);
    expect(outs.filter((o) => o.includes('Published a default policy'))).toHaveLength(1);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      expect((await db.query('SELECT count(*)::int AS n FROM users WHERE is_admin')).rows[0].n).toBe(1);
      expect((await db.query('SELECT count(*)::int AS n FROM policy_revisions')).rows[0].n).toBe(1);
    } finally {
      await db.end();
    }

    const { token } = await addUser(
      { dataDir: path.join(root, 'cli'), databaseUrl },
      'dev@example.com',
      false,
      Date.now(),
    );
    const policyFile = path.join(root, 'policy.yaml');
    const published: string[] = [];
    const publish = async (n: number) => {
      await writeFile(
        policyFile + n,
        `ttl_seconds: ${60 + n}\nsession_upload:\n  presign_url: ${proxy.url}/session-uploads/presign\n`,
      );
      const { published: p } = await publishPolicy(
        { dataDir: path.join(root, 'cli'), databaseUrl },
        policyFile + n,
        Date.now(),
      );
      published.push(p.revision);
    };
    const first = await json(`${replicas[0]!.url}/governance-config`, token);
    expect(first.status).toBe(200);
    published.push(first.body.revision);

    // Every replica's revisions, as its clients see them, in the order they come.
    const seen: string[][] = replicas.map(() => []);
    let watching = true;
    const watchUntil = Date.now() + 180_000; // bounded even when the test fails before it stops them
    const watchers = replicas.map(async (_r, i) => {
      while (watching && Date.now() < watchUntil) {
        const got = await json(`${backendUrl(i)}/governance-config`, token).catch(() => undefined);
        if (got?.status === 200 && seen[i]!.at(-1) !== got.body.revision) seen[i]!.push(got.body.revision);
        await sleep(50);
      }
    });

    // --- 50 agents, each uploading its sessions one after another through the proxy, retrying what fails.
    const sessions = new Map<string, { sha256: string; size: number }>();
    let completed = 0;
    /** What the agents went through: each retried step and each record put back for later, by the reason given. */
    const troubles: string[] = [];
    const agent = async (n: number) => {
      const client = await ControlClient.create({
        controlUrl: proxy.url,
        token,
        tokenSource: 'test',
        env: {},
        userAgent: 'blue-agent/test',
        timeoutMs: 15_000,
      });
      try {
        for (let s = 0; s < SESSIONS_PER_AGENT; s++) {
          const id = `agent-${n}-session-${s}`;
          const bytes = randomBytes(2048);
          const file = path.join(root, `${id}.bundle`);
          await writeFile(file, bytes);
          const item: UploadItem = {
            bundleFile: file,
            size: bytes.length,
            sha256: createHash('sha256').update(bytes).digest('hex'),
            manifest: {
              harness: 'claude',
              native_session_id: id,
              compatibility_profile: 'claude-v2_0_12',
              captured_at_unix_ms: Date.now(),
              title: id,
            },
            resumable: true,
          };
          sessions.set(id, { sha256: item.sha256, size: item.size });
          for (let attempt = 1; ; attempt++) {
            const result = await uploadBundle(client, item, {
              retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1_000, maxInlineRetryAfterMs: 5_000 },
              onRetry: (step, error) => troubles.push(`${step}: ${error.message}`),
            });
            if (result.kind === 'uploaded') break;
            troubles.push(`again: ${result.reason}`);
            if (result.kind === 'failed') throw new Error(`${id}: refused: ${result.code} ${result.reason}`);
            // As the drain would: the record waits, then goes again (bounded here).
            if (attempt >= 40) throw new Error(`${id}: still not uploaded after ${attempt} rounds: ${result.reason}`);
            await sleep(Math.min(result.delay_ms, 500));
          }
          completed++;
        }
      } finally {
        await client.close();
      }
    };
    const total = AGENTS * SESSIONS_PER_AGENT;
    const running = Promise.all(Array.from({ length: AGENTS }, (_, n) => agent(n)));
    const faults = (async () => {
      await until(() => completed >= total * 0.2);
      await Promise.all([publish(1), publish(2)]);
      // A replica dies mid-request: its connections are cut, the proxy routes around it.
      replicas[1]!.child.kill('SIGKILL');
      await replicas[1]!.done.catch(() => undefined);
      await until(() => completed >= total * 0.45);
      await publish(3);
      // The database goes away and comes back: every replica's queries fail meanwhile, and recover.
      await cluster.restart();
      await until(() => completed >= total * 0.65);
      // The killed replica comes back (another port, the same empty data directory): nothing to recover.
      await startReplica(1);
      await publish(4);
    })();
    await Promise.all([running, faults]);
    // The watchers see the last revision everywhere before they stop.
    await until(
      () => seen.every((s) => s.at(-1) === published.at(-1)),
      10_000,
      () => `published ${JSON.stringify(published)}, seen ${JSON.stringify(seen)}`,
    );
    watching = false;
    await Promise.all(watchers);

    // The faults were felt (requests cut by the kill, the database's 503s), and gone through.
    expect(troubles.length, 'no upload was disturbed: the faults came too late').toBeGreaterThan(0);
    expect(
      troubles.some((t) => /database_unavailable|HTTP 503/.test(t)),
      troubles.slice(0, 20).join('\n'),
    ).toBe(true);

    // --- Nothing lost, nothing twice: one captured session per native id, each with one verified upload.
    const listed = await listAll(token);
    expect(listed).toHaveLength(total);
    expect(new Set(listed.map((s) => s.native_session_id)).size).toBe(total);
    for (const s of listed) {
      const sent = sessions.get(s.native_session_id)!;
      expect(s, s.native_session_id).toMatchObject({ status: 'complete', sha256: sent.sha256, size_bytes: sent.size });
    }
    const check = new pg.Client({ connectionString: databaseUrl });
    await check.connect();
    try {
      expect((await check.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n).toBe(total);
      const perSession = await check.query(
        `SELECT session_id, count(*)::int AS n FROM artifacts WHERE status = 'complete' GROUP BY session_id HAVING ` +
          `count(*) <> 1`,
      );
      expect(perSession.rows).toEqual([]);
      expect((await check.query(`SELECT count(*)::int AS n FROM artifacts WHERE status = 'complete'`)).rows[0].n).toBe(
        total,
      );
      // Revisions: one row each, in publish order.
      const revisions = (await check.query('SELECT revision FROM policy_revisions ORDER BY seq')).rows.map(
        (r: { revision: string }) => r.revision,
      );
      expect(revisions).toHaveLength(5);
      expect(new Set(revisions)).toEqual(new Set(published));
      expect(revisions.at(-1)).toBe(published.at(-1));
      // Each replica's clients saw revisions only ever moving forward, in the database's order.
      for (const s of seen) {
        const order = s.map((r) => revisions.indexOf(r));
        expect(order.every((o) => o >= 0)).toBe(true);
        expect([...order].sort((a, b) => a - b)).toEqual(order);
      }
    } finally {
      await check.end();
    }
    // The bytes made it to the bucket intact: a download of a few, through any replica.
    for (const s of listed.slice(0, 5)) {
      const signed = await json(`${proxy.url}/session-uploads/${s.id}/download`, token, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      expect(signed.status).toBe(200);
      const bytes = Buffer.from(
        await (await fetch(signed.body.download_url, { headers: signed.body.headers })).arrayBuffer(),
      );
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(sessions.get(s.native_session_id)!.sha256);
    }
    // Every replica, the one restarted included, names the same current revision on its event stream.
    for (let i = 0; i < REPLICAS; i++) {
      const stream = await openEventStream(`${backendUrl(i)}/governance-config/events`, token);
      try {
        expect((await nextEvent(stream))?.data).toBe(JSON.stringify({ revision: published.at(-1) }));
      } finally {
        stream.close();
      }
    }
    // No replica died of what it went through (the killed one came back as a new process).
    for (const r of replicas) expect(r.child.exitCode, `replica ${r.index} exited:\n${r.stdout()}`).toBeNull();
    // The proxy spread the work over the replicas.
    expect(proxy.counts.filter((c) => c > 0)).toHaveLength(REPLICAS);
  }, 240_000);
});

function backendUrl(i: number): string {
  return `http://127.0.0.1:${backends[i]!.port}`;
}

async function until(condition: () => boolean, timeoutMs = 120_000, state: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for the test condition ${state()}`);
    await sleep(20);
  }
}

/** Every captured session the user can see, page by page (through the proxy). */
async function listAll(token: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const got = await json(
      `${proxy.url}/session-uploads?limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      token,
    );
    expect(got.status).toBe(200);
    items.push(...got.body.items);
    cursor = got.body.next_cursor ?? undefined;
    if (cursor === undefined) return items;
  }
  throw new Error('more than 100 pages');
}
