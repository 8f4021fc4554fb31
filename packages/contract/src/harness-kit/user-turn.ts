/**
 * Where a transcript record keeps the user's turn, in the shapes most harnesses share: each harness's reader
 * (../harnesses/<name>/transcript.ts) reads its own shapes and falls back to these. Titles and previews start from it.
 */
import { isRecord } from '../util/record.js';
import type { UserTurn } from '../harnesses/types.js';

/** Record types that carry a user's turn when a record has a `type`; everything else (attachments, API logs) does not.
 * */
const USER_RECORD_TYPES = new Set(['user', 'message']);

/** Texts of a content value (a string, or an array of strings and text parts) added to `into`. */
export function textsOf(value: unknown, into: UserTurn): void {
  if (typeof value === 'string') {
    into.texts.push(value);
    return;
  }
  if (!Array.isArray(value)) return;
  for (const part of value) {
    if (typeof part === 'string') {
      into.texts.push(part);
      continue;
    }
    if (!isRecord(part)) continue;
    if (part.type === 'tool_result' || part.type === 'function_call_output') {
      into.toolResult = true;
      continue;
    }
    // Parts the harness made itself (file reads for @mentions, reminders) are marked synthetic or ignored.
    if (part.synthetic === true || part.ignored === true) continue;
    if (
      (part.type === undefined || part.type === 'text' || part.type === 'input_text') &&
      typeof part.text === 'string'
    ) {
      into.texts.push(part.text);
    }
  }
}

/**
 * The user's turn a record holds in the common message shapes: a `{type: 'user' | 'message'}` entry around a message,
 * an `{info, parts}` export message, or a bare `{role, content | parts | prompt | text}` message. A harness whose
 * records have another shape reads those itself and falls back to this.
 */
export function messageUserTurn(record: unknown): UserTurn | undefined {
  if (!isRecord(record)) return undefined;
  const turn: UserTurn = { texts: [], toolResult: false };
  if (typeof record.type === 'string' && !USER_RECORD_TYPES.has(record.type)) return undefined;
  const message = isRecord(record.message) ? record.message : record;
  const info = isRecord(record.info) ? record.info : undefined;
  const role = message.role ?? info?.role ?? (record.type === 'user' ? 'user' : undefined);
  if (role !== 'user') return undefined;
  if (message.content !== undefined) textsOf(message.content, turn);
  else if (Array.isArray(record.parts)) textsOf(record.parts, turn);
  else if (Array.isArray(message.parts)) textsOf(message.parts, turn);
  else if (typeof message.prompt === 'string') turn.texts.push(message.prompt);
  else if (typeof message.text === 'string') turn.texts.push(message.text);
  return turn;
}
