/**
 * The resume picker's rows: a session has one name everywhere, the one `sessions list` shows.
 */
import { describe, expect, it } from 'vitest';
import { sessionTable } from '../../src/cli/sessions.js';
import { sessionItem } from '../../src/resume/picker.js';
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
    expect(sessionItem(upload({ shared: true, user_email: 'bob@example.com' }), NOW).cells[2]).toBe('shared by bob@example.com');
    const shared = sessionTable([{ session: upload({ sharing_mode: 'workspace', user_email: 'bob@example.com' }), owned: false }], 200);
    expect(shared).toContain('shared by bob@example.com');
  });
});
