/**
 * The pure parts of `blue-agent demo` and its shipped asset: the environment its children get, the stand-in harness,
 * the recorded session laid out in a HOME.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile, cp } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { demoLayout, machineEnv, standInScript, substitutedName } from '../../src/demo/layout.js';
import { installRecordedSession, readRecordedAsset } from '../../src/demo/session.js';
import { loadProfiles, requireProfiles } from '@blue-agent/contract/profiles/index.js';
import { snapshot } from '../../../../test/support/restore-homes.js';
import { agentRoot } from '../../../../test/support/context.js';
import { FIXTURES } from '../../../../test/support/recorded-sessions.js';

const DEMO_DIR = path.join(agentRoot, 'demo');

let scratch: string;
beforeEach(async () => {
  scratch = await realpath(await mkdtemp(path.join(tmpdir(), 'blue-agent-demo-unit-')));
});
afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('the environment of the demo children', () => {
  it('is built from nothing: only these variables, every directory inside the demo root', () => {
    const layout = demoLayout('/tmp/blue-agent-demo-x');
    const env = machineEnv(layout, layout.a, '/opt/node/bin/node');
    expect(Object.keys(env).sort()).toEqual(
      [
        'GIT_CEILING_DIRECTORIES',
        'GIT_CONFIG_NOSYSTEM',
        'HOME',
        'LANG',
        'NO_COLOR',
        'PATH',
        'TMPDIR',
        'XDG_CACHE_HOME',
        'XDG_CONFIG_HOME',
        'XDG_DATA_HOME',
        'XDG_STATE_HOME',
      ].sort(),
    );
    for (const key of ['HOME', 'TMPDIR', 'XDG_CACHE_HOME', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_STATE_HOME'])
      expect(env[key]!.startsWith('/tmp/blue-agent-demo-x/'), key).toBe(true);
    expect(env.HOME).toBe('/tmp/blue-agent-demo-x/a/home');
    // The stand-in harness first, then Node.js, then the system.
    expect(env.PATH!.split(':')).toEqual([
      '/tmp/blue-agent-demo-x/bin',
      '/opt/node/bin',
      '/usr/local/bin',
      '/usr/bin',
      '/bin',
    ]);
    expect(machineEnv(layout, layout.b, '/usr/bin/node').PATH).toBe(
      '/tmp/blue-agent-demo-x/bin:/usr/bin:/usr/local/bin:/bin',
    );
  });

  it('substituted file names never leave their folder', () => {
    expect(substitutedName('{{PROJECT}}', { PROJECT: '-tmp-x' })).toBe('-tmp-x');
    expect(substitutedName('{{PROJECT}}', { PROJECT: '../x' })).toBeUndefined();
    expect(substitutedName('{{PROJECT}}', { PROJECT: '..' })).toBeUndefined();
    expect(substitutedName('{{PROJECT}}', { PROJECT: '' })).toBeUndefined();
  });
});

describe('the stand-in harness', () => {
  it('answers --version in the form the Claude Code profile reads, and refuses everything else', async () => {
    const file = path.join(scratch, 'claude');
    await writeFile(file, standInScript('claude', "2.1.332 (Claude Code) it's"), { mode: 0o755 });
    expect(execFileSync(file, ['--version'], { encoding: 'utf8' })).toBe("2.1.332 (Claude Code) it's\n");
    await writeFile(file, standInScript('claude', '2.1.332 (Claude Code)'), { mode: 0o755 });
    const out = execFileSync(file, ['--version'], { encoding: 'utf8' }).trim();
    const profiles = requireProfiles(await loadProfiles(path.join(agentRoot, 'profiles')), 'claude');
    expect(profiles.doc.version_output.some((v) => new RegExp(v.pattern).test(out))).toBe(true);
    expect(() => execFileSync(file, ['--resume', 'x'], { stdio: 'pipe' })).toThrow();
  });
});

describe('the shipped recorded session', () => {
  it('is a byte-for-byte copy of the recorded fixture of its version', async () => {
    const asset = await readRecordedAsset(DEMO_DIR);
    const fixture = path.join(FIXTURES, 'claude', asset.version);
    if (!existsSync(fixture)) return; // re-recorded since: the copy may be older than the fixtures
    expect(await snapshot(asset.dir)).toEqual(await snapshot(fixture));
  });

  it('is laid out in a HOME where Claude Code keeps sessions, placeholders replaced, files 0600', async () => {
    const asset = await readRecordedAsset(DEMO_DIR);
    const layout = demoLayout(scratch);
    await mkdir(layout.a.workDir, { recursive: true });
    const installed = await installRecordedSession(asset, layout.a, layout.a.workDir);
    expect(installed.transcriptPath).toBe(
      path.join(
        layout.a.home,
        '.claude',
        'projects',
        layout.a.workDir.replace(/[^a-zA-Z0-9]/g, '-'),
        `${asset.sessionId}.jsonl`,
      ),
    );
    const text = await readFile(installed.transcriptPath, 'utf8');
    expect(text).not.toMatch(/\{\{[A-Z_]+\}\}/);
    expect(text).toContain(layout.a.workDir);
    const tree = await snapshot(path.join(layout.a.home, '.claude'));
    const files = Object.values(tree).filter((v) => v.startsWith('file '));
    expect(files.length).toBe(installed.files);
    expect(files.every((v) => v.startsWith('file 600 '))).toBe(true);
  });

  it('a tree holding a symbolic link is refused, not followed', async () => {
    const copy = path.join(scratch, 'demo');
    await cp(DEMO_DIR, copy, { recursive: true });
    const asset = await readRecordedAsset(copy);
    const project = (await readdir(path.join(asset.dir, 'projects')))[0]!;
    await symlink('/etc/passwd', path.join(asset.dir, 'projects', project, 'evil.jsonl'));
    const layout = demoLayout(scratch);
    await expect(installRecordedSession(asset, layout.a, path.join(scratch, 'w'))).rejects.toThrow(
      /not a regular file/,
    );
  });
});
