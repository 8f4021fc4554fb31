// What each start-up measure of src/util/startup/README.md buys: every line times the same work with and without one
// measure, interleaved in the same run (lib.mjs), and prints both and their ratio. Nothing here has a target: the
// figures are that README's, and a measure whose ratio falls into noise is one to question.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileRunner } from '../scripts/compile-runner.mjs';
import { compare } from './lib.mjs';
import { noChangeReconcile } from './reconcile-noop.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function print(name, r) {
  const saves = (r.anchorMs - r.subjectMs).toFixed(1);
  console.log(
    `startup: ${name}: ${r.subjectMs.toFixed(1)} ms with, ${r.anchorMs.toFixed(1)} ms without ` +
      `(saves ${saves} ms, ${r.ratio.toFixed(2)}x)`,
  );
}

/** `argv` run by a parent that adds `extra` to its environment: compare() gives both sides one environment. */
function withEnv(argv, extra) {
  const child =
    `require('child_process').spawnSync(${JSON.stringify(argv[0])}, ${JSON.stringify(argv.slice(1))}, ` +
    `{ stdio: 'ignore', env: { ...process.env, ...${JSON.stringify(extra)} } }).status`;
  return [process.execPath, '-e', `process.exitCode = ${child}`];
}

/** A file in `dir` holding `source`. */
async function file(dir, name, source) {
  const at = path.join(dir, name);
  await writeFile(at, source);
  return at;
}

export async function run() {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-startup-'));
  try {
    const { argv, env } = await noChangeReconcile(dir);
    const node = (...args) => [process.execPath, ...args];

    // The full CLI, as every command but a plain reconcile and a bare run starts (commander's program, ES module
    // chunks, node:fs/promises, node:crypto), with Node.js's compile cache on, as bin/blue-agent.js turns it on.
    const main = JSON.stringify(path.join(root, 'dist', 'main.js'));
    const fullCli = await file(
      dir,
      'full-cli.mjs',
      `import { enableCompileCache } from 'node:module';\nenableCompileCache();\n` +
        `const { main } = await import(${main});\nprocess.exitCode = await main(process.argv.slice(2));\n`,
    );
    const plain = 'plain reconcile without commander (dist/reconcile.cjs, sync fs, WebAssembly SHA-256, code cache)';
    print(plain, compare(argv, node(fullCli, ...argv.slice(2)), { env }));

    // The same plain reconcile with Node.js's compile cache off, which turns off bin/code-cache.js too (its folder).
    const off = { NODE_DISABLE_COMPILE_CACHE: '1' };
    const caches = "code caches of a plain reconcile (bin/code-cache.js, Node.js's compile cache)";
    print(caches, compare(withEnv(argv, {}), withEnv(argv, off), { env }));

    // Hashing a small native file in a fresh process: the WebAssembly SHA-256 against node:crypto.
    const hash = "'x'.repeat(4096)";
    const sha256 = JSON.stringify(path.join(root, 'packages/contract/src/util/startup/sha256.ts'));
    const wasm = await file(
      dir,
      'wasm.ts',
      `import { sha256Hex } from ${sha256};\nif (sha256Hex(${hash}).length !== 64) process.exit(1);\n`,
    );
    const crypto = await file(
      dir,
      'crypto.ts',
      `import { createHash } from 'node:crypto';\n` +
        `if (createHash('sha256').update(${hash}).digest('hex').length !== 64) process.exit(1);\n`,
    );
    const wasmRunner = await compileRunner(wasm, `${wasm}.mjs`);
    const cryptoRunner = await compileRunner(crypto, `${crypto}.mjs`);
    const hashing = 'SHA-256 of 4 KiB in a fresh process (util/startup/sha256.ts against node:crypto)';
    print(hashing, compare(node(wasmRunner), node(cryptoRunner), { env }));

    // What loading node:fs/promises costs a process that loads nothing else (util/startup/fs-promises-sync.ts).
    print('not loading node:fs/promises', compare(node('-e', '0'), node('-e', "require('node:fs/promises')"), { env }));

    // bin/ is CommonJS: an ES module entry starts Node.js's module loader first.
    const [cjs, esm] = [await file(dir, 'empty.cjs', ''), await file(dir, 'empty.mjs', '')];
    print('a CommonJS entry rather than an ES module (bin/blue-agent.js)', compare(node(cjs), node(esm), { env }));
    return true;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
