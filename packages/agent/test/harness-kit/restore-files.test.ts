/**
 * The checks every harness's restore planner shares, one by one: a bundle is hostile even after verification, so each
 * claim that becomes part of a path is checked again where it does, with a typed refusal that names the entry.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkDistinct,
  checkedSessionId,
  entriesOf,
  placement,
  restoreRoot,
  restoreUnsafe,
  safeSegments,
} from '../../src/harness-kit/restore-files.js';
import type { RestoreInput, RestorePlacement } from '../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { thrown } from '../../../../test/support/errors.js';

const interval = {
  profile: 'example-v1',
  session: { root: 'projects', roles: [{ role: 'primary_transcript' }, { role: 'session_companion' }] },
} as unknown as Interval;
const file = (role: string, native_path: string) => ({
  path: `files/${native_path}`,
  role,
  native_path,
  size: 3,
  sha256: 'a'.repeat(64),
});
const input = (
  over: { id?: string; files?: unknown[]; extracted?: string[]; interval?: Interval } = {},
): RestoreInput =>
  ({
    manifest: {
      native_session_id: over.id ?? 's-1',
      files: over.files ?? [file('primary_transcript', 'k/s-1.jsonl'), file('session_companion', 'k/s-1/x.txt')],
    },
    files: over.extracted ?? ['/x/0', '/x/1'],
    destination: '/work/proj',
    interval: over.interval ?? interval,
  }) as unknown as RestoreInput;

describe('restoreUnsafe', () => {
  it('is RESTORE_UNSAFE with the reason and a hint, the default one unless given', () => {
    const e = restoreUnsafe('why');
    expect([e.code, e.message]).toEqual(['RESTORE_UNSAFE', 'why']);
    expect(e.hint).toBe(
      'This bundle holds something no harness of this profile writes; do not restore it, and report where it came ' +
        'from.',
    );
    expect(restoreUnsafe('why', 'do this').hint).toBe('do this');
  });
});

describe('checkedSessionId', () => {
  it('gives back an id that can name a file', () => {
    expect(checkedSessionId(input())).toBe('s-1');
  });

  it('refuses one that cannot, showing it printable and short', () => {
    const e = thrown(() => checkedSessionId(input({ id: '..' })));
    expect(e.code).toBe('RESTORE_UNSAFE');
    expect(e.message).toMatch(/^the bundle's session id "\.\." cannot name a file: it /);
    const long = thrown(() => checkedSessionId(input({ id: `a/${'b'.repeat(300)}\u001b` })));
    expect(long.message).toContain(`"a/${'b'.repeat(78)}"`);
    expect(long.message).not.toContain('\u001b');
  });
});

describe('safeSegments', () => {
  it('splits a plain native path into its segments', () => {
    expect(safeSegments('k/s-1/x.txt', 'L')).toEqual(['k', 's-1', 'x.txt']);
  });

  it('refuses a path that could climb out, naming the entry and the path (cut to 200 characters)', () => {
    const e = thrown(() => safeSegments('../x', 'manifest.json: files[3] (files/x)'));
    expect(e.code).toBe('RESTORE_UNSAFE');
    expect(e.message).toMatch(/^manifest\.json: files\[3\] \(files\/x\): native_path "\.\.\/x" /);
    const long = thrown(() => safeSegments(`${'a'.repeat(300)}/../b`, 'L'));
    expect(long.message).toContain(`native_path "${'a'.repeat(200)}" `);
  });
});

describe('entriesOf', () => {
  it('pairs each manifest entry with its extracted file, labelled by its place in the manifest', () => {
    expect(entriesOf(input())).toEqual([
      {
        role: 'primary_transcript',
        nativePath: 'k/s-1.jsonl',
        from: '/x/0',
        size: 3,
        sha256: 'a'.repeat(64),
        label: 'manifest.json: files[0] (files/k/s-1.jsonl)',
      },
      {
        role: 'session_companion',
        nativePath: 'k/s-1/x.txt',
        from: '/x/1',
        size: 3,
        sha256: 'a'.repeat(64),
        label: 'manifest.json: files[1] (files/k/s-1/x.txt)',
      },
    ]);
  });

  it('refuses a bundle whose extracted files do not match its list', () => {
    const e = thrown(() => entriesOf(input({ extracted: ['/x/0'] })));
    expect([e.code, e.message]).toEqual(['RESTORE_UNSAFE', 'the bundle lists 2 files but 1 were extracted']);
  });

  it('refuses a role the profile does not restore, and every role of a profile that restores none', () => {
    const e = thrown(() => entriesOf(input({ files: [file('primary_transcript', 'a'), file('state', 'b')] })));
    expect(e.message).toBe('manifest.json: files[1] (files/b): role state is not one profile example-v1 restores');
    const none = { profile: 'bare-v1' } as unknown as Interval;
    expect(thrown(() => entriesOf(input({ interval: none }))).message).toBe(
      'manifest.json: files[0] (files/k/s-1.jsonl): role primary_transcript is not one profile bare-v1 restores',
    );
  });
});

describe('checkDistinct', () => {
  const at = (rel: string): RestorePlacement =>
    placement('/root', rel, { role: 'session_companion', from: '/x', size: 1, sha256: 'b'.repeat(64) });

  it('lets distinct targets through', () => {
    expect(() => checkDistinct([at('a'), at('b'), at('a/b')])).not.toThrow();
  });

  it('refuses two entries that land on one target, wherever they are in the list', () => {
    const e = thrown(() => checkDistinct([at('a'), at('b'), at('a')]));
    expect([e.code, e.message]).toEqual([
      'RESTORE_UNSAFE',
      'two files of the bundle would be restored to the same place, a',
    ]);
  });

  it('places a relative path under the root', () => {
    expect(at('k/x.txt').to).toBe(path.join('/root', 'k', 'x.txt'));
  });
});

describe('restoreRoot (the session-root rule of capture)', () => {
  it("is the profile's session root under the harness home", () => {
    expect(restoreRoot('/home/u/.h', interval)).toBe(path.join('/home/u/.h', 'projects'));
    expect(restoreRoot('/home/u/.h', { ...interval, session: { root: './a/../b' } } as unknown as Interval)).toBe(
      path.join('/home/u/.h', 'b'),
    );
  });

  it('refuses a profile without one, or with one outside the home', () => {
    const none = thrown(() => restoreRoot('/h', { profile: 'p-v1' } as unknown as Interval));
    expect([none.code, none.message, none.hint]).toEqual([
      'PROFILE_INVALID',
      'profile p-v1 names no session root',
      'Add session.root to this interval of the harness profile.',
    ]);
    for (const root of ['/etc', '..', '../x', 'a/../../x']) {
      const e = thrown(() => restoreRoot('/h', { profile: 'p-v1', session: { root } } as unknown as Interval));
      expect([e.code, e.message, e.hint], root).toEqual([
        'PROFILE_INVALID',
        `profile p-v1 names a session root outside the harness home: ${root}`,
        'session.root must be a path relative to the harness home, such as projects or sessions.',
      ]);
    }
    expect(restoreRoot('/h', { profile: 'p-v1', session: { root: '..x' } } as unknown as Interval)).toBe(
      path.join('/h', '..x'),
    );
  });
});
