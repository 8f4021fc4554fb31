/**
 * Gemini CLI's chat files, as its ChatRecordingService writes them
 * (packages/core/src/services/chatRecordingService.ts):
 *
 *   - before 0.39: `session-<YYYY-MM-DDTHH-MM>-<first 8 of the id>.json`, one JSON document
 *     `{sessionId, projectHash, startTime, lastUpdated, messages: [...], summary?, kind?}`, rewritten whole on each
 *     message;
 *   - from 0.39: the same name with `.jsonl`, append-only: a first line `{sessionId, projectHash, startTime,
 *     lastUpdated, kind}`, then message records (`{id, timestamp, type, content, ...}`; a record whose id was seen
 *     before replaces that message), `{"$set": {...}}` updates of the metadata (`$set.messages` replaces the whole
 *     list), and `{"$rewindTo": id}` (drops that message and everything after it). Records apply in order.
 *
 * Messages: `type` is `user` (`content` a string before 0.28, then an array of parts `[{text}]`; a part
 * `{functionResponse}` is a tool result), `gemini` (`content` the model's text, `toolCalls[]` with `{name, args,
 * result[].functionResponse.response.output, status}`, `thoughts[]`), or `info` / `error` / `warning`.
 */
import { isRecord } from '../../util/record.js';

export interface GeminiChat {
  sessionId?: string;
  summary?: string;
  lastUpdated?: string;
  messages: Record<string, unknown>[];
  /** Lines or documents that could not be read. */
  skipped: number;
}

/** At most this many messages are kept (a runaway file is cut, not read whole). */
const MAX_MESSAGES = 100_000;
/** A single line longer than this is skipped rather than parsed. */
const MAX_LINE_CHARS = 8 * 1024 * 1024;

/** The chat a file's text holds, in either format. */
export function readGeminiChat(text: string): GeminiChat {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('{')) {
    try {
      const doc: unknown = JSON.parse(text);
      if (isRecord(doc)) return fromDocument(doc);
    } catch {
      // Not one document: JSON lines.
    }
  }
  return fromLines(text);
}

function fromDocument(doc: Record<string, unknown>): GeminiChat {
  const messages = Array.isArray(doc.messages) ? doc.messages.filter(isRecord).slice(0, MAX_MESSAGES) : [];
  return { ...meta(doc), messages, skipped: Array.isArray(doc.messages) ? doc.messages.length - messages.length : 0 };
}

function meta(record: Record<string, unknown>): Pick<GeminiChat, 'sessionId' | 'summary' | 'lastUpdated'> {
  return {
    ...(typeof record.sessionId === 'string' ? { sessionId: record.sessionId } : {}),
    ...(typeof record.summary === 'string' ? { summary: record.summary } : {}),
    ...(typeof record.lastUpdated === 'string' ? { lastUpdated: record.lastUpdated } : {}),
  };
}

function fromLines(text: string): GeminiChat {
  const chat: GeminiChat = { messages: [], skipped: 0 };
  let first = true;
  for (const line of text.split('\n')) {
    const body = line.trim();
    if (body === '') continue;
    let record: unknown;
    try {
      if (body.length > MAX_LINE_CHARS) throw new Error('line too long');
      record = JSON.parse(body);
    } catch {
      chat.skipped++;
      continue;
    }
    if (!isRecord(record)) {
      chat.skipped++;
      continue;
    }
    apply(chat, record, first);
    first = false;
  }
  return chat;
}

function apply(chat: GeminiChat, record: Record<string, unknown>, first: boolean): void {
  if (isRecord(record.$set)) {
    const set = record.$set;
    Object.assign(chat, meta(set));
    if (Array.isArray(set.messages)) chat.messages = set.messages.filter(isRecord).slice(0, MAX_MESSAGES);
    return;
  }
  if (typeof record.$rewindTo === 'string') {
    const at = chat.messages.findIndex((m) => m.id === record.$rewindTo);
    if (at >= 0) chat.messages.length = at;
    return;
  }
  if (typeof record.type === 'string' && 'id' in record) {
    const at = typeof record.id === 'string' ? chat.messages.findIndex((m) => m.id === record.id) : -1;
    if (at >= 0) chat.messages[at] = record;
    else if (chat.messages.length < MAX_MESSAGES) chat.messages.push(record);
    return;
  }
  if (first) {
    Object.assign(chat, meta(record));
    return;
  }
  chat.skipped++;
}

/** The session id a chat file names, from its first line or document (what Gemini CLI matches a resume against). */
export function chatSessionId(head: string): string | undefined {
  const trimmed = head.trimStart();
  if (!trimmed.startsWith('{')) return undefined;
  const newline = trimmed.indexOf('\n');
  for (const candidate of [trimmed, newline < 0 ? undefined : trimmed.slice(0, newline)]) {
    if (candidate === undefined) continue;
    try {
      const doc: unknown = JSON.parse(candidate);
      if (isRecord(doc) && typeof doc.sessionId === 'string') return doc.sessionId;
    } catch {
      // A document read only in part, or the first of several lines.
    }
  }
  // A pretty-printed document whose head only was read: its first key.
  return /^\{\s*"sessionId"\s*:\s*"([^"\\]{1,512})"/.exec(trimmed)?.[1];
}

/** `session-<YYYY-MM-DDTHH-MM>-<first 8 of the id>.json` or `.jsonl`: how Gemini CLI names a chat file. */
export const CHAT_FILE = /^session-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-([A-Za-z0-9]{8})\.jsonl?$/;

/** Whether a chat file name is the one of session `id` (by the short id Gemini CLI puts in the name). */
export function isChatFileOf(name: string, id: string): boolean {
  return CHAT_FILE.exec(name)?.[1] === id.slice(0, 8);
}
