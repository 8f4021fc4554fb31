// Search latency of the Control API on PostgreSQL (fsync on): GET /session-uploads?q=… against `control-plane serve`,
// over 10,000 and then 100,000 synthetic sessions whose text is 120 words each from a 20,000-word vocabulary (a few
// words common, most rare, as in real text), to see how it grows and project 1,000,000.
// The query mix: rare words, common words, two words, and a prefix; numbered mode, ranked, with the total and snippets,
// exactly what `sessions list --q` asks. Anchor, in the same run and on the same data: the same number of plain
// listings (GET /session-uploads?page=1, newest first). Target: p95 ≤ 50 ms at 100,000 sessions.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileRunner } from '../scripts/compile-runner.mjs';
import { cleanEnv } from './drain.mjs';
import { startListening } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');
const VOCABULARY = 20_000;
const WORDS_PER_SESSION = 120;
const QUERIES = 200;

function cli(args, env) {
  const r = spawnSync(process.execPath, [entry, ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`blue-agent ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** Adds sessions `from`..`to` of `owner`, each with a current artifact and its search entry, in the database itself. */
export async function populate(db, owner, from, to) {
  await db.query('BEGIN');
  await db.query(
    `CREATE TEMP TABLE gen ON COMMIT DROP AS
    SELECT g, gen_random_uuid()::text AS sid, gen_random_uuid()::text AS aid FROM generate_series($1::int, $2::int) g`,
    [from, to],
  );
  await db.query(
    `INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at,
      updated_at)
    SELECT sid, $1, 'claude', 'native-' || g, 'private', NULL, g, g FROM gen`,
    [owner],
  );
  await db.query(`INSERT INTO artifacts (id, session_id, revision, status, size_bytes, sha256, content_type,
      compatibility_profile, artifact_format, resumable, cwd, title, summary, blob_key, created_at, updated_at,
      completed_at, retention_deadline)
    SELECT aid, sid, 1, 'complete', 2048, repeat('a', 64), 'application/vnd.blue.session-bundle+tar+gzip',
    'claude-v2_0_12',
      'blue-session-bundle-v1', true, '/home/dev/p' || (g % 50), 'Session ' || g, NULL, 'sessions/' || aid ||
      '.tar.gz', g, g, g, 9000000000000
    FROM gen`);
  await db.query('UPDATE sessions s SET current_artifact_id = gen.aid FROM gen WHERE s.id = gen.sid');
  // Zipf-like: the index of a word is the vocabulary size to a random power, so low indexes are common.
  await db.query(`INSERT INTO session_search (session_id, body, document)
    SELECT t.sid, t.body, setweight(to_tsvector('simple', 'Session ' || t.g), 'A') || setweight(to_tsvector('simple',
    t.body), 'C')
    FROM (SELECT gen.sid, gen.g,
      (SELECT string_agg('w' || floor(power(${VOCABULARY}, random()))::int, ' ')
        FROM generate_series(1, ${WORDS_PER_SESSION}) k WHERE gen.g > 0) AS body
      FROM gen) t`);
  await db.query('COMMIT');
  await db.query('ANALYZE');
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Times each request (one at a time); p50 and p95 over all, and p95 by kind when the URLs are labelled. */
async function timeRequests(urls, token) {
  const times = [];
  const byKind = new Map();
  for (const item of urls) {
    const { url, kind } = typeof item === 'string' ? { url: item, kind: undefined } : item;
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const body = await response.json();
    if (response.status !== 200) throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`);
    const ms = performance.now() - started;
    times.push(ms);
    if (kind !== undefined) byKind.set(kind, [...(byKind.get(kind) ?? []), ms]);
  }
  times.sort((a, b) => a - b);
  const kinds = Object.fromEntries(
    [...byKind].map(([k, v]) => [
      k,
      percentile(
        v.sort((a, b) => a - b),
        95,
      ),
    ]),
  );
  return { p50: percentile(times, 50), p95: percentile(times, 95), kinds };
}

function queries(base) {
  const out = [];
  for (let i = 0; i < QUERIES; i++) {
    const kind = i % 4;
    const rare = () => `w${5000 + Math.floor(Math.random() * 15000)}`;
    const common = () => `w${1 + Math.floor(Math.random() * 20)}`;
    const q = kind === 0 ? rare() : kind === 1 ? common() : kind === 2 ? `${common()} ${rare()}` : rare().slice(0, 4);
    out.push({
      kind: ['rare word', 'common word', 'common and rare', 'prefix'][kind],
      url: `${base}/session-uploads?q=${encodeURIComponent(q)}&per_page=25`,
    });
  }
  return out;
}

export async function run({ small = 10_000, large = 100_000 } = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-search-'));
  let cluster;
  let server;
  try {
    const pgModule = path.join(dir, 'postgres.mjs');
    await compileRunner(path.join(root, 'test/support/postgres.ts'), pgModule);
    const { startPostgres } = await import(pgModule);
    cluster = await startPostgres({ durable: true });
    const databaseUrl = await cluster.createDatabase();
    const env = cleanEnv({ BLUE_CONTROL_DATABASE_URL: databaseUrl });
    const data = path.join(dir, 'data');
    await mkdir(data);
    const added = JSON.parse(
      cli(['control-plane', 'users', 'add', 'bench@example.com', '--data', data, '--json'], env),
    );
    server = await startListening(
      [
        process.execPath,
        entry,
        'control-plane',
        'serve',
        '--listen',
        '127.0.0.1:0',
        '--data',
        data,
        '--gc-interval',
        '0',
      ],
      env,
    );
    const { default: pg } = await import('pg');
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    const results = [];
    let have = 0;
    for (const size of [small, large]) {
      const started = Date.now();
      await populate(db, added.user_id, have + 1, size);
      have = size;
      const filled = ((Date.now() - started) / 1000).toFixed(0);
      // Warm the caches as a running server has them, then measure.
      await timeRequests(queries(server.url).slice(0, 20), added.token);
      const search = await timeRequests(queries(server.url), added.token);
      const listing = await timeRequests(
        Array.from({ length: QUERIES }, () => `${server.url}/session-uploads?page=1&per_page=25`),
        added.token,
      );
      results.push({ size, search, listing });
      console.log(
        `search (PostgreSQL, ${size.toLocaleString('en')} sessions, ${QUERIES} queries): p50 ` +
          `${search.p50.toFixed(1)} ms, p95 ${search.p95.toFixed(1)} ms -> ` +
          (`${(search.p95 / listing.p95).toFixed(2)}x a plain listing's p95 (${listing.p95.toFixed(1)} ms); filled ` +
            `in ${filled} s`),
      );
      console.log(
        `  p95 by query: ${Object.entries(search.kinds)
          .map(([k, v]) => `${k} ${v.toFixed(1)} ms`)
          .join(', ')}`,
      );
    }
    await db.end();
    const [a, b] = results;
    const growth = b.search.p95 / a.search.p95;
    // Ten times the sessions multiplied p95 by `growth`: ten times more again, projected the same way.
    const projected = b.search.p95 * growth;
    const pass = b.search.p95 <= 50;
    console.log(
      `search: p95 grew ${growth.toFixed(2)}x from ${a.size.toLocaleString('en')} to ${b.size.toLocaleString('en')} ` +
        `sessions; ` +
        (`projected at 1,000,000: about ${projected.toFixed(0)} ms; target p95 <= 50 ms at ` +
          `${b.size.toLocaleString('en')} ${pass ? 'PASS' : 'FAIL'}`),
    );
    return pass;
  } finally {
    await server?.stop();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
