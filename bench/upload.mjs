// Uploading one 128 MiB bundle-sized file (random bytes: incompressible; 128 MiB is the largest size the Control API
// presigns) with `uploadFile` from src/upload/put.ts, over the dispatcher the drain uses, to a presigned URL of a local
// Control API (the built CLI's `control-plane serve`, local blob store, a real process), beside `curl -T` of the same
// file to a fresh presigned URL of the same server with the same signed headers, in the same run. Rounds alternate
// which goes first. Targets: uploadFile's throughput at least curl's (1.0x), and the uploader's peak RSS at most 128
// MiB above its RSS just before the upload (it streams the file, never holds it).
//
// Both are timed from request to answer only (curl's %{time_total}; uploadFile's call), not process start-up. The
// server hashes and fsyncs every byte before it answers, on the same machine, so both see the same server-side cost.
// The server's data directory is on /dev/shm when there is one and each stored object is removed after its round:
// otherwise the disk's write-back of earlier rounds dominates and the comparison measures the disk, not the uploader.
// curl is run with `Expect:` (no 100-continue round trip) as uploadFile sends none.
//
// The Control API runs on the same cores as the clients and is itself the bottleneck (its main thread hashes and
// writes every byte), so the first comparison also measures how each client shares two cores with it. A second one,
// for information, sends the same file to a receiver that only counts bytes (as a remote storage service costs the
// laptop nothing): the uploader's own throughput against curl's.
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileRunner } from '../scripts/compile-runner.mjs';
import { cleanEnv, startServer } from './drain.mjs';
import { median, startListening } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MiB = 1024 * 1024;
const SIZE = 128 * MiB;
const CURL = '/usr/bin/curl';

async function makeRunner(dir) {
  const entry = path.join(dir, 'runner.ts');
  await writeFile(
    entry,
    `import { ControlClient } from ${JSON.stringify(path.join(root, 'packages/agent/src/control-api/client.ts'))};
import { uploadFile } from ${JSON.stringify(path.join(root, 'packages/agent/src/upload/put.ts'))};
const [controlUrl, signedJson, file, size, sha256] = process.argv.slice(2);
const client = await ControlClient.create({
  controlUrl,
  token: undefined,
  tokenSource: 'none',
  env: process.env,
  userAgent: 'blue-agent-bench',
});
const dispatcher = await client.connectionPool();
// The drain's upload follows its presign on the same pool: one request first, so that the timed call does not pay
// the HTTP library's start in this process (curl's own start is outside its %{time_total} too).
await (await client.send('GET', client.routeUrl('health'))).body.dump();
const before = process.memoryUsage().rss;
const start = performance.now();
// As the drain calls it for a bundle that is still the file it committed (not re-hashed before the upload).
const result = await uploadFile(JSON.parse(signedJson), file, { size: Number(size), sha256 }, {
  dispatcher,
  timeoutMs: client.timeoutMs,
  userAgent: client.userAgent,
  controlOrigin: client.origin,
});
const ms = performance.now() - start;
await client.close();
const rssBeforeKiB = Math.round(before / 1024);
const maxRssKiB = process.resourceUsage().maxRSS;
const { status, bytes } = result;
process.stdout.write(JSON.stringify({ ms, status, bytes, rssBeforeKiB, maxRssKiB }) + '\\n');
`,
  );
  const outfile = path.join(dir, 'runner.mjs');
  await compileRunner(entry, outfile);
  return outfile;
}

/** `bytes` random bytes written to `file` in 4 MiB blocks; returns its SHA-256. */
async function randomFile(file, bytes) {
  const hash = createHash('sha256');
  const handle = await open(file, 'w');
  try {
    for (let written = 0; written < bytes; ) {
      const block = randomBytes(Math.min(4 * MiB, bytes - written));
      hash.update(block);
      await handle.write(block);
      written += block.length;
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
  return hash.digest('hex');
}

// A receiver that reads and drops request bodies (Content-Length only) and answers 200 to each, on kept-alive
// connections: what a storage service on another machine costs this one.
const DISCARD = `
const net = require('node:net');
const server = net.createServer((socket) => {
  let head = '';
  let left = -1;
  socket.on('data', (chunk) => {
    let at = 0;
    while (at < chunk.length) {
      if (left < 0) {
        head += chunk.toString('latin1', at);
        const end = head.indexOf('\\r\\n\\r\\n');
        if (end < 0) return void (head.length > 16384 && socket.destroy());
        left = Number(/content-length: *(\\d+)/i.exec(head.slice(0, end))?.[1] ?? 0);
        at = chunk.length - (head.length - (end + 4));
        head = '';
      }
      const take = Math.min(left, chunk.length - at);
      left -= take;
      at += take;
      if (left === 0) {
        left = -1;
        socket.write('HTTP/1.1 200 OK\\r\\ncontent-length: 0\\r\\n\\r\\n');
      }
    }
  });
  socket.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => console.log('listening on http://127.0.0.1:' + server.address().port));
process.on('SIGTERM', () => process.exit(0));
`;

/**
 * [ns on a CPU, ns runnable but waiting for one, switches out because it waited for something (voluntary), switches
 * out because another thread took the CPU (involuntary)] of a process's main thread, or undefined off Linux.
 */
function mainThreadSched(pid) {
  if (pid === undefined) return undefined;
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
    const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
    const count = (name) => Number(new RegExp(`^${name}:\\s*(\\d+)`, 'm').exec(status)?.[1]);
    const fields = [run, wait, count('voluntary_ctxt_switches'), count('nonvoluntary_ctxt_switches')];
    return fields.every(Number.isFinite) ? fields : undefined;
  } catch {
    return undefined;
  }
}

let presigns = 0;
async function presign(server, sha256) {
  const res = await fetch(`${server.url}/session-uploads/presign`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      harness: 'claude',
      session_id: `bench-upload-${++presigns}`,
      sha256,
      size_bytes: SIZE,
      content_type: 'application/vnd.blue.session-bundle+tar+gzip',
      compatibility_profile: 'claude-v2_0_12',
      artifact_format: 'blue-session-bundle-v1',
      captured_at_unix_ms: Date.now(),
    }),
  });
  const body = await res.json();
  if (res.status !== 200 || body.status !== 'pending')
    throw new Error(`presign answered ${res.status}: ${JSON.stringify(body)}`);
  return { method: body.method, url: body.upload_url, headers: body.headers };
}

export async function run({ rounds = 7 } = {}) {
  if (!existsSync(CURL)) {
    console.log(`upload (128 MiB): ${CURL} is missing, so there is no anchor to compare with FAIL`);
    return false;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-upload-'));
  const serverDir = existsSync('/dev/shm') ? await mkdtemp(path.join('/dev/shm', 'blue-agent-bench-upload-')) : dir;
  let server;
  let discard;
  try {
    const file = path.join(dir, 'bundle.bin');
    const sha256 = await randomFile(file, SIZE);
    const runner = await makeRunner(dir);
    server = await startServer(serverDir);
    const dropBlobs = () => rm(path.join(server.data, 'blobs'), { recursive: true, force: true });
    const env = cleanEnv();

    const viaUploader = async (signed) => {
      const r = spawnSync(process.execPath, [runner, server.url, JSON.stringify(signed), file, String(SIZE), sha256], {
        env,
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`uploadFile failed: ${r.stderr}`);
      const out = JSON.parse(r.stdout);
      if (out.status !== 200 || out.bytes !== SIZE) throw new Error(`uploadFile: ${r.stdout}`);
      return out;
    };
    const viaCurl = async (signed) => {
      const headers = Object.entries(signed.headers)
        .filter(([name]) => name.toLowerCase() !== 'content-length') // curl -T sets it from the file
        .flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
      const r = spawnSync(
        CURL,
        [
          '-sS',
          '--noproxy',
          '*',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code} %{time_total} %{size_upload}',
          '-X',
          signed.method,
          '-T',
          file,
          '-H',
          'Expect:',
          ...headers,
          signed.url,
        ],
        { env, encoding: 'utf8' },
      );
      const [code, seconds, uploaded] = r.stdout.trim().split(' ');
      if (r.status !== 0 || code !== '200' || Number(uploaded) !== SIZE)
        throw new Error(`curl: exit ${r.status}, ${r.stdout} ${r.stderr}`);
      return { ms: Number(seconds) * 1000 };
    };
    const mibps = (ms) => SIZE / MiB / (ms / 1000);
    /**
     * Median times of uploadFile and curl to the URLs `target()` gives, in alternating rounds after a warm-up of each;
     * with `pid`, also what each upload cost that process's main thread (see mainThreadSched).
     */
    const compare = async (target, cleanUp, pid) => {
      // Warm-up, untimed: the file is in the page cache and both paths have run once.
      await viaUploader(await target());
      await cleanUp();
      await viaCurl(await target());
      await cleanUp();
      const runs = { up: [], curl: [] };
      const sched = { up: [], curl: [] };
      for (let i = 0; i < rounds; i++) {
        for (const which of i % 2 === 0 ? ['up', 'curl'] : ['curl', 'up']) {
          const signed = await target();
          const before = mainThreadSched(pid);
          runs[which].push(which === 'up' ? await viaUploader(signed) : await viaCurl(signed));
          const then = mainThreadSched(pid);
          if (before !== undefined && then !== undefined) sched[which].push(then.map((v, k) => v - before[k]));
          await cleanUp();
        }
      }
      const upMs = median(runs.up.map((u) => u.ms));
      const curlMs = median(runs.curl.map((c) => c.ms));
      return { up: runs.up, upMs, curlMs, ratio: mibps(upMs) / mibps(curlMs), sched };
    };

    const toServer = await compare(() => presign(server, sha256), dropBlobs, server.child.pid);
    const peak = Math.max(...toServer.up.map((u) => u.maxRssKiB)) / 1024;
    const growth = Math.max(...toServer.up.map((u) => u.maxRssKiB - u.rssBeforeKiB)) / 1024;
    const speedPass = toServer.ratio >= 1;
    const rssPass = growth < 128;
    console.log(
      `upload (128 MiB, uploadFile): ${mibps(toServer.upMs).toFixed(0)} MiB/s (${toServer.upMs.toFixed(0)} ms) vs ` +
        `curl -T ${mibps(toServer.curlMs).toFixed(0)} MiB/s (${toServer.curlMs.toFixed(0)} ms) ` +
        `-> ratio ${toServer.ratio.toFixed(2)}x (target >= 1.0x) ${speedPass ? 'PASS' : 'FAIL'}`,
    );
    console.log(
      `upload peak RSS: ${peak.toFixed(1)} MiB, at most ${growth.toFixed(1)} MiB above its RSS before the upload ` +
        `(target < 128 MiB growth) ${rssPass ? 'PASS' : 'FAIL'}`,
    );
    // The server's main thread is the bottleneck: its time on a CPU is the same whichever client sends; what differs
    // is how long it waited, runnable, for a CPU the client held, and how often it had to stop.
    if (toServer.sched.up.length > 0 && toServer.sched.curl.length > 0) {
      const line = (list) => {
        const at = (k) => median(list.map((v) => v[k]));
        return (
          `on a CPU ${(at(0) / 1e6).toFixed(0)} ms, runnable but waiting ${(at(1) / 1e6).toFixed(0)} ms, ` +
          `switched out ${at(3).toFixed(0)} times by another thread and ${at(2).toFixed(0)} times to wait for data`
        );
      };
      console.log(
        `upload: the Control API's main thread per upload (medians), uploadFile: ${line(toServer.sched.up)}; curl: ` +
          `${line(toServer.sched.curl)}`,
      );
    }

    // Signed as S3 signs a checksum (X-Amz-SignedHeaders names it), so that uploadFile leaves the check to the
    // receiver, as it does for the Control API's own URLs above.
    discard = await startListening([process.execPath, '-e', DISCARD], env);
    const checksum = Buffer.from(sha256, 'hex').toString('base64');
    const toDiscard = await compare(
      () => ({
        method: 'PUT',
        url: `${discard.url}/bundle?X-Amz-SignedHeaders=host%3Bx-amz-checksum-sha256`,
        headers: { 'content-length': String(SIZE), 'x-amz-checksum-sha256': checksum },
      }),
      async () => undefined,
    );
    console.log(
      `upload to a receiver that only counts bytes (for information): uploadFile ` +
        `${mibps(toDiscard.upMs).toFixed(0)} MiB/s (${toDiscard.upMs.toFixed(0)} ms) ` +
        (`vs curl -T ${mibps(toDiscard.curlMs).toFixed(0)} MiB/s (${toDiscard.curlMs.toFixed(0)} ms) -> ratio ` +
          `${toDiscard.ratio.toFixed(2)}x`),
    );
    return speedPass && rssPass;
  } finally {
    await discard?.stop();
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
    await rm(serverDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
