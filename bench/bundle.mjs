// Writing a bundle of 100 MiB of transcript-like JSONL (a 64 MiB transcript, the one-file cap, and a 36 MiB companion)
// beside `tar -czf` + `sha256sum` of the same files, and the writer's peak RSS. Then verifying it beside
// `tar -xzOf | sha256sum`, which also inflates and hashes every byte.
import { spawnSync } from 'node:child_process';
import { mkdtemp, mkdir, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileRunner } from '../scripts/compile-runner.mjs';
import { compare, report } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MiB = 1024 * 1024;
/** Against the anchors measured in the same run (interleaved), and the runner's own peak RSS. */
const TIME_TARGET = 0.7;
const RSS_TARGET_MIB = 64;

/** Deterministic JSONL with a transcript's mix of repeated keys, prose, identifiers and code: gzip -6 gets about 4:1.
 * */
async function writeTranscript(file, bytes, seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const words = (
    'the a function return const value error file test build run change line code type string number import export ' +
    'async await module config session user assistant tool result output input path read write check fix when ' +
    'then because which'
  ).split(' ');
  const pick = () => words[Math.floor(next() * words.length)];
  const hex = (n) => Array.from({ length: n }, () => Math.floor(next() * 16).toString(16)).join('');
  const handle = await open(file, 'w');
  let written = 0;
  let turn = 0;
  try {
    while (written < bytes) {
      const lines = [];
      for (let i = 0; i < 200; i++) {
        const text = Array.from({ length: 8 + Math.floor(next() * 60) }, pick).join(' ');
        lines.push(
          JSON.stringify({
            type: turn % 2 ? 'assistant' : 'user',
            uuid: `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`,
            parentUuid: `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`,
            timestamp: new Date(1_700_000_000_000 + turn * 1000).toISOString(),
            message: { role: turn % 2 ? 'assistant' : 'user', content: [{ type: 'text', text }] },
            ...(turn % 5 === 0
              ? { toolUseResult: { stdout: `${hex(40)}\n${text.toUpperCase()}\n`, exitCode: 0 } }
              : {}),
          }),
        );
        turn++;
      }
      let chunk = `${lines.join('\n')}\n`;
      if (written + chunk.length > bytes) chunk = chunk.slice(0, bytes - written);
      await handle.write(chunk);
      written += chunk.length;
    }
  } finally {
    await handle.close();
  }
}

/** The bundle module compiled into one file a child process can run. */
async function makeRunner(dir) {
  const entry = path.join(dir, 'runner.ts');
  await writeFile(
    entry,
    `import { writeBundle } from ${JSON.stringify(path.join(root, 'packages/contract/src/bundle/create.ts'))};
import { verifyBundle } from ${JSON.stringify(path.join(root, 'packages/contract/src/bundle/verify.ts'))};
import { loadProfiles } from ${JSON.stringify(path.join(root, 'packages/contract/src/profiles/index.ts'))};
import { DocumentCache } from ${JSON.stringify(path.join(root, 'packages/contract/src/schema/document-cache.ts'))};
const [mode, input, out, cacheFile] = process.argv.slice(2);
// Profiles come through the validated-document cache, as \`bundle create\` loads them: unchanged profile files are not
// parsed (YAML) and validated again.
const loadCached = async () => {
  const documents = await DocumentCache.open(cacheFile, true);
  const profiles = await loadProfiles(${JSON.stringify(path.join(root, 'packages', 'agent', 'profiles'))}, documents);
  await documents.save();
  return profiles;
};
const result = mode === 'write'
  ? await writeBundle(JSON.parse(input), out)
  : await verifyBundle(out, { profiles: await loadCached() });
const maxRssKiB = process.resourceUsage().maxRSS;
process.stdout.write(JSON.stringify({ size: result.size, sha256: result.sha256, maxRssKiB }) + '\\n');
`,
  );
  const outfile = path.join(dir, 'runner.mjs');
  await compileRunner(entry, outfile);
  return outfile;
}

export async function run() {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-bundle-'));
  try {
    const projects = path.join(dir, 'projects');
    const project = path.join(projects, '-home-dev-app');
    await mkdir(path.join(project, 'c0ffee', 'subagents'), { recursive: true });
    const transcript = path.join(project, 'c0ffee.jsonl');
    const companion = path.join(project, 'c0ffee', 'subagents', 'agent-1.jsonl');
    await writeTranscript(transcript, 64 * MiB, 1);
    await writeTranscript(companion, 36 * MiB, 2);
    const input = JSON.stringify({
      harness: 'claude',
      profile: 'claude-v2_0_12',
      sessionId: 'c0ffee',
      capturedAtUnixMs: 1_700_000_000_000,
      root: projects,
      files: [
        {
          role: 'primary_transcript',
          name: 'c0ffee.jsonl',
          nativePath: '-home-dev-app/c0ffee.jsonl',
          path: transcript,
        },
        {
          role: 'session_companion',
          name: 'agent-1.jsonl',
          nativePath: '-home-dev-app/c0ffee/subagents/agent-1.jsonl',
          path: companion,
        },
      ],
    });
    const runner = await makeRunner(dir);
    const bundle = path.join(dir, 'session.bundle');
    const anchorOut = path.join(dir, 'anchor.tgz');
    const cacheFile = path.join(dir, 'documents.json');
    const runOnce = (mode) => {
      const r = spawnSync(process.execPath, [runner, mode, input, bundle, cacheFile], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`bundle ${mode} failed: ${r.stderr}`);
      return JSON.parse(r.stdout);
    };

    const written = runOnce('write');
    const anchorWrite = ['sh', '-c', `tar -czf ${anchorOut} -C ${projects} . && sha256sum ${anchorOut} >/dev/null`];
    spawnSync(anchorWrite[0], anchorWrite.slice(1));
    const anchorSize = spawnSync('stat', ['-c', '%s', anchorOut], { encoding: 'utf8' }).stdout.trim();
    console.log(
      `bundle: 100.0 MiB of JSONL -> ${(written.size / MiB).toFixed(1)} MiB (tar -czf: ` +
        `${(Number(anchorSize) / MiB).toFixed(1)} MiB)`,
    );
    const results = [];
    const opts = { rounds: 3, runs: 1 };
    results.push(
      report(
        'bundle write (100 MiB)',
        compare([process.execPath, runner, 'write', input, bundle], anchorWrite, opts),
        TIME_TARGET,
        'tar -czf + sha256sum',
      ),
    );

    const rss = written.maxRssKiB / 1024;
    const rssPass = rss < RSS_TARGET_MIB;
    console.log(
      `bundle write peak RSS: ${rss.toFixed(1)} MiB (target < ${RSS_TARGET_MIB} MiB) ${rssPass ? 'PASS' : 'FAIL'}`,
    );
    results.push(rssPass);

    // The first run fills the document cache; the one measured finds it warm, as every run after the first does.
    runOnce('verify');
    const verified = runOnce('verify');
    if (verified.sha256 !== written.sha256) throw new Error('verify saw a different bundle');
    const anchorVerify = ['sh', '-c', `tar -xzOf ${anchorOut} | sha256sum >/dev/null`];
    results.push(
      report(
        'bundle verify (100 MiB)',
        compare([process.execPath, runner, 'verify', input, bundle, cacheFile], anchorVerify, opts),
        TIME_TARGET,
        'tar -xzOf | sha256sum',
      ),
    );
    const vrss = verified.maxRssKiB / 1024;
    const vrssPass = vrss < RSS_TARGET_MIB;
    console.log(
      `bundle verify peak RSS: ${vrss.toFixed(1)} MiB (target < ${RSS_TARGET_MIB} MiB) ${vrssPass ? 'PASS' : 'FAIL'}`,
    );
    results.push(vrssPass);
    return results.every(Boolean);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
