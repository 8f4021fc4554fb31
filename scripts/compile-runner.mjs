// Bundles a small script that imports the TypeScript sources into one runnable ES module, for benchmarks and tests
// that must measure or kill a separate process running the real code.
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Compiles `entry` (which may import the packages' sources) into `outfile`. */
export async function compileRunner(entry, outfile) {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // As in the CLI build: ES module builds first, and require() for the CommonJS dependencies' built-ins.
    mainFields: ['module', 'main'],
    // The workspace packages' TypeScript sources, as the builds and tests take them.
    conditions: ['source'],
    nodePaths: [path.join(root, 'node_modules')],
    logLevel: 'warning',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  return outfile;
}
