// Uploads per second through the Control API: 50 concurrent agents, each looping presign -> PUT to the signed URL ->
// complete with a 2 KiB bundle, against the built CLI's `control-plane serve` (real processes):
//   - the embedded default: one server, SQLite and local blobs in its data directory;
//   - PostgreSQL (fsync on, as a deployment runs it) with one, two and three replicas sharing the database and one
//     local blob directory; agent i talks to replica i mod N, as behind a load balancer, so the balancer's own cost is
//     not in the figure.
// Anchor, in the same run and with the same load generator: a bare node:http server that answers the three requests
// without doing anything (no database, no storage) — the HTTP floor of one Node process on this machine. Each
// figure is printed as a ratio of it.
//
// Targets (the issue's, from this 2-core machine): embedded >= 600/s; with PostgreSQL, two replicas >= 1.5x one, and
// three >= 800/s. Everything runs on the same machine — load generator, replicas, PostgreSQL — so with two cores the
// replicas compete with the generator and the database for CPU; the summary line says how busy each was.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileRunner } from '../scripts/compile-runner.mjs';
import { cleanEnv } from './drain.mjs';
import { startListening } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');
const AGENTS = 50;

const LOAD = `
import { createHash, randomBytes } from 'node:crypto';
import { Agent, request } from ${JSON.stringify(path.join(root, 'node_modules/undici/index.js'))};
const [urlsJson, token, seconds, warmup, agents] = process.argv.slice(2);
const urls = JSON.parse(urlsJson);
const dispatcher = new Agent({ connections: 256, pipelining: 1, keepAliveTimeout: 10_000 });
let done = 0, errors = 0, counting = false, lastError = '';
const startAt = Date.now() + Number(warmup) * 1000;
const stopAt = startAt + Number(seconds) * 1000;
const auth = { authorization: 'Bearer ' + token };
async function agent(n) {
  const base = urls[n % urls.length];
  let i = 0;
  while (Date.now() < stopAt) {
    const body = randomBytes(2048);
    const sha256 = createHash('sha256').update(body).digest('hex');
    try {
      const presign = {
        harness: 'claude',
        session_id: 'bench-' + process.pid + '-' + n + '-' + i++,
        sha256,
        size_bytes: body.length,
        content_type: 'application/vnd.blue.session-bundle+tar+gzip',
        compatibility_profile: 'claude-v2_0_12',
        artifact_format: 'blue-session-bundle-v1',
      };
      const p = await request(base + '/session-uploads/presign', {
        method: 'POST',
        dispatcher,
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify(presign),
      });
      const signed = await p.body.json();
      if (p.statusCode !== 200) throw new Error('presign ' + p.statusCode + ' ' + JSON.stringify(signed));
      const put = await request(signed.upload_url, {
        method: signed.method,
        headers: signed.headers,
        body,
        dispatcher,
      });
      await put.body.dump();
      if (put.statusCode !== 200) throw new Error('PUT ' + put.statusCode);
      const c = await request(signed.complete_url, { method: 'POST', dispatcher, headers: auth });
      await c.body.dump();
      if (c.statusCode !== 200) throw new Error('complete ' + c.statusCode);
      if (Date.now() >= startAt && Date.now() < stopAt) done++;
    } catch (e) { errors++; lastError = String(e).slice(0, 300); }
  }
}
await Promise.all(Array.from({ length: Number(agents) }, (_, n) => agent(n)));
process.stdout.write(JSON.stringify({ uploads: done, perSecond: done / Number(seconds), errors, lastError }) + '\\n');
await dispatcher.close();
`;

// The floor: the same three requests, answered at once.
const FLOOR = `
import http from 'node:http';
let n = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const base = 'http://127.0.0.1:' + server.address().port;
    let body = '{}';
    if (req.url === '/session-uploads/presign') {
      const id = ++n;
      body = JSON.stringify({
        upload_id: String(id),
        session_id: String(id),
        method: 'PUT',
        headers: {},
        upload_url: base + '/blob/' + id,
        complete_url: base + '/session-uploads/' + id + '/complete',
      });
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(0, '127.0.0.1', () =>
  process.stdout.write('listening on http://127.0.0.1:' + server.address().port + '\\n'),
);
process.on('SIGTERM', () => process.exit(0));
`;

function cli(args, env) {
  const r = spawnSync(process.execPath, [entry, ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`blue-agent ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** CPU seconds (user + system) of a process and its descendants so far, from /proc; 0 where there is no /proc. */
function cpuSeconds(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone: counted as nothing.
    }
  }
  return ticks / 100;
}

/**
 * Runs the load generator for `seconds` after `warmup`; `watch` names the processes whose CPU is measured meanwhile, by
 * group (`servers`, `database`), as cores busy on average; `generator` is the load generator's own.
 */
async function measure(label, urls, token, { seconds, warmup, env, dir, watch = {} }) {
  const load = path.join(dir, 'load.mjs');
  await writeFile(load, LOAD);
  const groups = Object.entries(watch);
  const before = groups.map(([, pids]) => cpuSeconds(pids()));
  const started = Date.now();
  const r = spawnSync(
    '/usr/bin/time',
    [
      '-f',
      '%U %S',
      process.execPath,
      load,
      JSON.stringify(urls),
      token,
      String(seconds),
      String(warmup),
      String(AGENTS),
    ],
    { env, encoding: 'utf8', timeout: (seconds + warmup + 120) * 1000 },
  );
  if (r.status !== 0) throw new Error(`${label}: the load generator exited ${r.status}: ${r.stderr}`);
  const out = JSON.parse(r.stdout);
  const wall = (Date.now() - started) / 1000;
  const busy = Object.fromEntries(groups.map(([name, pids], i) => [name, (cpuSeconds(pids()) - before[i]) / wall]));
  const [user, system] = r.stderr.trim().split('\n').at(-1).split(' ').map(Number);
  busy.generator = (user + system) / wall;
  if (out.errors > 0) console.log(`  ${label}: ${out.errors} failed uploads, the last: ${out.lastError}`);
  return { ...out, busy };
}

export async function run({ seconds = 8, warmup = 2 } = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-control-'));
  const env = cleanEnv();
  const stops = [];
  let cluster;
  try {
    const floorFile = path.join(dir, 'floor.mjs');
    await writeFile(floorFile, FLOOR);
    const floorServer = await startListening([process.execPath, floorFile], env);
    stops.push(floorServer.stop);
    const floor = await measure('floor', [floorServer.url], 'x', { seconds, warmup, env, dir });
    await floorServer.stop();

    // Embedded default.
    const data = path.join(dir, 'embedded');
    await mkdir(data);
    const embedded = await startListening(
      [process.execPath, entry, 'control-plane', 'serve', '--listen', '127.0.0.1:0', '--data', data],
      env,
    );
    stops.push(embedded.stop);
    const token = JSON.parse(
      cli(['control-plane', 'users', 'add', 'bench@example.com', '--data', data, '--json'], env),
    ).token;
    const sqlite = await measure('embedded', [embedded.url], token, {
      seconds,
      warmup,
      env,
      dir,
      watch: { servers: () => [embedded.child.pid] },
    });
    await embedded.stop();

    // PostgreSQL, durable, as a deployment runs it.
    const pgModule = path.join(dir, 'postgres.mjs');
    await compileRunner(path.join(root, 'test/support/postgres.ts'), pgModule);
    const { startPostgres } = await import(pgModule);
    cluster = await startPostgres({ durable: true });
    const replicas = [];
    for (const n of [1, 2, 3]) {
      const databaseUrl = await cluster.createDatabase();
      const shared = path.join(dir, `pg-${n}`);
      await mkdir(shared);
      const pgEnv = { ...env, BLUE_CONTROL_DATABASE_URL: databaseUrl };
      const servers = [];
      for (let i = 0; i < n; i++) {
        const s = await startListening(
          [process.execPath, entry, 'control-plane', 'serve', '--listen', '127.0.0.1:0', '--data', shared],
          pgEnv,
        );
        stops.push(s.stop);
        servers.push(s);
      }
      const pgToken = JSON.parse(cli(['control-plane', 'users', 'add', 'bench@example.com', '--json'], pgEnv)).token;
      const result = await measure(
        `postgres x${n}`,
        servers.map((s) => s.url),
        pgToken,
        {
          seconds,
          warmup,
          env,
          dir,
          watch: { servers: () => servers.map((s) => s.child.pid), database: () => cluster.processIds() },
        },
      );
      replicas.push(result);
      for (const s of servers) await s.stop();
    }

    const line = (label, r, target) =>
      console.log(
        `control uploads (${label}, ${AGENTS} agents, 2 KiB): ${r.perSecond.toFixed(0)}/s -> ` +
          `${(r.perSecond / floor.perSecond).toFixed(2)}x the HTTP floor ` +
          `(${floor.perSecond.toFixed(0)}/s)${target === undefined ? '' : ` ${target}`}; CPU cores busy: ` +
          Object.entries(r.busy)
            .map(([name, cores]) => `${name} ${cores.toFixed(2)}`)
            .join(', '),
      );
    const embeddedPass = sqlite.perSecond >= 600 && sqlite.errors === 0;
    line('embedded SQLite', sqlite, `(target >= 600/s) ${embeddedPass ? 'PASS' : 'FAIL'}`);
    const [one, two, three] = replicas;
    line('PostgreSQL, 1 replica', one);
    const twoPass = two.perSecond >= 1.5 * one.perSecond;
    line(
      'PostgreSQL, 2 replicas',
      two,
      `= ${(two.perSecond / one.perSecond).toFixed(2)}x one replica (target >= 1.5x) ${twoPass ? 'PASS' : 'FAIL'}`,
    );
    const threePass = three.perSecond >= 800;
    line('PostgreSQL, 3 replicas', three, `(target >= 800/s) ${threePass ? 'PASS' : 'FAIL'}`);
    // What limits the replicas here: the CPU one upload costs (replicas, database and load generator together) against
    // the cores this machine has. More replicas only add throughput while cores are left over.
    const cores = availableParallelism();
    for (const [n, r] of replicas.entries()) {
      const msPerUpload = (Object.values(r.busy).reduce((a, b) => a + b, 0) / r.perSecond) * 1000;
      console.log(
        `control uploads (PostgreSQL, ${n + 1} replica${n === 0 ? '' : 's'}): ${msPerUpload.toFixed(2)} ms of CPU ` +
          `per upload in all; ` +
          (`${cores} cores allow at most about ${Math.floor((cores * 1000) / msPerUpload)}/s on this machine, ` +
            `however many replicas`),
      );
    }
    const errorsPass = replicas.every((r) => r.errors === 0);
    if (!errorsPass) console.log('control uploads: some uploads failed against PostgreSQL FAIL');
    return embeddedPass && twoPass && threePass && errorsPass;
  } finally {
    for (const stop of stops) await stop();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
