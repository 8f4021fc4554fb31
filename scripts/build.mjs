#!/usr/bin/env node
// Builds dist/: one ES module bundle for the CLI, with each command in its own chunk so a command loads only what
// it uses. Fewer, larger files start markedly faster than hundreds of small modules.
import { build } from 'esbuild';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
await rm(path.join(root, 'dist'), { recursive: true, force: true });
await build({
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
