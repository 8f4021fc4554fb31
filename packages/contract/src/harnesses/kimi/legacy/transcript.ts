/**
 * kimi-cli's session (profile kimi-v1_28_0) as readable turns, from its wire log (`wire.jsonl`, role
 * agent_wire_history): a metadata line, then `{timestamp, message: {type, payload}}` events — `TurnBegin.user_input`
 * opens a turn, `ContentPart` (text; `think` parts are left out) is the assistant speaking, `ToolCall` (+ streamed
 * `ToolCallPart` arguments) and `ToolResult` are tool use. When the wire log holds no turn, the model context
 * (`context.jsonl`: `user`, `assistant` with `tool_calls`, `tool`; `_`-roles are bookkeeping) is read instead.
 * Subagents (`subagents/<id>/wire.jsonl`, described by `meta.json`) become sections.
 */
import {
  blocksText,
  cleanText,
  emptyTranscript,
  isInjected,
  isoTime,
  isRecord,
  jsonLines,
  str,
  subagentDescriptions,
  toolSummary,
  TurnList,
  withSubagentSections,
  type Transcript,
  type TranscriptReader,
  type TranscriptSource,
} from '../../../harness-kit/transcript.js';
import { messageUserTurn, textsOf } from '../../../harness-kit/user-turn.js';
import type { UserTurn } from '../../types.js';

const SUBAGENT_WIRE = /(?:^|\/)subagents\/([A-Za-z0-9._-]+)\/wire\.jsonl$/;
const SUBAGENT_META = /(?:^|\/)subagents\/([A-Za-z0-9._-]+)\/meta\.json$/;
/** Streamed tool arguments are kept up to this size. */
const MAX_ARGUMENTS = 64 * 1024;

function isMainContext(nativePath: string | undefined, sessionId: string): boolean {
  return nativePath !== undefined && nativePath.endsWith(`/${sessionId}/context.jsonl`);
}

/** Wire lines `{timestamp, message: {type, payload}}`: the user's input opens each turn; context lines are messages. */
export function kimiUserTurn(record: unknown): UserTurn | undefined {
  if (
    isRecord(record) &&
    isRecord(record.message) &&
    typeof record.message.type === 'string' &&
    isRecord(record.message.payload)
  ) {
    if (record.message.type !== 'TurnBegin') return undefined;
    const turn: UserTurn = { texts: [], toolResult: false };
    textsOf(record.message.payload.user_input, turn);
    return turn;
  }
  return messageUserTurn(record);
}

export const kimiTranscriptReader: TranscriptReader = {
  userTurn: kimiUserTurn,
  wants: (file) =>
    file.role === 'agent_wire_history' ||
    (file.role === 'session_state' &&
      (/(?:^|\/)context\.jsonl$/.test(file.native_path ?? '') ||
        SUBAGENT_WIRE.test(file.native_path ?? '') ||
        SUBAGENT_META.test(file.native_path ?? ''))),
  read: (files, sessionId) => readKimiSession(files, sessionId),
};

export function readKimiSession(files: readonly TranscriptSource[], sessionId: string): Transcript {
  const wire = files.find((f) => f.role === 'agent_wire_history');
  let main = wire === undefined ? emptyTranscript() : readKimiWire(wire.bytes);
  if (main.turns.length === 0) {
    const context = files.find((f) => f.role === 'session_state' && isMainContext(f.native_path, sessionId));
    if (context !== undefined) {
      const fromContext = readKimiContext(context.bytes);
      main = { ...fromContext, skipped: fromContext.skipped + main.skipped };
    }
  }
  const descriptions = subagentDescriptions(main, files, SUBAGENT_META);
  return withSubagentSections(main, files, { pattern: SUBAGENT_WIRE, read: readKimiWire, descriptions });
}

interface PendingCall {
  turnIndex: number;
  toolIndex: number;
  name: string;
  args: string;
}

export function readKimiWire(bytes: Uint8Array): Transcript {
  const { records, skipped: unreadable } = jsonLines(bytes);
  let skipped = unreadable;
  const turns = new TurnList();
  const calls = new Map<string, PendingCall>();
  let lastCall: PendingCall | undefined;
  /** The last event looked at, to join streamed text parts. */
  let previous = '';
  for (const record of records) {
    if (record.type === 'metadata') continue;
    const message = record.message;
    if (!isRecord(message) || typeof message.type !== 'string') {
      skipped++;
      continue;
    }
    const payload = isRecord(message.payload) ? message.payload : {};
    const at = isoTime(record.timestamp);
    switch (message.type) {
      case 'TurnBegin': {
        const input = payload.user_input;
        const text = typeof input === 'string' ? input : blocksText(input, ['text']);
        if (!isInjected(text)) turns.push({ role: 'user', text, ...(at === undefined ? {} : { at }) });
        lastCall = undefined;
        break;
      }
      case 'ContentPart':
        if (payload.type === 'text' && typeof payload.text === 'string') {
          addText(turns, payload.text, at, previous === 'ContentPart');
          previous = 'ContentPart';
          continue;
        }
        break;
      case 'ToolCall': {
        const fn = isRecord(payload.function) ? payload.function : {};
        const name = str(fn.name) ?? 'tool';
        const args = typeof fn.arguments === 'string' ? fn.arguments.slice(0, MAX_ARGUMENTS) : '';
        turns.appendAssistant('', toolSummary(name, args), at);
        const turnIndex = turns.turns.length - 1;
        const turn = turns.turns[turnIndex];
        if (turn === undefined || turn.role !== 'assistant' || turn.tools === undefined) break;
        lastCall = { turnIndex, toolIndex: turn.tools.length - 1, name, args };
        const id = str(payload.id);
        if (id !== undefined) calls.set(id, lastCall);
        break;
      }
      case 'ToolCallPart': {
        if (lastCall === undefined || typeof payload.arguments_part !== 'string') break;
        if (lastCall.args.length < MAX_ARGUMENTS)
          lastCall.args = (lastCall.args + payload.arguments_part).slice(0, MAX_ARGUMENTS);
        const tools = turns.turns[lastCall.turnIndex]?.tools;
        if (tools !== undefined) tools[lastCall.toolIndex] = toolSummary(lastCall.name, lastCall.args);
        break;
      }
      case 'ToolResult': {
        const id = str(payload.tool_call_id);
        const call = id === undefined ? undefined : calls.get(id);
        const value = isRecord(payload.return_value) ? payload.return_value : {};
        const output = typeof value.output === 'string' ? value.output : blocksText(value.output, ['text']);
        const text = output.trim() === '' && typeof value.message === 'string' ? value.message : output;
        turns.push({
          role: 'tool',
          text,
          ...(call === undefined ? {} : { name: call.name }),
          ...(at === undefined ? {} : { at }),
          ...(value.is_error === true ? { error: true } : {}),
        });
        lastCall = undefined;
        break;
      }
      default:
        break;
    }
    previous = message.type;
  }
  return { turns: turns.turns, skipped, truncated: turns.truncated };
}

/**
 * Text parts streamed one after another are pieces of one text and are joined as they are; text after a tool call or
 * a new step starts a new paragraph.
 */
function addText(turns: TurnList, text: string, at: string | undefined, continues: boolean): void {
  const last = turns.turns.at(-1);
  if (continues && last !== undefined && last.role === 'assistant') {
    last.text = cleanText(`${last.text}${text}`).replace(/^\n+|\s+$/g, '');
    return;
  }
  turns.appendAssistant(text, undefined, at);
}

export function readKimiContext(bytes: Uint8Array): Transcript {
  const { records, skipped: unreadable } = jsonLines(bytes);
  let skipped = unreadable;
  const turns = new TurnList();
  const names = new Map<string, string>();
  for (const record of records) {
    const role = record.role;
    if (typeof role !== 'string') {
      skipped++;
      continue;
    }
    if (role.startsWith('_') || role === 'system') continue;
    if (role === 'user') {
      const text = blocksText(record.content, ['text']);
      if (!isInjected(text)) turns.push({ role: 'user', text });
    } else if (role === 'assistant') {
      turns.appendAssistant(blocksText(record.content, ['text']), undefined, undefined);
      if (Array.isArray(record.tool_calls)) {
        for (const call of record.tool_calls) {
          if (!isRecord(call)) continue;
          const fn = isRecord(call.function) ? call.function : {};
          const name = str(fn.name) ?? 'tool';
          if (typeof call.id === 'string') names.set(call.id, name);
          turns.appendAssistant('', toolSummary(name, fn.arguments), undefined);
        }
      }
    } else if (role === 'tool') {
      const id = str(record.tool_call_id);
      const name = id === undefined ? undefined : names.get(id);
      const text = blocksText(record.content, ['text']).replace(/^<system>[\s\S]*?<\/system>\s*/, '');
      turns.push({ role: 'tool', text, ...(name === undefined ? {} : { name }) });
    } else {
      skipped++;
    }
  }
  return { turns: turns.turns, skipped, truncated: turns.truncated };
}
