import { createTwoFilesPatch } from 'diff';
import { describe, expect, it } from 'vitest';
import type { ReconcileReport } from '../../src/reconcile/index.js';
import { DIFF_MAX_LINES, renderHuman, unifiedDiff } from '../../src/reconcile/render.js';

/** What jsdiff prints for the whole files, without its banner line. */
function reference(file: string, before: string | null, after: string | null): string[] {
  return createTwoFilesPatch(
    before === null ? '/dev/null' : `a${file}`,
    after === null ? '/dev/null' : `b${file}`,
    before ?? '',
    after ?? '',
    undefined,
    undefined,
    { context: 3 },
  )
    .split('\n')
    .filter((line, i) => !(i === 0 && line.startsWith('=')))
    .filter((line, i, all) => !(i === all.length - 1 && line === ''));
}

const lines = (n: number, tag = 'line') => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}\n`).join('');

describe('unifiedDiff', () => {
  const cases: Array<[string, string | null, string | null]> = [
    ['a change in the middle of a long file', lines(40), lines(40).replace('line 20\n', 'line twenty\nline 20.5\n')],
    ['two changes far apart', lines(60), lines(60).replace('line 5\n', 'five\n').replace('line 50\n', '')],
    ['an append to a file without a final line break', 'a\nb\nc', 'a\nb\nc\nd\n'],
    ['a change on the first line', lines(10), `first\n${lines(10).slice('line 1\n'.length)}`],
    ['a new file', null, '{\n  "a": 1\n}\n'],
    ['a removed file', '{\n  "a": 1\n}\n', null],
    ['CRLF', 'a\r\nb\r\nc\r\n', 'a\r\nb\r\nx\r\nc\r\n'],
  ];
  for (const [name, before, after] of cases) {
    it(`${name}: the same diff as of the whole files`, () => {
      expect(unifiedDiff('/f', before, after)).toEqual(reference('/f', before, after));
    });
  }

  it('is bounded: long lines are shortened, and the diff ends with the number of lines left out', () => {
    const out = unifiedDiff('/f', lines(5000, 'old'), lines(5000, 'new'));
    expect(out).toHaveLength(DIFF_MAX_LINES + 1);
    expect(out.at(-1)).toMatch(/^… \d+ more lines of this diff not shown$/);
    const long = unifiedDiff('/f', `${'y'.repeat(100_000)}\n`, `${'y'.repeat(100_001)}\n`);
    expect(long.every((line) => line.length < 400)).toBe(true);
    expect(long.join('\n')).toContain('more characters)');
  });

  it('shows bytes that are not UTF-8 as \\xNN', () => {
    expect(unifiedDiff('/f', 'a\n', 'a\n\uDCFF\n')).toContain('+\\xff');
  });
});

describe('renderHuman', () => {
  it('names a file in error once, though its message leads with the file', () => {
    const file = '/home/me/.claude/settings.json';
    const report: ReconcileReport = {
      dry_run: true,
      policy: { revision: 1, source: 'file', location: '/p.yaml', age_seconds: null, stale: false, warnings: [] },
      harnesses: [
        {
          harness: 'claude',
          installed: true,
          path: '/bin/claude',
          raw_version: '2.1.332',
          version: '2.1.332',
          profile: 'claude-v2_0_12',
          verified: true,
          state: 'error',
          reason: 'settings.json cannot be read',
          action: 'error',
          files: [
            {
              path: file,
              action: 'error',
              error: { code: 'UNSAFE_PATH', message: `${file}: too many levels of symbolic links`, hint: 'fix it' },
            },
          ],
        },
      ],
      ok: false,
    };
    const out = renderHuman(report, { color: false, home: '/home/me' });
    expect(out).toContain('  ~/.claude/settings.json: too many levels of symbolic links\n');
    expect(out.split(file).length + out.split('~/.claude/settings.json').length - 2).toBe(1);
  });
});
