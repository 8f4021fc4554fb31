/**
 * Claude Code's transcript reader on shapes its recorded fixture does not show, and on lines that are not what they
 * should be (skipped and counted).
 */
import { describe, expect, it } from 'vitest';
import { readClaudeJsonl } from '../../../src/harnesses/claude/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);
const jsonl = (...records: unknown[]) =>
  enc(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));

describe('transcript reader', () => {
  it('claude: meta and sidechain records are left out, terminal escapes stripped', () => {
    const t = readClaudeJsonl(
      jsonl(
        { type: 'user', isMeta: true, message: { role: 'user', content: 'injected' } },
        { type: 'user', isSidechain: true, message: { role: 'user', content: 'sidechain' } },
        { type: 'user', message: { role: 'user', content: 'hi \u001b]0;title\u0007there\u0000' } },
        { type: 'summary', summary: 'x' },
      ),
      false,
    );
    expect(t).toEqual({ turns: [{ role: 'user', text: 'hi there' }], skipped: 0, truncated: false });
  });
});
