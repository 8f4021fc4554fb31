/**
 * Codex's rollout as readable turns. Lines are `{timestamp, type, payload}`; the conversation is in the
 * `response_item` lines: `message` (role user / assistant; `developer` and `system` are instructions, not
 * conversation), `function_call` / `custom_tool_call` / `local_shell_call` (tool calls) and their `*_output` lines.
 * Injected user items (environment context, AGENTS.md, permissions) are left out, and so are reasoning items and the
 * event stream (`event_msg`), which repeats the same messages. A compressed rollout (`.jsonl.zst`) is decompressed
 * within a bound.
 */
import {
  blocksText,
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
import { messageUserTurn, textsOf } from '../../harness-kit/user-turn.js';
import type { UserTurn } from '../types.js';

/** A decompressed rollout is read up to this size. */
const MAX_DECOMPRESSED = 256 * 1024 * 1024;
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];
/** Codex (older builds) put AGENTS.md text and the prompt in one message, the prompt after this marker. */
const USER_REQUEST_MARKER = '## My request for Codex:';

/** Rollout lines `{timestamp, type, payload}`: the user's messages, in both the response items and the event stream. */
export function codexUserTurn(record: unknown): UserTurn | undefined {
  if (!isRecord(record) || typeof record.type !== 'string' || !isRecord(record.payload)) return messageUserTurn(record);
  const turn: UserTurn = { texts: [], toolResult: false };
  const payload = record.payload;
  if (record.type === 'response_item') {
    if (payload.type !== 'message' || payload.role !== 'user') return undefined;
    const kinds = isRecord(payload.internal_chat_message_metadata_passthrough)
      ? payload.internal_chat_message_metadata_passthrough.content_item_kinds
      : undefined;
    // Newer builds label each item; only `user.text` items are what the user typed.
    if (Array.isArray(kinds) && kinds.length > 0 && !kinds.includes('user.text')) return undefined;
    textsOf(payload.content, turn);
  } else if (record.type === 'event_msg' && payload.type === 'user_message' && typeof payload.message === 'string') {
    turn.texts.push(payload.message);
  } else if (
    record.type === 'event_msg' &&
    payload.type === 'item_completed' &&
    isRecord(payload.item) &&
    payload.item.type === 'UserMessage'
  ) {
    textsOf(payload.item.content, turn);
  } else {
    return undefined;
  }
  // Older builds put AGENTS.md text and the prompt in one message, the prompt after the marker.
  turn.texts = turn.texts.map((text) => {
    const marker = text.indexOf(USER_REQUEST_MARKER);
    return marker >= 0 ? text.slice(marker + USER_REQUEST_MARKER.length) : text;
  });
  return turn;
}

export const codexTranscriptReader: TranscriptReader = {
  userTurn: codexUserTurn,
  wants: (file) => file.role === 'rollout',
  read: (files) => {
    const rollout = files.find((f) => f.role === 'rollout');
    return rollout === undefined ? emptyTranscript() : readCodexRollout(rollout);
  },
};

export function readCodexRollout(file: Pick<TranscriptSource, 'bytes'>): Transcript {
  let bytes = file.bytes;
  if (ZSTD_MAGIC.every((b, i) => bytes[i] === b)) {
    try {
      // node:zlib loads with the first compressed rollout, not with every command that knows Codex.
      bytes = process.getBuiltinModule('node:zlib').zstdDecompressSync(bytes, { maxOutputLength: MAX_DECOMPRESSED });
    } catch {
      return emptyTranscript(1);
    }
  }
  const { records, skipped: unreadable } = jsonLines(bytes);
  let skipped = unreadable;
  const turns = new TurnList();
  const toolNames = new Map<string, string>();
  for (const record of records) {
    if (record.type !== 'response_item') continue;
    const item = record.payload;
    if (!isRecord(item)) {
      skipped++;
      continue;
    }
    const at = isoTime(record.timestamp);
    const when = at === undefined ? {} : { at };
    switch (item.type) {
      case 'message': {
        const text = blocksText(item.content, ['input_text', 'output_text', 'text']);
        if (item.role === 'assistant') turns.appendAssistant(text, undefined, at);
        else if (item.role === 'user') {
          const marker = text.indexOf(USER_REQUEST_MARKER);
          const prompt = marker === -1 ? text : text.slice(marker + USER_REQUEST_MARKER.length);
          if (!isInjected(prompt) && prompt.trim() !== '') turns.push({ role: 'user', text: prompt, ...when });
        }
        break;
      }
      case 'function_call':
      case 'custom_tool_call': {
        const name = str(item.name) ?? 'tool';
        const id = str(item.call_id);
        if (id !== undefined) toolNames.set(id, name);
        turns.appendAssistant('', toolSummary(name, item.type === 'function_call' ? item.arguments : item.input), at);
        break;
      }
      case 'local_shell_call': {
        const action = isRecord(item.action) ? item.action : {};
        const id = str(item.call_id);
        if (id !== undefined) toolNames.set(id, 'shell');
        turns.appendAssistant('', toolSummary('shell', { command: action.command }), at);
        break;
      }
      case 'web_search_call': {
        const action = isRecord(item.action) ? item.action : {};
        turns.appendAssistant('', toolSummary('web_search', { query: action.query }), at);
        break;
      }
      case 'function_call_output':
      case 'custom_tool_call_output':
      case 'local_shell_call_output': {
        const id = str(item.call_id);
        const name = id === undefined ? undefined : toolNames.get(id);
        turns.push({ role: 'tool', text: outputText(item.output), ...(name === undefined ? {} : { name }), ...when });
        break;
      }
      default:
        break;
    }
  }
  return { turns: turns.turns, skipped, truncated: turns.truncated };
}

/** A tool output: a string (sometimes JSON `{output, metadata}`), `{content}` or content items. */
function outputText(output: unknown): string {
  if (typeof output === 'string') {
    if (output.startsWith('{')) {
      try {
        const parsed = JSON.parse(output) as unknown;
        if (isRecord(parsed) && typeof parsed.output === 'string') return parsed.output;
      } catch {
        // Plain text that happens to start with a brace.
      }
    }
    return output;
  }
  if (isRecord(output)) {
    if (typeof output.content === 'string') return output.content;
    if (Array.isArray(output.content)) return blocksText(output.content, ['input_text', 'output_text', 'text']);
    if (typeof output.output === 'string') return output.output;
  }
  if (Array.isArray(output)) return blocksText(output, ['input_text', 'output_text', 'text']);
  return '';
}
