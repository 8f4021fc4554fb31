/**
 * Kimi's transcripts as readable turns. A Kimi Code wire log (`agents/main/wire.jsonl`, role agent_wire_history) holds
 * `turn.prompt` records (the user's input; other origins are the harness speaking) and `context.append_loop_event`
 * records whose events are the assistant's text (`content.part`), its tool calls (`tool.call`) and their results
 * (`tool.result`); everything else is bookkeeping. Subagents' wire logs (`agents/<agent>/wire.jsonl`) become
 * sections. A wire log of the Python kimi-cli (profile kimi-v1_28_0, `{timestamp, message: {type, payload}}` events)
 * is read by its own reader (legacy/transcript.ts).
 */
import { messageUserTurn, textsOf } from '../../harness-kit/user-turn.js';
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
  withSubagentSections,
  type Transcript,
  type TranscriptReader,
  type TranscriptSource,
} from '../../harness-kit/transcript.js';
import { kimiUserTurn as legacyUserTurn, readKimiSession as readLegacySession } from './legacy/transcript.js';

const SUBAGENT_WIRE = /(?:^|\/)agents\/([A-Za-z0-9._-]+)\/wire\.jsonl$/;

/** A Kimi Code `turn.prompt` record from the user; a kimi-cli event or message otherwise. */
export function kimiCodeUserTurn(record: unknown): UserTurn | undefined {
  if (isRecord(record) && typeof record.type === 'string') {
    if (record.type !== 'turn.prompt') return undefined;
    if (isRecord(record.origin) && record.origin.kind !== 'user') return undefined;
    const turn: UserTurn = { texts: [], toolResult: false };
    textsOf(record.input, turn);
    return turn;
  }
  return legacyUserTurn(record) ?? messageUserTurn(record);
}

export const kimiTranscriptReader: TranscriptReader = {
  userTurn: kimiCodeUserTurn,
  wants: (file) =>
    file.role === 'agent_wire_history' ||
    (file.role === 'session_state' &&
      (SUBAGENT_WIRE.test(file.native_path ?? '') ||
        /(?:^|\/)(?:context\.jsonl|subagents\/[^/]+\/(?:wire\.jsonl|meta\.json))$/.test(file.native_path ?? ''))),
  read: (files, sessionId) => readKimi(files, sessionId),
};

function readKimi(files: readonly TranscriptSource[], sessionId: string): Transcript {
  const wire = files.find((f) => f.role === 'agent_wire_history');
  // kimi-cli's layout has no agents/ folder: its bundles are read by its own reader.
  if (wire === undefined || !/(?:^|\/)agents\/main\/wire\.jsonl$/.test(wire.native_path ?? ''))
    return readLegacySession(files, sessionId);
  return withSubagentSections(readKimiCodeWire(wire.bytes), files, {
    pattern: SUBAGENT_WIRE,
    read: readKimiCodeWire,
    role: 'session_state',
  });
}

function resultText(result: unknown): string {
  if (typeof result === 'string') return result;
  if (!isRecord(result)) return '';
  for (const key of ['output', 'error', 'message']) if (typeof result[key] === 'string') return result[key];
  return '';
}

export function readKimiCodeWire(bytes: Uint8Array): Transcript {
  const { records, skipped } = jsonLines(bytes);
  const turns = new TurnList();
  const names = new Map<string, string>();
  for (const record of records) {
    const at = isoTime(record.time);
    const when = at === undefined ? {} : { at };
    if (record.type === 'turn.prompt') {
      if (isRecord(record.origin) && record.origin.kind !== 'user') continue;
      const turn: UserTurn = { texts: [], toolResult: false };
      textsOf(record.input, turn);
      const text = turn.texts.join('\n\n');
      if (text.trim() !== '' && !isInjected(text)) turns.push({ role: 'user', text, ...when });
      continue;
    }
    if (record.type !== 'context.append_loop_event' || !isRecord(record.event)) continue;
    const event = record.event;
    if (
      event.type === 'content.part' &&
      isRecord(event.part) &&
      event.part.type === 'text' &&
      typeof event.part.text === 'string'
    ) {
      turns.appendAssistant(event.part.text, undefined, at);
    } else if (event.type === 'tool.call') {
      const name = str(event.name) ?? 'tool';
      if (typeof event.toolCallId === 'string') names.set(event.toolCallId, name);
      turns.appendAssistant('', toolSummary(name, event.args), at);
    } else if (event.type === 'tool.result') {
      const name = typeof event.toolCallId === 'string' ? names.get(event.toolCallId) : undefined;
      const result = isRecord(event.result) ? event.result : {};
      turns.push({
        role: 'tool',
        text: resultText(result),
        ...(name === undefined ? {} : { name }),
        ...when,
        ...(result.isError === true || typeof result.error === 'string' ? { error: true } : {}),
      });
    }
  }
  return turns.turns.length === 0 && records.length === 0
    ? emptyTranscript(skipped)
    : { turns: turns.turns, skipped, truncated: turns.truncated };
}
