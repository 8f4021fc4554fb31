import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const KIT = path.resolve(import.meta.dirname, '../../src/harness-kit');

describe('the harness kit', () => {
  it('imports only itself and packages: never a harness, never the rest of the agent', async () => {
    const offending: string[] = [];
    for (const file of (await readdir(KIT)).filter((f) => f.endsWith('.ts'))) {
      const text = await readFile(path.join(KIT, file), 'utf8');
      for (const m of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)) {
        const specifier = m[1]!;
        if (specifier.startsWith('.') && !specifier.startsWith('./')) offending.push(`${file}: ${specifier}`);
      }
    }
    expect(offending).toEqual([]);
  });
});
