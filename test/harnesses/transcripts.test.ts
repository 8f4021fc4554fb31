/**
 * The transcript readers on shapes the recorded fixtures do not show: tool calls and their output, streamed
 * arguments, compressed rollouts, fallbacks, and lines that are not what they should be (skipped and counted).
 */
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { readClaudeJsonl } from '../../src/harnesses/claude/transcript.js';
import { readCodexRollout } from '../../src/harnesses/codex/transcript.js';
import { readKimiSession } from '../../src/harnesses/kimi/transcript.js';
import { readOpencodeExport } from '../../src/harnesses/opencode/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);
const jsonl = (...records: unknown[]) => enc(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));

describe('transcript readers', () => {
  it('codex: leaves out injected context and developer text, pairs tool calls with their output, reads .zst', () => {
    const rollout = jsonl(
      { timestamp: '2026-11-30T10:00:00Z', type: 'session_meta', payload: { id: 'x' } },
      { timestamp: '2026-11-30T10:00:00Z', type: 'response_item', payload: { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }] } },
      { timestamp: '2026-11-30T10:00:01Z', type: 'response_item', payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<environment_context>cwd</environment_context>' }] } },
      { timestamp: '2026-11-30T10:00:02Z', type: 'response_item', payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Run the tests' }] } },
      { timestamp: '2026-11-30T10:00:03Z', type: 'response_item', payload: { type: 'reasoning', summary: [] } },
      { timestamp: '2026-11-30T10:00:04Z', type: 'response_item', payload: { type: 'function_call', name: 'shell', arguments: '{"command":["npm","test"]}', call_id: 'c1' } },
      '{"broken',
      { timestamp: '2026-11-30T10:00:05Z', type: 'response_item', payload: { type: 'function_call_output', call_id: 'c1', output: '{"output":"ok\\n","metadata":{"exit_code":0}}' } },
      { timestamp: '2026-11-30T10:00:06Z', type: 'response_item', payload: { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'All green.' }] } },
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

  it('kimi: joins streamed text and tool arguments, and falls back to context.jsonl when the wire log has no turn', () => {
    const wire = jsonl(
      { type: 'metadata', protocol_version: '1.9' },
      { timestamp: 1796050000, message: { type: 'TurnBegin', payload: { user_input: [{ type: 'text', text: 'Find it' }] } } },
      { timestamp: 1796050001, message: { type: 'ContentPart', payload: { type: 'think', think: 'hmm' } } },
      { timestamp: 1796050001, message: { type: 'ContentPart', payload: { type: 'text', text: 'Look' } } },
      { timestamp: 1796050001, message: { type: 'ContentPart', payload: { type: 'text', text: 'ing now.' } } },
      { timestamp: 1796050002, message: { type: 'ToolCall', payload: { type: 'function', id: 't1', function: { name: 'Grep', arguments: '{"pat' } } } },
      { timestamp: 1796050002, message: { type: 'ToolCallPart', payload: { arguments_part: 'tern": "load_config"}' } } },
      { timestamp: 1796050003, message: { type: 'ToolResult', payload: { tool_call_id: 't1', return_value: { is_error: true, output: '', message: 'no match' } } } },
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
      { role: 'assistant', content: [{ type: 'text', text: 'Reading.' }], tool_calls: [{ id: 'a', function: { name: 'ReadFile', arguments: '{"path":"x.py"}' } }] },
      { role: 'tool', tool_call_id: 'a', content: [{ type: 'text', text: '<system>1 line</system>' }, { type: 'text', text: 'print(1)' }] },
    );
    const fallback = readKimiSession(
      [
        { role: 'agent_wire_history', path: 'files/0000-wire.jsonl', bytes: jsonl({ type: 'metadata' }) },
        { role: 'session_state', path: 'files/0002-context.jsonl', native_path: 'sessions/abc/s1/context.jsonl', bytes: context },
      ],
      's1',
    );
    expect(fallback.turns).toEqual([
      { role: 'user', text: 'Hello' },
      { role: 'assistant', text: 'Reading.', tools: ['ReadFile: x.py'] },
      { role: 'tool', text: 'print(1)', name: 'ReadFile' },
    ]);
  });

  it('opencode: tool parts become a call and an output; a broken export is one skipped record', () => {
    const doc = {
      info: { id: 'ses_1' },
      messages: [
        { info: { role: 'user', time: { created: 1796056407439 } }, parts: [{ type: 'text', text: 'List files' }, { type: 'text', text: 'hidden', synthetic: true }] },
        {
          info: { role: 'assistant', time: { created: 1796056408000 } },
          parts: [
            { type: 'reasoning', text: 'thinking' },
            { type: 'tool', tool: 'bash', state: { status: 'completed', input: { command: 'ls' }, output: 'a\nb', time: { end: 1796056408500 } } },
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
