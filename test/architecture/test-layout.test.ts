/**
 * Tests mirror the sources: a module's test is found by its path, in its package (packages/agent/src/drain/build.ts
 * → packages/agent/test/drain/build.test.ts; a test of several modules of one folder lives in that folder's test dir,
 * named after the behaviour or the main module). The rule, on every file under packages/<name>/test/ and test/:
 *   - a package's test (`*.test.ts`, or `*.record.ts`: a recording run by `npm run record-fixtures`) sits in a folder
 *     that exists under the src/ of its package or of a package it depends on (a test of a contract module that needs
 *     the agent's harnesses lives in the agent, at the same path), or at its test/'s root beside a module of such a
 *     src/'s root (packages/agent/test/config.test.ts → packages/agent/src/config.ts), or anywhere at the root of
 *     the Control API's test/ (its src/ is the server's folder of modules);
 *   - named exceptions: the agent's test/e2e/ (whole processes, across modules and packages), test/certify/
 *     (`npm run certify`) and test/bin/ (mirrors its bin/);
 *   - the repository's test/ holds what belongs to no package: test/support/ (the shared helpers: code that is not a
 *     test, and nothing there is a test), test/architecture/ (rules over the whole repository), test/scripts/
 *     (mirrors scripts/) and test/global-setup.ts (vitest's global setup);
 *   - the one other code beside tests is each harness's test rig, packages/agent/test/harnesses/<name>/rig.ts (what
 *     the shared suites need to know about it, collected by test/support/rigs.ts), beside a folder
 *     packages/agent/src/harnesses/<name>/. Data beside a test (golden files) is not code.
 * And the paths the configuration names (vitest includes, `npm run test:hermetic`'s list) exist.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/context.js';

/** A package's test folders that mirror no folder of a src/: each with what it mirrors instead (undefined: nothing). */
const EXCEPTIONS: Record<string, Record<string, string | undefined>> = {
  agent: { e2e: undefined, certify: undefined, bin: 'packages/agent/bin' },
};
/** The folders of the repository's own test/, with what each mirrors (undefined: nothing). */
const ROOT_FOLDERS: Record<string, string | undefined> = { architecture: undefined, scripts: 'scripts' };
/**
 * Packages whose src/ root is one folder of modules (the server): a test at their test/'s root may be named after the
 * behaviour it covers, as in any folder.
 */
const ROOT_IS_A_FOLDER = ['control-api'];
const SUPPORT = 'test/support/';
const OTHER_CODE = ['test/global-setup.ts'];
const RIG = /^packages\/agent\/test\/harnesses\/([^/]+)\/rig\.ts$/;
const PACKAGE_TEST = /^packages\/([^/]+)\/test\/(.+)$/;

const isTest = (file: string): boolean => file.endsWith('.test.ts') || file.endsWith('.record.ts');
const isCode = (file: string): boolean => /\.(ts|mts|cts|js|mjs|cjs)$/.test(file);

/**
 * What is out of place among `files` (paths relative to the repository, `/`-separated); `exists(p)` says whether a
 * folder or file exists at `p`, relative to the repository; `testable(name)` names the packages whose sources the
 * package's tests may mirror (itself and what it depends on).
 */
function layoutProblems(
  files: readonly string[],
  exists: (p: string) => boolean,
  testable: (pkg: string) => string[],
): string[] {
  const out: string[] = [];
  for (const file of files) {
    if (file.startsWith(SUPPORT)) {
      if (isTest(file)) out.push(`${file}: a test in test/support/ (helpers only)`);
      continue;
    }
    const inPackage = PACKAGE_TEST.exec(file);
    if (inPackage === null) {
      const top = file.split('/')[1]!;
      if (!isTest(file)) {
        if (isCode(file) && !OTHER_CODE.includes(file)) out.push(`${file}: a helper outside test/support/`);
      } else if (!(top in ROOT_FOLDERS) || file.split('/').length < 3) {
        out.push(`${file}: the repository's test/ holds no package's tests (they live in packages/<name>/test/)`);
      } else {
        const mirror = ROOT_FOLDERS[top];
        const dir = path.posix.dirname(file).split('/').slice(2);
        if (mirror !== undefined && !exists([mirror, ...dir].join('/')))
          out.push(`${file}: ${[mirror, ...dir].join('/')}/ does not exist`);
      }
      continue;
    }
    const [, pkg, rel] = inPackage as unknown as [string, string, string];
    const dir = path.posix.dirname(rel);
    const top = dir.split('/')[0]!;
    const sources = testable(pkg).map((p) => `packages/${p}/src`);
    if (!isTest(rel)) {
      const rig = RIG.exec(file);
      if (rig !== null) {
        if (!exists(`packages/agent/src/harnesses/${rig[1]}`))
          out.push(`${file}: a rig for packages/agent/src/harnesses/${rig[1]}/, which does not exist`);
      } else if (isCode(rel)) out.push(`${file}: a helper outside test/support/`);
      continue;
    }
    if (dir === '.' && ROOT_IS_A_FOLDER.includes(pkg)) continue;
    if (dir === '.') {
      const module = `${path.posix.basename(rel).replace(/(\.property)?\.test\.ts$|\.record\.ts$/, '')}.ts`;
      if (!sources.some((src) => exists(`${src}/${module}`)))
        out.push(`${file}: at its test/'s root, but no ${module} at the root of ${sources.join(' or ')}`);
    } else if (top in (EXCEPTIONS[pkg] ?? {})) {
      const mirror = EXCEPTIONS[pkg]![top];
      const rest = dir.split('/').slice(1);
      if (mirror !== undefined && !exists([mirror, ...rest].join('/')))
        out.push(`${file}: ${[mirror, ...rest].join('/')}/ does not exist`);
    } else if (!sources.some((src) => exists(`${src}/${dir}`)))
      out.push(`${file}: ${dir}/ is in none of ${sources.join(', ')}`);
  }
  return out;
}

/** The package itself and the workspace packages its package.json depends on (in any way), by folder. */
function testable(pkg: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'packages', pkg, 'package.json'), 'utf8')) as Record<
    string,
    Record<string, string> | undefined
  >;
  const names = new Set(
    ['dependencies', 'devDependencies', 'peerDependencies'].flatMap((k) => Object.keys(manifest[k] ?? {})),
  );
  const folders = readdirSync(path.join(repoRoot, 'packages')).filter((folder) => {
    const name = (
      JSON.parse(readFileSync(path.join(repoRoot, 'packages', folder, 'package.json'), 'utf8')) as { name: string }
    ).name;
    return names.has(name);
  });
  return [pkg, ...folders];
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
  it('mirrors the sources, with shared helpers in test/support/ only', () => {
    const files = [
      ...filesUnder('test'),
      ...readdirSync(path.join(repoRoot, 'packages')).flatMap((pkg) => filesUnder(`packages/${pkg}/test`)),
    ];
    expect(files.filter(isTest).length).toBeGreaterThan(100);
    expect(layoutProblems(files, inRepo, testable)).toEqual([]);
  });

  it('the rule sees what is out of place', () => {
    const exists = (p: string) =>
      [
        'packages/agent/src/drain',
        'packages/agent/src/harnesses/claude',
        'packages/agent/src/config.ts',
        'packages/contract/src/util',
        'packages/agent/bin',
        'scripts',
      ].includes(p);
    const deps = (pkg: string) => (pkg === 'agent' ? ['agent', 'contract'] : [pkg]);
    expect(
      layoutProblems(
        [
          'packages/agent/test/drain/build.test.ts',
          'packages/agent/test/harnesses/claude/session.test.ts',
          'packages/agent/test/config.test.ts',
          'packages/agent/test/util/session-id.test.ts',
          'packages/agent/test/e2e/anything.test.ts',
          'packages/agent/test/bin/node-version.test.ts',
          'test/support/recorded-sessions.ts',
          'test/global-setup.ts',
          'test/scripts/compat.test.ts',
          'test/architecture/rule.test.ts',
          'packages/agent/test/harnesses/claude/golden/export.md',
          'packages/agent/test/harnesses/claude/rig.ts',
          // Out of place:
          'packages/agent/test/sessions-cli/export.test.ts',
          'packages/agent/test/harnesses/codex/session.test.ts',
          'packages/agent/test/schema.test.ts',
          'packages/contract/test/drain/build.test.ts',
          'packages/agent/test/drain/helpers.ts',
          'test/support/leftover.test.ts',
          'test/drain/build.test.ts',
          'packages/agent/test/harnesses/codex/rig.ts',
          'packages/agent/test/harnesses/claude/helpers.ts',
          'packages/agent/test/harnesses/rig.ts',
        ],
        exists,
        deps,
      ),
    ).toEqual([
      'packages/agent/test/sessions-cli/export.test.ts: sessions-cli/ is in none of packages/agent/src, ' +
        'packages/contract/src',
      'packages/agent/test/harnesses/codex/session.test.ts: harnesses/codex/ is in none of packages/agent/src, ' +
        'packages/contract/src',
      "packages/agent/test/schema.test.ts: at its test/'s root, but no schema.ts at the root of packages/agent/src " +
        'or packages/contract/src',
      'packages/contract/test/drain/build.test.ts: drain/ is in none of packages/contract/src',
      'packages/agent/test/drain/helpers.ts: a helper outside test/support/',
      'test/support/leftover.test.ts: a test in test/support/ (helpers only)',
      "test/drain/build.test.ts: the repository's test/ holds no package's tests (they live in packages/<name>/test/)",
      'packages/agent/test/harnesses/codex/rig.ts: a rig for packages/agent/src/harnesses/codex/, which does not exist',
      'packages/agent/test/harnesses/claude/helpers.ts: a helper outside test/support/',
      'packages/agent/test/harnesses/rig.ts: a helper outside test/support/',
    ]);
  });

  it('the paths the test configuration names exist', () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const named = pkg.scripts['test:hermetic']!.split(/\s+/).filter((w) => w.startsWith('packages/'));
    expect(named.length).toBeGreaterThan(0);
    for (const config of [
      'packages/agent/vitest.config.ts',
      'packages/agent/vitest.certify.config.ts',
      'packages/agent/vitest.record.config.ts',
    ]) {
      const dir = path.posix.dirname(config);
      for (const m of readFileSync(path.join(repoRoot, config), 'utf8').matchAll(/'(test\/[^'*]*?)(?:\*\*[^']*)?'/g))
        named.push(`${dir}/${m[1]!.replace(/\/$/, '')}`);
    }
    const missing = named.filter(
      (p) => !inRepo(p) || (p.endsWith('.ts') && !statSync(path.join(repoRoot, p)).isFile()),
    );
    expect(missing).toEqual([]);
  });
});
