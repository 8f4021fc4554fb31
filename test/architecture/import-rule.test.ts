/**
 * The import rule of src/ (ARCHITECTURE.md, "The import rule"), over the graph of relative imports — static, dynamic
 * and type-only alike (a type is a dependency too). A unit is a top-level folder of src/ or a file at its root, except
 * that src/harnesses/ is three kinds of unit: the registry (src/harnesses/index.ts), each harness folder
 * (src/harnesses/<name>/) and the harness contract (the other files of src/harnesses/).
 *
 * Layers, top to bottom; a unit imports its own layer or a lower one, never a higher one:
 *   entry          cli
 *   use cases      capture, drain, upload, sweep, reconcile, restore, resume, sessions, status, doctor, service, daemon,
 *                  demo, control-plane — between them only the edges in USE_CASE_EDGES
 *   infrastructure the harness registry, harness folders, harness contract, harness-kit, control-api, policy,
 *                  profiles, bundle, spool, lock, config, schema
 *   base           util, errors, context, logger
 * and further:
 *   - a harness folder is imported only by the registry (and from inside itself); it imports no other harness;
 *   - the harness kit imports no harness and not the registry: only the harness contract, the formats it reads and
 *     writes (bundle, schema) and the base layer;
 *   - the server (control-plane) imports only what it shares with the agent side — schema, errors, util, bundle,
 *     profiles (+ SERVER_EXCEPTIONS) — and only the entry point and the demo import it;
 *   - no cycle between units, except those in CYCLES_ALLOWED;
 *   - no import circle between files, except those in FILE_CIRCLES_ALLOWED: a file in a circle cannot be read, moved
 *     or loaded lazily without the others.
 * The capture hook's own graph (no crypto at start-up) is test/capture/hook-imports.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/context.js';

interface Edge {
  /** Importing file, relative to the repository (`src/drain/build.ts`). */
  from: string;
  /** Imported file, relative to the repository, `.ts` (`src/spool/index.ts`). */
  to: string;
}

const ENTRY = ['cli'];
const USE_CASES = ['capture', 'drain', 'upload', 'sweep', 'reconcile', 'restore', 'resume', 'sessions', 'status', 'doctor', 'service', 'daemon', 'demo', 'control-plane'];
const BASE = ['util', 'errors', 'context', 'logger'];
const REGISTRY = 'harnesses/index';
const CONTRACT = 'harnesses';
/** What the harness kit may import besides itself: it sits between the contract and the harness folders. */
const KIT_MAY_IMPORT = [...BASE, CONTRACT, 'bundle', 'schema'];

/** Use case → use case: each a deliberate dependency. A new one is added here and in ARCHITECTURE.md. */
const USE_CASE_EDGES: Record<string, string[]> = {
  drain: ['capture', 'upload'], // the drain appends to the capture log; it hands bundles to the uploader
  resume: ['restore', 'drain'], // restores the chosen bundle; reads the repository the way a capture does
  daemon: ['reconcile', 'sweep'], // the scheduled reconcile; the idle sweep and the agent's backfill
  sweep: ['capture', 'drain', 'reconcile'], // logs what it spools; remembers captures as the drain does, drains backfill's batches; captures what reconcile would hook
  service: ['daemon', 'reconcile'], // the unit runs the daemon; install reconciles first
  status: ['daemon', 'service', 'reconcile', 'sweep'], // reads the daemon's state, the service's, a dry reconcile, the sweep's cursors
  doctor: ['status', 'service', 'reconcile', 'sweep'], // the checks run on status's findings (sessions at risk among them)
  demo: ['control-plane', 'resume'], // the demo starts a local server and resumes from it
  'control-plane': ['sessions'], // search reads a completed bundle's conversation as `sessions export` does
  sessions: ['upload'], // a stored or imported session record is uploaded as a bundle is
};

/** What the server may import beyond the shared units, by file, with the reason. */
const SERVER_SHARED = ['schema', 'errors', 'util', 'bundle', 'profiles'];
const SERVER_EXCEPTIONS: Record<string, string> = {
  // Publishing a policy applies the same rules the agent applies when it reads one.
  'src/policy/validate.ts': 'the policy rules',
  // Search indexes what a session says as `sessions export` reads it: the harness's own transcript reader.
  'src/sessions/export.ts': 'the conversation of a bundle',
};
/** Units that may import the server: they start one. */
const SERVER_USERS = ['cli', 'demo'];

/** Cycles between units that are allowed, each as its sorted member list. */
const CYCLES_ALLOWED: string[][] = [
  ['errors', 'util'], // errors print through util/terminal-text; util's readers throw BlueError
  ['context', 'logger'], // the logger writes to the context's Output type
];

/** Import circles between files that are allowed, each as its sorted member list. */
const FILE_CIRCLES_ALLOWED: string[][] = [
  ['src/context.ts', 'src/logger.ts'], // the context makes the logger; the logger imports only the Output type back
];

/** The unit a file under src/ belongs to. */
function unitOf(file: string): string {
  const parts = file.replace(/\.ts$/, '').split('/').slice(1);
  if (parts.length === 1) return parts[0]!;
  if (parts[0] === 'harnesses') {
    if (parts.length === 2) return parts[1] === 'index' ? REGISTRY : CONTRACT;
    return `harnesses/${parts[1]}`;
  }
  return parts[0]!;
}

function layerOf(unit: string): number {
  if (ENTRY.includes(unit)) return 0;
  if (USE_CASES.includes(unit)) return 1;
  if (BASE.includes(unit)) return 3;
  return 2;
}

const isHarnessFolder = (unit: string): boolean => unit.startsWith('harnesses/') && unit !== REGISTRY;

/** Every way the rule is broken by these edges: one line per offending import, plus one per forbidden cycle or circle. */
function violations(edges: readonly Edge[]): string[] {
  const out: string[] = [];
  const units = new Map<string, Set<string>>();
  const files = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (from !== to) {
      if (!files.has(from)) files.set(from, new Set());
      files.get(from)!.add(to);
    }
    const a = unitOf(from);
    const b = unitOf(to);
    if (a === b) continue;
    if (!units.has(a)) units.set(a, new Set());
    units.get(a)!.add(b);
    const broken = (why: string) => out.push(`${from} imports ${to}: ${why}`);
    if (layerOf(b) < layerOf(a)) broken(`${a} may not import ${b}, a higher layer`);
    if (layerOf(a) === 1 && layerOf(b) === 1 && !(USE_CASE_EDGES[a] ?? []).includes(b)) broken(`${a} → ${b} is not a use-case edge of the rule`);
    if (isHarnessFolder(b) && a !== REGISTRY) broken(`only the registry (src/harnesses/index.ts) imports a harness folder`);
    if (isHarnessFolder(a) && b === REGISTRY) broken('a harness does not import the registry');
    if (a === 'harness-kit' && !KIT_MAY_IMPORT.includes(b)) broken('the harness kit imports only the contract, the formats and the base layer');
    if (a === 'control-plane' && !SERVER_SHARED.includes(b) && !(to in SERVER_EXCEPTIONS)) broken('the server imports only what it shares with the agent');
    if (b === 'control-plane' && !SERVER_USERS.includes(a)) broken('only the entry point and the demo import the server');
  }
  for (const cycle of cycles(units)) {
    if (!CYCLES_ALLOWED.some((allowed) => allowed.join() === cycle.join())) out.push(`cycle between units: ${cycle.join(', ')}`);
  }
  for (const circle of cycles(files)) {
    if (!FILE_CIRCLES_ALLOWED.some((allowed) => allowed.join() === circle.join())) out.push(`import circle between files: ${circle.join(', ')}`);
  }
  return out;
}

/** The strongly connected components of more than one node (Tarjan), each sorted: units, or files. */
function cycles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out;
}

// `import … from '…'` / `export … from '…'` (across lines), `import '…'`, and `import('…')`.
const STATIC = /^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The relative imports of one source file, resolved to repository paths. */
function importsOf(file: string, text: string): Edge[] {
  const specifiers = [...text.matchAll(STATIC)].map((m) => (m[1] ?? m[2])!).concat([...text.matchAll(DYNAMIC)].map((m) => m[1]!));
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => ({ from: file, to: path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, '.ts') }));
}

/** Every relative import of src/ (.ts and .tsx), each resolved to the file it names. */
function sourceGraph(): Edge[] {
  const edges: Edge[] = [];
  const files = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        files.add(rel);
        edges.push(...importsOf(rel, readFileSync(path.join(repoRoot, rel), 'utf8')));
      }
    }
  };
  walk('src');
  // `./page.js` names page.tsx when there is no page.ts.
  return edges.map((e) => (!files.has(e.to) && files.has(`${e.to}x`) ? { ...e, to: `${e.to}x` } : e));
}

describe('the import rule', () => {
  const graph = sourceGraph();

  it('src/ keeps it', () => {
    expect(violations(graph)).toEqual([]);
  });

  it('the graph holds the imports that are there: static, across lines, type-only and dynamic', () => {
    const has = (from: string, to: string) => graph.some((e) => e.from === from && e.to === to);
    expect(has('src/harnesses/index.ts', 'src/harnesses/claude/index.ts')).toBe(true);
    expect(has('src/harnesses/types.ts', 'src/bundle/input.ts')).toBe(true); // import type
    expect(has('src/capture/profiles.ts', 'src/profiles/index.ts')).toBe(true); // import()
    expect(has('src/profiles/index.ts', 'src/schema/generated/harness-names.ts')).toBe(true); // export … from
    expect(has('src/control-plane/routes.ts', 'src/control-plane/web/account.tsx')).toBe(true); // to a .tsx
    expect(has('src/control-plane/web/account.tsx', 'src/control-plane/route-context.ts')).toBe(true); // from a .tsx
    expect(importsOf('src/a/x.ts', "import {\n  a,\n  b,\n} from '../b/y.js';\nimport './z.js';")).toEqual([
      { from: 'src/a/x.ts', to: 'src/b/y.ts' },
      { from: 'src/a/x.ts', to: 'src/a/z.ts' },
    ]);
    // A comment or a string that mentions an import is not one.
    expect(importsOf('src/a/x.ts', " * import { a } from '../b/y.js'\nconst s = \"see './c.js'\";")).toEqual([]);
  });

  it.each<[string, Edge[], RegExp]>([
    ['base importing infrastructure', [{ from: 'src/util/fs.ts', to: 'src/spool/index.ts' }], /util may not import spool, a higher layer/],
    ['infrastructure importing a use case', [{ from: 'src/spool/index.ts', to: 'src/drain/build.ts' }], /spool may not import drain/],
    ['a use case importing the command line', [{ from: 'src/restore/index.ts', to: 'src/cli/output.ts' }], /restore may not import cli/],
    ['a use-case edge not in the rule', [{ from: 'src/restore/index.ts', to: 'src/daemon/state.ts' }], /restore → daemon is not a use-case edge/],
    ['a harness folder imported outside the registry', [{ from: 'src/reconcile/plan.ts', to: 'src/harnesses/claude/index.ts' }], /only the registry/],
    ['one harness importing another', [{ from: 'src/harnesses/codex/index.ts', to: 'src/harnesses/claude/transcript.ts' }], /only the registry/],
    ['a harness importing the registry', [{ from: 'src/harnesses/kimi/index.ts', to: 'src/harnesses/index.ts' }], /does not import the registry/],
    ['the kit importing a harness', [{ from: 'src/harness-kit/title.ts', to: 'src/harnesses/claude/transcript.ts' }], /the harness kit imports only/],
    ['the kit importing the registry', [{ from: 'src/harness-kit/title.ts', to: 'src/harnesses/index.ts' }], /the harness kit imports only/],
    ['the kit importing the rest of the agent', [{ from: 'src/harness-kit/title.ts', to: 'src/policy/validate.ts' }], /the harness kit imports only/],
    ['the server importing the agent side', [{ from: 'src/control-plane/routes.ts', to: 'src/spool/index.ts' }], /the server imports only/],
    ['the agent side importing the server', [{ from: 'src/drain/upload.ts', to: 'src/control-plane/server.ts' }], /only the entry point and the demo/],
    [
      'a cycle between units',
      [
        { from: 'src/lock/lock.ts', to: 'src/config.ts' },
        { from: 'src/config.ts', to: 'src/lock/liveness.ts' },
      ],
      /cycle between units: config, lock/,
    ],
    [
      'an import circle between files of one unit',
      [
        { from: 'src/policy/remote.ts', to: 'src/policy/resolve.ts' },
        { from: 'src/policy/resolve.ts', to: 'src/policy/remote.ts' },
      ],
      /import circle between files: src\/policy\/remote.ts, src\/policy\/resolve.ts/,
    ],
    [
      'an import circle through three files',
      [
        { from: 'src/control-plane/routes.ts', to: 'src/control-plane/web/account.tsx' },
        { from: 'src/control-plane/web/account.tsx', to: 'src/control-plane/web/http.ts' },
        { from: 'src/control-plane/web/http.ts', to: 'src/control-plane/routes.ts' },
      ],
      // In the real graph the circle takes in every page that routes.ts and web/http.ts sit between.
      /import circle between files: (.+, )?src\/control-plane\/routes.ts, (.+, )?src\/control-plane\/web\/account.tsx, (.+, )?src\/control-plane\/web\/http.ts/,
    ],
  ])('is broken by %s', (_, bad, message) => {
    expect(violations(bad).join('\n')).toMatch(message);
    // Added to the real graph, the same edges are caught there too.
    expect(violations([...graph, ...bad]).join('\n')).toMatch(message);
  });

  it('allows what it says it allows', () => {
    expect(
      violations([
        { from: 'src/cli/main.ts', to: 'src/control-plane/server.ts' },
        { from: 'src/drain/upload.ts', to: 'src/upload/index.ts' },
        { from: 'src/harnesses/index.ts', to: 'src/harnesses/opencode/index.ts' },
        { from: 'src/harnesses/opencode/index.ts', to: 'src/harness-kit/title.ts' },
        { from: 'src/harness-kit/title.ts', to: 'src/harnesses/types.ts' },
        { from: 'src/harness-kit/title.ts', to: 'src/bundle/transcript.ts' },
        { from: 'src/control-plane/admin.ts', to: 'src/policy/validate.ts' },
        { from: 'src/errors.ts', to: 'src/util/terminal-text.ts' },
        { from: 'src/util/fs.ts', to: 'src/errors.ts' },
        { from: 'src/context.ts', to: 'src/logger.ts' },
        { from: 'src/logger.ts', to: 'src/context.ts' },
      ]),
    ).toEqual([]);
  });
});
