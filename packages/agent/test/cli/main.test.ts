/**
 * The entry point only collects the commands' declarations (src/cli/commands/): every declaration is in the program,
 * and starting the program loads none of the commands' own modules, so that each command loads only what it runs.
 */
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandDeclaration } from '../../src/cli/declaration.js';
import { buildProgram } from '../../src/cli/main.js';
import { agentRoot, makeTestHome, type TestHome } from '../../../../test/support/context.js';

const COMMANDS_DIR = 'src/cli/commands';
/** The files of src/cli/ the program is built from. */
const ENTRY = new Set(['src/cli/main.ts', 'src/cli/declaration.ts', 'src/cli/output.ts']);
/** The folders of the use cases, which only a command's run loads. */
const USE_CASE_NAMES = [
  'capture',
  'drain',
  'upload',
  'sweep',
  'reconcile',
  'restore',
  'resume',
  'sessions',
  'status',
  'doctor',
  'service',
  'daemon',
  'demo',
  'control-plane',
];
const USE_CASES = new RegExp(String.raw`^src\/(${USE_CASE_NAMES.join('|')})\/`);

let t: TestHome;
beforeAll(async () => {
  t = await makeTestHome();
});
afterAll(async () => t.cleanup());

const isDeclaration = (value: unknown): value is CommandDeclaration =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as CommandDeclaration).usage === 'string' &&
  typeof (value as CommandDeclaration).summary === 'string';

describe('the command line', () => {
  it('holds every command a file of src/cli/commands/ declares', async () => {
    const declared: string[] = [];
    for (const file of readdirSync(path.join(agentRoot, COMMANDS_DIR)).filter((f) => f.endsWith('.ts'))) {
      const module = (await import(path.join(agentRoot, COMMANDS_DIR, file))) as Record<string, unknown>;
      for (const value of Object.values(module)) if (isDeclaration(value)) declared.push(value.usage.split(' ')[0]!);
    }
    const program = buildProgram(t.ctx, { exitCode: 0 });
    expect(declared.length).toBeGreaterThan(10);
    expect(program.commands.map((c) => c.name()).sort()).toEqual(declared.sort());
  });

  it("loads none of the commands' own modules and no use case at start", async () => {
    const { metafile } = await build({
      absWorkingDir: agentRoot,
      entryPoints: ['src/cli/main.ts'],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      splitting: true,
      outdir: 'out',
      // The graph of src/ is what matters: dependencies are left out, which keeps the build short.
      packages: 'external',
      logLevel: 'silent',
    });
    // What starting the program loads: static imports only (a command's run imports its module dynamically).
    const loaded = new Set<string>();
    const next = ['src/cli/main.ts'];
    for (let file = next.pop(); file !== undefined; file = next.pop()) {
      if (loaded.has(file)) continue;
      loaded.add(file);
      for (const i of metafile.inputs[file]?.imports ?? [])
        if (i.kind === 'import-statement' || i.kind === 'require-call') next.push(i.path);
    }
    expect(loaded).toContain(`${COMMANDS_DIR}/status.ts`);
    const cli = [...loaded].filter(
      (f) => f.startsWith('src/cli/') && !f.startsWith(`${COMMANDS_DIR}/`) && !ENTRY.has(f),
    );
    expect(cli).toEqual([]);
    expect(
      [...loaded].filter(
        (f) => USE_CASES.test(f) || (f.startsWith('src/harnesses/') && f !== 'src/harnesses/names.ts'),
      ),
    ).toEqual([]);
  });
});
