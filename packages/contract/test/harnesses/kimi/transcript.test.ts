/**
 * Kimi Code's transcript reader on shapes its recorded fixture does not show: tool calls and their results (errors
 * marked), prompts from the harness rather than the user, subagents as sections, lines that are not records; and a
 * kimi-cli bundle handed to its own reader.
 */
import { describe, expect, it } from 'vitest';
import { kimiCodeUserTurn, kimiTranscriptReader } from '../../../src/harnesses/kimi/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);
const jsonl = (...records: unknown[]) =>
  enc(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));
const loop = (event: Record<string, unknown>, time = 1796184212000) => ({
  type: 'context.append_loop_event',
  agentId: 'main',
  event,
  time,
});
const prompt = (text: string, kind = 'user') => ({
  type: 'turn.prompt',
  input: [{ type: 'text', text }],
  origin: { kind },
  time: 1796184211969,
});
const WIRE = 'wd_p_000000000000/session_1/agents/main/wire.jsonl';

describe('Kimi Code transcript', () => {
  it('reads prompts, text, tool calls and results; skips harness prompts, bookkeeping and non-JSON lines', () => {
    const wire = jsonl(
      { type: 'metadata', protocol_version: '1.5' },
      prompt('Find the loader'),
      loop({ type: 'step.begin' }),
      loop({ type: 'content.part', part: { type: 'think', think: 'hmm' } }),
      loop({ type: 'content.part', part: { type: 'text', text: 'Looking.' } }),
      loop({ type: 'tool.call', toolCallId: 't1', name: 'Grep', args: { pattern: 'load_config' } }),
      loop({ type: 'tool.result', toolCallId: 't1', result: { output: 'src/a.ts:1', isError: false } }),
      loop({ type: 'tool.call', toolCallId: 't2', name: 'Shell', args: { command: 'make' } }),
      loop({ type: 'tool.result', toolCallId: 't2', result: { error: 'exit 2' } }),
      prompt('<system-reminder>background task done</system-reminder>', 'system'),
      { type: 'usage.record', usage: {} },
      'not json',
    );
    const t = kimiTranscriptReader.read(
      [{ role: 'agent_wire_history', path: 'files/0000-wire.jsonl', native_path: WIRE, bytes: wire }],
      'session_1',
    );
    expect(t.skipped).toBe(1);
    expect(t.turns.map((x) => [x.role, x.text, x.tools, x.name, x.error])).toEqual([
      ['user', 'Find the loader', undefined, undefined, undefined],
      ['assistant', 'Looking.', ['Grep: load_config'], undefined, undefined],
      ['tool', 'src/a.ts:1', undefined, 'Grep', undefined],
      ['assistant', '', ['Shell: make'], undefined, undefined],
      ['tool', 'exit 2', undefined, 'Shell', true],
    ]);
    expect(t.turns[0]!.at).toBe(new Date(1796184211969).toISOString());
  });

  it('gives each subagent its section, and reads only the wire logs it wants', () => {
    const main = jsonl(
      prompt('Delegate'),
      loop({ type: 'content.part', part: { type: 'text', text: 'Asked a subagent.' } }),
    );
    const sub = jsonl(
      prompt('Survey the tests'),
      loop({ type: 'content.part', part: { type: 'text', text: 'Twelve tests.' } }),
    );
    const files = [
      { role: 'agent_wire_history', path: 'files/0000-wire.jsonl', native_path: WIRE, bytes: main },
      {
        role: 'session_state',
        path: 'files/0002-agents-agent-0-wire.jsonl',
        native_path: 'wd_p_000000000000/session_1/agents/agent-0/wire.jsonl',
        bytes: sub,
      },
    ];
    expect(files.every((f) => kimiTranscriptReader.wants({ role: f.role, native_path: f.native_path } as never))).toBe(
      true,
    );
    expect(
      kimiTranscriptReader.wants({
        role: 'session_state',
        native_path: 'wd_p_000000000000/session_1/agents/main/plans/p.md',
      } as never),
    ).toBe(false);
    const t = kimiTranscriptReader.read(files, 'session_1');
    expect(t.turns.map((x) => x.text)).toEqual(['Delegate', 'Asked a subagent.']);
    expect(t.sections?.map((s) => [s.title, s.transcript.turns.map((x) => x.text)])).toEqual([
      ['Subagent agent-0', ['Survey the tests', 'Twelve tests.']],
    ]);
  });

  it('knows the user by turn.prompt from the user, and kimi-cli events by their own shape', () => {
    expect(kimiCodeUserTurn(prompt('Hi'))).toEqual({ texts: ['Hi'], toolResult: false });
    expect(kimiCodeUserTurn(prompt('Hi', 'system'))).toBeUndefined();
    expect(kimiCodeUserTurn({ type: 'usage.record' })).toBeUndefined();
    expect(
      kimiCodeUserTurn({
        timestamp: 1,
        message: { type: 'TurnBegin', payload: { user_input: [{ type: 'text', text: 'Old' }] } },
      })?.texts,
    ).toEqual(['Old']);
  });

  it('hands a kimi-cli bundle (no agents/ folder) to its own reader', () => {
    const wire = jsonl(
      { type: 'metadata', protocol_version: '1.9' },
      {
        timestamp: 1796050000,
        message: { type: 'TurnBegin', payload: { user_input: [{ type: 'text', text: 'Find it' }] } },
      },
    );
    const t = kimiTranscriptReader.read(
      [
        {
          role: 'agent_wire_history',
          path: 'files/0000-wire.jsonl',
          native_path: 'sessions/abc/id/wire.jsonl',
          bytes: wire,
        },
      ],
      'id',
    );
    expect(t.turns.map((x) => [x.role, x.text])).toEqual([['user', 'Find it']]);
  });
});
