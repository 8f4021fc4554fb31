/**
 * A bare `run` starts from src/cli/agent.ts (dist/agent.js) without commander: the same agent, and a failure to start
 * reported exactly as the full program reports it.
 */
import { build } from 'esbuild';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bufferOutput, type Context } from '../../src/context.js';
import { run } from '../../src/cli/agent.js';
import { main } from '../../src/cli/main.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';

describe('the bare run entry', () => {
  let t: TestHome;
  beforeEach(async () => {
    t = await makeTestHome();
  });
  afterEach(async () => t.cleanup());

  it('is built without commander or the full program', async () => {
    const source = await readFile(path.join(import.meta.dirname, '../../src/cli/agent.ts'), 'utf8');
    expect(source).not.toMatch(/^import[^;]*'commander'/m);
    expect(source).not.toMatch(/^import[^;]*'\.\/main\.js'/m);
  });

  it('loads neither node:crypto, undici nor chokidar: what it imports stays resident as long as it runs', async () => {
    const root = path.join(import.meta.dirname, '../..');
    const { metafile } = await build({
      absWorkingDir: root,
      entryPoints: ['src/cli/agent.ts'],
      bundle: true,
      write: false,
      metafile: true,
      platform: 'node',
      format: 'esm',
      splitting: true,
      outdir: 'out',
      mainFields: ['module', 'main'],
      conditions: ['source'],
      logLevel: 'silent',
    });
    // What the agent's own process loads: static imports only (the dynamic ones are its step children's).
    const loaded = new Set<string>();
    const next = ['src/cli/agent.ts'];
    for (let file = next.pop(); file !== undefined; file = next.pop()) {
      if (loaded.has(file)) continue;
      loaded.add(file);
      for (const i of metafile.inputs[file]?.imports ?? [])
        if (i.kind === 'import-statement' || i.kind === 'require-call') next.push(i.path);
    }
    expect(loaded).toContain('src/daemon/index.ts');
    expect(loaded).toContain('src/control-api/stream.ts');
    expect([...loaded].filter((f) => /^(node:)?crypto$|node_modules\/(undici|chokidar)\//.test(f))).toEqual([]);
  });

  it('reports an agent that cannot start as the full program does', async () => {
    const config = t.context().paths.configFile;
    await mkdir(path.dirname(config), { recursive: true });
    await writeFile(config, 'drain_schedule: "every now and then"\n');
    const outcome = async (how: (ctx: Context) => Promise<number>) => {
      const stdout = bufferOutput();
      const stderr = bufferOutput();
      const code = await how(t.context({ stdout, stderr }));
      return { code, stdout: stdout.text(), stderr: stderr.text() };
    };
    const bare = await outcome((ctx) => run(ctx));
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain('CONFIG_INVALID');
    expect(bare).toEqual(await outcome((ctx) => main(['run'], ctx)));
  });
});
