/**
 * scripts/check-line-length.mjs, run by `npm run lint`, against a throwaway git checkout: every tracked source line
 * over 120 columns is listed with its file, line and length, and fails the check; generated code, recorded fixtures,
 * untracked files and other kinds of file are not read.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { longLines, MAX_COLUMNS, sourceFiles } from '../../scripts/check-line-length.mjs';
import { makeTestHome, repoRoot, type TestHome } from '../support/context.js';
import { plainPath, runFile } from '../support/launcher.js';

const SCRIPT = path.join(repoRoot, 'scripts', 'check-line-length.mjs');
const long = (n: number) => `// ${'x'.repeat(n - 3)}`;

let t: TestHome;
let checkout: string;

beforeEach(async () => {
  t = await makeTestHome();
  checkout = path.join(t.home, 'checkout');
  await mkdir(checkout);
  execFileSync('git', ['init', '-q', checkout], { env: { ...t.env, PATH: plainPath() } });
});
afterEach(async () => t.cleanup());

/** Writes `files` into the checkout and tracks them all (`untracked` is written only). */
async function plant(files: Record<string, string>, untracked: Record<string, string> = {}): Promise<void> {
  for (const [file, text] of Object.entries({ ...files, ...untracked })) {
    await mkdir(path.dirname(path.join(checkout, file)), { recursive: true });
    await writeFile(path.join(checkout, file), text);
  }
  const add = Object.keys(files);
  if (add.length > 0)
    execFileSync('git', ['add', '--', ...add], { cwd: checkout, env: { ...t.env, PATH: plainPath() } });
}

function check() {
  return runFile(process.execPath, [SCRIPT, checkout], { env: { ...t.env, PATH: plainPath() }, cwd: t.home });
}

describe('scripts/check-line-length.mjs', () => {
  it('lists every tracked source line above 120 columns and fails', async () => {
    await plant({
      'src/a.ts': `const a = 1;\n${long(121)}\n${long(120)}\n`,
      'src/b.tsx': `${long(200)}\r\n`,
      'scripts/c.mjs': `${long(130)}\n`,
      'bin/hook': `#!/bin/sh\n${'#'.repeat(125)}\n`,
      'bin/run': `#!/usr/bin/env bash\n${'#'.repeat(126)}\n`,
      'tools/d.sh': `${'#'.repeat(127)}\n`,
      'e.js': `${long(128)}`,
    });

    const result = await check();

    expect(result.code).toBe(1);
    expect(result.stdout.split('\n').filter(Boolean).sort()).toEqual([
      'bin/hook:2: length 125',
      'bin/run:2: length 126',
      'e.js:1: length 128',
      'scripts/c.mjs:1: length 130',
      'src/a.ts:2: length 121',
      'src/b.tsx:1: length 200',
      'tools/d.sh:1: length 127',
    ]);
    expect(result.stderr).toContain('7 line(s) in 7 file(s) are longer than 120 columns');
  });

  it('passes lines of exactly 120 columns, counted in characters rather than bytes', async () => {
    await plant({ 'src/a.ts': `${long(120)}\n// ${'é'.repeat(117)}\nconst s = '${'→'.repeat(107)}';\n` });

    expect(await check()).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('leaves out generated code, recorded fixtures, untracked files and what is not a source', async () => {
    await plant(
      {
        'packages/contract/src/schema/generated/types.ts': `${long(300)}\n`,
        'src/schema.generated.ts': `${long(300)}\n`,
        'fixtures/opencode/plugin.js': `${long(300)}\n`,
        'packages/agent/test/fixtures/x.ts': `${long(300)}\n`,
        'README.md': `${long(300)}\n`,
        'data.json': `"${'x'.repeat(300)}"\n`,
        notes: `plain text, no shebang ${'x'.repeat(300)}\n`,
        'bin/python-tool': `#!/usr/bin/env python3\n${'#'.repeat(300)}\n`,
      },
      { 'src/untracked.ts': `${long(300)}\n` },
    );

    expect(await check()).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(sourceFiles(checkout)).toEqual([]);
  });

  it('skips a file that is tracked but gone from the working tree', async () => {
    await plant({ 'src/a.ts': `${long(121)}\n`, 'src/gone.ts': `${long(121)}\n` });
    execFileSync('rm', [path.join(checkout, 'src', 'gone.ts')]);

    expect(longLines(checkout, sourceFiles(checkout), MAX_COLUMNS)).toEqual([
      { file: 'src/a.ts', line: 1, length: 121 },
    ]);
  });
});
