/**
 * scripts/with-node24 runs its command in the caller's folder (it installs in the checkout, and only that), and finds
 * the checkout through a symbolic link to it.
 */
import { mkdir, realpath, symlink } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTestHome, type TestHome } from '../support/context.js';
import { plainPath, runFile, WITH_NODE24 } from '../support/launcher.js';

let t: TestHome;
let work: string;

beforeEach(async () => {
  t = await makeTestHome();
  work = path.join(t.home, 'work');
  await mkdir(work);
});
afterEach(async () => t.cleanup());

describe('scripts/with-node24', () => {
  it("runs the command in the caller's folder, also through a relative link", async () => {
    const env = { ...t.env, PATH: plainPath() };
    const direct = await runFile(WITH_NODE24, ['node', '-p', 'process.cwd()'], { env, cwd: work });
    expect(direct).toEqual({ code: 0, stdout: `${await realpath(work)}\n`, stderr: '' });

    await symlink(path.relative(t.home, WITH_NODE24), path.join(t.home, 'with-node24'));
    const linked = await runFile('../with-node24', ['node', '-p', 'process.cwd()'], { env, cwd: work });
    expect(linked).toEqual({ code: 0, stdout: `${await realpath(work)}\n`, stderr: '' });
  }, 120_000);
});
