/**
 * The rules capture applies where a session's files become bundle entries, one by one (the folder walk itself, which
 * reads the disk, is covered by each harness's session suite).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  artifactInvalid,
  assertSessionId,
  checkRoleCounts,
  entryName,
  fileOf,
  MAX_SESSION_FILES,
  nativeSegments,
  sessionRootOf,
} from '../../src/harness-kit/session-files.js';
import type { SessionFile } from '../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { thrown } from '../../../../test/support/errors.js';

const interval = {
  profile: 'example-v1',
  session: {
    root: 'projects',
    roles: [
      { role: 'primary_transcript', min: 1, max: 1 },
      { role: 'session_companion', min: 0, max: 3 },
    ],
  },
} as unknown as Interval;
const file = (role: string, n = 0): SessionFile =>
  ({ role, name: `f${n}`, nativePath: `k/f${n}`, path: `/r/k/f${n}` }) as SessionFile;

describe('artifactInvalid', () => {
  it('is ARTIFACT_INVALID naming the file, with the hint', () => {
    const e = artifactInvalid('/r/x', 'why', 'do this');
    expect([e.code, e.message, e.file, e.hint]).toEqual(['ARTIFACT_INVALID', '/r/x: why', '/r/x', 'do this']);
  });
});

describe('assertSessionId', () => {
  it('lets an id that can name a file through', () => {
    expect(() => assertSessionId('abc-123', '/where')).not.toThrow();
  });

  it('refuses one that cannot, printable and cut to 80 characters, with the rule in the hint', () => {
    const e = thrown(() => assertSessionId(`../${'x'.repeat(100)}\u001b`, '/where'));
    expect(e.code).toBe('ARTIFACT_INVALID');
    expect(e.message).toMatch(new RegExp(`^/where: session id "\\.\\./${'x'.repeat(77)}" cannot name a file: it `));
    expect(e.message).not.toContain('\u001b');
    expect(e.hint).toMatch(/^Session ids are .+; check what calls `blue-agent capture`\.$/);
  });
});

describe('nativeSegments', () => {
  it('splits a plain relative path', () => {
    expect(nativeSegments('a/b.c/d', '/f')).toEqual(['a', 'b.c', 'd']);
    expect(nativeSegments('..a/b..', '/f')).toEqual(['..a', 'b..']);
    expect(nativeSegments('x'.repeat(4096), '/f')).toHaveLength(1);
  });

  it('refuses what is empty, climbs, has an empty or dot segment, a backslash, a NUL, or is too long', () => {
    for (const rel of ['', '/a', 'a/', 'a//b', '.', 'a/./b', '..', 'a/../b', 'a\\b', 'a\0b', 'x'.repeat(4097)]) {
      const e = thrown(() => nativeSegments(rel, '/f'));
      expect([e.code, e.message], JSON.stringify(rel.slice(0, 20))).toEqual([
        'ARTIFACT_INVALID',
        '/f: has a path that cannot be stored as a native path (empty, "..", a backslash or too long)',
      ]);
      expect(e.hint).toBe('Rename the file, or leave this session uncaptured.');
    }
  });
});

describe('entryName', () => {
  it('flattens a native path into one safe name', () => {
    expect(entryName('subagents/agent-a1.jsonl')).toBe('subagents-agent-a1.jsonl');
    expect(entryName('a b/c:d')).toBe('a_b-c_d');
    expect(entryName('a  b')).toBe('a_b');
    expect(entryName('été')).toBe('_t_');
    expect(entryName('')).toBe('file');
  });

  it('keeps the last 200 characters of a long one', () => {
    const long = `${'a'.repeat(150)}/${'b'.repeat(100)}`;
    expect(entryName(long)).toBe(`${'a'.repeat(99)}-${'b'.repeat(100)}`);
    expect(entryName('c'.repeat(200))).toBe('c'.repeat(200));
  });
});

describe('sessionRootOf', () => {
  it('is the session root under the harness home', () => {
    expect(sessionRootOf('/h', interval)).toBe(path.join('/h', 'projects'));
  });
});

describe('fileOf', () => {
  it('takes the native path and the path from the checked file', () => {
    expect(fileOf('primary_transcript', 'n', { abs: '/r/k/x', rel: 'k/x', size: 1, dev: 1, ino: 2 })).toStrictEqual({
      role: 'primary_transcript',
      name: 'n',
      nativePath: 'k/x',
      path: '/r/k/x',
    });
  });
});

describe('checkRoleCounts', () => {
  it('accepts files within every role count', () => {
    expect(() =>
      checkRoleCounts(
        interval,
        [
          file('primary_transcript'),
          file('session_companion', 1),
          file('session_companion', 2),
          file('session_companion', 3),
        ],
        '/w',
      ),
    ).not.toThrow();
  });

  it('refuses a profile that says nothing about roles', () => {
    const e = thrown(() => checkRoleCounts({ profile: 'bare-v1' } as unknown as Interval, [], '/w'));
    expect([e.code, e.message, e.hint]).toEqual([
      'PROFILE_INVALID',
      'profile bare-v1 says nothing about which session files it captures',
      'Add session.roles to this interval of the harness profile.',
    ]);
  });

  it('refuses more files than a bundle holds, before looking at roles', () => {
    const many = Array.from({ length: MAX_SESSION_FILES + 1 }, (_, i) => file('other', i));
    const over = thrown(() => checkRoleCounts(interval, many, '/w'));
    expect([over.code, over.message, over.hint]).toEqual([
      'ARTIFACT_INVALID',
      `/w: the session has ${MAX_SESSION_FILES + 1} files, over the 2048-file limit`,
      'Blue bundles hold at most 2048 files; this session cannot be captured whole.',
    ]);
    const full = [
      file('primary_transcript'),
      ...Array.from({ length: MAX_SESSION_FILES - 1 }, (_, i) => file('session_companion', i + 1)),
    ];
    expect(thrown(() => checkRoleCounts(interval, full, '/w')).message).toBe(
      '/w: the session has 2047 session_companion files; profile example-v1 allows at most 3',
    );
  });

  it('refuses a role the profile does not capture, too few and too many of a role', () => {
    const other = thrown(() => checkRoleCounts(interval, [file('primary_transcript'), file('rollout', 1)], '/w'));
    expect([other.message, other.hint]).toEqual([
      '/w: profile example-v1 does not capture rollout files',
      'Use a blue-agent version whose profile matches this harness version.',
    ]);
    const few = thrown(() => checkRoleCounts(interval, [file('session_companion')], '/w'));
    expect([few.code, few.message]).toEqual([
      'ARTIFACT_INVALID',
      '/w: the session has 0 primary_transcript file(s); profile example-v1 needs at least 1',
    ]);
    expect(few.hint).toMatch(/did not write every file/);
    const many = thrown(() =>
      checkRoleCounts(interval, [file('primary_transcript'), file('primary_transcript', 1)], '/w'),
    );
    expect(many.message).toBe('/w: the session has 2 primary_transcript files; profile example-v1 allows at most 1');
    expect(many.hint).toMatch(/larger than Blue bundles allow/);
  });
});

describe('findSessionFiles (listings for the idle sweep and backfill)', () => {
  it(
    'lists regular files at the depth asked whose names give a valid id; no link, FIFO or folder; bounded; a ' +
      'missing root lists nothing',
    async () => {
      const { mkdtemp, mkdir, writeFile, symlink, rm } = await import('node:fs/promises');
      const { execFileSync } = await import('node:child_process');
      const { tmpdir } = await import('node:os');
      const { findSessionFiles } = await import('../../src/harness-kit/session-files.js');
      const root = await mkdtemp(path.join(tmpdir(), 'blue-agent-listing-'));
      try {
        await mkdir(path.join(root, 'proj', 'dir.jsonl'), { recursive: true });
        await writeFile(path.join(root, 'proj', 'a.jsonl'), 'x');
        await writeFile(path.join(root, 'proj', 'b.jsonl'), 'yy');
        await writeFile(path.join(root, 'proj', 'notes.txt'), 'z');
        await writeFile(path.join(root, 'top.jsonl'), 'not at the depth');
        await writeFile(path.join(root, 'proj', '..bad.jsonl'), 'bad id');
        await symlink(path.join(root, 'proj', 'a.jsonl'), path.join(root, 'proj', 'link.jsonl'));
        execFileSync('mkfifo', [path.join(root, 'proj', 'fifo.jsonl')]);
        const idOf = (name: string) => (name.endsWith('.jsonl') ? name.slice(0, -6) : undefined);
        const all = await findSessionFiles(root, { depth: 1, idOf, limit: 10 });
        expect(all.files.map((f) => [f.id, f.size])).toEqual([
          ['a', 1],
          ['b', 2],
        ]);
        expect(all.truncated).toBe(false);
        const cut = await findSessionFiles(root, { depth: 1, idOf, limit: 1 });
        expect([cut.files.length, cut.truncated]).toEqual([1, true]);
        expect(await findSessionFiles(path.join(root, 'absent'), { depth: 1, idOf, limit: 10 })).toEqual({
          files: [],
          truncated: false,
        });
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    },
  );
});
