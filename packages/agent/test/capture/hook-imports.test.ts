/**
 * The capture hook runs inside the harness's session-end budget: what it loads must stay lean. Its whole import graph
 * (the modules it loads at start and those it may load on a profile-cache miss) is built with esbuild, as the CLI
 * bundle is, and must reach neither node:crypto nor write-file-atomic.
 */
import { build, type Metafile } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

async function importGraph(entry: string): Promise<Metafile['inputs']> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    outdir: 'out',
    mainFields: ['module', 'main'],
    conditions: ['source'],
    logLevel: 'silent',
  });
  return result.metafile.inputs;
}

/** Modules of the graph that are, or import, one of the heavy modules. */
function heavy(inputs: Metafile['inputs']): string[] {
  return Object.entries(inputs)
    .filter(
      ([file, input]) =>
        file.includes('node_modules/write-file-atomic/') ||
        input.imports.some((i) => /^(node:)?crypto$/.test(i.path) || i.path.includes('write-file-atomic')),
    )
    .map(([file]) => file)
    .sort();
}

describe('the capture hook loads no crypto', () => {
  it(
    'src/capture/hook.ts reaches neither node:crypto nor write-file-atomic, through the spool and the light fs ' +
      'module',
    async () => {
      const inputs = await importGraph('src/capture/hook.ts');
      expect(Object.keys(inputs)).toEqual(
        expect.arrayContaining([
          'src/spool/index.ts',
          '../contract/src/util/startup/fs-light.ts',
          'src/lock/liveness.ts',
          '../contract/src/schema/document-cache.ts',
        ]),
      );
      expect(heavy(inputs)).toEqual([]);
    },
  );

  it('the check sees them where they are (bundle/scan.ts hashes what it reads)', async () => {
    expect(heavy(await importGraph('../contract/src/bundle/scan.ts'))).toContain('../contract/src/bundle/scan.ts');
  });
});
