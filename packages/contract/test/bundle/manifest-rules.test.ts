/**
 * The naming rules shared by the bundle writer and reader, the role rules of a profile, and the manifest's exact
 * serialisation.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  buildManifest,
  entryNameProblem,
  fileEntryName,
  FILE_ENTRY_PATTERN,
  nameProblem,
  nativePathProblem,
  profileProblem,
  serializeManifest,
  type BundleFile,
} from '../../src/bundle/manifest.js';
import type { ProfileSet } from '../../src/profiles/index.js';
import { shippedProfiles } from '../../../../test/support/handmade-bundles.js';

let profiles: ProfileSet;
beforeAll(async () => {
  profiles = await shippedProfiles();
});

describe('nameProblem', () => {
  it('admits letters, digits, dot, underscore and dash up to 250 characters', () => {
    expect(nameProblem('a')).toBeUndefined();
    expect(nameProblem('Agent-1_x.jsonl')).toBeUndefined();
    expect(nameProblem('x'.repeat(250))).toBeUndefined();
  });

  it('refuses an empty name, any other character, and a name past 250 characters', () => {
    for (const name of ['', 'a b', 'a/b', 'é', 'a\nb', 'x.jsonl\n'])
      expect(nameProblem(name)).toBe('must be 1 or more characters of A-Z a-z 0-9 . _ -');
    expect(nameProblem('x'.repeat(251))).toBe('is longer than 250 characters');
  });
});

describe('fileEntryName', () => {
  it('pads the index to four digits, and the result matches FILE_ENTRY_PATTERN', () => {
    expect(fileEntryName(7, 'a.jsonl')).toBe('files/0007-a.jsonl');
    expect(fileEntryName(2047, 'b')).toBe('files/2047-b');
    expect(FILE_ENTRY_PATTERN.exec('files/0007-a.jsonl')?.[1]).toBe('0007-a.jsonl');
    for (const name of ['files/007-a', 'files/0007-', 'files/0007-a/b', 'x/files/0007-a', 'files/0007-a b'])
      expect(FILE_ENTRY_PATTERN.test(name)).toBe(false);
  });
});

describe('nativePathProblem', () => {
  it('admits a relative path of plain segments, up to the caps', () => {
    for (const p of [
      'a',
      'a/b.jsonl',
      '-home-dev-app/c0ffee/subagents/agent-1.jsonl',
      '..a/b..',
      'a./.b',
      'C/x',
      `${'s'.repeat(255)}/x`,
      'é/ü',
    ]) {
      expect(nativePathProblem(p), p).toBeUndefined();
    }
    const longest = `${`${'x'.repeat(200)}/`.repeat(20)}${'x'.repeat(76)}`;
    expect(Buffer.byteLength(longest)).toBe(4096);
    expect(nativePathProblem(longest)).toBeUndefined();
    expect(nativePathProblem(`a/${'x'.repeat(255)}`)).toBeUndefined();
    expect(nativePathProblem('a/C:x')).toBeUndefined();
  });

  const refused: [string, string][] = [
    ['', 'is empty'],
    [`a/${'x'.repeat(4095)}`, 'is longer than 4096 bytes'],
    ['a\0b', 'contains a NUL character'],
    ['a\\b', 'contains a backslash'],
    ['a\u0001b', 'contains a control character'],
    ['a\u001fb', 'contains a control character'],
    ['a\u007fb', 'contains a control character'],
    ['a\u009fb', 'contains a control character'],
    ['a\u061cb', 'contains a control character'],
    ['a\u200eb', 'contains a control character'],
    ['a\u200fb', 'contains a control character'],
    ['a\u202ab', 'contains a control character'],
    ['a\u202eb', 'contains a control character'],
    ['a\u2066b', 'contains a control character'],
    ['a\u2069b', 'contains a control character'],
    ['/etc/passwd', 'is absolute'],
    ['C:x', 'starts with a drive letter'],
    ['z:/x', 'starts with a drive letter'],
    ['a//b', 'has an empty path segment ("//" or a leading or trailing "/")'],
    ['a/', 'has an empty path segment ("//" or a leading or trailing "/")'],
    ['..', 'contains ".."'],
    ['a/../b', 'contains ".."'],
    ['./a', 'contains a "." segment'],
    ['a/.', 'contains a "." segment'],
    [`a/${'x'.repeat(256)}`, 'has a path segment longer than 255 bytes'],
    [`a/${'é'.repeat(128)}`, 'has a path segment longer than 255 bytes'],
    ['a/b.blue-agent-restore-1/c', 'names a blue-agent temporary file (".blue-agent-restore")'],
    ['.blue-agent-restore', 'names a blue-agent temporary file (".blue-agent-restore")'],
  ];
  for (const [p, problem] of refused) {
    it(`refuses ${JSON.stringify(p.length > 40 ? `${p.slice(0, 20)}…` : p)}: ${problem}`, () => {
      expect(nativePathProblem(p)).toBe(problem);
    });
  }

  it('measures the length cap in bytes, not characters', () => {
    const segment = 'é'.repeat(100);
    const p = Array.from({ length: 21 }, () => segment).join('/');
    expect(p.length).toBeLessThan(4096);
    expect(nativePathProblem(p)).toBe('is longer than 4096 bytes');
  });
});

describe('entryNameProblem', () => {
  it('admits plain names, and one trailing slash for a directory only', () => {
    expect(entryNameProblem('files/0000-a')).toBeUndefined();
    expect(entryNameProblem('files/', true)).toBeUndefined();
    expect(entryNameProblem('files/')).toBe('has an empty segment in its name ("//", or a leading or trailing "/")');
    expect(entryNameProblem('files//', true)).toBe(
      'has an empty segment in its name ("//", or a leading or trailing "/")',
    );
  });

  const refused: [string, string][] = [
    ['', 'has an empty name'],
    [`a/${'x'.repeat(1023)}`, 'has a name longer than 1024 bytes'],
    ['a\0b', 'has a NUL character in its name'],
    ['a\\b', 'has a backslash in its name'],
    ['a\u001bb', 'has a control character in its name'],
    ['a\u202eb', 'has a control character in its name'],
    ['/a', 'has an absolute name'],
    ['c:a', 'has a name starting with a drive letter'],
    ['a/../b', 'has ".." in its name'],
    ['a/./b', 'has a "." segment in its name'],
    ['a//b', 'has an empty segment in its name ("//", or a leading or trailing "/")'],
    [`a/${'x'.repeat(256)}`, 'has a name segment longer than 255 bytes'],
  ];
  for (const [name, problem] of refused) {
    it(`refuses ${JSON.stringify(name.length > 40 ? `${name.slice(0, 20)}…` : name)}: ${problem}`, () => {
      expect(entryNameProblem(name)).toBe(problem);
    });
  }

  it('admits names right at the caps, and a drive-letter look-alike past the first segment', () => {
    const longest = `${`${'x'.repeat(200)}/`.repeat(5)}${'x'.repeat(19)}`;
    expect(Buffer.byteLength(longest)).toBe(1024);
    expect(entryNameProblem(longest)).toBeUndefined();
    expect(entryNameProblem(`a/${'x'.repeat(255)}`)).toBeUndefined();
    expect(entryNameProblem('a/c:x')).toBeUndefined();
  });

  it('keeps every rule for directory names too', () => {
    expect(entryNameProblem('a/..', true)).toBe('has ".." in its name');
    expect(entryNameProblem('a/b', true)).toBeUndefined();
    expect(entryNameProblem('../', true)).toBe('has ".." in its name');
    expect(entryNameProblem('./', true)).toBe('has a "." segment in its name');
    expect(entryNameProblem('/a/', true)).toBe('has an absolute name');
  });

  it('measures the length cap in bytes', () => {
    expect(entryNameProblem(Array.from({ length: 6 }, () => 'é'.repeat(100)).join('/'))).toBe(
      'has a name longer than 1024 bytes',
    );
  });
});

describe('profileProblem', () => {
  const label = (i: number) => `file #${i}`;
  // Roles as a hostile manifest may carry them: any string.
  type Listed = { role: string; native_path?: string };
  const roles = (files: Listed[]) => files as Pick<BundleFile, 'role' | 'native_path'>[];
  const claudeFiles = (...files: Listed[]) => ({
    harness: 'claude',
    compatibility_profile: 'claude-v2_0_12',
    files: roles(files),
  });
  const transcript = { role: 'primary_transcript', native_path: 'p/c0ffee.jsonl' };
  const companion = { role: 'session_companion', native_path: 'p/c0ffee/a.jsonl' };

  it('accepts the roles of the profile in their counts', () => {
    expect(profileProblem(claudeFiles(transcript), profiles, label)).toBeUndefined();
    expect(profileProblem(claudeFiles(transcript, companion, companion), profiles, label)).toBeUndefined();
  });

  it('refuses an unknown profile, and a profile of another harness', () => {
    expect(profileProblem({ ...claudeFiles(transcript), compatibility_profile: 'claude-v0' }, profiles, label)).toBe(
      'compatibility profile "claude-v0" is unknown to this blue-agent',
    );
    expect(profileProblem({ ...claudeFiles(transcript), harness: 'codex' }, profiles, label)).toBe(
      'harness "codex" does not match profile claude-v2_0_12, which is for claude',
    );
  });

  it('refuses a profile that describes no session files', () => {
    const loaded = profiles.get('claude')!;
    const bare = new Map(profiles);
    bare.set('claude', {
      ...loaded,
      doc: { ...loaded.doc, intervals: loaded.doc.intervals.map((i) => ({ ...i, session: undefined })) },
    });
    expect(profileProblem(claudeFiles(transcript), bare, label)).toBe(
      'profile claude-v2_0_12 describes no session files',
    );
  });

  it('refuses a role the profile does not have, listing the roles it has', () => {
    expect(profileProblem(claudeFiles(transcript, { role: 'rollout', native_path: 'p/x' }), profiles, label)).toBe(
      "file #1: role rollout is not one of profile claude-v2_0_12's roles (primary_transcript, session_companion)",
    );
  });

  it('needs a native_path under a session root, and none without one', () => {
    expect(profileProblem(claudeFiles(transcript, { role: 'session_companion' }), profiles, label)).toBe(
      'file #1: has no native_path, but profile claude-v2_0_12 restores every file under its session root',
    );
    const opencode = { harness: 'opencode', compatibility_profile: 'opencode-v1_2_0' };
    expect(
      profileProblem({ ...opencode, files: roles([{ role: 'portable_export' }]) }, profiles, label),
    ).toBeUndefined();
    expect(
      profileProblem(
        { ...opencode, files: roles([{ role: 'portable_export', native_path: 'x.json' }]) },
        profiles,
        label,
      ),
    ).toBe(
      'file #0: has a native_path, but profile opencode-v1_2_0 has no session root (its files are restored through ' +
        'the harness)',
    );
  });

  it('refuses too few or too many files of a role, naming the count wanted and found', () => {
    expect(profileProblem(claudeFiles(companion), profiles, label)).toBe(
      'profile claude-v2_0_12 needs exactly 1 primary_transcript file, found 0',
    );
    expect(profileProblem(claudeFiles(transcript, transcript), profiles, label)).toBe(
      'profile claude-v2_0_12 needs exactly 1 primary_transcript file, found 2',
    );
    const kimi = (counts: Record<string, number>) => ({
      harness: 'kimi',
      compatibility_profile: 'kimi-v1_28_0',
      files: roles(
        Object.entries(counts).flatMap(([role, n]) =>
          Array.from({ length: n }, (_, i) => ({ role, native_path: `s/${role}-${i}` })),
        ),
      ),
    });
    expect(
      profileProblem(kimi({ agent_wire_history: 1, kimi_state: 1, session_state: 1 }), profiles, label),
    ).toBeUndefined();
    expect(profileProblem(kimi({ agent_wire_history: 1, kimi_state: 1, session_state: 0 }), profiles, label)).toBe(
      'profile kimi-v1_28_0 needs 1 to 2046 session_state files, found 0',
    );
    expect(profileProblem(kimi({ agent_wire_history: 1, kimi_state: 1, session_state: 2047 }), profiles, label)).toBe(
      'profile kimi-v1_28_0 needs 1 to 2046 session_state files, found 2047',
    );
    expect(
      profileProblem(kimi({ agent_wire_history: 1, kimi_state: 1, session_state: 2046 }), profiles, label),
    ).toBeUndefined();
  });

  it('reports the first file that breaks a rule', () => {
    expect(profileProblem(claudeFiles(transcript, { role: 'a' }, { role: 'b' }), profiles, label)).toMatch(
      /^file #1: role a /,
    );
  });
});

describe('buildManifest and serializeManifest', () => {
  const file: BundleFile = {
    role: 'rollout',
    path: 'files/0000-r.jsonl',
    native_path: '2025/r.jsonl',
    size: 3,
    sha256: 'ab'.repeat(32),
  };
  const fields = {
    harness: 'codex' as const,
    profile: 'codex-v0_145_0',
    sessionId: 's-1',
    capturedAtUnixMs: 1700000000000,
  };

  it('writes the required fields in schema order, files last, and nothing that was not given', () => {
    const manifest = buildManifest(
      { ...fields, cwd: undefined, repository: undefined, title: undefined, summary: undefined },
      [{ ...file, native_path: undefined }],
    );
    expect(Object.keys(manifest)).toEqual([
      'schema_version',
      'artifact_format',
      'harness',
      'compatibility_profile',
      'native_session_id',
      'captured_at_unix_ms',
      'files',
    ]);
    expect(Object.keys(manifest.files[0]!)).toEqual(['role', 'path', 'size', 'sha256']);
    expect(JSON.stringify(manifest)).toBe(
      '{"schema_version":1,"artifact_format":"blue-session-bundle-v1","harness":"codex",' +
        '"compatibility_profile":"codex-v0_145_0","native_session_id":"s-1","captured_at_unix_ms":1700000000000,' +
        '"files":[{"role":"rollout","path":"files/0000-r.jsonl","size":3,"sha256":"' +
        'ab'.repeat(32) +
        '"}]}',
    );
  });

  it('writes every optional field in order, whatever order the input had', () => {
    const extra = { summary: 'sum', title: 'T', repository: { remote: 'git@x:y.git', root: '/r' }, cwd: '/r/w' };
    const shuffled = {
      sha256: file.sha256,
      size: 3,
      native_path: file.native_path,
      path: file.path,
      role: file.role,
    } as BundleFile;
    expect(JSON.stringify(buildManifest({ ...extra, ...fields }, [shuffled]))).toBe(
      '{"schema_version":1,"artifact_format":"blue-session-bundle-v1","harness":"codex",' +
        '"compatibility_profile":"codex-v0_145_0","native_session_id":"s-1","captured_at_unix_ms":1700000000000,' +
        '"cwd":"/r/w","repository":{"root":"/r","remote":"git@x:y.git"},"title":"T","summary":"sum",' +
        '"files":[{"role":"rollout","path":"files/0000-r.jsonl","native_path":"2025/r.jsonl","size":3,"sha256":"' +
        'ab'.repeat(32) +
        '"}]}',
    );
    expect(
      Object.keys(buildManifest({ ...fields, repository: { root: '/r', remote: undefined } }, []).repository!),
    ).toEqual(['root']);
  });

  it('serialises as two-space JSON with a final newline, in UTF-8', () => {
    const manifest = buildManifest({ ...fields, title: 'Überblick' }, [file]);
    const bytes = serializeManifest(manifest);
    expect(bytes.toString('utf8')).toBe(`${JSON.stringify(manifest, null, 2)}\n`);
    expect(bytes.includes(Buffer.from('Überblick', 'utf8'))).toBe(true);
  });
});
