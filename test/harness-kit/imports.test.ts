import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const KIT = path.resolve(import.meta.dirname, '../../src/harness-kit');

/** The base layer (ARCHITECTURE.md): the one part of the rest of src/ the kit may import. */
const BASE = /^\.\.\/(util\/[^/]+|errors|context|logger)\.js$/;

describe('the harness kit', () => {
  it('imports only itself, the base layer and packages: never a harness, never the rest of the agent', async () => {
    const offending: string[] = [];
    for (const file of (await readdir(KIT)).filter((f) => f.endsWith('.ts'))) {
      const text = await readFile(path.join(KIT, file), 'utf8');
      for (const m of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)) {
        const specifier = m[1]!;
        if (specifier.startsWith('.') && !specifier.startsWith('./') && !BASE.test(specifier)) offending.push(`${file}: ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });

  it('tells the base layer from what is above it', () => {
    expect(['../util/record.js', '../errors.js'].filter((s) => BASE.test(s))).toHaveLength(2);
    expect(['../harnesses/index.js', '../policy/validate.js', '../util/../policy/x.js', '../control-api/http.js'].filter((s) => BASE.test(s))).toEqual([]);
  });
});
