#!/usr/bin/env node
// Builds the Control API's dist/: every module of src/ as an ES module entry (shared code in chunks/), which is what
// `blue-agent control-plane` and `blue-agent demo` import at run time (package.json's exports: dist/<module>.js), and
// the dashboard's stylesheet and scripts (src/web/assets) in dist/assets, served by `control-plane serve`.
// The contract's sources (the harnesses' transcript readers that search uses among them) are bundled in (the
// 'source' export condition), as are the npm dependencies, so the server starts from few files.
//
// Files are replaced one by one with a rename, and only when their bytes change: a server started from dist/ while
// it is rebuilt never finds a file missing or half written. Files no longer produced are removed.
import { build } from 'esbuild';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const src = path.join(root, 'src');

const modules = (await readdir(src, { recursive: true, withFileTypes: true }))
  .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts'))
  .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
  .filter((file) => !file.startsWith(path.join('src', 'web', 'assets') + path.sep));

const server = await build({
  write: false,
  absWorkingDir: root,
  entryPoints: modules,
  outbase: 'src',
  outdir: 'dist',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  // Prefer ES module builds: some packages' CommonJS entries are UMD wrappers with dynamic require().
  mainFields: ['module', 'main'],
  conditions: ['source'],
  target: 'node22',
  sourcemap: true,
  legalComments: 'linked',
  logLevel: 'warning',
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

// The dashboard's stylesheet and scripts: minified, for browsers, no source maps.
const assets = await build({
  write: false,
  absWorkingDir: root,
  entryPoints: {
    'assets/app': 'src/web/assets/app.css',
    'assets/dashboard': 'src/web/assets/dashboard.ts',
    'assets/link': 'src/web/assets/link.ts',
  },
  outdir: 'dist',
  bundle: true,
  minify: true,
  format: 'iife',
  platform: 'browser',
  target: ['chrome120', 'firefox120', 'safari17'],
  legalComments: 'none',
  logLevel: 'warning',
});

const produced = new Set();
for (const file of [...server.outputFiles, ...assets.outputFiles]) {
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
