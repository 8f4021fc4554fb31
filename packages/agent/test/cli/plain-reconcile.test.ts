import { build } from 'esbuild';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput, type Context } from '../../src/context.js';
import { buildProgram, main } from '../../src/cli/main.js';
import { plainReconcileArgs, run, runPlainReconcile } from '../../src/cli/plain-reconcile.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';

/** What commander hands the reconcile action for `argv`, or the code of its parse error. */
async function commanderReconcileArgs(ctx: Context, argv: readonly string[]): Promise<unknown> {
  const program = buildProgram(ctx, { exitCode: 0 });
  let got: unknown = 'no reconcile';
  program.commands
    .find((c) => c.name() === 'reconcile')!
    .action((opts: Record<string, unknown>) => {
      got = { ...opts };
    });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    return (error as { code?: string }).code;
  }
  return got;
}

let t: TestHome;
beforeEach(async () => {
  t = await makeTestHome();
});
afterEach(async () => t.cleanup());

describe('a plain reconcile', () => {
  it.each([
    [['reconcile']],
    [['reconcile', '--json']],
    [['reconcile', '--dry-run', '--json', '--dry-run']],
    [['reconcile', '--policy', 'a.yaml', '--policy', 'b.yaml']],
    [['reconcile', '--harness', 'claude', '--json', '--harness', 'codex', '--policy', 'p.yaml']],
  ])('reads %j exactly as commander does', async (argv) => {
    const fast = plainReconcileArgs(argv);
    expect(fast).toBeDefined();
    expect(fast).toEqual(await commanderReconcileArgs(t.ctx, argv));
  });

  it.each([
    [[]],
    [['--version']],
    [['--json', 'reconcile']],
    [['reconcile', '--help']],
    [['reconcile', '-h']],
    [['reconcile', 'extra']],
    [['reconcile', '--policy']],
    [['reconcile', '--policy', '--json']],
    [['reconcile', '--policy=p.yaml']],
    [['reconcile', '--harness', 'nope']],
    [['reconcile', '--harness']],
    [['reconcile', '--jsonx']],
    [['reconcile', '--', '--json']],
    [['profiles', 'list']],
  ])('leaves %j to the full program', (argv) => {
    expect(plainReconcileArgs(argv)).toBeUndefined();
  });

  it(
    'imports neither node:zlib, node:child_process, node:tty nor node:crypto: what a reconcile that changes ' +
      'nothing never uses, it never loads',
    async () => {
      const root = path.join(import.meta.dirname, '../..');
      const { metafile } = await build({
        absWorkingDir: root,
        entryPoints: ['src/cli/plain-reconcile.ts'],
        bundle: true,
        write: false,
        metafile: true,
        platform: 'node',
        format: 'cjs',
        outdir: 'out',
        mainFields: ['module', 'main'],
        conditions: ['source'],
        supported: { 'dynamic-import': false },
        external: ['undici', 'execa'],
        logLevel: 'silent',
      });
      const importers = Object.entries(metafile.inputs).filter(([, input]) =>
        input.imports.some((i) => /^node:(zlib|child_process|tty|crypto)$/.test(i.path)),
      );
      expect(Object.keys(metafile.inputs)).toContain('../contract/src/harnesses/codex/transcript.ts');
      expect(importers.map(([file]) => file)).toEqual([]);
    },
  );

  it('is built without commander or the full program', async () => {
    const source = await readFile(path.join(import.meta.dirname, '../../src/cli/plain-reconcile.ts'), 'utf8');
    expect(source).not.toMatch(/^import[^;]*'commander'/m);
    expect(source).not.toMatch(/^import[^;]*'\.\/main\.js'/m);
    await expect(run(['reconcile', '--help'])).resolves.toBeUndefined();
  });

  it.each([[[]], [['--json']]])('reports a failed reconcile %j as the full program does', async (extra) => {
    const policy = path.join(t.root, 'policy.yaml');
    await writeFile(policy, 'revision: [\n');
    const outcome = async (how: (argv: readonly string[], ctx: Context) => Promise<number>) => {
      const stdout = bufferOutput();
      const stderr = bufferOutput();
      const code = await how(['reconcile', '--policy', policy, ...extra], t.context({ stdout, stderr }));
      return { code, stdout: stdout.text(), stderr: stderr.text() };
    };
    const plain = await outcome((argv, ctx) => runPlainReconcile(ctx, plainReconcileArgs(argv)!, argv));
    expect(plain.code).toBe(1);
    expect(plain.stdout + plain.stderr).toMatch(/POLICY/);
    expect(plain).toEqual(await outcome(main));
  });
});
