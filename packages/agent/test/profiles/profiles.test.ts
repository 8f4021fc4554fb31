import { mkdir, writeFile, readFile, utimes } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import { detectVersion, findExecutable, VersionCache } from '../../src/profiles/detect.js';
import {
  checkProfiles,
  loadProfiles,
  parseVersionOutput,
  selectInterval,
  type LoadedProfiles,
} from '@blue-agent/contract/profiles/index.js';
import { agentRoot, makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { HARNESSES } from '../../src/harnesses/names.js';

const shipped = path.join(agentRoot, 'profiles');

describe('shipped profiles', () => {
  it('load, validate and are consistent', async () => {
    const set = await loadProfiles(shipped);
    expect([...set.keys()].sort()).toEqual([...HARNESSES].sort());
    expect(checkProfiles(set)).toEqual([]);
  });

  it.each([
    ['claude', '2.1.197 (Claude Code)', '2.1.197'],
    ['claude', '2.1.332 (Claude Code)\n', '2.1.332'],
    ['codex', 'codex-cli 0.171.0', '0.171.0'],
    ['kimi', 'kimi, version 1.49.0', '1.49.0'],
    ['kimi', '1.49.0', '1.49.0'],
    ['opencode', '1.18.33', '1.18.33'],
    ['opencode', '\n  1.18.33  \n', '1.18.33'],
    ['claude', '2.2.0-beta.1 (Claude Code)', '2.2.0-beta.1'],
  ] as const)('%s parses %j as %s', async (harness, output, expected) => {
    const set = await loadProfiles(shipped);
    expect(parseVersionOutput(set.get(harness)!, output)).toBe(expected);
  });

  it.each([
    ['claude', 'Claude Code 2.1.197'],
    ['codex', '0.171.0 codex'],
    ['kimi', 'kimi version one'],
    ['opencode', ''],
    ['opencode', '1.18'],
  ] as const)('%s rejects %j', async (harness, output) => {
    const set = await loadProfiles(shipped);
    expect(parseVersionOutput(set.get(harness)!, output)).toBeUndefined();
  });
});

describe('interval choice', () => {
  const doc = {
    harness: 'claude' as const,
    display_name: 'x',
    binary: 'x',
    version_output: [{ pattern: '^(?<version>.*)$', example: '1.0.0' }],
    intervals: [
      {
        profile: 'x-v1_0_0',
        introduced: '1.0.0',
        before: '2.0.0',
        verified_before: '1.5.0',
        lifecycle: 'deprecated' as const,
        operations: [],
      },
      {
        profile: 'x-v2_0_0',
        introduced: '2.0.0',
        verified_before: '2.1.198-0',
        lifecycle: 'supported' as const,
        operations: [],
      },
    ],
  };
  it.each([
    ['0.9.9', undefined, undefined],
    ['1.0.0', 'x-v1_0_0', true],
    ['1.4.9', 'x-v1_0_0', true],
    ['1.5.0', 'x-v1_0_0', false],
    ['1.99.0', 'x-v1_0_0', false],
    ['2.0.0-rc.1', 'x-v1_0_0', false],
    ['2.0.0', 'x-v2_0_0', true],
    ['2.1.197', 'x-v2_0_0', true],
    ['2.1.198-0', 'x-v2_0_0', false],
    ['2.1.198-beta', 'x-v2_0_0', false],
    ['2.1.198', 'x-v2_0_0', false],
  ])('%s -> %s verified=%s', (version, profile, verified) => {
    const choice = selectInterval(doc, version);
    expect(choice?.interval.profile).toBe(profile);
    expect(choice?.verified).toBe(verified);
  });
});

describe('profiles check', () => {
  let t: TestHome;
  afterEach(async () => t?.cleanup());

  async function withProfile(yaml: string): Promise<string> {
    t = await makeTestHome();
    const dir = path.join(t.root, 'profiles');
    await mkdir(dir);
    await writeFile(path.join(dir, 'claude.yaml'), yaml);
    return dir;
  }
  const head =
    `harness: claude\ndisplay_name: C\nbinary: claude\nversion_output:\n  - { pattern: ` +
    `'^(?<version>\\d+\\.\\d+\\.\\d+)$', example: 1.0.0 }\nintervals:\n`;
  const interval = (p: string, intro: string, extra = '') =>
    `  - { profile: ${p}, introduced: ${intro}, verified_before: ${intro}, lifecycle: supported, operations: [] ` +
    `${extra}}\n`;

  it('reports overlapping intervals', async () => {
    const dir = await withProfile(head + interval('c-v1_0_0', '1.0.0') + interval('c-v2_0_0', '2.0.0'));
    const problems = checkProfiles(await loadProfiles(dir));
    expect(problems.map((p) => p.message)).toEqual([expect.stringContaining('overlaps c-v1_0_0')]);
  });

  it('reports before <= introduced', async () => {
    const dir = await withProfile(head + interval('c-v2_0_0', '2.0.0', ', before: 2.0.0'));
    expect(checkProfiles(await loadProfiles(dir)).map((p) => p.message)).toEqual([
      expect.stringContaining('is not after introduced'),
    ]);
  });

  it('reports a verified ceiling below the interval', async () => {
    const dir = await withProfile(
      head +
        `  - { profile: c-v2_0_0, introduced: 2.0.0, verified_before: 1.0.0, lifecycle: supported, operations: [] }\n`,
    );
    expect(checkProfiles(await loadProfiles(dir)).map((p) => p.message)).toEqual([
      expect.stringContaining('below introduced'),
    ]);
  });

  it('reports capture support without a capture section, and duplicate profile names', async () => {
    const dir = await withProfile(
      head +
        (`  - { profile: c-v1_0_0, introduced: 1.0.0, before: 2.0.0, verified_before: 1.0.0, lifecycle: supported, ` +
          `operations: [session_capture] }\n`) +
        interval('c-v1_0_0', '2.0.0'),
    );
    const messages = checkProfiles(await loadProfiles(dir)).map((p) => p.message);
    expect(messages).toContain('supports session_capture but has no capture section');
    expect(messages).toEqual(expect.arrayContaining([expect.stringContaining('is also used in')]));
  });

  it('reports sessions without a session section, escaping roots, repeated roles and min above max', async () => {
    const dir = await withProfile(
      head +
        (`  - { profile: c-v1_0_0, introduced: 1.0.0, before: 2.0.0, verified_before: 1.0.0, lifecycle: supported, ` +
          `operations: [session_resume] }\n`) +
        (`  - profile: c-v2_0_0\n    introduced: 2.0.0\n    verified_before: 2.0.0\n    lifecycle: supported\n    ` +
          `operations: [session_resume]\n`) +
        (`    session: { root: ../elsewhere, roles: [{ role: rollout, min: 2, max: 1 }, { role: rollout, min: 0, ` +
          `max: 1 }] }\n`),
    );
    const messages = checkProfiles(await loadProfiles(dir)).map((p) => p.message);
    expect(messages).toEqual([
      'captures or resumes sessions but has no session section',
      'session.root "../elsewhere" leaves the harness\'s folder',
      'role rollout: min 2 is above max 1',
      'role rollout is listed twice',
    ]);
  });

  it('rejects a missing ceiling with the file, path and line', async () => {
    const dir = await withProfile(
      head + `  - { profile: c-v1_0_0, introduced: 1.0.0, lifecycle: supported, operations: [] }\n`,
    );
    const error = await loadProfiles(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlueError);
    expect((error as BlueError).message).toMatch(
      new RegExp(
        String.raw`claude\.yaml:7:\d+: invalid compatibility profile: \/intervals\/0 is missing the required ` +
          'field "verified_before"',
      ),
    );
  });

  it('rejects an unknown operation, naming it', async () => {
    const dir = await withProfile(
      head +
        (`  - { profile: c-v1_0_0, introduced: 1.0.0, verified_before: 1.0.0, lifecycle: supported, operations: ` +
          `[session_teleport] }\n`),
    );
    const error = (await loadProfiles(dir).catch((e: unknown) => e)) as BlueError;
    expect(error.code).toBe('PROFILE_INVALID');
    expect(error.path).toBe('/intervals/0/operations/0');
    expect(error.message).toContain('must be one of "session_capture", "session_resume"');
  });

  it('rejects a version that is not semver', async () => {
    const dir = await withProfile(head + interval('c-v1_0_0', '1.0'));
    const error = (await loadProfiles(dir).catch((e: unknown) => e)) as BlueError;
    expect(error.path).toBe('/intervals/0/introduced');
  });
});

describe('version detection', () => {
  let t: TestHome;
  afterEach(async () => t?.cleanup());

  async function fakeBinary(output: string): Promise<{ bin: string; calls: string; loaded: LoadedProfiles }> {
    t = await makeTestHome();
    const binDir = path.join(t.root, 'bin');
    await mkdir(binDir);
    const calls = path.join(t.root, 'calls');
    const bin = path.join(binDir, 'claude');
    await writeFile(bin, `#!/bin/sh\necho x >> '${calls}'\necho '${output}'\n`, { mode: 0o755 });
    const set = await loadProfiles(shipped);
    return { bin, calls, loaded: set.get('claude')! };
  }
  const callCount = async (file: string) =>
    (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).length;

  it('finds the binary on PATH and skips non-executables', async () => {
    const { bin } = await fakeBinary('2.1.197 (Claude Code)');
    const other = path.join(t.root, 'other');
    await mkdir(other);
    await writeFile(path.join(other, 'claude'), 'not executable', { mode: 0o644 });
    expect(await findExecutable('claude', `relative:${other}:${path.dirname(bin)}`)).toBe(bin);
    expect(await findExecutable('claude', other)).toBeUndefined();
  });

  it('runs --version once and then answers from the cache until the binary changes', async () => {
    const { bin, calls, loaded } = await fakeBinary('2.1.197 (Claude Code)');
    const first = await detectVersion(t.ctx, loaded, bin, await VersionCache.open(t.ctx));
    expect(first).toMatchObject({ raw: '2.1.197 (Claude Code)', version: '2.1.197' });
    const cache = await VersionCache.open(t.ctx);
    await detectVersion(t.ctx, loaded, bin, cache);
    await detectVersion(t.ctx, loaded, bin, cache);
    await cache.save();
    const warm = await VersionCache.open(t.ctx);
    expect((await detectVersion(t.ctx, loaded, bin, warm)).version).toBe('2.1.197');
    expect(await callCount(calls)).toBe(2); // first (unsaved cache) + the one that filled the saved cache
    await utimes(bin, new Date(), new Date(Date.now() + 5_000));
    await detectVersion(t.ctx, loaded, bin, warm);
    expect(await callCount(calls)).toBe(3);
  });

  it('names the registered forms when the output is not recognised', async () => {
    const { bin, loaded } = await fakeBinary('Claude Code version 9');
    const error = (await detectVersion(t.ctx, loaded, bin, await VersionCache.open(t.ctx)).catch(
      (e: unknown) => e,
    )) as BlueError;
    expect(error.code).toBe('VERSION_UNRECOGNISED');
    expect(error.hint).toContain('"2.1.332 (Claude Code)"');
  });

  it('reports a binary that fails', async () => {
    const { bin, loaded } = await fakeBinary('x');
    await writeFile(bin, '#!/bin/sh\nexit 3\n', { mode: 0o755 });
    const error = (await detectVersion(t.ctx, loaded, bin, await VersionCache.open(t.ctx)).catch(
      (e: unknown) => e,
    )) as BlueError;
    expect(error.code).toBe('VERSION_DETECT_FAILED');
    expect(error.message).toContain('exited with 3');
  });
});
