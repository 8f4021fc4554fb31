/**
 * 100 MiB of session files (a 64 MiB transcript, the one-file cap, and a 36 MiB companion) are bundled, verified and
 * extracted in a child process whose peak RSS must stay far below the data size: nothing is held whole.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { compileRunner } from '../../../../scripts/compile-runner.mjs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { agentRoot, repoRoot } from '../../../../test/support/context.js';
import { jsonl } from '../../../../test/support/handmade-bundles.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bundle-memory-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

/** Transcript-like text: a 1 MiB block of JSONL repeated (further apart than deflate's window, so it compresses like
 * one). */
async function writeJsonl(file: string, bytes: number): Promise<void> {
  let block = '';
  for (let i = 0; block.length < MiB; i++) block += jsonl(20, `block-${i}-${Math.random().toString(36)}`);
  const chunk = Buffer.from(block.slice(0, MiB));
  const handle = await open(file, 'w');
  try {
    for (let written = 0; written < bytes; written += chunk.length)
      await handle.write(chunk, 0, Math.min(chunk.length, bytes - written));
  } finally {
    await handle.close();
  }
}

it('bundles, verifies and extracts 100 MiB with bounded memory', async () => {
  const projects = path.join(dir, 'projects');
  const project = path.join(projects, 'p');
  await mkdir(project, { recursive: true });
  await writeJsonl(path.join(project, 'main.jsonl'), 64 * MiB);
  await writeJsonl(path.join(project, 'agent.jsonl'), 36 * MiB);
  const entry = path.join(dir, 'child.ts');
  const bundleModule = JSON.stringify(path.join(repoRoot, 'packages/contract/src/bundle/index.ts'));
  await writeFile(
    entry,
    `import { writeBundle, verifyBundle, extractBundle } from ${bundleModule};
import { loadProfiles } from ${JSON.stringify(path.join(repoRoot, 'packages/contract/src/profiles/index.ts'))};
const profiles = await loadProfiles(${JSON.stringify(path.join(agentRoot, 'profiles'))});
const peak = () => process.resourceUsage().maxRSS * 1024;
const start = peak();
const input = {
  harness: 'claude', profile: 'claude-v2_0_12', sessionId: 's', capturedAtUnixMs: 0, root: ${JSON.stringify(projects)},
  files: [
    {
      role: 'primary_transcript',
      name: 'main.jsonl',
      nativePath: 'p/main.jsonl',
      path: ${JSON.stringify(path.join(project, 'main.jsonl'))},
    },
    {
      role: 'session_companion',
      name: 'agent.jsonl',
      nativePath: 'p/agent.jsonl',
      path: ${JSON.stringify(path.join(project, 'agent.jsonl'))},
    },
  ],
};
const out = ${JSON.stringify(path.join(dir, 'big.bundle'))};
const written = await writeBundle(input, out);
const afterWrite = peak();
await verifyBundle(out, { profiles });
const afterVerify = peak();
await extractBundle(out, ${JSON.stringify(path.join(dir, 'x'))}, { profiles });
const sizes = written.manifest.files.map((f) => f.size);
const afterExtract = peak();
process.stdout.write(JSON.stringify({ start, afterWrite, afterVerify, afterExtract, size: written.size, sizes }));
`,
  );
  const bundled = path.join(dir, 'child.mjs');
  await compileRunner(entry, bundled);
  const { stdout } = await run(process.execPath, [bundled], { maxBuffer: 1024 * 1024 });
  const r = JSON.parse(stdout) as {
    start: number;
    afterWrite: number;
    afterVerify: number;
    afterExtract: number;
    size: number;
    sizes: number[];
  };
  expect(r.sizes).toEqual([64 * MiB, 36 * MiB]);
  expect(r.size).toBeGreaterThan(5 * MiB);
  // Holding either file, or the compressed bundle, would add at least its size.
  // Measured: about 4 MiB for writing (block buffers are reused, and each block's zlib handle lets go of its copy of
  // the dictionary when it closes: kept until a GC, those copies made it 16-20 MiB). Reading inflates into one reused
  // buffer, so verify and extract add a few MiB to that peak; with a fresh buffer per chunk (zlib streams) it was over
  // 40 MiB, garbage waiting for the GC.
  expect(r.afterWrite - r.start).toBeLessThan(10 * MiB);
  expect(r.afterVerify - r.afterWrite).toBeLessThan(16 * MiB);
  expect(r.afterExtract - r.afterWrite).toBeLessThan(16 * MiB);
  expect(r.afterExtract - r.start).toBeLessThan(64 * MiB);
}, 30_000);
