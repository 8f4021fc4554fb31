#!/usr/bin/env node
// Builds dist/: one ES module bundle for the CLI, with each command in its own chunk so a command loads only what
// it uses. Fewer, larger files start markedly faster than hundreds of small modules.
//
// Files are replaced one by one with a rename, and only when their bytes change: a CLI process started from dist/
// while it is rebuilt never finds a file missing or half written. Chunks no longer produced are removed.
import { build } from 'esbuild';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const result = await build({
  write: false,
  absWorkingDir: root,
  entryPoints: { main: 'src/cli/main.ts' },
  outdir: 'dist',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  // Prefer ES module builds: some packages' CommonJS entries are UMD wrappers with dynamic require().
  mainFields: ['module', 'main'],
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

// The dashboard's stylesheet and scripts (src/control-plane/web/assets), served by `control-plane serve` from
// dist/assets: minified, for browsers, no source maps.
const assets = await build({
  write: false,
  absWorkingDir: root,
  entryPoints: {
    'assets/app': 'src/control-plane/web/assets/app.css',
    'assets/dashboard': 'src/control-plane/web/assets/dashboard.ts',
    'assets/link': 'src/control-plane/web/assets/link.ts',
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
for (const file of [...result.outputFiles, ...assets.outputFiles]) {
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
