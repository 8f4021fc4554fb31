// Three `drain --json` processes started at once on the same backlog of 1,000 small ready bundles, uploading to a local
// Control API (the built CLI's `control-plane serve`, a real process). Claims are what keep them apart: the bench
// passes when every record was uploaded exactly once over all three (each record in exactly one drain's report, none
// reported as already on the server, the server listing one complete upload per session, nothing left in the spool),
// and prints the records a second of the whole (from the first start to the last exit). The speed is printed, not
// judged: three drains share the same two cores with the server, and bench/drain.mjs holds the speed target.
//
// Setup, untimed: as in bench/drain.mjs, the records are spooled as intake records and built by a first drain with no
// Control API configured.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtBacklog, cpuMsOf, emptiedOnce, startServer } from './drain.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');

/** Runs `argv` to its end without blocking the others; resolves with its exit code and output. */
function runAsync(argv, env, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-8192)));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export async function run({ count = 1000, drains = 3 } = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-drain-concurrent-'));
  let server;
  try {
    const { env, cwd, stateDir, sessions } = await builtBacklog(dir, count);

    server = await startServer(dir);
    const uploadEnv = { ...env, BLUE_AGENT_CONTROL_URL: server.url, BLUE_AGENT_TOKEN: server.token };
    const serverCpuBefore = cpuMsOf(server.child.pid);
    const start = process.hrtime.bigint();
    const results = await Promise.all(
      Array.from({ length: drains }, () => runAsync([process.execPath, entry, 'drain', '--json'], uploadEnv, cwd)),
    );
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const serverCpuMs = serverCpuBefore === undefined ? undefined : cpuMsOf(server.child.pid) - serverCpuBefore;

    const problems = [];
    const reports = results.map((r, i) => {
      try {
        return JSON.parse(r.stdout);
      } catch {
        problems.push(`drain ${i + 1} exited ${r.code} without a report: ${r.stderr.slice(0, 500)}`);
        return { uploaded: [], failed: [], retried: [], ok: false };
      }
    });
    results.forEach((r, i) => {
      if (r.code !== 0 || reports[i].ok !== true) problems.push(`drain ${i + 1} exited ${r.code}, ok ${reports[i].ok}`);
    });
    // Exactly once: every record in one report only, each upload new to the server.
    const byRecord = new Map();
    for (const report of reports) for (const u of report.uploaded) byRecord.set(u.id, (byRecord.get(u.id) ?? 0) + 1);
    const twice = [...byRecord.values()].filter((n) => n > 1).length;
    const uploaded = reports.reduce((n, r) => n + r.uploaded.length, 0);
    if (byRecord.size !== count || twice !== 0 || uploaded !== count)
      problems.push(
        `reports: ${uploaded} uploads of ${byRecord.size} records, ${twice} records uploaded more than once`,
      );
    const already = reports.reduce((n, r) => n + r.uploaded.filter((u) => u.already).length, 0);
    if (already !== 0) problems.push(`${already} reported as already on the server (uploaded twice)`);
    const failed = reports.reduce((n, r) => n + r.failed.length + r.retried.length, 0);
    if (failed !== 0) problems.push(`${failed} failed or retried`);
    problems.push(...(await emptiedOnce(stateDir, server, sessions)));

    const pass = problems.length === 0;
    const perSecond = count / (ms / 1000);
    console.log(
      `drain x${drains} at once (${count} small bundles, one backlog): ${ms.toFixed(0)} ms = ` +
        `${perSecond.toFixed(0)} records/s; ` +
        `per drain ${reports.map((r) => r.uploaded.length).join(' + ')} uploaded; ` +
        `Control API CPU ${serverCpuMs === undefined ? '?' : `${(serverCpuMs / count).toFixed(2)} ms/record`}; ` +
        `exactly once: ${pass ? 'yes' : `NO (${problems.join('; ')})`} ${pass ? 'PASS' : 'FAIL'}`,
    );
    return pass;
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
