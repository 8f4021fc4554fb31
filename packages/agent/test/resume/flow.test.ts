/** The pure parts of resume: option checks, eligibility, repository identity, quoting, and fitting text to a width. */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import {
  compareRepository,
  decideDestination,
  decideMode,
  eligibility,
  launchLine,
  mismatchQuestion,
  normaliseRemote,
  repositoryRefused,
  shellQuote,
} from '../../src/resume/flow.js';
import { SESSION_COLUMNS, layout, renderRow } from '../../src/resume/picker.js';
import { fit, fitPath, textWidth } from '../../src/resume/terminal.js';
import { agentRoot } from '../../../../test/support/context.js';

describe('options', () => {
  it('needs an id for --json and a terminal for the picker; --json never launches', () => {
    expect(() => decideMode(undefined, { json: true }, true)).toThrow(/needs a session id/);
    expect(() => decideMode(undefined, {}, false)).toThrow(/not a terminal/);
    expect(decideMode('abcdef12', { json: true }, true)).toMatchObject({
      interactive: false,
      planOnly: true,
      launch: false,
    });
    expect(decideMode('abcdef12', { json: true, yes: true }, true)).toMatchObject({ planOnly: false, launch: false });
    expect(decideMode('abcdef12', { launch: false }, true)).toMatchObject({ interactive: true, launch: false });
    expect(decideMode('abcdef12', {}, false)).toMatchObject({ interactive: false, launch: false });
  });

  it('asks for the destination only when the recorded directory differs', () => {
    expect(decideDestination('/given', '/here', '/there')).toEqual({ kind: 'given', dir: '/given' });
    expect(decideDestination(undefined, '/here', '/here')).toMatchObject({ kind: 'current', dir: '/here' });
    expect(decideDestination(undefined, '/here', null)).toMatchObject({ kind: 'current', dir: '/here' });
    expect(decideDestination(undefined, '/here', '/there')).toEqual({
      kind: 'ask',
      current: '/here',
      recorded: '/there',
    });
  });
});

describe('eligibility', async () => {
  const profiles = await loadProfiles(path.join(agentRoot, 'profiles'));
  const doc = profiles.get('claude')!.doc;
  const v2 = doc.intervals.find((i) => i.profile === 'claude-v2_0_12')!;
  const policy = { revision: 1, contract_version: 1 } as never;
  it('follows the interval, the policy and the certification ceiling', () => {
    expect(eligibility('claude', doc, v2, '2.1.197', policy)).toMatchObject({ ok: true, verified: true });
    expect(eligibility('claude', doc, v2, '1.0.90', policy).ok).toBe(false);
    expect(eligibility('claude', doc, v2, '2.1.400', policy).ok).toBe(false);
    expect(
      eligibility('claude', doc, v2, '2.1.400', {
        ...(policy as object),
        harnesses: { claude: { allow_unverified_versions: true } },
      } as never),
    ).toMatchObject({ ok: true, verified: false });
    expect(
      eligibility('claude', doc, v2, '2.1.197', { ...(policy as object), allowed_harnesses: ['codex'] } as never).ok,
    ).toBe(false);
    expect(
      eligibility('claude', doc, v2, '2.1.197', {
        ...(policy as object),
        harnesses: { claude: { version_requirement: '>=2.2.0' } },
      } as never).ok,
    ).toBe(false);
  });

  it(
    'lets a later interval that resumes the profile resume its sessions, under its own ceiling, and explains a ' +
      'refusal',
    () => {
      const iv = (
        profile: string,
        introduced: string,
        before: string | undefined,
        verified_before: string,
        resumes?: string[],
      ) => ({
        profile,
        introduced,
        ...(before === undefined ? {} : { before }),
        verified_before,
        lifecycle: 'supported' as const,
        operations: ['session_capture' as const, 'session_resume' as const],
        ...(resumes === undefined ? {} : { resumes }),
      });
      const layered = {
        ...doc,
        intervals: [
          iv('claude-v1_0_0', '1.0.0', '2.0.0', '2.0.0'),
          iv('claude-v2_0_0', '2.0.0', '3.0.0', '3.0.0'),
          iv('claude-v3_0_0', '3.0.0', undefined, '3.5.0', ['claude-v2_0_0']),
        ],
      };
      const [v1, v2old, v3] = layered.intervals;
      expect(eligibility('claude', layered, v2old!, '3.1.0', policy)).toMatchObject({ ok: true, verified: true });
      // The resuming version's own ceiling counts.
      expect(eligibility('claude', layered, v2old!, '3.6.0', policy)).toMatchObject({ ok: false });
      expect(
        eligibility('claude', layered, v2old!, '3.6.0', {
          ...(policy as object),
          harnesses: { claude: { allow_unverified_versions: true } },
        } as never),
      ).toMatchObject({ ok: true, verified: false });
      // Newer data in an older version, and data no later interval reads, are refused with who can resume them.
      const older = eligibility('claude', layered, v3!, '2.5.0', policy);
      expect(older.ok).toBe(false);
      expect(!older.ok && older.error.message).toBe(
        'Claude Code 2.5.0 cannot resume this session: it was captured under profile claude-v3_0_0, which Claude ' +
          'Code [3.0.0, ∞) can resume; claude-v2_0_0 (Claude Code [2.0.0, 3.0.0)) does not read sessions of ' +
          'claude-v3_0_0',
      );
      const unread = eligibility('claude', layered, v1!, '3.1.0', policy);
      expect(!unread.ok && unread.error.message).toContain('which Claude Code [1.0.0, 2.0.0) can resume');
      expect(!unread.ok && unread.error.hint).toBe('Install a Claude Code version in [1.0.0, 2.0.0), then try again.');
      const none = eligibility('claude', layered, v2old!, '0.9.0', policy);
      expect(!none.ok && none.error.message).toContain('no profile covers Claude Code 0.9.0');
      expect(!none.ok && none.error.hint).toBe('Install Claude Code 3.0.0 or newer, then try again.');
    },
  );
});

describe('repository identity', () => {
  it('treats spellings of one remote as the same repository', () => {
    const same = [
      'git@github.com:Org/App.git',
      'ssh://git@github.com/Org/App',
      'https://github.com/Org/App.git/',
      'https://GitHub.com:443/Org/App',
    ];
    for (const url of same) expect(normaliseRemote(url)).toBe('github.com/Org/App');
    expect(normaliseRemote('https://github.com/Org/Other')).not.toBe('github.com/Org/App');
  });
  it('compares the manifest repository with the destination', () => {
    expect(compareRepository(undefined, { root: '/x', remote: 'a' })).toEqual({ kind: 'unknown' });
    expect(
      compareRepository({ root: '/r', remote: 'git@h:o/r.git' }, { root: '/x', remote: 'https://h/o/r' }),
    ).toMatchObject({ kind: 'same' });
    expect(
      compareRepository({ root: '/r', remote: 'git@h:o/r.git' }, { root: '/x', remote: 'https://h/o/other' }),
    ).toMatchObject({ kind: 'mismatch' });
    expect(compareRepository({ root: '/r', remote: 'git@h:o/r.git' }, { root: '/x' })).toMatchObject({
      kind: 'mismatch',
    });
    expect(compareRepository({ root: '/r', remote: 'git@h:o/r.git' }, undefined)).toMatchObject({
      kind: 'mismatch',
      why: expect.stringContaining('not in a git repository'),
    });
  });

  it('asks about a folder outside any repository as a folder, not as "this other repository"', () => {
    const ask = (local: { root: string; remote?: string } | undefined) => {
      const check = compareRepository({ root: '/r', remote: 'git@h:o/r.git' }, local);
      if (check.kind !== 'mismatch') throw new Error(check.kind);
      return mismatchQuestion(check);
    };
    expect(ask(undefined)).toBe('Restore it into this folder, outside any repository, anyway?');
    expect(ask({ root: '/x', remote: 'https://h/o/other' })).toBe('Restore it into this other repository anyway?');
    expect(ask({ root: '/x' })).toBe('Restore it into this other repository anyway?');
  });
  it('a hostile recorded remote reaches no message or prompt with its escapes, and is bounded', () => {
    const unsafe = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
    const remote = `https://h/o/r\u001b]0;pwned\u0007\u001b[2J\u009b1m\u202e${'x'.repeat(5000)}`;
    const check = compareRepository({ root: '/r', remote }, { root: '/x', remote: 'https://h/o/other\u001b[31m' });
    expect(check.kind).toBe('mismatch');
    if (check.kind !== 'mismatch') return;
    expect(check.recorded).not.toMatch(unsafe);
    expect(check.why).not.toMatch(unsafe);
    expect(check.recorded.length).toBeLessThan(400);
    for (const reason of ['declined', 'no-terminal'] as const) {
      const error = repositoryRefused(check, reason);
      expect(error.message).not.toMatch(unsafe);
      expect(error.message.length).toBeLessThan(1000);
    }
    // The comparison itself still uses the remote as recorded.
    expect(
      compareRepository({ root: '/r', remote: 'https://h/o/r' }, { root: '/x', remote: 'git@h:o/r.git' }).kind,
    ).toBe('same');
  });
});

describe('the command line printed', () => {
  it('quotes for a POSIX shell', () => {
    expect(shellQuote('abc-1.2/x')).toBe('abc-1.2/x');
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(shellQuote('a b;$(rm)')).toBe(`'a b;$(rm)'`);
    expect(shellQuote('')).toBe(`''`);
    expect(launchLine('/my dir', ['claude', '--resume', 'id-1'])).toBe(`cd '/my dir' && claude --resume id-1`);
  });
});

describe('fitting text', () => {
  it('never exceeds the width, marks cuts with an ellipsis, counts wide characters as two', () => {
    expect(fit('hello world', 8)).toBe('hello w…');
    expect(fit('short', 8)).toBe('short');
    expect(textWidth(fit('日本語のタイトルです', 7))).toBeLessThanOrEqual(7);
    expect(fit('a\u001b[31mb', 10)).toBe('a [31mb');
    // Every bidirectional mark too, as every text shown is held to (util/terminal-text.ts).
    expect(fit('a\u200eb\u200fc\u061cd\u202ee', 20)).toBe('a b c d e');
    expect(fitPath('/home/me/projects/deep/dir', 12)).toBe('…ts/deep/dir');
    expect(textWidth(fitPath('/home/me/projects/deep/dir', 12))).toBeLessThanOrEqual(12);
  });
  it('drops columns on narrow terminals and keeps every row within the width', () => {
    for (const width of [20, 30, 45, 60, 80, 120, 200]) {
      const widths = layout(SESSION_COLUMNS, width);
      const row = renderRow(SESSION_COLUMNS, widths, [
        'A very long title that goes on and on',
        'opencode',
        'shared by someone@example.com',
        '/home/me/a/very/deep/project/dir',
        '3 days ago',
      ]);
      expect(textWidth(row), `${width}: ${row}`).toBeLessThanOrEqual(width);
    }
    expect(layout(SESSION_COLUMNS, 30).filter((w) => w > 0).length).toBeLessThan(SESSION_COLUMNS.length);
    expect(layout(SESSION_COLUMNS, 140).every((w) => w > 0)).toBe(true);
  });
  it('gives the width to the text that is cut, not to a column wider than what it holds', () => {
    // An 80-column terminal: the row has 77. The owner "you" needs no more than its heading, the folder its path.
    const cells = ['Explain the build steps of this project', 'claude', 'you', '/tmp/nu/work/proj', '18 min ago'];
    const widest = SESSION_COLUMNS.map((c, i) => Math.max(c.name.length, cells[i]!.length));
    const widths = layout(SESSION_COLUMNS, 77, widest);
    expect(widths.slice(1)).toEqual([7, 10, 17, 10]);
    expect(renderRow(SESSION_COLUMNS, widths, cells)).toBe(
      'Explain the build steps …  claude   you         /tmp/nu/work/proj  18 min ago',
    );
    // Room for everything: every column as wide as its text, and nothing cut.
    const wide = layout(SESSION_COLUMNS, 120, widest);
    expect(wide).toEqual(widest.map((w, i) => Math.max(w, SESSION_COLUMNS[i]!.min)));
    expect(renderRow(SESSION_COLUMNS, wide, cells)).toBe(
      'Explain the build steps of this project  claude   you         /tmp/nu/work/proj  18 min ago',
    );
  });
});
