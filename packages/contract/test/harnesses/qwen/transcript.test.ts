/** Qwen Code's transcript reader: prompts, the model's text and tool calls, tool results; system records left out. */
import { describe, expect, it } from 'vitest';
import { readQwenTranscript } from '../../../src/harnesses/qwen/transcript.js';

const jsonl = (...records: unknown[]) =>
  new TextEncoder().encode(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));

describe('Qwen Code transcripts', () => {
  it('reads prompts, answers, tool calls and their results, and counts what it cannot read', () => {
    const bytes = jsonl(
      {
        type: 'user',
        timestamp: '2026-12-02T03:10:08.089Z',
        message: { role: 'user', parts: [{ text: 'List the files' }] },
      },
      { type: 'system', subtype: 'ui_telemetry', systemPayload: {} },
      {
        type: 'assistant',
        timestamp: '2026-12-02T03:10:09.000Z',
        message: {
          role: 'model',
          parts: [
            { text: 'thinking', thought: true },
            { functionCall: { name: 'list_directory', args: { path: '.' } } },
          ],
        },
      },
      {
        type: 'tool_result',
        timestamp: '2026-12-02T03:10:10.000Z',
        message: {
          role: 'user',
          parts: [{ functionResponse: { name: 'list_directory', response: { output: 'a.txt' } } }],
        },
      },
      '{broken',
      {
        type: 'assistant',
        timestamp: '2026-12-02T03:10:11.000Z',
        message: { role: 'model', parts: [{ text: 'One file.' }] },
      },
      { type: 'system', subtype: 'custom_title', systemPayload: { customTitle: 'x' } },
    );
    expect(readQwenTranscript({ bytes })).toEqual({
      turns: [
        { role: 'user', text: 'List the files', at: '2026-12-02T03:10:08.089Z' },
        { role: 'assistant', text: '', tools: ['list_directory: .'], at: '2026-12-02T03:10:09.000Z' },
        { role: 'tool', text: 'a.txt', name: 'list_directory', at: '2026-12-02T03:10:10.000Z' },
        { role: 'assistant', text: 'One file.', at: '2026-12-02T03:10:11.000Z' },
      ],
      skipped: 1,
      truncated: false,
    });
  });
});
