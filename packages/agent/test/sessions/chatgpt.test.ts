/**
 * The ChatGPT export's streaming reader: elements found across read chunks whatever their strings hold (brackets,
 * quotes, escapes, multi-byte characters), one conversation at a time; the thread is the path to current_node.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { conversationRecord, readConversations } from '../../src/sessions/chatgpt.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-chatgpt-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it('finds every conversation of a file larger than a read chunk, whatever its strings hold', async () => {
  const tricky = 'a "quote" \\ backslash ] } [ { , é 日本 😀 ';
  const conversations = Array.from({ length: 40 }, (_, i) => ({
    id: `conv-${i}`,
    title: `T${i}`,
    current_node: 'm',
    mapping: {
      m: {
        id: 'm',
        parent: null,
        message: {
          author: { role: 'user' },
          content: { content_type: 'text', parts: [`${i}:${tricky.repeat(2000)}`] },
        },
      },
    },
  }));
  const file = path.join(dir, 'big.json');
  await writeFile(file, JSON.stringify(conversations));
  const seen: string[] = [];
  for await (const item of readConversations(file)) {
    expect('conversation' in item).toBe(true);
    const record = conversationRecord((item as { conversation: unknown }).conversation);
    expect('error' in record).toBe(false);
    if ('error' in record) continue;
    expect(record.messages![0]!.text).toBe(`${item.index}:${tricky.repeat(2000)}`);
    seen.push(record.provider_session_id!);
  }
  expect(seen).toEqual(conversations.map((c) => c.id));
});

it('refuses an element that is not a conversation, and one file with more after its array', async () => {
  const numbers = path.join(dir, 'numbers.json');
  await writeFile(numbers, '[1, 2]');
  await expect(async () => {
    for await (const _ of readConversations(numbers)) void _;
  }).rejects.toThrow('element 1 of its array is not a conversation');
  const trailing = path.join(dir, 'trailing.json');
  await writeFile(trailing, '[] []');
  await expect(async () => {
    for await (const _ of readConversations(trailing)) void _;
  }).rejects.toThrow('there is more after its array');
});

it('takes the thread to current_node, drops hidden and non-text messages, and names an untitled conversation', () => {
  const record = conversationRecord({
    id: 'c',
    title: '  ',
    create_time: 1_700_000_000.5,
    current_node: 'b',
    mapping: {
      r: {
        parent: null,
        message: {
          author: { role: 'system' },
          content: { content_type: 'text', parts: ['hidden'] },
          metadata: { is_visually_hidden_from_conversation: true },
        },
      },
      a: {
        parent: 'r',
        message: {
          author: { role: 'user' },
          create_time: 1_700_000_001,
          content: { content_type: 'text', parts: ['question'] },
        },
      },
      x: {
        parent: 'a',
        message: { author: { role: 'assistant' }, content: { content_type: 'text', parts: ['other branch'] } },
      },
      b: {
        parent: 'a',
        message: { author: { role: 'assistant' }, content: { content_type: 'thoughts', thoughts: [] } },
      },
    },
  });
  expect(record).toMatchObject({
    provider: 'chatgpt_export',
    provider_session_id: 'c',
    title: 'Untitled conversation',
    created_at_unix_ms: 1_700_000_000_500,
    messages: [{ role: 'user', text: 'question', created_at_unix_ms: 1_700_000_001_000 }],
  });
  expect(conversationRecord({ title: 'x' })).toEqual({ error: 'it has no conversation id' });
});
