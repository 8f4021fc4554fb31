/**
 * The resume picker's rows: a session has one name everywhere, the one `sessions list` shows.
 */
import { describe, expect, it } from 'vitest';
import { sessionTable } from '../../src/cli/sessions.js';
import { sessionItem } from '../../src/resume/picker.js';
import type { SessionUpload } from '../../src/control-api/sessions.js';

const NOW = Date.parse('2026-05-01T12:00:00Z');

function upload(over: Partial<SessionUpload>): SessionUpload {
  return {
    upload_id: 'abcdef12-3456-4789-8abc-def012345678',
    user_id: 'u-1',
    owner_email: 'ada@example.com',
    owned: true,
    harness: 'claude',
    session_id: '5f1c2d3e-0000-4000-8000-000000000001',
    revision: 1,
    status: 'complete',
    size_bytes: 10,
    sha256: '0'.repeat(64),
    compatibility_profile: 'claude-2',
    cwd: '/work/app',
    resumable: true,
    title: null,
    summary: null,
    captured_at_unix_ms: null,
    repository_root: null,
    repository_remote: null,
    sharing: 'private',
    created_at: '2026-05-01T11:00:00Z',
    updated_at: '2026-05-01T11:00:00Z',
    completed_at: '2026-05-01T11:00:00Z',
    retention_deadline: '2026-08-01T11:00:00Z',
    expired: false,
    ...over,
  } as SessionUpload;
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
    const table = sessionTable([s], 200).split('\n');
    expect(table[1]!.startsWith(`${name} `)).toBe(true);
  });

  it('the summary of an untitled session still finds it in the picker', () => {
    expect(sessionItem(upload({ summary: 'Fix the login form' }), NOW).search).toContain('fix the login form');
  });
});
