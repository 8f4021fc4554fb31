import { describe, expect, it } from 'vitest';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';
import {
  codePointLength,
  cutText,
  DERIVED_TITLE_MAX,
  ELLIPSIS,
  finishDerivedTitle,
  finishNativeTitle,
  finishSummary,
  firstUserTurn,
  nativeMetadataOf,
  NATIVE_TITLE_MAX,
  newestNativeMetadata,
  normalizeWhitespace,
  parseTranscript,
  SUMMARY_MAX,
  titleAndSummary,
} from '../../src/harness-kit/title.js';
import { messageUserTurn } from '@blue-agent/contract/harness-kit/user-turn.js';
import { claudeUserTurn } from '@blue-agent/contract/harnesses/claude/transcript.js';
import { codexUserTurn } from '@blue-agent/contract/harnesses/codex/transcript.js';
import { kimiUserTurn } from '@blue-agent/contract/harnesses/kimi/legacy/transcript.js';

const ID = 'a1b2c3d4-0000-4000-8000-000000000001';

function jsonl(...records: unknown[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/** True when `text` has no lone surrogate (a surrogate pair cut in half). */
function wellFormed(text: string): boolean {
  return text.isWellFormed();
}

describe('native metadata', () => {
  it('prefers the native title and preview over the transcript', () => {
    const native = nativeMetadataOf({ id: ID, title: 'Release checklist', summary: 'Walk through the release' }, ID);
    expect(titleAndSummary({ native, firstUserTurn: 'please do the release' })).toEqual({
      title: 'Release checklist',
      summary: 'Walk through the release',
    });
  });

  it('falls back to the first user turn for whatever the native record lacks', () => {
    expect(titleAndSummary({ native: { title: 'Named by the user' }, firstUserTurn: 'Fix the parser' })).toEqual({
      title: 'Named by the user',
      summary: 'Fix the parser',
    });
    expect(titleAndSummary({ native: { title: '   ' }, firstUserTurn: 'Fix the parser' })).toEqual({
      title: 'Fix the parser',
      summary: 'Fix the parser',
    });
    expect(titleAndSummary({})).toEqual({});
  });

  it('matches the session id exactly, in id, session_id or sessionId', () => {
    for (const field of ['id', 'session_id', 'sessionId']) {
      expect(nativeMetadataOf({ [field]: ID, title: 'T' }, ID)).toEqual({ title: 'T' });
    }
    expect(nativeMetadataOf({ id: ID.toUpperCase(), title: 'T' }, ID)).toBeUndefined();
    expect(nativeMetadataOf({ id: ID.slice(0, 8), title: 'T' }, ID)).toBeUndefined();
    expect(nativeMetadataOf({ id: `${ID}-fork`, title: 'T' }, ID)).toBeUndefined();
    expect(nativeMetadataOf({ id: ` ${ID}`, title: 'T' }, ID)).toBeUndefined();
    expect(nativeMetadataOf({ uuid: ID, title: 'T' }, ID)).toBeUndefined();
    expect(nativeMetadataOf({ title: 'T' }, ID)).toBeUndefined();
    expect(nativeMetadataOf({ title: 'T' }, ID, { idOptional: true })).toEqual({ title: 'T' });
    expect(nativeMetadataOf({ sessionId: 'other', title: 'T' }, ID, { idOptional: true })).toBeUndefined();
  });

  it('reads every title and preview field, in the contract order', () => {
    expect(nativeMetadataOf({ id: ID, session_title: 'S' }, ID)).toEqual({ title: 'S' });
    expect(nativeMetadataOf({ id: ID, thread_name: 'N' }, ID)).toEqual({ title: 'N' });
    expect(nativeMetadataOf({ id: ID, name: 'Nm' }, ID)).toEqual({ title: 'Nm' });
    expect(nativeMetadataOf({ id: ID, summary: 'Sum' }, ID)).toEqual({ title: 'Sum', preview: 'Sum' });
    expect(nativeMetadataOf({ id: ID, firstPrompt: 'FP' }, ID)).toEqual({ preview: 'FP' });
    expect(nativeMetadataOf({ id: ID, prompt: 'P' }, ID)).toEqual({ preview: 'P' });
    expect(nativeMetadataOf({ id: ID, preview: 'Pv' }, ID)).toEqual({ preview: 'Pv' });
    expect(nativeMetadataOf({ id: ID, title: 'A', thread_name: 'B', summary: 'C', prompt: 'D' }, ID)).toEqual({
      title: 'A',
      preview: 'C',
    });
    // A summary that is not text (OpenCode's {additions, deletions}) is not a preview.
    expect(nativeMetadataOf({ id: ID, title: 'A', summary: { additions: 1 } }, ID)).toEqual({ title: 'A' });
  });

  it('takes the newest entry for the id from an append-only index', () => {
    const index = [
      { id: ID, thread_name: 'first name' },
      { id: 'other', thread_name: 'not this one' },
      { id: ID, thread_name: 'renamed' },
      { id: 'other', thread_name: 'newest but other' },
      { id: ID, thread_name: '' },
    ];
    expect(newestNativeMetadata(index, ID)).toEqual({ title: 'renamed' });
    expect(newestNativeMetadata(index, 'missing')).toBeUndefined();
  });
});

describe('first user turn', () => {
  it('reads JSON lines and whole JSON documents', () => {
    expect(firstUserTurn(parseTranscript(jsonl({ role: 'user', content: 'from lines' })))).toBe('from lines');
    expect(
      firstUserTurn(
        parseTranscript(
          JSON.stringify([
            { role: 'assistant', content: 'hi' },
            { role: 'user', content: 'from an array' },
          ]),
        ),
      ),
    ).toBe('from an array');
    expect(
      firstUserTurn(
        parseTranscript(
          JSON.stringify({
            info: { id: ID },
            messages: [{ info: { role: 'user' }, parts: [{ type: 'text', text: 'from an export' }] }],
          }),
        ),
      ),
    ).toBe('from an export');
    expect(parseTranscript('{"role":"user","content":"a"}\nnot json\n{"role":"user"')).toHaveLength(1);
  });

  it('reads text as a string, a content array, a parts array or a prompt field', () => {
    expect(firstUserTurn([{ role: 'user', content: 'as string' }])).toBe('as string');
    expect(
      firstUserTurn([
        {
          role: 'user',
          content: [
            { type: 'text', text: 'first' },
            { type: 'image', source: {} },
            { type: 'text', text: 'second' },
          ],
        },
      ]),
    ).toBe('first second');
    expect(firstUserTurn([{ role: 'user', parts: [{ type: 'text', text: 'from parts' }] }])).toBe('from parts');
    expect(firstUserTurn([{ role: 'user', prompt: 'from prompt' }])).toBe('from prompt');
    expect(firstUserTurn([{ role: 'user', content: ['plain', 'strings'] }])).toBe('plain strings');
  });

  it('unwraps nested message and info envelopes', () => {
    expect(firstUserTurn([{ type: 'user', message: { role: 'user', content: 'nested message' } }])).toBe(
      'nested message',
    );
    expect(
      firstUserTurn([
        { info: { role: 'assistant' }, parts: [{ type: 'text', text: 'no' }] },
        { info: { role: 'user' }, parts: [{ type: 'text', text: 'nested info' }] },
      ]),
    ).toBe('nested info');
    expect(firstUserTurn([{ message: { role: 'user', content: [{ type: 'text', text: 'message only' }] } }])).toBe(
      'message only',
    );
  });

  it('skips Claude Code meta entries, compaction summaries, side chains, tool results and other record types', () => {
    const records = [
      { type: 'queue-operation', content: 'queued, not a turn' },
      { type: 'api-request-blob', message: { role: 'user', content: [{ type: 'text', text: 'an API log' }] } },
      { type: 'user', isMeta: true, message: { role: 'user', content: 'Caveat: meta' } },
      {
        type: 'user',
        isCompactSummary: true,
        message: { role: 'user', content: 'This session is being continued...' },
      },
      { type: 'user', isSidechain: true, message: { role: 'user', content: 'subagent prompt' } },
      {
        type: 'user',
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'output' }] },
      },
      {
        type: 'user',
        message: {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't', content: 'x' },
            { type: 'text', text: 'rides with a result' },
          ],
        },
      },
      { type: 'attachment', attachment: { type: 'environment' } },
      { type: 'user', message: { role: 'user', content: 'the real prompt' } },
    ];
    expect(firstUserTurn(records, claudeUserTurn)).toBe('the real prompt');
  });

  it('skips injected context: system reminders, environment context, AGENTS.md and CLAUDE.md instructions', () => {
    const claude = [
      {
        type: 'user',
        message: {
          role: 'user',
          content: [
            {
              type: 'text',
              text:
                '<system-reminder>\nAs you answer, use this context:\n# claudeMd\nRules from ' +
                'CLAUDE.md\n</system-reminder>',
            },
            { type: 'text', text: 'actual question' },
          ],
        },
      },
    ];
    expect(firstUserTurn(claude, claudeUserTurn)).toBe('actual question');
    const codex = [
      {
        type: 'response_item',
        payload: {
          type: 'message',
          role: 'developer',
          content: [{ type: 'input_text', text: '<permissions instructions>...' }],
        },
      },
      {
        type: 'response_item',
        payload: {
          type: 'message',
          role: 'user',
          content: [
            {
              type: 'input_text',
              text: '# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nUse tabs.\n</INSTRUCTIONS>',
            },
          ],
        },
      },
      {
        type: 'response_item',
        payload: {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: '<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>' }],
        },
      },
      {
        type: 'response_item',
        payload: {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: '<user_instructions>\nBe terse.\n</user_instructions>' }],
        },
      },
      {
        type: 'response_item',
        payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix the flaky test' }] },
      },
    ];
    expect(firstUserTurn(codex, codexUserTurn)).toBe('Fix the flaky test');
  });

  it('honours Codex item kinds and its legacy request marker', () => {
    const labelled = {
      type: 'response_item',
      payload: {
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: 'looks typed but is context' }],
        internal_chat_message_metadata_passthrough: { content_item_kinds: ['environments.environment_context'] },
      },
    };
    const typed = {
      type: 'event_msg',
      payload: {
        type: 'user_message',
        message: '<user_instructions>be terse</user_instructions>\n\n## My request for Codex:\nRename the module',
      },
    };
    expect(firstUserTurn([labelled, typed], codexUserTurn)).toBe('Rename the module');
    expect(
      firstUserTurn(
        [
          {
            type: 'event_msg',
            payload: {
              type: 'item_completed',
              item: { type: 'UserMessage', content: [{ type: 'text', text: 'from an item' }] },
            },
          },
        ],
        codexUserTurn,
      ),
    ).toBe('from an item');
  });

  it('skips slash-command wrappers and local-command caveats, keeping the command only as a fallback', () => {
    const wrapper =
      '<command-name>/init</command-name>\n<command-message>init</command-message>\n<command-args></command-args>';
    const records = [
      {
        type: 'user',
        message: {
          role: 'user',
          content: '<local-command-caveat>Caveat: the messages below were generated locally</local-command-caveat>',
        },
      },
      { type: 'user', message: { role: 'user', content: wrapper } },
      { type: 'user', message: { role: 'user', content: '<local-command-stdout>done</local-command-stdout>' } },
    ];
    expect(firstUserTurn(records)).toBe('/init');
    expect(firstUserTurn([...records, { type: 'user', message: { role: 'user', content: 'after the command' } }])).toBe(
      'after the command',
    );
    expect(
      firstUserTurn([{ type: 'user', message: { role: 'user', content: '[Request interrupted by user]' } }]),
    ).toBeUndefined();
    expect(
      firstUserTurn([{ type: 'user', message: { role: 'user', content: '<bash-input>ls -la</bash-input>' } }]),
    ).toBe('! ls -la');
  });

  it('skips OpenCode synthetic and ignored parts, and Kimi injected and bookkeeping records', () => {
    const opencode = [
      {
        info: { role: 'user' },
        parts: [
          { type: 'text', text: 'Called the Read tool with {"file":"a.ts"}', synthetic: true },
          { type: 'text', text: 'hidden', ignored: true },
          { type: 'file', url: 'file:///a.ts' },
          { type: 'text', text: 'explain a.ts' },
        ],
      },
    ];
    expect(firstUserTurn(opencode)).toBe('explain a.ts');
    const kimiContext = [
      { role: '_system_prompt', content: 'You are Kimi' },
      { role: '_checkpoint', id: 0 },
      { role: 'user', content: [{ type: 'text', text: '<system>CHECKPOINT 0</system>' }] },
      { role: 'user', content: [{ type: 'text', text: '<system-reminder>Plan mode is active.</system-reminder>' }] },
      { role: 'user', content: [{ type: 'text', text: '<notification id="n1">task done</notification>' }] },
      { role: 'user', content: 'Refactor the loader' },
    ];
    expect(firstUserTurn(kimiContext, kimiUserTurn)).toBe('Refactor the loader');
    const kimiWire = [
      { type: 'metadata', protocol_version: '1.9' },
      { timestamp: 1, message: { type: 'StepBegin', payload: { n: 1 } } },
      {
        timestamp: 2,
        message: { type: 'TurnBegin', payload: { user_input: [{ type: 'text', text: 'from the wire' }] } },
      },
    ];
    expect(firstUserTurn(kimiWire, kimiUserTurn)).toBe('from the wire');
  });

  it('stops after the bounded number of records', () => {
    const records = [
      ...Array.from({ length: 10 }, () => ({ role: 'assistant', content: 'x' })),
      { role: 'user', content: 'late' },
    ];
    expect(firstUserTurn(records, messageUserTurn, 10)).toBeUndefined();
    expect(firstUserTurn(records, messageUserTurn, 11)).toBe('late');
  });
});

describe('normalising and cutting', () => {
  it('normalises white space and control characters', () => {
    expect(normalizeWhitespace('  a\tb\r\n\nc\u00a0d\u2028e\u0007f  ')).toBe('a b c d e f');
    expect(finishSummary('line one\n\n   line two')).toBe('line one line two');
    expect(finishSummary(' \n\t ')).toBeUndefined();
    // A lone surrogate from a broken JSON escape becomes U+FFFD.
    expect(normalizeWhitespace('bad \ud800 half')).toBe('bad \ufffd half');
  });

  it('cuts a derived title at 80 code points, at a word boundary, with an ellipsis', () => {
    const words =
      'Refactor the configuration loader so that it reads TOML files only and drops the JSON branch entirely';
    const title = finishDerivedTitle(words)!;
    expect(codePointLength(title)).toBeLessThanOrEqual(DERIVED_TITLE_MAX);
    expect(title.endsWith(ELLIPSIS)).toBe(true);
    expect(words.startsWith(title.slice(0, -1))).toBe(true);
    expect(words.charAt(title.length - 1)).toBe(' ');
    expect(finishDerivedTitle('short title')).toBe('short title');
    const exact = 'x'.repeat(DERIVED_TITLE_MAX);
    expect(finishDerivedTitle(exact)).toBe(exact);
    expect(finishDerivedTitle(`${exact}y`)).toBe(`${'x'.repeat(DERIVED_TITLE_MAX - 1)}${ELLIPSIS}`);
  });

  it('cuts a native title at 256 and a preview at 1024', () => {
    const long = 'word '.repeat(400);
    const native = finishNativeTitle(long)!;
    const summary = finishSummary(long.repeat(2))!;
    expect(codePointLength(native)).toBeLessThanOrEqual(NATIVE_TITLE_MAX);
    expect(codePointLength(native)).toBeGreaterThan(NATIVE_TITLE_MAX - 6);
    expect(codePointLength(summary)).toBeLessThanOrEqual(SUMMARY_MAX);
    expect(codePointLength(summary)).toBeGreaterThan(SUMMARY_MAX - 6);
    expect(native.endsWith(ELLIPSIS) && summary.endsWith(ELLIPSIS)).toBe(true);
    expect(finishNativeTitle('n'.repeat(NATIVE_TITLE_MAX))).toBe('n'.repeat(NATIVE_TITLE_MAX));
    expect(finishSummary('s'.repeat(SUMMARY_MAX))).toBe('s'.repeat(SUMMARY_MAX));
    // A native title is cut at a grapheme, not at a word.
    expect(finishNativeTitle(`${'a'.repeat(200)} ${'b'.repeat(100)}`)).toBe(
      `${'a'.repeat(200)} ${'b'.repeat(54)}${ELLIPSIS}`,
    );
    expect(titleAndSummary({ firstUserTurn: long })).toEqual({
      title: expect.stringMatching(/^(word ){15}word…$/),
      summary: expect.stringMatching(/^(word ){204}wor…$/),
    });
  });

  it('never splits a surrogate pair, an emoji sequence, a flag or a combining mark', () => {
    const emoji = '😀'.repeat(100);
    const cutEmoji = cutText(emoji, 80);
    expect(wellFormed(cutEmoji)).toBe(true);
    expect(codePointLength(cutEmoji)).toBe(80);
    expect(cutEmoji).toBe(`${'😀'.repeat(79)}${ELLIPSIS}`);

    const family = '👨‍👩‍👧'; // 5 code points
    const cutFamily = cutText(family.repeat(40), 80);
    expect(cutFamily).toBe(`${family.repeat(15)}${ELLIPSIS}`);

    const flags = '🇫🇷'.repeat(60);
    expect(cutText(flags, 80)).toBe(`${'🇫🇷'.repeat(39)}${ELLIPSIS}`);

    const combining = 'e\u0301'.repeat(60); // é as e + combining acute
    const cutCombining = cutText(combining, 80);
    expect(cutCombining).toBe(`${'e\u0301'.repeat(39)}${ELLIPSIS}`);
    expect(cutCombining.normalize('NFC')).toBe(`${'é'.repeat(39)}${ELLIPSIS}`);
  });

  it('cuts text without spaces (CJK) at a grapheme, and keeps short CJK as is', () => {
    const cjk = '修复配置加载器使其只读取文件'.repeat(10);
    const title = finishDerivedTitle(cjk)!;
    expect(codePointLength(title)).toBe(DERIVED_TITLE_MAX);
    expect(title).toBe(
      `${Array.from(cjk)
        .slice(0, DERIVED_TITLE_MAX - 1)
        .join('')}${ELLIPSIS}`,
    );
    expect(finishDerivedTitle('修复配置加载器')).toBe('修复配置加载器');
  });
});

describe('secrets', () => {
  it('masks secrets in titles and previews before cutting, by the one masking rule', () => {
    const prompt = `Deploy with AKIAIOSFODNN7EXAMPLE and ghp_1234567890abcdefghijABCDEFGHIJ123456 now`;
    const result = titleAndSummary({ firstUserTurn: prompt });
    expect(result.title).toBe('Deploy with [REDACTED:AWS_ACCESS_KEY_ID] and [REDACTED:GITHUB_TOKEN] now');
    expect(result.summary).toBe(result.title);
    const native = titleAndSummary({
      native: {
        title: 'rotate sk-proj-AbCdEf0123456789AbCdEf0123',
        preview: 'pw postgres://u:p4ss@h/db and DB_PASSWORD=Zq8vR2kLm9x',
      },
    });
    expect(native).toEqual({
      title: 'rotate [REDACTED:OPENAI_TOKEN]',
      summary: 'pw postgres://u:[REDACTED:PASSWORD]@h/db and DB_PASSWORD=[REDACTED:PASSWORD]',
    });
    expect(maskSecrets(native.summary!)).toBe(native.summary);
    // A key that straddles the cut is masked whole, not left half readable.
    const straddling = `${'a '.repeat(37)}sk-proj-AbCdEf0123456789AbCdEf0123`;
    expect(finishDerivedTitle(straddling)).not.toMatch(/sk-/);
  });
});

describe('title rules, edge by edge', () => {
  it('cuts a single grapheme longer than the budget by code points', () => {
    const mark = '\u0301';
    expect(cutText(`e${mark.repeat(100)}`, 10)).toBe(`e${mark.repeat(8)}${ELLIPSIS}`);
    expect(cutText(`ab e${mark.repeat(100)}`, 10)).toBe(`ab${ELLIPSIS}`);
    expect(cutText('abcdef', 5)).toBe(`abcd${ELLIPSIS}`);
    expect(cutText('abcde', 5)).toBe('abcde');
  });

  it('keeps a cut that already ends at a word, and goes back to a space only within the last 40 %', () => {
    expect(cutText('aaaaaa bb cc', 10, { wordBoundary: true })).toBe(`aaaaaa bb${ELLIPSIS}`);
    expect(cutText('aaaaa bbbbbbbbb', 10, { wordBoundary: true })).toBe(`aaaaa${ELLIPSIS}`);
    expect(cutText('aaaa bbbbbbbbbb', 10, { wordBoundary: true })).toBe(`aaaa bbbb${ELLIPSIS}`);
    expect(cutText('aaaaa bbbbbbbbb', 10)).toBe(`aaaaa bbb${ELLIPSIS}`);
    expect(cutText('aaaaa bbbbbbbbb', 10, { wordBoundary: false })).toBe(`aaaaa bbb${ELLIPSIS}`);
  });

  it('drops white space and punctuation left at the end of a cut', () => {
    for (const tail of [' ', ',', ';', ':', '.', '-', '–', '—', '…', ', .;']) {
      expect(cutText(`abc${tail}${'x'.repeat(20)}`, 4 + tail.length), JSON.stringify(tail)).toBe(`abc${ELLIPSIS}`);
    }
    expect(cutText('a, bcdefg', 6)).toBe(`a, bc${ELLIPSIS}`);
    expect(cutText('abc?defgh', 5)).toBe(`abc?${ELLIPSIS}`);
  });

  it('gives nothing for text that normalises to nothing', () => {
    expect(finishNativeTitle('\u0007\u0000')).toBeUndefined();
    expect(finishDerivedTitle(undefined)).toBeUndefined();
    expect(finishSummary('')).toBeUndefined();
    expect(finishNativeTitle('  a\u0007b  ')).toBe('a b');
  });

  it('takes the native preview first and the first user turn for the summary otherwise', () => {
    expect(titleAndSummary({ native: { preview: 'P' }, firstUserTurn: 'turn' })).toEqual({
      title: 'turn',
      summary: 'P',
    });
    expect(titleAndSummary({ native: { title: 'T' } })).toEqual({ title: 'T' });
    expect(titleAndSummary({ firstUserTurn: ' ' })).toEqual({});
  });

  it('reads native metadata only from records, with an id that is set', () => {
    expect(nativeMetadataOf([{ id: ID, title: 'T' }], ID)).toBeUndefined();
    expect(nativeMetadataOf(null, ID)).toBeUndefined();
    expect(nativeMetadataOf('T', ID, { idOptional: true })).toBeUndefined();
    expect(nativeMetadataOf({ id: null, session_id: ID, title: 'T' }, ID)).toEqual({ title: 'T' });
    expect(nativeMetadataOf({ id: null, sessionId: undefined, title: 'T' }, ID, { idOptional: true })).toEqual({
      title: 'T',
    });
    expect(nativeMetadataOf({ id: ID }, ID)).toBeUndefined();
    expect(nativeMetadataOf({ id: ID, title: ' \t', name: 'N', prompt: '  ', preview: 'V' }, ID)).toEqual({
      title: 'N',
      preview: 'V',
    });
    expect(nativeMetadataOf({ id: ID, title: 5, name: ['x'] }, ID)).toBeUndefined();
  });

  it('takes the newest title and the newest preview separately', () => {
    const records = [
      { id: ID, title: 'old', preview: 'first' },
      { id: ID, prompt: 'second' },
      'not a record',
      { id: ID, title: 'new' },
    ];
    expect(newestNativeMetadata(records, ID)).toEqual({ title: 'new', preview: 'second' });
    expect(newestNativeMetadata([{ id: ID, preview: 'only' }], ID)).toEqual({ preview: 'only' });
    expect(newestNativeMetadata([{ title: 'T' }], ID, { idOptional: true })).toEqual({ title: 'T' });
    expect(newestNativeMetadata([{ title: 'T' }], ID)).toBeUndefined();
    expect(newestNativeMetadata([], ID)).toBeUndefined();
  });

  it('parses a transcript document or its lines, within the record bound', () => {
    expect(parseTranscript('  [1, 2, 3]', 2)).toEqual([1, 2]);
    expect(parseTranscript('{"messages": [1, 2, 3]}', 2)).toEqual([1, 2]);
    expect(parseTranscript('{"messages": "none"}')).toEqual([{ messages: 'none' }]);
    expect(parseTranscript('\n{"a": 1}')).toEqual([{ a: 1 }]);
    expect(parseTranscript('{"a": 1}\n\n  \r\n{"b": 2}\r\n')).toEqual([{ a: 1 }, { b: 2 }]);
    expect(parseTranscript('{"a": 1}\n{"b": 2}\n{"c": 3}', 2)).toEqual([{ a: 1 }, { b: 2 }]);
    expect(parseTranscript('[1,\n{"b": 2}')).toEqual([{ b: 2 }]);
    expect(parseTranscript('5\n"x"\nnull')).toEqual([5, 'x', null]);
    expect(parseTranscript('"not an array"')).toEqual(['not an array']);
    expect(parseTranscript('{\n  "role": "user",\n  "content": "a"\n}')).toEqual([{ role: 'user', content: 'a' }]);
    expect(parseTranscript('')).toEqual([]);
  });

  it('joins the kept texts of one turn and keeps the first slash command as the fallback', () => {
    expect(
      firstUserTurn([{ role: 'user', content: ['  ', ' one ', '<system-reminder>x</system-reminder>', 'two'] }]),
    ).toBe('one two');
    expect(
      firstUserTurn([
        { role: 'user', content: [' '] },
        { role: 'user', content: 'next' },
      ]),
    ).toBe('next');
    const command = (name: string) => ({ role: 'user', content: `<command-name> ${name} </command-name>` });
    expect(firstUserTurn([command('/first'), command('/second')])).toBe('/first');
    expect(firstUserTurn([command('')])).toBeUndefined();
    expect(
      firstUserTurn([
        { role: 'user', content: '<bash-input>\n git status \n</bash-input>' },
        { role: 'user', content: 'later' },
      ]),
    ).toBe('! git status');
    expect(firstUserTurn([{ role: 'user', content: '<command-name>/a\nb</command-name>' }])).toBe('/a\nb');
    expect(firstUserTurn([])).toBeUndefined();
  });

  it('leaves out the keys it has no value for, rather than setting them to undefined', () => {
    expect(titleAndSummary({ native: { title: 'T' } })).toStrictEqual({ title: 'T' });
    expect(titleAndSummary({ native: { preview: 'P' } })).toStrictEqual({ summary: 'P' });
    expect(nativeMetadataOf({ id: ID, title: 'T' }, ID)).toStrictEqual({ title: 'T' });
    expect(nativeMetadataOf({ id: ID, preview: 'P' }, ID)).toStrictEqual({ preview: 'P' });
    expect(newestNativeMetadata([{ id: ID, title: 'T' }], ID)).toStrictEqual({ title: 'T' });
    expect(newestNativeMetadata([{ id: ID, preview: 'P' }], ID)).toStrictEqual({ preview: 'P' });
  });
});
