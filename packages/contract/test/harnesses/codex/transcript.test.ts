/**
 * Codex's transcript reader on shapes its recorded fixture does not show, and on lines that are not what they
 * should be (skipped and counted).
 */
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readCodexRollout } from '../../../src/harnesses/codex/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);
const jsonl = (...records: unknown[]) =>
  enc(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));

describe('transcript reader', () => {
  it('codex: leaves out injected context and developer text, pairs tool calls with their output, reads .zst', () => {
    const rollout = jsonl(
      { timestamp: '2026-11-30T10:00:00Z', type: 'session_meta', payload: { id: 'x' } },
      {
        timestamp: '2026-11-30T10:00:00Z',
        type: 'response_item',
        payload: { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }] },
      },
      {
        timestamp: '2026-11-30T10:00:01Z',
        type: 'response_item',
        payload: {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }],
        },
      },
      {
        timestamp: '2026-11-30T10:00:02Z',
        type: 'response_item',
        payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Run the tests' }] },
      },
      { timestamp: '2026-11-30T10:00:03Z', type: 'response_item', payload: { type: 'reasoning', summary: [] } },
      {
        timestamp: '2026-11-30T10:00:04Z',
        type: 'response_item',
        payload: { type: 'function_call', name: 'shell', arguments: '{"command":["npm","test"]}', call_id: 'c1' },
      },
      '{"broken',
      {
        timestamp: '2026-11-30T10:00:05Z',
        type: 'response_item',
        payload: {
          type: 'function_call_output',
          call_id: 'c1',
          output: '{"output":"ok\\n","metadata":{"exit_code":0}}',
        },
      },
      {
        timestamp: '2026-11-30T10:00:06Z',
        type: 'response_item',
        payload: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'All green.' }] },
      },
    );
    const expected = [
      { role: 'user', text: 'Run the tests', at: '2026-11-30T10:00:02.000Z' },
      { role: 'assistant', text: '', tools: ['shell: npm test'], at: '2026-11-30T10:00:04.000Z' },
      { role: 'tool', text: 'ok', name: 'shell', at: '2026-11-30T10:00:05.000Z' },
      { role: 'assistant', text: 'All green.', at: '2026-11-30T10:00:06.000Z' },
    ];
    expect(readCodexRollout({ bytes: rollout })).toEqual({ turns: expected, skipped: 1, truncated: false });
    expect(readCodexRollout({ bytes: zlib.zstdCompressSync(rollout) }).turns).toEqual(expected);
  });
});
