/**
 * OpenCode's transcript reader on shapes its recorded fixture does not show, and on lines that are not what they
 * should be (skipped and counted).
 */
import { describe, expect, it } from 'vitest';
import { readOpencodeExport } from '../../../src/harnesses/opencode/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);

describe('transcript reader', () => {
  it('opencode: tool parts become a call and an output; a broken export is one skipped record', () => {
    const doc = {
      info: { id: 'ses_1' },
      messages: [
        {
          info: { role: 'user', time: { created: 1796056407439 } },
          parts: [
            { type: 'text', text: 'List files' },
            { type: 'text', text: 'hidden', synthetic: true },
          ],
        },
        {
          info: { role: 'assistant', time: { created: 1796056408000 } },
          parts: [
            { type: 'reasoning', text: 'thinking' },
            {
              type: 'tool',
              tool: 'bash',
              state: { status: 'completed', input: { command: 'ls' }, output: 'a\nb', time: { end: 1796056408500 } },
            },
            { type: 'text', text: 'Two files.', time: { start: 1796056409000 } },
          ],
        },
        'garbage',
      ],
    };
    const t = readOpencodeExport(enc(JSON.stringify(doc)));
    expect(t.skipped).toBe(1);
    expect(t.turns).toEqual([
      { role: 'user', text: 'List files', at: '2026-11-30T16:33:27.439Z' },
      { role: 'assistant', text: '', tools: ['bash: ls'], at: '2026-11-30T16:33:28.000Z' },
      { role: 'tool', text: 'a\nb', name: 'bash', at: '2026-11-30T16:33:28.500Z' },
      { role: 'assistant', text: 'Two files.', at: '2026-11-30T16:33:29.000Z' },
    ]);
    expect(readOpencodeExport(enc('{not json'))).toEqual({ turns: [], skipped: 1, truncated: false });
  });
});
