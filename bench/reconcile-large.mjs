// `reconcile --dry-run` on the largest Claude settings.json blue-agent reads (just under the 8 MiB limit), in two
// shapes: one long line, and ~190 000 keys (the parser's tree dominates). Reports the peak RSS above a run on an empty
// file and the size of the output; fails when the output is not bounded or memory exceeds the ceilings noted below.
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'bin', 'blue-agent.js');
const MiB = 1024 * 1024;
const SIZE = 7.5 * MiB;
const PEAK = 'data:text/javascript,process.on("exit",()=>process.stderr.write("\\nMAXRSS="+process.resourceUsage().maxRSS*1024+"\\n"))';

function settings(shape) {
  if (shape === 'empty') return '{}\n';
  if (shape === 'one line') return `{"filler": "${'x'.repeat(SIZE)}"}\n`;
  const lines = [];
  for (let i = 0, n = 0; n < SIZE; i++) {
    const line = `  "key${i}": "value value value ${i}",\n`;
    lines.push(line);
    n += line.length;
  }
  return `{\n${lines.join('')}  "end": 1\n}\n`;
}

async function measure(shape) {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-'));
  try {
    const home = path.join(dir, 'home');
    const bin = path.join(dir, 'bin');
    await mkdir(path.join(home, '.claude'), { recursive: true });
    await mkdir(bin);
    await writeFile(path.join(bin, 'claude'), "#!/bin/sh\necho '2.1.332 (Claude Code)'\n", { mode: 0o755 });
    const policy = path.join(dir, 'policy.yaml');
    await writeFile(policy, 'revision: 1\nsession_upload: { presign_url: "https://control.example/p" }\n');
    await writeFile(path.join(home, '.claude', 'settings.json'), settings(shape));
    const env = {
      HOME: home,
      PATH: `${bin}:/usr/bin:/bin`,
      XDG_CONFIG_HOME: path.join(home, '.config'),
      BLUE_AGENT_HOME: path.join(dir, 'state'),
      BLUE_AGENT_CONFIG: path.join(dir, 'config.yaml'),
    };
    const r = spawnSync(process.execPath, ['--import', PEAK, entry, 'reconcile', '--dry-run', '--policy', policy, '--harness', 'claude'], { env, encoding: 'utf8', maxBuffer: 256 * MiB });
    if (r.status !== 0) throw new Error(`reconcile failed (${shape}):\n${r.stdout}\n${r.stderr}`);
    return { rss: Number(/MAXRSS=(\d+)/.exec(r.stderr)?.[1] ?? NaN), output: Buffer.byteLength(r.stdout) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function run() {
  const base = await measure('empty');
  // Ceilings: measured about 75 MiB (one line) and 475 MiB (190 000 keys) above the empty run.
  const cases = [
    ['one line', 160 * MiB],
    ['many keys', 640 * MiB],
  ];
  let ok = true;
  for (const [shape, ceiling] of cases) {
    const m = await measure(shape);
    const grew = m.rss - base.rss;
    const pass = grew <= ceiling && m.output <= 64 * 1024;
    ok &&= pass;
    console.log(`reconcile --dry-run, 7.5 MiB settings.json (${shape}): +${(grew / MiB).toFixed(0)} MiB peak RSS (ceiling ${ceiling / MiB}), ${m.output} bytes of output ${pass ? 'ok' : 'FAIL'}`);
  }
  return ok;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
