/**
 * The entry script refuses a Node.js too old to run blue-agent, before anything else loads: one line saying what is
 * needed and how to get it, exit 1. The rule is a function of the version (tested here for many); a real old Node.js
 * runs the entry script when this machine has one.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript without declarations (bin/ loads with zero dependencies)
import * as nodeVersion from '../../bin/node-version.js';

const { checkNodeVersion, EXIT_NODE_UNSUPPORTED, installerBeside, MINIMUM, nodeVersionProblem } = nodeVersion;
const ROOT = join(import.meta.dirname, '..', '..');
const ENTRY = join(ROOT, 'bin', 'blue-agent.js');
const INSTALLER = join(ROOT, '..', '..', 'scripts', 'install-launcher');

describe('which Node.js versions run blue-agent', () => {
  it.each(['20.20.2', 'v20.20.2', '18.19.0', '22.21.9', '22.0.0', '21.7.3', '0.10.48', 'garbage', ''])(
    '%s is refused',
    (version) => {
      const problem = nodeVersionProblem(version, '/usr/bin/node') as string;
      expect(problem).toMatch(/^blue-agent needs Node\.js 22\.22 or newer, and this is Node\.js /);
      expect(problem).toContain('/usr/bin/node');
      expect(problem).toMatch(
        new RegExp(
          '; install Node\\.js 24 LTS \\(https:\\/\\/nodejs\\.org\\/en\\/download, or `nvm install 24`\\), ' +
            'or run scripts\\/install-launcher in a checkout of blue-agent for a `blue-agent` command ' +
            String.raw`that installs Node\.js 24 for itself$`,
        ),
      );
      expect(problem).not.toContain('\n');
    },
  );

  it("names the checkout's install-launcher first when there is one, quoted for the shell when it must be", () => {
    expect(nodeVersionProblem('20.20.2', '/usr/bin/node', '/src/blue-agent/scripts/install-launcher')).toBe(
      'blue-agent needs Node.js 22.22 or newer, and this is Node.js 20.20.2 (/usr/bin/node); run ' +
        '/src/blue-agent/scripts/install-launcher ' +
        ('for a `blue-agent` command that installs Node.js 24 for itself, or install Node.js 24 LTS ' +
          '(https://nodejs.org/en/download, or `nvm install 24`)'),
    );
    expect(nodeVersionProblem('20.20.2', undefined, "/home/o'neil/my src/scripts/install-launcher")).toContain(
      "; run '/home/o'\\''neil/my src/scripts/install-launcher' for a",
    );
  });

  it('finds the install-launcher of the checkout the entry script is in, and none elsewhere', () => {
    expect(installerBeside(join(ROOT, 'bin'))).toBe(INSTALLER);
    expect(installerBeside(join(ROOT, 'schemas', 'nowhere'))).toBeUndefined();
  });

  it.each(['22.22.0', '22.23.2', '23.0.0', '24.0.0', '24.22.3', 'v26.10.0', '100.0.0'])('%s runs it', (version) => {
    expect(nodeVersionProblem(version)).toBeUndefined();
  });

  it('says what package.json says', () => {
    const engines = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } })
      .engines.node;
    expect(engines).toBe(`>=${MINIMUM[0]}.${MINIMUM[1]}`);
  });

  it('refuses with one line on stderr, or the JSON error envelope with --json, and exit 1', () => {
    const run = (argv: string[]) => {
      const out = { stdout: '', stderr: '' };
      const proc = {
        versions: { node: '20.20.2' },
        execPath: '/usr/bin/node',
        argv: ['/usr/bin/node', ENTRY, ...argv],
        stdout: { write: (s: string) => (out.stdout += s) },
        stderr: { write: (s: string) => (out.stderr += s) },
        exitCode: undefined as number | undefined,
      };
      return { goOn: checkNodeVersion(proc) as boolean, exitCode: proc.exitCode, ...out };
    };
    const text = run(['sessions', 'list']);
    expect(text).toMatchObject({ goOn: false, exitCode: 1, stdout: '' });
    expect(EXIT_NODE_UNSUPPORTED).toBe(1);
    expect(text.stderr).toMatch(
      new RegExp(
        String.raw`^blue-agent: error \[NODE_UNSUPPORTED\]: blue-agent needs Node\.js 22\.22 or newer, and ` +
          String.raw`this is Node\.js 20\.20\.2 \(\/usr\/bin\/node\); [^\n]+\n$`,
      ),
    );
    const json = run(['sessions', 'list', '--json']);
    expect(json).toMatchObject({ goOn: false, exitCode: 1, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual({
      ok: false,
      error: { code: 'NODE_UNSUPPORTED', message: expect.stringContaining('Node.js 22.22 or newer') },
    });

    const proc = {
      versions: { node: process.versions.node },
      execPath: process.execPath,
      argv: [],
      stdout: { write: () => true },
      stderr: { write: () => true },
      exitCode: undefined,
    };
    expect(checkNodeVersion(proc)).toBe(true);
    expect(proc.exitCode).toBeUndefined();
  });
});

/** A Node.js older than the minimum on this machine (Debian's, say), or undefined. */
function oldNode(): string | undefined {
  const candidates = new Set([
    '/usr/bin/node',
    '/usr/local/bin/node',
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((d) => join(d, 'node')),
  ]);
  for (const file of candidates) {
    try {
      const version = execFileSync(file, ['-p', 'process.versions.node'], {
        encoding: 'utf8',
        timeout: 10_000,
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
      if (nodeVersionProblem(version) !== undefined) return file;
    } catch {
      // not there, or not runnable
    }
  }
  return undefined;
}

const OLD_NODE = oldNode();

describe.runIf(OLD_NODE !== undefined)(`the entry script on a real old Node.js (${OLD_NODE ?? 'none here'})`, () => {
  it.each([
    ['sessions', 'list'],
    ['login', '--control-url', 'http://127.0.0.1:9'],
    ['control-plane', 'users', 'add', 'me@example.com'],
    ['service', 'status'],
  ])('%s %s: one line naming the need, exit 1, nothing else run', async (...argv) => {
    const home = await mkdtemp(join(tmpdir(), 'blue-old-node-'));
    try {
      const result = spawnSync(OLD_NODE!, [ENTRY, ...argv], {
        encoding: 'utf8',
        timeout: 20_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          BLUE_AGENT_HOME: join(home, 'state'),
          BLUE_CONTROL_DATA: join(home, 'control'),
          LANG: 'C',
        },
      });
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          String.raw`^blue-agent: error \[NODE_UNSUPPORTED\]: blue-agent needs Node\.js 22\.22 or newer, and ` +
            String.raw`this is Node\.js \d+\.\d+\.\d+ \(.+\); run `,
        ),
      );
      expect(lines[0]).toContain(
        `; run ${INSTALLER} for a \`blue-agent\` command that installs Node.js 24 for itself, or install Node.js ` +
          `24 LTS`,
      );
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
