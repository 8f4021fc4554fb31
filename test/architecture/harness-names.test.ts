/**
 * One harness = one folder: outside its folder under the agent's src/harnesses/, no source names a harness — not as
 * an identifier, a string or prose. The rule:
 *   - scanned: every file under the packages' src/ and scripts/ (the product's source, its build and certification
 *     scripts);
 *   - allowed: the agent's harnesses/<name>/ (the harness's own folder) and harnesses/index.ts (the registry: one
 *     import and one entry per harness, nothing else); the contract's harnesses/<name>/ (the harness's transcript
 *     formats) and harnesses/index.ts (the transcript readers' registry, held like the agent's), and its
 *     schema/generated/ (`npm run gen`);
 *   - not scanned: data that describes harnesses — profiles/*.yaml, harness-versions.lock.json, schemas/ (their
 *     harness enum is generated from profiles/), fixtures/, demo/ recordings, docs and README.
 * A name matches case-insensitively anywhere (`Claude Code`, `CODEX_HOME`, `kimiUserTurn` all count).
 *
 * The tests follow the same rule, for what a new harness would otherwise have to be added to. A shared test may use
 * a harness as its example input; it may not enumerate harnesses. The rule on the code of the tests:
 *   - allowed: the agent's test/harnesses/<name>/ (the harness's tests, its rig rig.ts, its recording), the
 *     contract's test/harnesses/<name>/ (its transcript readers' tests) and test/support/rigs.ts (the rig registry:
 *     one import and one entry per harness, nothing else); data files (golden files) are not code, and this file's
 *     cases show enumerations on purpose;
 *   - everywhere else, no enumeration of harnesses: no map keyed by harness name (an object literal typed
 *     `Record<HarnessName, …>`, or a map over a union of names), no lookup in an object literal keyed by harness names,
 * no `case '<name>':`, no list or union
 *     of names that holds every harness or every harness with a locked CLI, and no file that compares values with
 *     two or more harness names (an if-chain or a ternary over harnesses). Iterate the registry (`HARNESSES`, `RIGS`,
 *     the lock file) and ask the harness's rig instead.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADAPTERS } from '../../packages/agent/src/harnesses/index.js';
import { HARNESSES } from '../../packages/agent/src/harnesses/names.js';
import { TRANSCRIPT_READERS } from '../../packages/contract/src/harnesses/index.js';
import { RIGS, lockedHarnesses } from '../support/rigs.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCANNED = ['packages/contract/src', 'packages/agent/src', 'packages/control-api/src', 'scripts'];
const GENERATED = 'packages/contract/src/schema/generated/';
const HARNESS_FOLDERS = 'packages/agent/src/harnesses';
const REGISTRY = `${HARNESS_FOLDERS}/index.ts`;
/** The contract's side of each harness: its transcript formats, one folder each, and their registry. */
const CONTRACT_HARNESS_FOLDERS = 'packages/contract/src/harnesses';
const CONTRACT_REGISTRY = `${CONTRACT_HARNESS_FOLDERS}/index.ts`;
/** Where tests are: the repository's and each package's. */
const TESTS = ['test', 'packages/contract/test', 'packages/agent/test', 'packages/control-api/test'];
const HARNESS_TESTS = 'packages/agent/test/harnesses';
const CONTRACT_HARNESS_TESTS = 'packages/contract/test/harnesses';
const RIG_REGISTRY = 'test/support/rigs.ts';
const THIS_FILE = 'test/architecture/harness-names.test.ts';
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await filesUnder(rel)));
    else if (entry.isFile()) out.push(rel);
  }
  return out;
}

const names = new RegExp(HARNESSES.join('|'), 'gi');

function allowed(file: string): boolean {
  return (
    file.startsWith(GENERATED) ||
    file === REGISTRY ||
    file === CONTRACT_REGISTRY ||
    HARNESSES.some(
      (h) => file.startsWith(`${HARNESS_FOLDERS}/${h}/`) || file.startsWith(`${CONTRACT_HARNESS_FOLDERS}/${h}/`),
    )
  );
}

/**
 * The enumerations of harnesses in one test file's text (`file: line: text` each): see the rule above. `every` are the
 * sets a new harness joins (all harnesses; those with a locked CLI).
 */
export function enumerations(file: string, text: string, every: readonly (readonly string[])[]): string[] {
  const name = `(?:${HARNESSES.join('|')})`;
  const quoted = new RegExp(`['"\`](${name})['"\`]`, 'gi');
  const keyedMap = new RegExp(`Record<\\s*(?:HarnessName\\b[^>]*>\\s*=\\s*\\{|['"\`]${name}['"\`])`, 'i');
  const switchCase = new RegExp(`\\bcase\\s+['"\`]${name}['"\`]`, 'i');
  const lookup = new RegExp(`\\b${name}\\s*:.*\\}\\s*\\[\\s*[A-Za-z_$][\\w$.]*\\s*\\]`, 'i');
  const compared = new RegExp(`(?:===|!==)\\s*['"\`](${name})['"\`]|['"\`](${name})['"\`]\\s*(?:===|!==)`, 'gi');
  const found: string[] = [];
  const comparisons = new Map<string, string>();
  text.split('\n').forEach((line, i) => {
    const at = `${file}:${i + 1}: ${line.trim().slice(0, 120)}`;
    const names = new Set([...line.matchAll(quoted)].map((m) => m[1]!.toLowerCase()));
    if (
      keyedMap.test(line) ||
      switchCase.test(line) ||
      lookup.test(line) ||
      every.some((set) => set.length > 1 && set.every((h) => names.has(h)))
    )
      found.push(at);
    for (const m of line.matchAll(compared)) {
      const h = (m[1] ?? m[2])!.toLowerCase();
      if (!comparisons.has(h)) comparisons.set(h, at);
    }
  });
  if (comparisons.size >= 2) found.push(...comparisons.values());
  return found;
}

function allowedInTests(file: string): boolean {
  return (
    file === RIG_REGISTRY ||
    HARNESSES.some(
      (h) => file.startsWith(`${HARNESS_TESTS}/${h}/`) || file.startsWith(`${CONTRACT_HARNESS_TESTS}/${h}/`),
    )
  );
}

describe('harness names', () => {
  it('appear in the sources and scripts/ only inside the harness folders, the registry, generated code', async () => {
    const found: string[] = [];
    let scanned = 0;
    for (const dir of SCANNED) {
      for (const file of await filesUnder(dir)) {
        scanned += 1;
        if (allowed(file)) continue;
        const lines = (await readFile(path.join(ROOT, file), 'utf8')).split('\n');
        lines.forEach((line, i) => {
          if (line.match(names) !== null) found.push(`${file}:${i + 1}: ${line.trim().slice(0, 120)}`);
        });
      }
    }
    expect(scanned).toBeGreaterThan(200);
    expect(found).toEqual([]);
  });

  it('appear in the registry only as one import and one entry per harness', async () => {
    const lines = (await readFile(path.join(ROOT, REGISTRY), 'utf8'))
      .split('\n')
      .filter((line) => line.match(names) !== null);
    const expected = HARNESSES.flatMap((h) => [`import { ${h} } from './${h}/index.js';`, `  ${h},`]);
    expect(lines.sort()).toEqual(expected.sort());
    expect(Object.keys(ADAPTERS)).toEqual([...HARNESSES]);
  });

  it("appear in the contract's registry only as one import and one entry per harness", async () => {
    const lines = (await readFile(path.join(ROOT, CONTRACT_REGISTRY), 'utf8'))
      .split('\n')
      .filter((line) => line.match(names) !== null);
    const expected = HARNESSES.flatMap((h) => [
      `import { ${h}TranscriptReader } from './${h}/transcript.js';`,
      `  ${h}: ${h}TranscriptReader,`,
    ]);
    expect(lines.sort()).toEqual(expected.sort());
    expect(Object.keys(TRANSCRIPT_READERS)).toEqual([...HARNESSES]);
  });

  it('the scan sees a name where one is (the rule is not vacuous)', () => {
    for (const h of HARNESSES) expect(`const x = '${h.toUpperCase()}_HOME';`.match(names)).not.toBeNull();
    const [a] = HARNESSES as [string];
    // Inside a harness's folders and the registries only: the rest of the contract is scanned like the agent.
    for (const file of [
      `${HARNESS_FOLDERS}/${a}/session.ts`,
      `${CONTRACT_HARNESS_FOLDERS}/${a}/transcript.ts`,
      `${CONTRACT_HARNESS_FOLDERS}/${a}/legacy/transcript.ts`,
      REGISTRY,
      CONTRACT_REGISTRY,
    ])
      expect(allowed(file), file).toBe(true);
    for (const file of [
      `${CONTRACT_HARNESS_FOLDERS}/types.ts`,
      `${CONTRACT_HARNESS_FOLDERS}/${a}.ts`,
      `${CONTRACT_HARNESS_FOLDERS}/other/transcript.ts`,
      'packages/contract/src/harness-kit/transcript.ts',
      'packages/contract/src/bundle/transcript.ts',
      'packages/control-api/src/search-text.ts',
    ])
      expect(allowed(file), file).toBe(false);
  });
});

describe('harnesses in the tests', () => {
  const every = [[...HARNESSES], lockedHarnesses()];

  it('are enumerated only in their own test folders and the rig registry', async () => {
    const found: string[] = [];
    for (const file of (await Promise.all(TESTS.map(filesUnder))).flat()) {
      // This file's cases show enumerations on purpose.
      if (!CODE.test(file) || allowedInTests(file) || file === THIS_FILE) continue;
      found.push(...enumerations(file, await readFile(path.join(ROOT, file), 'utf8'), every));
    }
    expect(found).toEqual([]);
  });

  it('appear in the rig registry only as one import and one entry per harness', async () => {
    const lines = (await readFile(path.join(ROOT, RIG_REGISTRY), 'utf8'))
      .split('\n')
      .filter((line) => line.match(names) !== null);
    const expected = HARNESSES.flatMap((h) => [
      `import { ${h} } from '../../${HARNESS_TESTS}/${h}/rig.js';`,
      `  ${h},`,
    ]);
    expect(lines.sort()).toEqual(expected.sort());
    expect(Object.keys(RIGS)).toEqual([...HARNESSES]);
    for (const [key, rig] of Object.entries(RIGS)) expect(rig.name).toBe(key);
  });

  it('the scan sees an enumeration where one is, and lets an example input be', () => {
    const [a, b] = HARNESSES as [string, string];
    const q = (h: string) => `'${h}'`;
    const violations = [
      `const PROFILE: Record<HarnessName, string> = { ${a}: 'x' };`,
      `const PROFILE: Record<HarnessName, string> = {`,
      `const T: Record<${q(a)} | ${q(b)}, number> = x;`,
      `switch (harness) { case ${q(a)}: return 1; }`,
      `const dir = { ${a}: '.x', ${b}: '.y' }[harness];`,
      `for (const h of [${HARNESSES.map(q).join(', ')}]) run(h);`,
      `type Locked = ${lockedHarnesses().map(q).join(' | ')};`,
    ];
    for (const line of violations) expect(enumerations('t.ts', line, every), line).toHaveLength(1);
    // An if-chain over harnesses: two names compared in one file.
    expect(enumerations('t.ts', `if (h === ${q(a)}) x();\nelse if (h === ${q(b)}) y();\n`, every)).toHaveLength(2);
    const examples = [
      `const VERSIONS: Record<HarnessName, string> = versionLines();`,
      `await reconcile(ctx, { harnesses: [${q(a)}] });`,
      `const found = report.harnesses.find((h) => h.harness === ${q(a)});`,
      `await run([${q(a)}, ${q(b)}]);`,
      `const settings = path.join(home, '.${a}', 'settings.json');`,
    ];
    expect(examples.flatMap((line) => enumerations('t.ts', line, every))).toEqual([]);
    expect(allowedInTests(`${HARNESS_TESTS}/${a}/rig.ts`) && allowedInTests(RIG_REGISTRY)).toBe(true);
    expect(allowedInTests(`${CONTRACT_HARNESS_TESTS}/${a}/transcript.test.ts`)).toBe(true);
    expect(allowedInTests('packages/contract/test/harness-kit/transcript.test.ts')).toBe(false);
    expect(
      allowedInTests('test/support/fixture-bundles.ts') || allowedInTests(`packages/agent/test/sessions/${a}.test.ts`),
    ).toBe(false);
  });
});
