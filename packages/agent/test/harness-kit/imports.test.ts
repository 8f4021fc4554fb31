import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const KIT = path.resolve(import.meta.dirname, '../../src/harness-kit');

/** What the kit may import of the rest of src/ (ARCHITECTURE.md): the harness contract, the formats, the base layer. */
const BELOW =
  /^\.\.\/(harnesses\/types|bundle\/[^/]+|schema\/(?:generated\/)?[^/]+|util\/[^/]+|errors|context|logger)\.js$/;

describe('the harness kit', () => {
  it(
    'imports only itself, the contract, the formats, the base layer and packages: never a harness, never the ' +
      'registry',
    async () => {
      const offending: string[] = [];
      for (const file of (await readdir(KIT)).filter((f) => f.endsWith('.ts'))) {
        const text = await readFile(path.join(KIT, file), 'utf8');
        for (const m of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)) {
          const specifier = m[1]!;
          if (specifier.startsWith('.') && !specifier.startsWith('./') && !BELOW.test(specifier))
            offending.push(`${file}: ${specifier}`);
        }
      }
      expect(offending).toEqual([]);
    },
  );

  it('tells what is below it from what is above it', () => {
    expect(
      [
        '../util/record.js',
        '../errors.js',
        '../harnesses/types.js',
        '../bundle/manifest.js',
        '../schema/index.js',
      ].filter((s) => BELOW.test(s)),
    ).toHaveLength(5);
    expect(
      [
        '../harnesses/index.js',
        '../harnesses/claude/session.js',
        '../policy/validate.js',
        '../util/../policy/x.js',
        '../control-api/http.js',
        '../bundle/../spool/index.js',
      ].filter((s) => BELOW.test(s)),
    ).toEqual([]);
  });
});
