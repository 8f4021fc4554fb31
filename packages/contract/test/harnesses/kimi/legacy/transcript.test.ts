/**
 * Kimi CLI's transcript reader on shapes its recorded fixture does not show, and on lines that are not what they
 * should be (skipped and counted).
 */
import { describe, expect, it } from 'vitest';
import { readKimiSession } from '../../../../src/harnesses/kimi/legacy/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);
const jsonl = (...records: unknown[]) =>
  enc(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));

describe('transcript reader', () => {
  it('kimi: joins streamed text and tool arguments; falls back to context.jsonl when the wire log has no turn', () => {
    const wire = jsonl(
      { type: 'metadata', protocol_version: '1.9' },
      {
        timestamp: 1796050000,
        message: { type: 'TurnBegin', payload: { user_input: [{ type: 'text', text: 'Find it' }] } },
      },
      { timestamp: 1796050001, message: { type: 'ContentPart', payload: { type: 'think', think: 'hmm' } } },
      { timestamp: 1796050001, message: { type: 'ContentPart', payload: { type: 'text', text: 'Look' } } },
      { timestamp: 1796050001, message: { type: 'ContentPart', payload: { type: 'text', text: 'ing now.' } } },
      {
        timestamp: 1796050002,
        message: {
          type: 'ToolCall',
          payload: { type: 'function', id: 't1', function: { name: 'Grep', arguments: '{"pat' } },
        },
      },
      {
        timestamp: 1796050002,
        message: { type: 'ToolCallPart', payload: { arguments_part: 'tern": "load_config"}' } },
      },
      {
        timestamp: 1796050003,
        message: {
          type: 'ToolResult',
          payload: { tool_call_id: 't1', return_value: { is_error: true, output: '', message: 'no match' } },
        },
      },
      { timestamp: 1796050003, message: 'nonsense' },
    );
    const t = readKimiSession([{ role: 'agent_wire_history', path: 'files/0000-wire.jsonl', bytes: wire }], 's1');
    expect(t.skipped).toBe(1);
    expect(t.turns.map((x) => [x.role, x.text, x.tools, x.error])).toEqual([
      ['user', 'Find it', undefined, undefined],
      ['assistant', 'Looking now.', ['Grep: load_config'], undefined],
      ['tool', 'no match', undefined, true],
    ]);

    const context = jsonl(
      { role: '_system_prompt', content: 'sys' },
      { role: 'user', content: '<system-reminder>plan mode</system-reminder>' },
      { role: 'user', content: 'Hello' },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Reading.' }],
        tool_calls: [{ id: 'a', function: { name: 'ReadFile', arguments: '{"path":"x.py"}' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'a',
        content: [
          { type: 'text', text: '<system>1 line</system>' },
          { type: 'text', text: 'print(1)' },
        ],
      },
    );
    const fallback = readKimiSession(
      [
        { role: 'agent_wire_history', path: 'files/0000-wire.jsonl', bytes: jsonl({ type: 'metadata' }) },
        {
          role: 'session_state',
          path: 'files/0002-context.jsonl',
          native_path: 'sessions/abc/s1/context.jsonl',
          bytes: context,
        },
      ],
      's1',
    );
    expect(fallback.turns).toEqual([
      { role: 'user', text: 'Hello' },
      { role: 'assistant', text: 'Reading.', tools: ['ReadFile: x.py'] },
      { role: 'tool', text: 'print(1)', name: 'ReadFile' },
    ]);
  });
});
