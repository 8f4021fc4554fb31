/**
 * The resume picker's rows: a session has one name everywhere, the one `sessions list` shows.
 */
import { describe, expect, it } from 'vitest';
import { sessionTable } from '../../src/cli/sessions.js';
import { mergeFound, scrollOffset, searchable, sessionItem } from '../../src/resume/picker.js';
import type { CapturedSession } from '../../src/control-api/sessions.js';

const NOW = Date.parse('2026-05-01T12:00:00Z');

function upload(over: Partial<CapturedSession>): CapturedSession {
  return {
    id: 'abcdef12-3456-4789-8abc-def012345678',
    user_id: 'u-1',
    user_email: 'ada@example.com',
    harness: 'claude',
    compatibility_profile: 'claude-2',
    native_session_id: '5f1c2d3e-0000-4000-8000-000000000001',
    cwd: '/work/app',
    artifact_format: 'blue-session-bundle-v1',
    resumable: true,
    title: null,
    summary: null,
    source_captured_at: null,
    repository: { root: null, remote: null },
    sharing_mode: 'private',
    share_recipient_count: 0,
    tags: [],
    updated_at: '2026-05-01T11:00:00Z',
    status: 'complete',
    size_bytes: 10,
    content_type: null,
    retention_expires_at: '2026-08-01T11:00:00Z',
    sha256: null,
    artifact_id: null,
    ...over,
  };
}

describe('the name of a session', () => {
  it.each([
    ['untitled', { title: null, summary: null }, 'Session abcdef12'],
    ['untitled with a summary', { title: null, summary: 'Fix the login form' }, 'Session abcdef12'],
    ['blank title', { title: '  \n ', summary: null }, 'Session abcdef12'],
    ['titled', { title: 'Fix  the\nlogin', summary: null }, 'Fix the login'],
  ] as const)('%s: the picker and sessions list agree', (_what, over, name) => {
    const s = upload(over);
    expect(sessionItem(s, NOW).cells[0]).toBe(name);
    const table = sessionTable([{ session: s, owned: true }], 200).split('\n');
    expect(table[1]!.startsWith(`${name} `)).toBe(true);
  });

  it('the summary of an untitled session still finds it in the picker', () => {
    expect(sessionItem(upload({ summary: 'Fix the login form' }), NOW).search).toContain('fix the login form');
  });

  it("the picker's owner column: you, or who shared it (the listing's `shared`)", () => {
    expect(sessionItem(upload({ shared: false }), NOW).cells[2]).toBe('you');
    expect(sessionItem(upload({ shared: true, user_email: 'bob@example.com' }), NOW).cells[2]).toBe(
      'shared by bob@example.com',
    );
    const shared = sessionTable(
      [{ session: upload({ sharing_mode: 'workspace', user_email: 'bob@example.com' }), owned: false }],
      200,
    );
    expect(shared).toContain('shared by bob@example.com');
  });
});

describe('searching as you type', () => {
  const item = (key: string | undefined, detail?: string) => ({
    value: key,
    cells: [key ?? '-'],
    search: key ?? '',
    ...(key === undefined ? {} : { key }),
    ...(detail === undefined ? {} : { detail }),
  });

  it('asks the server only for two letters or digits or more', () => {
    expect(searchable('')).toBe(false);
    expect(searchable('a')).toBe(false);
    expect(searchable(' a- ')).toBe(false);
    expect(searchable('ab')).toBe(true);
    expect(searchable('é1')).toBe(true);
    expect(searchable('--')).toBe(false);
  });

  it("puts the search's answers first, in their order, and keeps every local match once", () => {
    const merged = mergeFound([item('b', '[x]'), item('c', '[x]')], [item('a'), item('b'), item(undefined)]);
    expect(merged.map((i) => [i.key, i.detail])).toEqual([
      ['b', '[x]'],
      ['c', '[x]'],
      ['a', undefined],
      [undefined, undefined],
    ]);
    expect(mergeFound([], [item('a')]).map((i) => i.key)).toEqual(['a']);
  });

  it('scrolls so the chosen item is whole, two lines for an item with a snippet', () => {
    const heights = [2, 2, 1, 2, 1, 1];
    const h = (i: number) => heights[i]!;
    // Everything fits: from the top.
    expect(scrollOffset(0, 5, 6, 20, h)).toBe(0);
    // Room for 4 lines, the cursor on item 3 (two lines): items 2 and 3 are shown (1 + 2 lines), 1 would not fit.
    expect(scrollOffset(0, 3, 6, 4, h)).toBe(2);
    // Moving back up shows the cursor's item first.
    expect(scrollOffset(3, 1, 6, 4, h)).toBe(1);
    // At the end, the list is pulled down to fill the screen: items 3, 4, 5 take 4 lines.
    expect(scrollOffset(5, 5, 6, 4, h)).toBe(3);
    // A room smaller than the item still shows it first.
    expect(scrollOffset(0, 3, 6, 1, h)).toBe(3);
  });
});
