/**
 * Gemini CLI's chat as readable turns (chat.ts reads both file formats): `user` messages are the person's prompts
 * (the injected `<session_context>` left out; parts that carry a `functionResponse` are tool results), `gemini`
 * messages the model's text with its tool calls and their results (`toolCalls[].result[].functionResponse`); thoughts,
 * `info`, `error` and `warning` messages are not conversation. Subagent chats (`chats/<session id>/<agent>.jsonl`,
 * companions) become sections.
 */
import { messageUserTurn } from '../../harness-kit/user-turn.js';
import type { UserTurn } from '../types.js';
import {
  emptyTranscript,
  isInjected,
  isoTime,
  isRecord,
  str,
  toolSummary,
  TurnList,
  withSubagentSections,
  type Transcript,
  type TranscriptReader,
  type TranscriptSource,
} from '../../harness-kit/transcript.js';
import { readGeminiChat } from './chat.js';

const SUBAGENT = /(?:^|\/)chats\/[^/]+\/([A-Za-z0-9._-]+)\.jsonl?$/;

/** A chat message is a `{type: 'user', content}` record: the common shape, with parts that hold `text`. */
export function geminiUserTurn(record: unknown): UserTurn | undefined {
  return messageUserTurn(record);
}

export const geminiTranscriptReader: TranscriptReader = {
  userTurn: geminiUserTurn,
  wants: (file) =>
    file.role === 'primary_transcript' || (file.role === 'session_companion' && SUBAGENT.test(file.native_path ?? '')),
  read: (files) => readGeminiSession(files),
};

export function readGeminiSession(files: readonly TranscriptSource[]): Transcript {
  const primary = files.find((f) => f.role === 'primary_transcript');
  const main = primary === undefined ? emptyTranscript() : readGeminiChatTurns(primary.bytes);
  return withSubagentSections(main, files, { pattern: SUBAGENT, read: readGeminiChatTurns, role: 'session_companion' });
}

function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => (typeof part === 'string' ? part : isRecord(part) && typeof part.text === 'string' ? part.text : ''))
    .filter((t) => t !== '')
    .join('\n\n');
}

function responseText(response: unknown): string {
  if (!isRecord(response)) return '';
  const inner = isRecord(response.response) ? response.response : response;
  for (const key of ['output', 'content', 'error']) {
    const value = inner[key];
    if (typeof value === 'string') return value;
  }
  try {
    return JSON.stringify(inner).slice(0, 100_000);
  } catch {
    return '';
  }
}

export function readGeminiChatTurns(bytes: Uint8Array): Transcript {
  const chat = readGeminiChat(new TextDecoder('utf-8', { fatal: false }).decode(bytes));
  let skipped = chat.skipped;
  const turns = new TurnList();
  // Tool results are recorded twice from 0.61 (in the call and as a user message): each call's result once.
  const answered = new Set<string>();
  for (const message of chat.messages) {
    const at = isoTime(message.timestamp);
    const when = at === undefined ? {} : { at };
    if (message.type === 'user') {
      const text = partsText(message.content);
      if (text.trim() !== '' && !isInjected(text)) turns.push({ role: 'user', text, ...when });
      for (const part of Array.isArray(message.content) ? message.content : []) {
        if (!isRecord(part) || !isRecord(part.functionResponse)) continue;
        const id = str(part.functionResponse.id);
        if (id !== undefined && answered.has(id)) continue;
        if (id !== undefined) answered.add(id);
        turns.push({
          role: 'tool',
          text: responseText(part.functionResponse.response),
          ...(str(part.functionResponse.name) === undefined ? {} : { name: str(part.functionResponse.name)! }),
          ...when,
        });
      }
      continue;
    }
    if (message.type !== 'gemini') continue;
    const calls = Array.isArray(message.toolCalls) ? message.toolCalls.filter(isRecord) : [];
    const text = partsText(message.content);
    if (text.trim() === '' && calls.length === 0) continue;
    turns.appendAssistant(text, undefined, at);
    for (const call of calls) {
      const name = str(call.name) ?? 'tool';
      turns.appendAssistant('', toolSummary(name, call.args), at);
    }
    for (const call of calls) {
      const id = str(call.id);
      if (id !== undefined && answered.has(id)) continue;
      const results = Array.isArray(call.result) ? call.result : [];
      const response = results
        .map((r) => (isRecord(r) && isRecord(r.functionResponse) ? responseText(r.functionResponse.response) : ''))
        .filter((t) => t !== '');
      if (response.length === 0) continue;
      if (id !== undefined) answered.add(id);
      turns.push({
        role: 'tool',
        text: response.join('\n\n'),
        name: str(call.name) ?? 'tool',
        ...when,
        ...(call.status === 'error' ? { error: true } : {}),
      });
    }
  }
  if (chat.messages.length === 0 && bytes.length > 0 && chat.sessionId === undefined) skipped++;
  return { turns: turns.turns, skipped, truncated: turns.truncated };
}
