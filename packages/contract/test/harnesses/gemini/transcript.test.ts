/**
 * Gemini CLI's transcript reader on shapes its recorded fixture does not show: a 0.21-0.38 JSON document, JSON lines
 * with message updates, a list replaced by `$set.messages` and a `$rewindTo`, tool results recorded twice, and lines
 * that are not what they should be (skipped and counted).
 */
import { describe, expect, it } from 'vitest';
import { chatSessionId, isChatFileOf, readGeminiChat } from '../../../src/harnesses/gemini/chat.js';
import { readGeminiChatTurns, readGeminiSession } from '../../../src/harnesses/gemini/transcript.js';

const enc = (text: string) => new TextEncoder().encode(text);
const jsonl = (...records: unknown[]) =>
  enc(records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'));
const ID = '217fa86b-524f-4395-8043-ec84cce7a7be';

describe('Gemini CLI chats', () => {
  it('a JSON document (before 0.39): the prompt as a string, the model text, a tool call with its result', () => {
    const doc = {
      sessionId: ID,
      projectHash: 'h',
      startTime: '2026-12-02T02:51:17.048Z',
      lastUpdated: '2026-12-02T02:51:18.000Z',
      summary: 'Rename the target',
      messages: [
        { id: 'u1', timestamp: '2026-12-02T02:51:17.048Z', type: 'user', content: 'Rename the build target' },
        {
          id: 'g1',
          timestamp: '2026-12-02T02:51:17.100Z',
          type: 'gemini',
          content: '',
          toolCalls: [
            {
              id: 'c1',
              name: 'read_file',
              args: { file_path: 'Makefile' },
              result: [{ functionResponse: { id: 'c1', name: 'read_file', response: { output: 'build:\n' } } }],
              status: 'success',
            },
          ],
        },
        { id: 'i1', type: 'info', content: 'Loaded' },
        {
          id: 'g2',
          timestamp: '2026-12-02T02:51:18.000Z',
          type: 'gemini',
          content: 'Renamed.',
          thoughts: [{ subject: 's', description: 'd' }],
        },
      ],
    };
    const text = JSON.stringify(doc, null, 2);
    expect(readGeminiChat(text)).toMatchObject({ sessionId: ID, summary: 'Rename the target', skipped: 0 });
    expect(chatSessionId(text.slice(0, 60))).toBe(ID);
    expect(readGeminiChatTurns(enc(text))).toEqual({
      turns: [
        { role: 'user', text: 'Rename the build target', at: '2026-12-02T02:51:17.048Z' },
        { role: 'assistant', text: '', tools: ['read_file: Makefile'], at: '2026-12-02T02:51:17.100Z' },
        { role: 'tool', text: 'build:', name: 'read_file', at: '2026-12-02T02:51:17.100Z' },
        { role: 'assistant', text: 'Renamed.', at: '2026-12-02T02:51:18.000Z' },
      ],
      skipped: 0,
      truncated: false,
    });
  });

  it(
    'JSON lines: updates replace a message, $set.messages replaces the list, $rewindTo drops the tail, bad lines ' +
      'are counted',
    () => {
      const bytes = jsonl(
        { sessionId: ID, projectHash: 'h', startTime: 's', lastUpdated: 'u', kind: 'main' },
        {
          $set: {
            messages: [{ id: 'ctx', type: 'user', content: [{ text: '<session_context>\nenv\n</session_context>' }] }],
          },
        },
        { id: 'u1', type: 'user', content: [{ text: 'First question' }] },
        { id: 'g1', type: 'gemini', content: 'draft' },
        { id: 'g1', type: 'gemini', content: 'First answer' },
        { id: 'u2', type: 'user', content: [{ text: 'Dropped question' }] },
        { id: 'g2', type: 'gemini', content: 'Dropped answer' },
        { $rewindTo: 'u2' },
        '{"broken',
        '[1,2]',
        { id: 'u3', type: 'user', content: [{ text: 'Second question' }] },
        {
          id: 'g3',
          type: 'gemini',
          content: 'Second answer',
          toolCalls: [
            {
              id: 'c9',
              name: 'run_shell_command',
              args: { command: 'ls' },
              result: [{ functionResponse: { id: 'c9', name: 'run_shell_command', response: { output: 'a.txt' } } }],
              status: 'error',
            },
          ],
        },
        {
          id: 'u4',
          type: 'user',
          content: [{ functionResponse: { id: 'c9', name: 'run_shell_command', response: { output: 'a.txt' } } }],
        },
        { $set: { lastUpdated: 'later', summary: 'Two questions' } },
      );
      const chat = readGeminiChat(new TextDecoder().decode(bytes));
      expect(chat).toMatchObject({ sessionId: ID, summary: 'Two questions', lastUpdated: 'later', skipped: 2 });
      expect(
        readGeminiChatTurns(bytes).turns.map((t) => [
          t.role,
          t.text,
          ...(t.tools ?? []),
          ...(t.error ? ['error'] : []),
        ]),
      ).toEqual([
        ['user', 'First question'],
        ['assistant', 'First answer'],
        ['user', 'Second question'],
        ['assistant', 'Second answer', 'run_shell_command: ls'],
        ['tool', 'a.txt', 'error'],
      ]);
    },
  );

  it('subagent chats become sections', () => {
    const main = jsonl({ sessionId: ID }, { id: 'u1', type: 'user', content: [{ text: 'Delegate it' }] });
    const sub = jsonl(
      { sessionId: 'sub' },
      { id: 'u1', type: 'user', content: [{ text: 'Subtask' }] },
      { id: 'g1', type: 'gemini', content: 'Done' },
    );
    const read = readGeminiSession([
      {
        role: 'primary_transcript',
        path: 'files/0000-transcript.jsonl',
        native_path: `p/chats/session-x-${ID.slice(0, 8)}.jsonl`,
        bytes: main,
      },
      {
        role: 'session_companion',
        path: 'files/0001-x',
        native_path: `p/chats/${ID}/codebase_investigator-1.jsonl`,
        bytes: sub,
      },
    ]);
    expect(read.turns).toHaveLength(1);
    expect(read.sections).toEqual([
      {
        title: 'Subagent codebase_investigator-1',
        transcript: {
          turns: [
            { role: 'user', text: 'Subtask' },
            { role: 'assistant', text: 'Done' },
          ],
          skipped: 0,
          truncated: false,
        },
      },
    ]);
  });

  it('names chat files by the short id; a file that is no chat names no session', () => {
    expect(isChatFileOf(`session-2026-12-02T02-51-${ID.slice(0, 8)}.json`, ID)).toBe(true);
    expect(isChatFileOf(`session-2026-12-02T02-51-${ID.slice(0, 8)}.jsonl`, ID)).toBe(true);
    expect(isChatFileOf(`session-2026-12-02T02-51-${ID.slice(0, 8)}.txt`, ID)).toBe(false);
    expect(isChatFileOf(`session-2026-12-02-${ID.slice(0, 8)}.json`, ID)).toBe(false);
    expect(isChatFileOf('session-2026-12-02T02-51-00000000.json', ID)).toBe(false);
    expect(chatSessionId('[]')).toBeUndefined();
    expect(chatSessionId('{"projectHash":"x"}')).toBeUndefined();
    expect(chatSessionId(`{"sessionId":"${ID}"}\n{"id":1}`)).toBe(ID);
  });
});
