/**
 * Profile rules one by one: the consistency checks with their exact messages, the half-open interval edges, version
 * output normalisation, and loading a profiles folder.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkProfiles,
  findInterval,
  loadProfiles,
  parseVersionOutput,
  requireProfiles,
  selectInterval,
  type LoadedProfiles,
  type ProfileSet,
} from '../../src/profiles/index.js';
import type { HarnessName, HarnessProfiles, Interval } from '../../src/schema/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { rejected, thrown } from '../../../../test/support/errors.js';

const FILE = '/profiles/claude.yaml';

function iv(profile: string, introduced: string, over: Partial<Interval> = {}): Interval {
  return { profile, introduced, verified_before: introduced, lifecycle: 'supported', operations: [], ...over };
}

function loaded(
  intervals: Interval[],
  over: Partial<HarnessProfiles> = {},
  harness: HarnessName = 'claude',
): LoadedProfiles {
  const doc: HarnessProfiles = {
    harness,
    display_name: 'C',
    binary: 'c',
    version_output: [{ pattern: '^(?<version>\\d+\\.\\d+\\.\\d+)$', example: '1.0.0' }],
    intervals,
    ...over,
  };
  return {
    harness,
    file: `/profiles/${harness}.yaml`,
    doc,
    patterns: doc.version_output.map((f) => new RegExp(f.pattern)),
  };
}

const setOf = (...all: LoadedProfiles[]): ProfileSet => new Map(all.map((l) => [l.harness, l]));
const messages = (l: LoadedProfiles) => checkProfiles(setOf(l)).map((p) => p.message);

describe('checkProfiles', () => {
  it('accepts adjacent intervals, a ceiling at introduced, a ceiling past before, and min equal to max', () => {
    const session = { roles: [{ role: 'primary_transcript' as const, min: 1, max: 1 }], root: 'projects/x' };
    const capture = { event: 'SessionEnd', hook: { file: 'dir/settings.json', format: 'f', timeout_seconds: 5 } };
    expect(
      messages(
        loaded([
          iv('c-v2', '2.0.0', {
            operations: ['session_capture', 'session_resume'],
            session,
            capture,
          } as Partial<Interval>),
          iv('c-v1', '1.0.0', { before: '2.0.0', verified_before: '3.0.0' }),
        ]),
      ),
    ).toEqual([]);
  });

  it('reports an example that its own pattern does not match, with its index', () => {
    const l = loaded([iv('c-v1', '1.0.0')], {
      version_output: [
        { pattern: '^(?<version>\\d+\\.\\d+\\.\\d+)$', example: '1.0.0' },
        { pattern: '^v(?<version>\\d+\\.\\d+\\.\\d+)$', example: '1.0.0' },
      ],
    });
    expect(checkProfiles(setOf(l))).toEqual([
      { file: FILE, message: 'version_output[1]: the example "1.0.0" does not match its own pattern' },
    ]);
  });

  it('reports each interval problem with the file and the profile, in full', () => {
    const bad = iv('c-v1', '2.0.0', {
      before: '1.0.0',
      verified_before: '1.5.0',
      operations: ['session_teleport' as never],
    });
    expect(checkProfiles(setOf(loaded([bad])))).toEqual([
      { file: FILE, profile: 'c-v1', message: 'before 1.0.0 is not after introduced 2.0.0' },
      { file: FILE, profile: 'c-v1', message: 'verified_before 1.5.0 is below introduced 2.0.0' },
      { file: FILE, profile: 'c-v1', message: 'unknown operation "session_teleport"' },
      { file: FILE, profile: 'c-v1', message: 'captures or resumes sessions but has no session section' },
    ]);
  });

  it('reports a missing ceiling in a set built without the schema', () => {
    const { verified_before: _, ...noCeiling } = iv('c-v1', '1.0.0');
    expect(messages(loaded([noCeiling as Interval]))).toEqual(['verified_before is missing']);
  });

  it('reports a profile name used twice, across files, naming the first file', () => {
    const set = setOf(loaded([iv('same', '1.0.0')]), loaded([iv('same', '1.0.0')], {}, 'codex'));
    expect(checkProfiles(set)).toEqual([
      {
        file: '/profiles/codex.yaml',
        profile: 'same',
        message: 'profile name same is also used in /profiles/claude.yaml',
      },
    ]);
  });

  it('reports a hook file that leaves the folder, and never a name that only holds dots', () => {
    const capture = (file: string) => ({ event: 'SessionEnd', hook: { file, format: 'f', timeout_seconds: 5 } });
    const session = { roles: [{ role: 'primary_transcript' as const, min: 1, max: 1 }] };
    const at = (file: string) =>
      iv('c-v1', '1.0.0', { operations: ['session_capture'], session, capture: capture(file) } as Partial<Interval>);
    expect(messages(loaded([at('a/../../b.json')]))).toEqual([
      'capture.hook.file "a/../../b.json" leaves the harness\'s folder',
    ]);
    expect(messages(loaded([at('..')]))).toEqual(['capture.hook.file ".." leaves the harness\'s folder']);
    expect(messages(loaded([at('a..b/..c/settings.json')]))).toEqual([]);
  });

  it('holds restore_rewrite to a declared role and to session_resume, and a declared role to the operation', () => {
    const roles = (rewrite: string | undefined) => ({
      roles: [
        {
          role: 'primary_transcript' as const,
          min: 1,
          max: 1,
          ...(rewrite === undefined ? {} : { restore_rewrite: rewrite }),
        },
      ],
    });
    const at = (operations: string[], rewrite: string | undefined) =>
      iv('c-v1', '1.0.0', { operations, session: roles(rewrite) } as Partial<Interval>);
    expect(messages(loaded([at(['session_resume', 'restore_rewrite'], 'the cwd')]))).toEqual([]);
    expect(messages(loaded([at(['session_resume'], 'the cwd')]))).toEqual([
      'role primary_transcript declares restore_rewrite, but the operations do not list restore_rewrite',
    ]);
    expect(messages(loaded([at(['session_resume', 'restore_rewrite'], undefined)]))).toEqual([
      'lists restore_rewrite, but no role says what a restore rewrites (session.roles[].restore_rewrite)',
    ]);
    expect(messages(loaded([at(['restore_rewrite'], 'the cwd')]))).toEqual([
      'lists restore_rewrite without session_resume (only a restore rewrites)',
    ]);
  });

  it('holds resumes to earlier resumable profiles of the same harness, and to an interval that resumes', () => {
    const ops = ['session_capture', 'session_resume'] as Interval['operations'];
    const session = { roles: [{ role: 'primary_transcript' as const, min: 1, max: 1 }] };
    const capture = { event: 'SessionEnd', hook: { file: 'settings.json', format: 'f', timeout_seconds: 5 } };
    const older = iv('c-v1', '1.0.0', { before: '2.0.0', operations: ops, session, capture } as Partial<Interval>);
    const capOnly = iv('c-v0', '0.5.0', {
      before: '1.0.0',
      operations: ['session_capture'],
      session,
      capture,
    } as Partial<Interval>);
    const newer = (resumes: string[], operations = ops) =>
      iv('c-v2', '2.0.0', { operations, session, capture, resumes } as Partial<Interval>);
    expect(messages(loaded([capOnly, older, newer(['c-v1'])]))).toEqual([]);
    expect(messages(loaded([capOnly, older, newer(['c-v9'])]))).toEqual([
      'resumes c-v9, which is not a profile of claude',
    ]);
    expect(messages(loaded([capOnly, older, newer(['c-v2'])]))).toEqual([
      'resumes c-v2, which is not an earlier interval',
    ]);
    expect(messages(loaded([capOnly, older, newer(['c-v0'])]))).toEqual([
      'resumes c-v0, whose sessions are not resumable (no session_resume)',
    ]);
    expect(messages(loaded([capOnly, older, newer(['c-v1'], ['session_capture'])]))).toEqual([
      'lists resumes without session_resume',
    ]);
  });

  it('reports an overlap with both intervals, open ends shown as ∞, whatever order the file lists them in', () => {
    const open = messages(loaded([iv('c-v2', '2.0.0'), iv('c-v1', '1.0.0')]));
    expect(open).toEqual(['overlaps c-v1 ([1.0.0, ∞) and [2.0.0, ∞))']);
    const past = checkProfiles(
      setOf(loaded([iv('c-v1', '1.0.0', { before: '2.0.1' }), iv('c-v2', '2.0.0', { before: '3.0.0' })])),
    );
    expect(past).toEqual([
      { file: FILE, profile: 'c-v2', message: 'overlaps c-v1 ([1.0.0, 2.0.1) and [2.0.0, 3.0.0))' },
    ]);
    // Three in a row: each compared with the one before it.
    expect(
      messages(
        loaded([iv('a', '1.0.0', { before: '2.0.0' }), iv('b', '2.0.0', { before: '3.0.0' }), iv('c', '2.5.0')]),
      ),
    ).toEqual(['overlaps b ([2.0.0, 3.0.0) and [2.5.0, ∞))']);
  });
});

describe('selectInterval', () => {
  const doc = loaded([
    iv('a', '1.0.0', { before: '2.0.0', verified_before: '1.5.0' }),
    iv('b', '2.0.0', { verified_before: '2.0.0' }),
  ]).doc;
  it('is half-open at both ends and at the ceiling', () => {
    expect(selectInterval(doc, '0.9.9')).toBeUndefined();
    expect(selectInterval(doc, '1.0.0')).toEqual({ interval: doc.intervals[0], verified: true });
    expect(selectInterval(doc, '1.4.99')).toEqual({ interval: doc.intervals[0], verified: true });
    expect(selectInterval(doc, '1.5.0')).toEqual({ interval: doc.intervals[0], verified: false });
    expect(selectInterval(doc, '2.0.0')).toEqual({ interval: doc.intervals[1], verified: false });
  });
});

describe('parseVersionOutput', () => {
  const two = loaded([iv('a', '1.0.0')], {
    version_output: [
      { pattern: '^tool (?<version>\\S+)$', example: 'tool 1.0.0' },
      { pattern: '^tool (?<version>\\d+\\.\\d+\\.\\d+)', example: 'tool 1.0.0' },
    ],
  });
  it('reads the first non-blank line, without a byte-order mark or a carriage return', () => {
    expect(parseVersionOutput(two, '\uFEFFtool 1.2.3\r\nnext')).toBe('1.2.3');
    expect(parseVersionOutput(two, '\r\n   \n tool 1.2.3 \r\ntool 9.9.9')).toBe('1.2.3');
    expect(parseVersionOutput(two, 'x\ntool 1.2.3')).toBeUndefined();
    expect(parseVersionOutput(two, '')).toBeUndefined();
  });

  it('tries the next form when a match is not semver, and normalises the version', () => {
    expect(parseVersionOutput(two, 'tool 1.2.3-beta+x')).toBe('1.2.3-beta');
    expect(parseVersionOutput(two, 'tool 1.2.3.4')).toBe('1.2.3');
    expect(parseVersionOutput(two, 'tool v1.2.3')).toBe('1.2.3');
    expect(
      parseVersionOutput(
        loaded([iv('a', '1.0.0')], { version_output: [{ pattern: '^(?<v>\\S+)$', example: '1.0.0' }] }),
        '1.0.0',
      ),
    ).toBeUndefined();
  });

  it('drops a byte-order mark only at the start, and reads only the first line', () => {
    expect(parseVersionOutput(two, 'tool\uFEFF 1.2.3')).toBeUndefined();
    const any = loaded([iv('a', '1.0.0')], {
      version_output: [{ pattern: '(?<version>\\d+\\.\\d+\\.\\d+)$', example: '1.0.0' }],
    });
    expect(parseVersionOutput(any, '1.0.0\n2.0.0')).toBe('1.0.0');
    expect(parseVersionOutput(any, '1.0.0\r\n2.0.0')).toBe('1.0.0');
  });

  it('skips a form without a named version group', () => {
    const unnamed = loaded([iv('a', '1.0.0')], {
      version_output: [
        { pattern: '^(\\S+)$', example: '1.0.0' },
        { pattern: '^(?<version>\\S+)$', example: '1.0.0' },
      ],
    });
    expect(parseVersionOutput(unnamed, '1.0.0')).toBe('1.0.0');
  });

  it('reads a first line of up to 256 characters, and nothing longer', () => {
    const any = loaded([iv('a', '1.0.0')], {
      version_output: [{ pattern: '(?<version>\\d+\\.\\d+\\.\\d+)$', example: '1.0.0' }],
    });
    expect(parseVersionOutput(any, `${'x'.repeat(251)}1.0.0`)).toBe('1.0.0');
    expect(parseVersionOutput(any, `${'x'.repeat(252)}1.0.0`)).toBeUndefined();
  });
});

describe('findInterval and requireProfiles', () => {
  const set = setOf(loaded([iv('c-v1', '1.0.0')]), loaded([iv('x-v1', '1.0.0'), iv('x-v2', '2.0.0')], {}, 'codex'));
  it('finds a profile by name in any harness', () => {
    expect(findInterval(set, 'x-v2')).toEqual({ harness: 'codex', interval: set.get('codex')!.doc.intervals[1] });
    expect(findInterval(set, 'c-v1')).toEqual({ harness: 'claude', interval: set.get('claude')!.doc.intervals[0] });
    expect(findInterval(set, 'x-v3')).toBeUndefined();
  });

  it('names a harness no profile file describes', () => {
    expect(requireProfiles(set, 'codex')).toBe(set.get('codex'));
    const error = thrown(() => requireProfiles(set, 'kimi'));
    expect(error.code).toBe('PROFILE_UNKNOWN');
    expect(error.message).toBe('no compatibility profile file describes harness "kimi"');
    expect(error.hint).toBe('Reinstall blue-agent: its profiles/ folder is incomplete.');
  });
});

describe('loadProfiles', () => {
  let t: TestHome | undefined;
  afterEach(async () => {
    await t?.cleanup();
    t = undefined;
  });
  const body = (harness: string, pattern = "'^(?<version>\\d+\\.\\d+\\.\\d+)$'") =>
    `harness: ${harness}\ndisplay_name: C\nbinary: c\nversion_output:\n  - { pattern: ${pattern}, example: 1.0.0 ` +
    `}\nintervals:\n` +
    (`  - { profile: ${harness}-v1_0_0, introduced: 1.0.0, verified_before: 1.0.0, lifecycle: supported, ` +
      `operations: [] }\n`);
  async function folder(files: Record<string, string>): Promise<string> {
    t = await makeTestHome();
    const dir = path.join(t.root, 'profiles');
    await mkdir(dir);
    for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
    return dir;
  }

  it('reads .yaml and .yml files only, and compiles their patterns', async () => {
    const dir = await folder({
      'claude.yaml': body('claude'),
      'codex.yml': body('codex'),
      'kimi.yaml.bak': 'not: [yaml',
      'README.md': '#',
    });
    const set = await loadProfiles(dir);
    expect([...set.keys()]).toEqual(['claude', 'codex']);
    expect(set.get('codex')).toMatchObject({ harness: 'codex', file: path.join(dir, 'codex.yml') });
    expect(set.get('claude')!.patterns.map(String)).toEqual(['/^(?<version>\\d+\\.\\d+\\.\\d+)$/']);
  });

  it('reads files in name order, whatever order the folder lists them in', async () => {
    // Sixteen files of one harness: the first two in name order are the pair reported, however the folder lists them.
    const names = Array.from({ length: 16 }, (_, i) => `${String.fromCharCode(0x61 + i)}.yaml`);
    const dir = await folder(Object.fromEntries(names.map((n) => [n, body('claude')])));
    const error = await rejected(loadProfiles(dir));
    expect(error.message).toBe(
      `${path.join(dir, 'b.yaml')}: harness "claude" is already described by ${path.join(dir, 'a.yaml')}`,
    );
  });

  it('refuses a second file for the same harness, naming both, in name order', async () => {
    const dir = await folder({ 'b.yaml': body('claude'), 'a.yaml': body('claude') });
    const error = await rejected(loadProfiles(dir));
    expect(error.code).toBe('PROFILE_INVALID');
    expect(error.file).toBe(path.join(dir, 'b.yaml'));
    expect(error.message).toBe(
      `${path.join(dir, 'b.yaml')}: harness "claude" is already described by ${path.join(dir, 'a.yaml')}`,
    );
    expect(error.hint).toBe('Keep one profile file per harness.');
  });

  it('refuses a pattern that is not a regular expression, with its path', async () => {
    const dir = await folder({ 'claude.yaml': body('claude', "'^(?<version>[0-9'") });
    const error = await rejected(loadProfiles(dir));
    expect(error.code).toBe('PROFILE_INVALID');
    expect(error.path).toBe('/version_output/0/pattern');
    expect(error.file).toBe(path.join(dir, 'claude.yaml'));
    expect(error.message).toMatch(/claude\.yaml: \/version_output\/0\/pattern is not a valid regular expression: /);
  });

  it('names a folder it cannot read', async () => {
    t = await makeTestHome();
    const dir = path.join(t.root, 'missing');
    const error = await rejected(loadProfiles(dir));
    expect(error.code).toBe('PROFILE_INVALID');
    expect(error.file).toBe(dir);
    expect(error.message).toMatch(new RegExp(`^cannot read the profiles folder ${dir}: ENOENT`));
    expect(error.hint).toBe('Reinstall blue-agent, or point BLUE_AGENT_PROFILES_DIR at a folder of profile files.');
  });
});
