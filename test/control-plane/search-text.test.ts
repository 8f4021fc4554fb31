/**
 * What the server indexes of a session: the user and assistant text of its conversation and of its subagents', not
 * tool output, secrets masked, bounded.
 */
import { describe, expect, it } from 'vitest';
import { MAX_SEARCH_TEXT_CHARS, searchText } from '../../src/control-plane/search-text.js';

type Conversation = Parameters<typeof searchText>[0];
const conversation = (turns: { role: 'user' | 'assistant' | 'tool'; text: string }[], sections?: { title: string; transcript: Conversation }[]): Conversation => ({
  turns,
  skipped: 0,
  truncated: false,
  ...(sections === undefined ? {} : { sections }),
});

describe('searchText', () => {
  it('keeps user and assistant text, subagents included, one turn a line, white space collapsed; leaves tool output out', () => {
    const text = searchText(
      conversation(
        [
          { role: 'user', text: 'Fix   the\n\nflaky test' },
          { role: 'tool', text: 'cat secret-file-contents' },
          { role: 'assistant', text: 'Done:\tserialised the retries.' },
        ],
        [{ title: 'subagent', transcript: conversation([{ role: 'assistant', text: 'Listed the folder.' }]) }],
      ),
    );
    expect(text).toBe('Fix the flaky test\nDone: serialised the retries.\nListed the folder.');
  });

  it('masks secrets, and never leaves the start of one at the cut', () => {
    const token = `ghp_${'A1b2C3d4'.repeat(5)}`;
    expect(searchText(conversation([{ role: 'user', text: `use ${token} please` }]))).not.toContain(token);
    const long = 'x'.repeat(MAX_SEARCH_TEXT_CHARS - 10);
    const cut = searchText(conversation([{ role: 'user', text: long }, { role: 'assistant', text: `key ${token}` }]));
    expect(cut.length).toBeLessThanOrEqual(MAX_SEARCH_TEXT_CHARS);
    // Cut after masking: the end is part of the mask, not `ghp_A` left over from a token cut in two.
    expect(cut).not.toContain('ghp_');
    expect(cut.endsWith('x\nkey ')).toBe(false);
  });

  it('is bounded however long the conversation, and never cuts a surrogate pair in two', () => {
    const huge = conversation(Array.from({ length: 5000 }, () => ({ role: 'user' as const, text: '😀'.repeat(100) })));
    const text = searchText(huge);
    expect(text.length).toBeLessThanOrEqual(MAX_SEARCH_TEXT_CHARS);
    expect(() => encodeURIComponent(text)).not.toThrow();
  });
});
