// `reconcile --dry-run` on the largest Claude settings.json blue-agent reads (just under the 2 MiB limit), in two
// shapes: one long line, and ~50 000 keys (the parser's tree dominates). Reports the peak RSS above a run on an empty
// file (the anchor) as a multiple of the file's size, and the size of the output; fails when the output is not bounded
// or the growth exceeds the targets noted below.
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');
const MiB = 1024 * 1024;
const SIZE = 1.9 * MiB;
const PEAK =
  'data:text/javascript,' +
  'process.on("exit",()=>process.stderr.write("\\nMAXRSS="+process.resourceUsage().maxRSS*1024+"\\n"))';

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
    const r = spawnSync(
      process.execPath,
      ['--import', PEAK, entry, 'reconcile', '--dry-run', '--policy', policy, '--harness', 'claude'],
      { env, encoding: 'utf8', maxBuffer: 256 * MiB },
    );
    if (r.status !== 0) throw new Error(`reconcile failed (${shape}):\n${r.stdout}\n${r.stderr}`);
    return { rss: Number(/MAXRSS=(\d+)/.exec(r.stderr)?.[1] ?? NaN), output: Buffer.byteLength(r.stdout) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function run() {
  const base = await measure('empty');
  // Targets, as multiples of the file's size: a text is held a few times over (the file, the plan, the diff's region);
  // a parse tree costs about 12x its text, and planning makes several (the file's, the planned text's self-check, the
  // ledger's view of the user's entries), which the garbage collector frees lazily. Measured: about 11x and 81x.
  const cases = [
    ['one line', 24],
    ['many keys', 96],
  ];
  let ok = true;
  for (const [shape, target] of cases) {
    const m = await measure(shape);
    const ratio = (m.rss - base.rss) / SIZE;
    const pass = ratio <= target && m.output <= 64 * 1024;
    ok &&= pass;
    console.log(
      `reconcile --dry-run, ${(SIZE / MiB).toFixed(1)} MiB settings.json (${shape}): peak RSS +` +
        `${((m.rss - base.rss) / MiB).toFixed(0)} MiB above an empty file, ${ratio.toFixed(1)}x the file (target ` +
        `${target}x), ${m.output} bytes of output ${pass ? 'PASS' : 'FAIL'}`,
    );
  }
  return ok;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
