/**
 * scripts/install-launcher puts the checkout's launcher on PATH as `blue-agent` (a link in ~/.local/bin, or --dir),
 * into a throwaway HOME here: it says what it did and what to add to PATH, changes nothing when run again, replaces
 * only a link, and --uninstall removes only its own link.
 */
import { lstat, mkdir, readFile, readlink, realpath, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTestHome, repoRoot, type TestHome } from '../support/context.js';
import { INSTALL_LAUNCHER, LAUNCHER, plainPath, runFile } from '../support/launcher.js';

let t: TestHome;
let env: Record<string, string>;
let bin: string;
let link: string;
let work: string;

beforeEach(async () => {
  t = await makeTestHome();
  env = { ...t.env, PATH: plainPath() };
  bin = path.join(t.home, '.local', 'bin');
  link = path.join(bin, 'blue-agent');
  work = path.join(t.root, 'work');
  await mkdir(work);
});
afterEach(async () => t.cleanup());

/** What the link points at: the launcher's own path, links in the checkout's path resolved. */
const TARGET = await realpath(LAUNCHER);
/** Each test starts the launcher a few times: bounded generously, for a slow machine. */
const SLOW = 180_000;
const VERSION = (JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string })
  .version;
const install = (args: string[] = [], pathVar = plainPath()) =>
  runFile(INSTALL_LAUNCHER, args, { env: { ...env, PATH: pathVar }, cwd: work });

describe('scripts/install-launcher', () => {
  it(
    'links ~/.local/bin/blue-agent to the launcher, says to add the folder to PATH, and then `blue-agent` runs ' +
      'from any folder',
    async () => {
      const first = await install();
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(`installed ${link} -> ${TARGET}\n`);
      expect(first.stdout).toContain(`blue-agent ${VERSION} runs\n`);
      expect(first.stdout).toContain(
        `${bin} is not on PATH: add it, e.g. with\n  echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.bashrc`,
      );
      expect(await readlink(link)).toBe(TARGET);

      const byName = await runFile('/bin/sh', ['-c', 'blue-agent --version'], {
        env: { ...env, PATH: `${bin}:${plainPath()}` },
        cwd: work,
      });
      expect(byName).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    },
    SLOW,
  );

  it(
    'changes nothing when run again, and says nothing of PATH once the folder is on it',
    async () => {
      expect((await install()).code).toBe(0);
      const again = await install([], `${bin}:${plainPath()}`);
      expect(again).toEqual({
        code: 0,
        stdout: `already installed: ${link} -> ${TARGET}\nblue-agent ${VERSION} runs\n`,
        stderr: '',
      });
    },
    SLOW,
  );

  it(
    'warns when another blue-agent comes first on PATH',
    async () => {
      const other = path.join(t.root, 'global');
      await mkdir(other);
      await writeFile(path.join(other, 'blue-agent'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
      const result = await install([], `${other}:${bin}:${plainPath()}`);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(
        `warning: another blue-agent comes first on PATH: ${path.join(other, 'blue-agent')}\n`,
      );
    },
    SLOW,
  );

  it(
    'replaces a link of that name, and leaves anything else there alone',
    async () => {
      await mkdir(bin, { recursive: true });
      await symlink('/nowhere/blue-agent', link);
      const replaced = await install();
      expect(replaced.code).toBe(0);
      expect(replaced.stdout).toContain(
        `replaced the link ${link} (it pointed at /nowhere/blue-agent)\ninstalled ${link} -> ${TARGET}\n`,
      );
      expect(await readlink(link)).toBe(TARGET);

      const dir = path.join(t.root, 'tools');
      await mkdir(dir);
      await writeFile(path.join(dir, 'blue-agent'), 'mine\n');
      const refused = await install(['--dir', dir]);
      expect(refused).toMatchObject({ code: 1, stdout: '' });
      expect(refused.stderr).toBe(
        `install-launcher: ${path.join(dir, 'blue-agent')} exists and is not a link: remove it, or install into ` +
          `another folder with --dir DIR\n`,
      );
      expect(await readFile(path.join(dir, 'blue-agent'), 'utf8')).toBe('mine\n');
    },
    SLOW,
  );

  it(
    '--uninstall removes its own link only',
    async () => {
      const dir = path.join(t.root, 'tools');
      expect((await install(['--dir', dir])).stdout).toContain(
        `installed ${path.join(dir, 'blue-agent')} -> ${TARGET}\n`,
      );
      expect(await install(['--uninstall', '--dir', dir])).toEqual({
        code: 0,
        stdout: `removed ${path.join(dir, 'blue-agent')}\n`,
        stderr: '',
      });
      await expect(lstat(path.join(dir, 'blue-agent'))).rejects.toThrow(/ENOENT/);
      expect(await install(['--uninstall', '--dir', dir])).toEqual({
        code: 0,
        stdout: `nothing to remove: there is no ${path.join(dir, 'blue-agent')}\n`,
        stderr: '',
      });

      await symlink('/elsewhere/blue-agent', path.join(dir, 'blue-agent'));
      const refused = await install(['--uninstall', '--dir', dir]);
      expect(refused).toEqual({
        code: 1,
        stdout: '',
        stderr: `install-launcher: ${path.join(dir, 'blue-agent')} is not a link to ${TARGET}; left alone\n`,
      });
      expect(await readlink(path.join(dir, 'blue-agent'))).toBe('/elsewhere/blue-agent');
    },
    SLOW,
  );

  it(
    'refuses what it does not know, with its usage',
    async () => {
      expect(await install(['--frobnicate'])).toEqual({
        code: 2,
        stdout: '',
        stderr: 'usage: scripts/install-launcher [--uninstall] [--dir DIR]\n',
      });
    },
    SLOW,
  );
});
