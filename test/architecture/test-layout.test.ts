/**
 * Tests mirror src/: a module's test is found by its path (src/drain/build.ts → test/drain/build.test.ts; a test of
 * several modules of one folder lives in that folder's test dir, named after the behaviour or the main module).
 * The rule, on every file under test/:
 *   - a test (`*.test.ts`, or `*.record.ts`: a recording run by `npm run record-fixtures`) sits in a folder that exists
 *     under src/, or at test/'s root beside a module of src/'s root (test/config.test.ts → src/config.ts);
 *   - named exceptions: test/architecture/ (rules over the whole tree), test/e2e/ (whole processes, across modules),
 *     test/certify/ (`npm run certify`), test/bin/ (mirrors bin/), test/scripts/ (mirrors scripts/);
 *   - shared helpers (code that is not a test) live in test/support/ only, and nothing there is a test; the other
 *     code files are test/global-setup.ts (vitest's global setup) and each harness's test rig,
 *     test/harnesses/<name>/rig.ts (what the shared suites need to know about it, collected by test/support/rigs.ts),
 *     beside a folder src/harnesses/<name>/. Data beside a test (golden files) is not code.
 * And the paths the configuration names (vitest includes, `npm run test:hermetic`'s list) exist.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/context.js';

/** Test folders that mirror no folder of src/: each with what it mirrors instead (undefined: nothing). */
const EXCEPTIONS: Record<string, string | undefined> = {
  architecture: undefined,
  e2e: undefined,
  certify: undefined,
  bin: 'bin',
  scripts: 'scripts',
};
const SUPPORT = 'support';
const OTHER_CODE = ['global-setup.ts'];
const RIG = /^harnesses\/([^/]+)\/rig\.ts$/;

const isTest = (file: string): boolean => file.endsWith('.test.ts') || file.endsWith('.record.ts');
const isCode = (file: string): boolean => /\.(ts|mts|cts|js|mjs|cjs)$/.test(file);

/**
 * What is out of place among `files` (paths relative to test/, `/`-separated); `exists(p)` says whether a folder or
 * file exists at `p`, relative to the repository.
 */
function layoutProblems(files: readonly string[], exists: (p: string) => boolean): string[] {
  const out: string[] = [];
  for (const file of files) {
    const dir = path.posix.dirname(file);
    const top = dir.split('/')[0]!;
    const where = `test/${file}`;
    if (top === SUPPORT) {
      if (isTest(file)) out.push(`${where}: a test in test/support/ (helpers only)`);
      continue;
    }
    if (!isTest(file)) {
      const rig = RIG.exec(file);
      if (rig !== null) {
        if (!exists(`src/harnesses/${rig[1]}`)) out.push(`${where}: a rig for src/harnesses/${rig[1]}/, which does not exist`);
      } else if (isCode(file) && !(dir === '.' && OTHER_CODE.includes(file))) out.push(`${where}: a helper outside test/support/`);
      continue;
    }
    if (dir === '.') {
      const module = `src/${path.posix.basename(file).replace(/(\.property)?\.test\.ts$|\.record\.ts$/, '')}.ts`;
      if (!exists(module)) out.push(`${where}: at test/'s root, but ${module} does not exist`);
    } else if (top in EXCEPTIONS) {
      const mirror = EXCEPTIONS[top];
      if (mirror !== undefined && !exists([mirror, ...dir.split('/').slice(1)].join('/'))) out.push(`${where}: ${[mirror, ...dir.split('/').slice(1)].join('/')}/ does not exist`);
    } else if (!exists(`src/${dir}`)) out.push(`${where}: src/${dir}/ does not exist`);
  }
  return out;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...filesUnder(rel));
    else out.push(rel);
  }
  return out;
}

const inRepo = (p: string): boolean => existsSync(path.join(repoRoot, p));

describe('the test tree', () => {
  it('mirrors src/, with shared helpers in test/support/ only', () => {
    const files = filesUnder('test').map((f) => f.slice('test/'.length));
    expect(files.filter(isTest).length).toBeGreaterThan(100);
    expect(layoutProblems(files, inRepo)).toEqual([]);
  });

  it('the rule sees what is out of place', () => {
    const exists = (p: string) => ['src/drain', 'src/harnesses/claude', 'src/config.ts', 'bin'].includes(p);
    expect(
      layoutProblems(
        [
          'drain/build.test.ts',
          'harnesses/claude/session.test.ts',
          'config.test.ts',
          'e2e/anything.test.ts',
          'bin/node-version.test.ts',
          'support/recorded-sessions.ts',
          'global-setup.ts',
          'harnesses/claude/golden/export.md',
          'harnesses/claude/rig.ts',
          // Out of place:
          'sessions-cli/export.test.ts',
          'harnesses/codex/session.test.ts',
          'schema.test.ts',
          'drain/helpers.ts',
          'support/leftover.test.ts',
          'scripts/compat.test.ts',
          'harnesses/codex/rig.ts',
          'harnesses/claude/helpers.ts',
          'harnesses/rig.ts',
        ],
        exists,
      ),
    ).toEqual([
      'test/sessions-cli/export.test.ts: src/sessions-cli/ does not exist',
      'test/harnesses/codex/session.test.ts: src/harnesses/codex/ does not exist',
      "test/schema.test.ts: at test/'s root, but src/schema.ts does not exist",
      'test/drain/helpers.ts: a helper outside test/support/',
      'test/support/leftover.test.ts: a test in test/support/ (helpers only)',
      'test/scripts/compat.test.ts: scripts/ does not exist',
      'test/harnesses/codex/rig.ts: a rig for src/harnesses/codex/, which does not exist',
      'test/harnesses/claude/helpers.ts: a helper outside test/support/',
      'test/harnesses/rig.ts: a helper outside test/support/',
    ]);
  });

  it('the paths the test configuration names exist', () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const hermetic = pkg.scripts['test:hermetic']!.split(/\s+/).filter((w) => w.startsWith('test/'));
    expect(hermetic.length).toBeGreaterThan(0);
    for (const config of ['vitest.config.ts', 'vitest.certify.config.ts', 'vitest.record.config.ts']) {
      for (const m of readFileSync(path.join(repoRoot, config), 'utf8').matchAll(/'(test\/[^'*]*?)(?:\*\*[^']*)?'/g)) hermetic.push(m[1]!.replace(/\/$/, ''));
    }
    const missing = hermetic.filter((p) => !inRepo(p) || (p.endsWith('.ts') && !statSync(path.join(repoRoot, p)).isFile()));
    expect(missing).toEqual([]);
  });
});
