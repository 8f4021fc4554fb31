/**
 * `./blue-agent`, the checkout's launcher, run from a folder of the caller's and through symbolic links: the command
 * runs in the caller's folder (relative paths are the caller's), and the checkout is found through any chain of
 * links, absolute or relative. At a terminal it says how to get `blue-agent` on PATH when it is not there; once it
 * is, the commands blue-agent prints run as printed.
 */
import { mkdir, readFile, realpath, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveCommand } from '../../src/cli/control-plane.js';
import { makeTestHome, repoRoot, type TestHome } from '../../../../test/support/context.js';
import { fixtureBundle } from '../../../../test/support/fixture-bundles.js';
import { LAUNCHER, plainPath, runFile } from '../../../../test/support/launcher.js';
import { startPty } from '../../../../test/support/pty-session.js';

let t: TestHome;
let env: Record<string, string>;
/** The caller's folder: outside the checkout. */
let work: string;

beforeEach(async () => {
  t = await makeTestHome();
  env = { ...t.env, PATH: plainPath() };
  work = path.join(t.home, 'work');
  await mkdir(work);
  await writeFile(path.join(work, 'good.yaml'), 'revision: 7\n');
});
afterEach(async () => t.cleanup());

/** Each test starts the launcher a few times: bounded generously, for a slow machine. */
const SLOW = 180_000;
const VERSION = (JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string })
  .version;

describe('./blue-agent from a folder of the caller', () => {
  it(
    "reads a relative --policy in the caller's folder",
    async () => {
      const result = await runFile(LAUNCHER, ['reconcile', '--dry-run', '--json', '--policy', 'good.yaml'], {
        env,
        cwd: work,
      });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const report = JSON.parse(result.stdout) as { policy: { revision: unknown; source: string; location: string } };
      expect(report.policy).toMatchObject({
        revision: 7,
        source: 'file',
        location: path.join(await realpath(work), 'good.yaml'),
      });
    },
    SLOW,
  );

  it(
    "writes sessions export --out into the caller's folder",
    async () => {
      await fixtureBundle('opencode', path.join(work, 'session.bundle'), { title: 'From the caller' });
      const result = await runFile(
        LAUNCHER,
        ['sessions', 'export', 'session.bundle', '--format', 'markdown', '--out', 'out.md'],
        { env, cwd: work },
      );
      expect(result.code).toBe(0);
      expect(await readFile(path.join(work, 'out.md'), 'utf8')).toContain('From the caller');
      await expect(stat(path.join(repoRoot, 'out.md'))).rejects.toThrow(/ENOENT/);
    },
    SLOW,
  );
});

describe('./blue-agent through symbolic links', () => {
  it(
    "runs through an absolute link, a relative link, a link to a link and a link to the checkout's folder",
    async () => {
      const bin = path.join(t.home, 'bin');
      const other = path.join(t.home, 'other');
      await mkdir(bin);
      await mkdir(other);
      await symlink(LAUNCHER, path.join(bin, 'absolute'));
      await symlink(path.relative(bin, LAUNCHER), path.join(bin, 'relative'));
      await symlink('../bin/relative', path.join(other, 'chained'));
      await symlink(path.join(other, 'chained'), path.join(bin, 'twice'));
      await symlink(repoRoot, path.join(t.home, 'checkout'));
      const links = [
        path.join(bin, 'absolute'),
        path.join(bin, 'relative'),
        path.join(other, 'chained'),
        path.join(bin, 'twice'),
        path.join(t.home, 'checkout', 'blue-agent'),
      ];
      for (const link of links) {
        const result = await runFile(link, ['--version'], { env, cwd: work });
        expect({ link, ...result }).toEqual({ link, code: 0, stdout: `${VERSION}\n`, stderr: '' });
      }
      // A relative path to the link, from the caller's folder; the command still runs there.
      const relative = await runFile('../bin/relative', ['reconcile', '--dry-run', '--json', '--policy', 'good.yaml'], {
        env,
        cwd: work,
      });
      expect(relative.code).toBe(0);
      expect((JSON.parse(relative.stdout) as { policy: { revision: unknown } }).policy.revision).toBe(7);
    },
    SLOW,
  );
});

describe('./blue-agent at a terminal', () => {
  async function atTerminal(pathVar: string): Promise<string> {
    const session = startPty(LAUNCHER, ['--version'], { env: { ...env, PATH: pathVar }, cwd: work, timeoutMs: 60_000 });
    const { exitCode, stdout } = await session.done();
    expect(exitCode).toBe(0);
    return stdout;
  }

  it(
    'says how to put `blue-agent` on PATH when it is not there, and nothing once it is',
    async () => {
      // The terminal wraps long lines: compared without white space.
      const without = (await atTerminal(plainPath())).replace(/\s+/g, '');
      const note =
        `note: the commands blue-agent prints start with \`blue-agent\`, which is not on PATH; ` +
        `${path.join(await realpath(repoRoot), 'scripts', 'install-launcher')} puts`;
      expect(without).toContain(note.replace(/\s+/g, ''));
      expect(without).toContain(VERSION);

      const bin = path.join(t.home, 'bin');
      await mkdir(bin);
      await symlink(LAUNCHER, path.join(bin, 'blue-agent'));
      const withIt = await atTerminal(`${bin}:${plainPath()}`);
      expect(withIt).not.toContain('note:');
      expect(withIt.trim()).toBe(VERSION);
    },
    SLOW,
  );
});

describe('the commands `control-plane serve` prints', () => {
  it(
    'run as printed, in a shell, with `blue-agent` on PATH',
    async () => {
      const bin = path.join(t.home, 'bin');
      await mkdir(bin);
      await symlink(LAUNCHER, path.join(bin, 'blue-agent'));
      const shellEnv = { ...env, PATH: `${bin}:${plainPath()}` };
      // A data folder whose name the shell must be given quoted.
      const data = path.join(t.root, "the team's data");
      let stop!: () => void;
      const stopped = new Promise<void>((resolve) => (stop = resolve));
      const serving = serveCommand(t.context({ cwd: work }), { listen: '127.0.0.1:0', data }, stopped);
      try {
        let printed = '';
        for (let i = 0; i < 3000 && !printed.includes('Publish your own with'); i++) {
          await Promise.race([serving, new Promise((resolve) => setTimeout(resolve, 20))]);
          printed = t.stdout.text();
        }
        const url = /listening on (http:\/\/\S+)/.exec(printed)![1]!;
        const login = /^ {2}(blue-agent login .*)$/m.exec(printed)?.[1];
        const link = /Make another, at any time, with:\n {2}(blue-agent control-plane users link .*)$/m.exec(
          printed,
        )?.[1];
        const publish = /Publish your own with: (blue-agent control-plane policy publish FILE.*)$/m.exec(printed)?.[1];
        expect({ login, link, publish }, printed).toEqual({
          login: expect.any(String),
          link: expect.any(String),
          publish: expect.any(String),
        });

        const sh = (line: string) => runFile('/bin/sh', ['-c', line], { env: shellEnv, cwd: work });
        expect(await sh(login!)).toMatchObject({ code: 0 });
        const linked = await sh(link!);
        expect(linked, linked.stderr).toMatchObject({ code: 0, stdout: expect.stringContaining(`${url}/auth/link#`) });
        await writeFile(
          path.join(work, 'team.yaml'),
          `revision: 8\nsession_upload: { presign_url: "${url}/session-uploads/presign" }\n`,
        );
        const published = await sh(publish!.replace('FILE', 'team.yaml'));
        expect(published, published.stderr).toMatchObject({ code: 0 });
        const revision = /Published policy revision (\S+)\./.exec(published.stdout)?.[1];
        const applied = await sh('blue-agent reconcile --dry-run --json');
        expect(applied.code, applied.stderr).toBe(0);
        expect((JSON.parse(applied.stdout) as { policy: unknown }).policy).toMatchObject({
          revision,
          source: 'fetched',
        });
      } finally {
        stop();
        await serving;
      }
    },
    SLOW,
  );
});
