/**
 * blue-agent installed without the Control API's package: its built files alone, where @blue-agent/control-api cannot
 * be found. `control-plane` and `demo` say how to add the package; the rest of the CLI does not need it.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRoot, makeTestHome, type TestHome } from '../../../test/support/context.js';
import { controlApiMissing } from '../src/control-api-package.js';

const run = promisify(execFile);

describe('without the Control API package', () => {
  let alone: string;
  let t: TestHome;

  beforeAll(async () => {
    // What `npm install -g` of blue-agent's package puts in place (bin, dist, profiles, demo), outside the workspace.
    alone = await mkdtemp(path.join(tmpdir(), 'blue-agent-alone-'));
    for (const part of ['bin', 'dist', 'profiles', 'demo', 'package.json'])
      await cp(path.join(agentRoot, part), path.join(alone, 'blue-agent', part), { recursive: true });
    t = await makeTestHome();
  });
  afterAll(async () => {
    await t.cleanup();
    await rm(alone, { recursive: true, force: true });
  });

  const cli = async (args: string[]) => {
    try {
      const { stdout, stderr } = await run(
        process.execPath,
        [path.join(alone, 'blue-agent', 'bin', 'blue-agent.js'), ...args],
        { env: t.env, cwd: t.home, timeout: 60_000 },
      );
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  };

  it('control-plane names the package to install, with its own code', async () => {
    const result = await cli(['control-plane', 'users', 'list', '--json']);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({
      ok: false,
      error: {
        code: 'CONTROL_API_NOT_INSTALLED',
        hint: expect.stringContaining('npm install -g @blue-agent/control-api'),
      },
    });
  });

  it('the agent works without it', async () => {
    const result = await cli(['profiles', 'check']);
    expect(result).toMatchObject({ code: 0, stdout: expect.stringContaining('consistent') });
  });
});

describe('controlApiMissing', () => {
  it('leaves every other error as it was', () => {
    const other = Object.assign(new Error("Cannot find package 'undici' imported from /x.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    expect(controlApiMissing(other)).toBe(other);
    const plain = new Error('@blue-agent/control-api broke');
    expect(controlApiMissing(plain)).toBe(plain);
  });
});
