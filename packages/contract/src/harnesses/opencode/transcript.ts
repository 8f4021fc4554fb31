/**
 * OpenCode's session export (`opencode export <id>`, role portable_export) as readable turns:
 * `{info, messages: [{info: {role, time: {created}}, parts}]}`. Parts: `text` (synthetic and ignored ones are
 * OpenCode's own), `tool` (`tool`, `state: {status, input, output, error}`): a call on the assistant's turn and its
 * output as a tool turn; `file` parts are named; reasoning, steps, snapshots and patches are left out.
 */
import {
  emptyTranscript,
  isoTime,
  isRecord,
  str,
  toolSummary,
  TurnList,
  type Transcript,
  type TranscriptReader,
} from '../../harness-kit/transcript.js';
import { messageUserTurn } from '../../harness-kit/user-turn.js';

/** An export is read up to this size (the bundle caps a file at 64 MiB). */
const MAX_EXPORT_BYTES = 64 * 1024 * 1024;
const MAX_MESSAGES = 100_000;

export const opencodeTranscriptReader: TranscriptReader = {
  userTurn: messageUserTurn,
  wants: (file) => file.role === 'portable_export',
  read: (files) => {
    const file = files.find((f) => f.role === 'portable_export');
    return file === undefined ? emptyTranscript() : readOpencodeExport(file.bytes);
  },
};

export function readOpencodeExport(bytes: Uint8Array): Transcript {
  if (bytes.length > MAX_EXPORT_BYTES) return emptyTranscript(1);
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
  } catch {
    return emptyTranscript(1);
  }
  if (!isRecord(data) || !Array.isArray(data.messages)) return emptyTranscript(1);
  let skipped = 0;
  const turns = new TurnList();
  for (const message of data.messages.slice(0, MAX_MESSAGES)) {
    if (!isRecord(message) || !isRecord(message.info) || !Array.isArray(message.parts)) {
      skipped++;
      continue;
    }
    const role = message.info.role;
    const time = isRecord(message.info.time) ? message.info.time : {};
    const at = isoTime(time.created);
    if (role === 'user') {
      const texts: string[] = [];
      for (const part of message.parts) {
        if (!isRecord(part)) continue;
        if (part.type === 'text' && typeof part.text === 'string' && part.synthetic !== true && part.ignored !== true)
          texts.push(part.text);
        else if (part.type === 'file') texts.push(`[file: ${str(part.filename) ?? str(part.url) ?? 'attachment'}]`);
      }
      turns.push({ role: 'user', text: texts.join('\n\n'), ...(at === undefined ? {} : { at }) });
      continue;
    }
    if (role !== 'assistant') {
      skipped++;
      continue;
    }
    for (const part of message.parts) {
      if (!isRecord(part)) continue;
      const partTime = isRecord(part.time) ? isoTime(part.time.start) : undefined;
      if (part.type === 'text' && typeof part.text === 'string' && part.synthetic !== true) {
        turns.appendAssistant(part.text, undefined, partTime ?? at);
      } else if (part.type === 'tool') {
        const name = str(part.tool) ?? 'tool';
        const state = isRecord(part.state) ? part.state : {};
        turns.appendAssistant('', toolSummary(name, state.input), partTime ?? at);
        const failed = state.status === 'error';
        const output = failed ? str(state.error) : str(state.output);
        if (output !== undefined) {
          const stateTime = isRecord(state.time) ? isoTime(state.time.end) : undefined;
          turns.push({
            role: 'tool',
            text: output,
            name,
            ...(stateTime === undefined ? {} : { at: stateTime }),
            ...(failed ? { error: true } : {}),
          });
        }
      }
    }
  }
  if (data.messages.length > MAX_MESSAGES) turns.truncated = true;
  return { turns: turns.turns, skipped, truncated: turns.truncated };
}
