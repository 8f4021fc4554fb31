/**
 * Qwen Code's transcript as readable turns: `user` records are the person's prompts (`message.parts[].text`),
 * `assistant` records the model's text and its tool calls (`parts[].functionCall`), `tool_result` records the tools'
 * answers (`parts[].functionResponse`); `system` records (telemetry, slash commands, titles, snapshots) are not
 * conversation.
 */
import { messageUserTurn } from '../../harness-kit/user-turn.js';
import type { UserTurn } from '../types.js';
import {
  emptyTranscript,
  isInjected,
  isoTime,
  isRecord,
  jsonLines,
  str,
  toolSummary,
  TurnList,
  type Transcript,
  type TranscriptReader,
  type TranscriptSource,
} from '../../harness-kit/transcript.js';

/** A `{type: 'user', message: {role: 'user', parts}}` record: the common message shape. */
export function qwenUserTurn(record: unknown): UserTurn | undefined {
  if (isRecord(record) && record.type !== 'user') return undefined;
  return messageUserTurn(record);
}

export const qwenTranscriptReader: TranscriptReader = {
  userTurn: qwenUserTurn,
  wants: (file) => file.role === 'primary_transcript',
  read: (files) => {
    const primary = files.find((f) => f.role === 'primary_transcript');
    return primary === undefined ? emptyTranscript() : readQwenTranscript(primary);
  },
};

function partsOf(record: Record<string, unknown>): Record<string, unknown>[] {
  const message = record.message;
  return isRecord(message) && Array.isArray(message.parts) ? message.parts.filter(isRecord) : [];
}

function responseText(response: unknown): string {
  if (!isRecord(response)) return typeof response === 'string' ? response : '';
  for (const key of ['output', 'content', 'error']) if (typeof response[key] === 'string') return response[key];
  try {
    return JSON.stringify(response).slice(0, 100_000);
  } catch {
    return '';
  }
}

export function readQwenTranscript(source: Pick<TranscriptSource, 'bytes'>): Transcript {
  const { records, skipped } = jsonLines(source.bytes);
  const turns = new TurnList();
  for (const record of records) {
    const at = isoTime(record.timestamp);
    const when = at === undefined ? {} : { at };
    const parts = partsOf(record);
    if (record.type === 'user') {
      const text = parts
        .map((p) => str(p.text) ?? '')
        .filter((t) => t !== '')
        .join('\n\n');
      if (text.trim() !== '' && !isInjected(text)) turns.push({ role: 'user', text, ...when });
    } else if (record.type === 'assistant') {
      for (const part of parts) {
        if (part.thought === true) continue;
        if (typeof part.text === 'string') turns.appendAssistant(part.text, undefined, at);
        else if (isRecord(part.functionCall))
          turns.appendAssistant('', toolSummary(str(part.functionCall.name) ?? 'tool', part.functionCall.args), at);
      }
    } else if (record.type === 'tool_result') {
      for (const part of parts) {
        if (!isRecord(part.functionResponse)) continue;
        const name = str(part.functionResponse.name);
        turns.push({
          role: 'tool',
          text: responseText(part.functionResponse.response),
          ...(name === undefined ? {} : { name }),
          ...when,
        });
      }
    }
  }
  return { turns: turns.turns, skipped, truncated: turns.truncated };
}
