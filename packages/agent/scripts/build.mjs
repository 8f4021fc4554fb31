#!/usr/bin/env node
// Builds the agent's dist/: one ES module bundle for the CLI, with each command in its own chunk so a command loads
// only what it uses. Fewer, larger files start markedly faster than hundreds of small modules. dist/agent.js, a second
// entry sharing those chunks, is a bare `run` without commander (src/cli/agent.ts).
// Beside it, dist/reconcile.cjs: a plain `reconcile` in one CommonJS file, with undici and execa in dist/vendor/.
//
// The contract's sources are bundled in (the 'source' export condition); the Control API is not: the commands that
// start it import @blue-agent/control-api at run time, from its own dist/, when it is installed.
//
// Files are replaced one by one with a rename, and only when their bytes change: a CLI process started from dist/
// while it is rebuilt never finds a file missing or half written. Chunks no longer produced are removed.
import { build } from 'esbuild';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
/** What every Node.js build of the CLI shares. */
const forNode = {
  write: false,
  absWorkingDir: root,
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  // Prefer ES module builds: some packages' CommonJS entries are UMD wrappers with dynamic require().
  mainFields: ['module', 'main'],
  target: 'node22',
  sourcemap: true,
  legalComments: 'linked',
  logLevel: 'warning',
  conditions: ['source'],
  external: ['@blue-agent/control-api', '@blue-agent/control-api/*'],
};
const result = await build({
  ...forNode,
  entryPoints: { main: 'src/cli/main.ts', agent: 'src/cli/agent.ts' },
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  format: 'esm',
  // Bundled CommonJS dependencies call require() for Node built-ins and read __filename.
  banner: {
    js: [
      "import { createRequire as __blueCreateRequire } from 'node:module';",
      "import { fileURLToPath as __blueFileURLToPath } from 'node:url';",
      'const require = __blueCreateRequire(import.meta.url);',
      'const __filename = __blueFileURLToPath(import.meta.url);',
      "const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));",
    ].join(' '),
  },
});

// A plain `reconcile` as one CommonJS file: bin/blue-agent.js runs it through vm.Script with a V8 code cache taken
// after a run, which holds every function the run compiled (an ES module's cache, taken at load, holds only its top
// level).
// Loading and compiling the reconcile's code is most of what a reconcile that changes nothing costs.
const commonJs = {
  ...forNode,
  outExtension: { '.js': '.cjs' },
  format: 'cjs',
  define: { 'import.meta.url': '__blueModuleUrl' },
  banner: { js: "var __blueModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
};
const plainReconcile = await build({
  ...commonJs,
  entryPoints: { reconcile: 'src/cli/plain-reconcile.ts' },
  // undici (the Control API's HTTP client) and execa (running a harness for its version) are most of the code, and
  // neither runs in a reconcile that changes nothing: the bundle requires them from files of their own when it needs
  // them (import() would need vm modules, still experimental, in a script run by vm).
  supported: { 'dynamic-import': false },
  plugins: [
    {
      // A one-shot process makes its file system calls synchronously (the contract's util/startup/fs-promises-sync.ts
      // says why).
      name: 'sync-fs',
      setup(b) {
        b.onResolve({ filter: /^node:fs\/promises$/ }, () => ({
          path: path.join(root, '..', 'contract', 'src', 'util', 'startup', 'fs-promises-sync.ts'),
        }));
      },
    },
    {
      // A built-in imported by default (`import path from 'node:path'`) is copied, every export of it, once per module
      // that imports it (esbuild's __toESM) into a CommonJS bundle, work every reconcile repeats. Here it is one
      // module of the bundle, the built-in itself. node:path is the only one the reconcile imports so
      // (test/bin/code-cache.test.ts says so when another is).
      name: 'builtins-as-they-are',
      setup(b) {
        b.onResolve({ filter: /^node:path$/ }, (args) =>
          args.kind === 'import-statement' ? { path: args.path, namespace: 'builtin' } : undefined,
        );
        b.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => {
          const names = Object.keys(process.getBuiltinModule(args.path)).filter(
            (name) => /^[A-Za-z_$][\w$]*$/.test(name) && name !== 'default',
          );
          return {
            contents:
              `const m = require(${JSON.stringify(args.path)});\nexport default m;\nexport const { ` +
              `${names.join(', ')} } = m;\n`,
            loader: 'js',
          };
        });
      },
    },
    {
      name: 'vendor-files',
      setup(b) {
        b.onResolve({ filter: /^(undici|execa)$/ }, (args) =>
          args.kind === 'dynamic-import' ? { path: `./vendor/${args.path}.cjs`, external: true } : undefined,
        );
      },
    },
  ],
});
const vendor = await build({ ...commonJs, entryPoints: { 'vendor/undici': 'undici', 'vendor/execa': 'execa' } });
// esbuild escapes strings, not regular expressions or comments. One character past ASCII anywhere in the bundle makes
// V8 hold its whole source as two-byte text, decoded on a slow path in every run.
for (const file of plainReconcile.outputFiles.filter((f) => f.path.endsWith('.cjs'))) {
  const at = file.text.search(/[^\x00-\x7f]/);
  if (at >= 0) {
    const line = file.text.slice(0, at).split('\n').length;
    throw new Error(
      `${path.relative(root, file.path)}:${line}: ${JSON.stringify(file.text.slice(Math.max(0, at - 30), at + 10))} ` +
        `is not ASCII; escape it in the source (\\uXXXX)`,
    );
  }
}

const produced = new Set();
for (const file of [...result.outputFiles, ...plainReconcile.outputFiles, ...vendor.outputFiles]) {
  produced.add(file.path);
  const current = await readFile(file.path).catch(() => undefined);
  if (current !== undefined && Buffer.compare(current, file.contents) === 0) continue;
  await mkdir(path.dirname(file.path), { recursive: true });
  const temp = `${file.path}.${process.pid}.tmp`;
  await writeFile(temp, file.contents);
  await rename(temp, file.path);
}
for (const entry of await readdir(dist, { recursive: true, withFileTypes: true })) {
  const file = path.join(entry.parentPath, entry.name);
  if (entry.isFile() && !produced.has(file)) await rm(file, { force: true });
}
