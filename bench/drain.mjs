// Draining 1,000 small ready bundles into a local Control API (the built CLI's `control-plane serve` with its local
// blob store, a real process) with `drain --json`, beside a tiny Node process that makes 3,000 sequential authenticated
// requests to the same server (GET /governance-config, keep-alive) measured in the same run.
//
// Why that anchor: a drain makes three round trips per record (presign, PUT to the signed URL, complete), so 3,000
// requests from one Node process is the floor for the HTTP part of uploading 1,000 records on this machine with this
// server; what the drain spends above it is spool work (claims, fsyncs, hashing, manifests) and the server's own work
// per upload (SQLite, fsynced blob writes, re-hashing on complete). `node -e 0` would only anchor start-up, which is a
// rounding error here. The bench passes when every record was uploaded exactly once (drain report, spool and server
// listing agree), the drain's peak RSS stays under 256 MiB, and it uploads at least 500 records a second, at most 1.5x
// the bare HTTP cost.
//
// Setup, untimed: 1,000 tiny Claude sessions are spooled as intake records (with the spool module, as the capture hook
// would), and a first `drain --json` with no Control API configured builds them all into ready records.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileRunner } from '../scripts/compile-runner.mjs';
import { startListening } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');
const PROFILE = 'claude-v2_0_12';
const MiB = 1024 * 1024;
const TIME = '/usr/bin/time';

/** process.env without proxy settings: every request here goes to 127.0.0.1. */
export function cleanEnv(extra = {}) {
  const env = { ...process.env };
  for (const name of [
    'http_proxy',
    'HTTP_PROXY',
    'https_proxy',
    'HTTPS_PROXY',
    'all_proxy',
    'ALL_PROXY',
    'BLUE_AGENT_CONTROL_URL',
    'BLUE_AGENT_TOKEN',
  ]) {
    delete env[name];
  }
  return { ...env, ...extra };
}

function cli(args, env) {
  const r = spawnSync(process.execPath, [entry, ...args], { env, encoding: 'utf8', maxBuffer: 256 * MiB });
  if (r.status !== 0) throw new Error(`blue-agent ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/**
 * `blue-agent control-plane serve` on a free port with a fresh data directory, one user and a policy that enables
 * upload. Returns the URL, the user's token and `stop()`.
 */
export async function startServer(dir) {
  const data = path.join(dir, 'control');
  await mkdir(data, { recursive: true });
  const env = cleanEnv();
  const { url, child, stop } = await startListening(
    [process.execPath, entry, 'control-plane', 'serve', '--listen', '127.0.0.1:0', '--data', data],
    env,
  );
  const token = JSON.parse(
    cli(['control-plane', 'users', 'add', 'bench@example.com', '--data', data, '--json'], env),
  ).token;
  const policy = path.join(dir, 'policy.yaml');
  await writeFile(policy, `session_upload: { presign_url: "${url}/session-uploads/presign" }\n`);
  cli(['control-plane', 'policy', 'publish', policy, '--data', data, '--json'], env);
  return { url, token, data, stop, child };
}

/** Spools `count` intake records for tiny Claude sessions, with the spool module compiled from src. */
export async function spoolSessions(dir, env, cwd, count) {
  const runnerTs = path.join(dir, 'enqueue.ts');
  await writeFile(
    runnerTs,
    `import { readFileSync } from 'node:fs';
import { Spool } from ${JSON.stringify(path.join(root, 'packages/agent/src/spool/index.ts'))};
import { stateLayout } from ${JSON.stringify(path.join(root, 'packages/agent/src/context.ts'))};
const [stateDir, payloadFile] = process.argv.slice(2);
const spool = await Spool.open(stateLayout(stateDir));
const list = JSON.parse(readFileSync(payloadFile, 'utf8'));
const base = Date.now() - 600_000;
for (let i = 0; i < list.length; i++) {
  const profile = ${JSON.stringify(PROFILE)};
  await spool.enqueueIntake({ harness: 'claude', profile, payload: list[i], createdAtUnixMs: base + i });
}
`,
  );
  const runner = path.join(dir, 'enqueue.mjs');
  await compileRunner(runnerTs, runner);
  const projects = path.join(env.CLAUDE_CONFIG_DIR, 'projects', cwd.replace(/[^A-Za-z0-9]/g, '-'));
  await mkdir(projects, { recursive: true });
  const payloads = [];
  for (let i = 0; i < count; i++) {
    const id = `bench-${String(i).padStart(4, '0')}-${Date.now().toString(36)}`;
    const transcript = path.join(projects, `${id}.jsonl`);
    const base = { sessionId: id, cwd, version: '2.1.197', timestamp: '2026-11-30T10:00:00.000Z' };
    const lines = [
      {
        ...base,
        type: 'user',
        uuid: 'u1',
        parentUuid: null,
        message: { role: 'user', content: `Small task number ${i}` },
      },
      {
        ...base,
        type: 'assistant',
        uuid: 'a1',
        parentUuid: 'u1',
        message: { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
      },
    ];
    await writeFile(transcript, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    payloads.push({ session_id: id, transcript_path: transcript, cwd, hook_event_name: 'SessionEnd', reason: 'other' });
  }
  const payloadFile = path.join(dir, 'payloads.json');
  await writeFile(payloadFile, JSON.stringify(payloads));
  const r = spawnSync(process.execPath, [runner, env.BLUE_AGENT_HOME, payloadFile], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`spooling failed: ${r.stderr}`);
  return payloads.map((p) => p.session_id);
}

/** Runs `argv` under /usr/bin/time (when present); returns wall ms, stdout, peak RSS in KiB and CPU ms (user + system).
 * */
export function timed(argv, env, cwd) {
  const haveTime = existsSync(TIME);
  const full = haveTime ? [TIME, '-f', 'maxrss_kib=%M cpu_s=%U+%S', ...argv] : argv;
  const start = process.hrtime.bigint();
  const r = spawnSync(full[0], full.slice(1), { env, cwd, encoding: 'utf8', maxBuffer: 256 * MiB });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  const m = /maxrss_kib=(\d+) cpu_s=([\d.]+)\+([\d.]+)\s*$/.exec(r.stderr ?? '');
  return {
    ms,
    status: r.status,
    stdout: r.stdout,
    stderr: r.stderr,
    maxRssKiB: m === null ? undefined : Number(m[1]),
    cpuMs: m === null ? undefined : (Number(m[2]) + Number(m[3])) * 1000,
  };
}

/** CPU time (user + system, ms) a running process has used so far, from /proc; undefined where there is none. */
export function cpuMsOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks, USER_HZ = 100 on Linux
  } catch {
    return undefined;
  }
}

/** Every upload the server lists for the token's user (paged). */
export async function listAll(url, token) {
  const items = [];
  let cursor = null;
  do {
    const q = new URLSearchParams({ limit: '100', ...(cursor === null ? {} : { cursor }) });
    const res = await fetch(`${url}/session-uploads?${q}`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`GET /session-uploads answered ${res.status}: ${await res.text()}`);
    const body = await res.json();
    items.push(...body.items);
    cursor = body.next_cursor;
  } while (cursor !== null && cursor !== undefined);
  return items;
}

/**
 * A HOME under `dir` whose spool holds `count` tiny Claude sessions built into ready bundles (a drain with uploads
 * off): the backlog a drain then uploads. Returns its environment, working directory, state dir, session ids and the
 * building drain's timing.
 */
export async function builtBacklog(dir, count) {
  const home = path.join(dir, 'home');
  const cwd = path.join(dir, 'project');
  await mkdir(cwd, { recursive: true });
  const stateDir = path.join(home, '.local', 'state', 'blue-agent');
  const env = cleanEnv({
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_STATE_HOME: path.join(home, '.local', 'state'),
    BLUE_AGENT_HOME: stateDir,
    BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
  });
  const sessions = await spoolSessions(dir, env, cwd, count);

  const first = timed([process.execPath, entry, 'drain', '--json'], env, cwd);
  const built = JSON.parse(first.stdout);
  if (built.built.length !== count || built.left_ready !== count) {
    throw new Error(
      `the building drain built ${built.built.length} of ${count} records (left_ready ${built.left_ready}): ` +
        `${first.stderr.slice(0, 2000)}`,
    );
  }
  return { env, cwd, stateDir, sessions, first };
}

/** What is wrong, if anything, after a backlog of `sessions` was uploaded: files left in the spool, or the server not
 * holding exactly one complete upload of each session. */
export async function emptiedOnce(stateDir, server, sessions) {
  const problems = [];
  const leftInSpool = ['intake', 'building', 'ready', 'uploading', 'failed', 'bundles'].reduce(
    (n, f) => n + readdirSync(path.join(stateDir, 'spool', f)).length,
    0,
  );
  if (leftInSpool !== 0) problems.push(`${leftInSpool} files left in the spool`);
  const items = await listAll(server.url, server.token);
  const complete = items.filter((i) => i.status === 'complete');
  const serverSessions = new Set(complete.map((i) => i.native_session_id));
  const count = sessions.length;
  if (
    items.length !== count ||
    complete.length !== count ||
    serverSessions.size !== count ||
    !sessions.every((s) => serverSessions.has(s))
  ) {
    problems.push(
      `server: ${items.length} uploads listed, ${complete.length} complete, ${serverSessions.size} distinct sessions`,
    );
  }
  return problems;
}

export async function run({ count = 1000 } = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-drain-'));
  let server;
  try {
    const { env, cwd, stateDir, sessions, first } = await builtBacklog(dir, count);

    server = await startServer(dir);
    const uploadEnv = { ...env, BLUE_AGENT_CONTROL_URL: server.url, BLUE_AGENT_TOKEN: server.token };

    // Anchor: 3,000 sequential authenticated requests from a tiny Node process (one keep-alive connection).
    const anchorScript = `const [u, t, n] = process.argv.slice(1);
for (let i = 0; i < Number(n); i++) {
  const r = await fetch(u, { headers: { authorization: 'Bearer ' + t } });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error('status ' + r.status);
}`;
    const anchorArgv = [
      process.execPath,
      '--input-type=module',
      '-e',
      anchorScript,
      `${server.url}/governance-config`,
      server.token,
      String(3 * count),
    ];
    const anchorBefore = timed(anchorArgv, env, cwd);
    if (anchorBefore.status !== 0) throw new Error(`anchor failed: ${anchorBefore.stderr}`);

    const serverCpuBefore = cpuMsOf(server.child.pid);
    const drained = timed([process.execPath, entry, 'drain', '--json'], uploadEnv, cwd);
    const serverCpuMs = serverCpuBefore === undefined ? undefined : cpuMsOf(server.child.pid) - serverCpuBefore;
    let report;
    try {
      report = JSON.parse(drained.stdout);
    } catch {
      throw new Error(`drain --json printed no report (exit ${drained.status}): ${drained.stderr.slice(0, 2000)}`);
    }
    const anchorAfter = timed(anchorArgv, env, cwd);
    if (anchorAfter.status !== 0) throw new Error(`anchor failed: ${anchorAfter.stderr}`);
    const anchorMs = Math.min(anchorBefore.ms, anchorAfter.ms);

    // Exactly once: the report, the spool and the server all say 1,000 distinct uploads of these sessions.
    const problems = [];
    const uploadedSessions = new Set(report.uploaded.map((u) => u.session_id));
    const uploadIds = new Set(report.uploaded.map((u) => u.upload_id));
    if (drained.status !== 0 || report.ok !== true) problems.push(`drain exited ${drained.status}, ok ${report.ok}`);
    if (report.uploaded.length !== count || uploadedSessions.size !== count || uploadIds.size !== count) {
      problems.push(
        `report: ${report.uploaded.length} uploaded, ${uploadedSessions.size} sessions, ${uploadIds.size} upload ids`,
      );
    }
    if (report.uploaded.some((u) => u.already))
      problems.push(`${report.uploaded.filter((u) => u.already).length} reported as already on the server`);
    if (report.failed.length + report.retried.length + report.left_ready !== 0) {
      problems.push(
        `failed ${report.failed.length}, retried ${report.retried.length}, left_ready ${report.left_ready}`,
      );
    }
    problems.push(...(await emptiedOnce(stateDir, server, sessions)));

    const perSecond = count / (drained.ms / 1000);
    const rss = drained.maxRssKiB === undefined ? undefined : drained.maxRssKiB / 1024;
    const rssPass = rss === undefined || rss < 256;
    // The targets: at least 500 records a second, at most 1.5x what the bare HTTP round trips cost.
    const ratio = drained.ms / anchorMs;
    const speedPass = perSecond >= 500 && ratio <= 1.5;
    const pass = problems.length === 0 && rssPass && speedPass;
    const bytes = report.uploaded.reduce((n, u) => n + u.size, 0);
    console.log(
      `drain upload (${count} small bundles, ${(bytes / count / 1024).toFixed(1)} KiB avg): ` +
        `${drained.ms.toFixed(0)} ms = ${perSecond.toFixed(0)} records/s ` +
        (`(${(drained.ms / count).toFixed(2)} ms/record) vs ${3 * count} HTTP requests from node ` +
          `${anchorMs.toFixed(0)} ms `) +
        `(${(anchorMs / count).toFixed(2)} ms per 3 requests) -> ratio ${ratio.toFixed(2)}x; ` +
        `exactly once: ${problems.length === 0 ? 'yes' : `NO (${problems.join('; ')})`}; ` +
        (`peak RSS ${rss === undefined ? `unknown (${TIME} missing)` : `${rss.toFixed(1)} MiB`} (target < 256 MiB) ` +
          `${pass ? 'PASS' : 'FAIL'}`),
    );
    console.log(
      `  speed: ${perSecond.toFixed(0)} records/s (target >= 500) ${perSecond >= 500 ? 'PASS' : 'FAIL'}, ratio ` +
        `${ratio.toFixed(2)}x (target <= 1.5x) ${ratio <= 1.5 ? 'PASS' : 'FAIL'}`,
    );
    // Where the CPU went: two processes share the machine, so the server's own cost bounds what the drain can reach.
    console.log(
      `  CPU: drain ${drained.cpuMs === undefined ? '?' : `${(drained.cpuMs / count).toFixed(2)} ms/record`}, ` +
        (`Control API ${serverCpuMs === undefined ? '?' : `${(serverCpuMs / count).toFixed(2)} ms/record`} (its ` +
          `process, threads included)`),
    );
    console.log(
      `  (setup: building the ${count} records with uploads off took ${first.ms.toFixed(0)} ms, peak RSS ` +
        `${((first.maxRssKiB ?? 0) / 1024).toFixed(1)} MiB)`,
    );
    return pass;
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
