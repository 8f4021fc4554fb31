// An idle `blue-agent run` (the built CLI, started as its user service starts it: the command `service install
// --dry-run` renders, Node.js flags included; a temporary HOME, a real local Control API from `control-plane serve`),
// beside a bare `node -e "setTimeout(()=>{},N)"` measured the same way in the same run: CPU time used over the
// window (from /proc/<pid>/stat, the process and its waited-for children) and peak memory (VmHWM from
// /proc/<pid>/status). Targets: memory at most 1.3x the bare process, CPU time under 1% of the wall time.
// BLUE_AGENT_BENCH_IDLE_SECONDS (or --seconds N) shortens the 60 s window for a quick check.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { cleanEnv, startServer } from './drain.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');
// Clock ticks per second for /proc/<pid>/stat: 100 on every Linux configuration Node supports.
const HZ = 100;

function seconds() {
  const flag = process.argv.indexOf('--seconds');
  const value = flag >= 0 ? process.argv[flag + 1] : process.env.BLUE_AGENT_BENCH_IDLE_SECONDS;
  const n = Number(value ?? 60);
  return Number.isFinite(n) && n > 0 ? n : 60;
}

/** The command the systemd user unit would start the agent with (its ExecStart, unquoted), as `service install` renders
 * it. */
function serviceCommand(env) {
  const r = spawnSync(process.execPath, [entry, 'service', 'install', '--dry-run', '--json'], {
    env,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`service install --dry-run failed: ${r.stderr}`);
  const line = JSON.parse(r.stdout)
    .content.split('\n')
    .find((l) => l.startsWith('ExecStart='));
  if (line === undefined) throw new Error('the rendered service has no ExecStart');
  const words = [...line.slice('ExecStart='.length).matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) =>
    m[1].replace(/\\(.)/g, '$1').replace(/%%/g, '%').replace(/\$\$/g, '$'),
  );
  if (words.at(-1) !== 'run' || words.at(-2) !== entry) throw new Error(`unexpected ExecStart: ${line}`);
  return words;
}

/** utime + stime (+ children that were waited for), in ms. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14-17 of stat (utime, stime, cutime, cstime) are at 11-14 after the command name.
  const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  return (ticks * 1000) / HZ;
}

function peakKb(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? NaN : Number(m[1]);
}

/** Starts `argv`, waits until `ready()` (or `settleMs`), then measures CPU over `windowMs` and the peak memory. */
async function measure(argv, env, windowMs, ready) {
  const child = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-4096)));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  try {
    await ready(child);
    if (child.exitCode !== null) throw new Error(`${argv.join(' ')} exited early: ${stderr}`);
    const cpuBefore = cpuMs(child.pid);
    const start = process.hrtime.bigint();
    await sleep(windowMs);
    const cpuAfter = cpuMs(child.pid);
    const wallMs = Number(process.hrtime.bigint() - start) / 1e6;
    return { cpuMs: cpuAfter - cpuBefore, wallMs, peakKb: peakKb(child.pid) };
  } finally {
    child.kill('SIGTERM');
    const end = await exited;
    if (argv.includes('run') && end.code !== 0) {
      // biome-ignore lint/correctness/noUnsafeFinally: an agent that ignores SIGTERM fails the benchmark
      throw new Error(`blue-agent run did not stop cleanly on SIGTERM (${JSON.stringify(end)}): ${stderr}`);
    }
  }
}

export async function run() {
  const windowMs = seconds() * 1000;
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-idle-'));
  let server;
  try {
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(path.join(bin, 'claude'), `#!/bin/sh\necho '2.1.332 (Claude Code)'\n`, { mode: 0o755 });
    server = await startServer(dir);
    const env = cleanEnv({
      HOME: home,
      PATH: `${bin}:${process.env.PATH}`,
      XDG_CONFIG_HOME: path.join(home, '.config'),
      XDG_DATA_HOME: path.join(home, '.local', 'share'),
      XDG_STATE_HOME: path.join(home, '.local', 'state'),
      BLUE_AGENT_HOME: path.join(home, '.local', 'state', 'blue-agent'),
      BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
      BLUE_AGENT_CONTROL_URL: server.url,
      BLUE_AGENT_TOKEN: server.token,
    });
    await mkdir(home, { recursive: true });
    const stateDir = env.BLUE_AGENT_HOME;
    // The agent is idle once it has checked the policy, reconciled and reported: then only timers and watches remain.
    const agentReady = async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        let log = '';
        try {
          log = readFileSync(path.join(stateDir, 'run.log'), 'utf8');
        } catch {}
        if (log.includes('"client status reported"')) break;
        if (Date.now() > deadline) throw new Error(`the agent did not settle within 30 s:\n${log}`);
        await sleep(100);
      }
      await sleep(1_000);
    };
    const agent = await measure(serviceCommand(env), env, windowMs, agentReady);
    const bare = await measure([process.execPath, '-e', `setTimeout(()=>{},${windowMs + 60_000})`], env, windowMs, () =>
      sleep(1_000),
    );

    const cpuPct = (agent.cpuMs / agent.wallMs) * 100;
    const memRatio = agent.peakKb / bare.peakKb;
    const pass = cpuPct < 1 && memRatio <= 1.3;
    console.log(
      `run idle (${(windowMs / 1000).toFixed(0)} s): CPU ${agent.cpuMs.toFixed(0)} ms (${cpuPct.toFixed(3)}% of ` +
        `wall, target < 1%) vs bare node ${bare.cpuMs.toFixed(0)} ms; ` +
        (`peak memory ${(agent.peakKb / 1024).toFixed(1)} MiB vs bare node ${(bare.peakKb / 1024).toFixed(1)} MiB ` +
          `-> ratio ${memRatio.toFixed(2)}x (target <= 1.3x) ${pass ? 'PASS' : 'FAIL'}`),
    );
    return pass;
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
