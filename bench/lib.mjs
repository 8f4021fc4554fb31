// Shared helpers for benchmarks: timing child processes and printing ratios against an anchor measured in the same run.
import { spawn, spawnSync } from 'node:child_process';

/** Runs `argv` `runs` times (after `warmup` runs) and returns wall times in milliseconds. */
export function timeCommand(argv, { runs = 15, warmup = 2, env = process.env, cwd } = {}) {
  const times = [];
  for (let i = 0; i < warmup + runs; i++) {
    const start = process.hrtime.bigint();
    const result = spawnSync(argv[0], argv.slice(1), { env, cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${argv.join(' ')} exited ${result.status}: ${result.stderr}`);
    if (i >= warmup) times.push(ms);
  }
  return times;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Interleaves subject and anchor runs so machine noise hits both alike. */
export function compare(subject, anchor, { rounds = 5, runs = 4, env, cwd } = {}) {
  const s = [];
  const a = [];
  for (let r = 0; r < rounds; r++) {
    a.push(...timeCommand(anchor, { runs, warmup: r === 0 ? 2 : 0, env, cwd }));
    s.push(...timeCommand(subject, { runs, warmup: r === 0 ? 2 : 0, env, cwd }));
  }
  return { subjectMs: median(s), anchorMs: median(a), ratio: median(s) / median(a) };
}

export function report(name, { subjectMs, anchorMs, ratio }, target, anchorName) {
  const pass = ratio <= target;
  console.log(
    `${name}: ${subjectMs.toFixed(1)} ms vs ${anchorName} ${anchorMs.toFixed(1)} ms -> ratio ${ratio.toFixed(2)}x ` +
      `(target <= ${target}x) ${pass ? 'PASS' : 'FAIL'}`,
  );
  return pass;
}

/**
 * Starts a child process that prints `listening on URL` (the Control API, a stand-in server); resolves with the URL,
 * the child and stop() (SIGTERM, then waits for its exit). Rejects when it exits or has not said so within 30 s.
 */
export async function startListening(argv, env) {
  const child = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-8192)));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${argv.join(' ')} did not start within 30 s: ${stderr}`)), 30_000);
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`${argv.join(' ')} exited ${code}: ${stderr}`)));
  });
  child.stdout.resume();
  const stop = () =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  return { url, child, stop };
}
