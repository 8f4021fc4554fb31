/**
 * Claude Code's transcript as readable turns. The primary JSONL holds `user` and `assistant` records with
 * `message: {role, content}` (a string or blocks: text, thinking, tool_use, tool_result) and a `timestamp`; one
 * assistant reply is often written as several records, one block each. Meta records (`isMeta`, compact summaries,
 * sidechain lines, attachments, API request logs, queue operations) are not conversation and are left out.
 * Subagent transcripts (`<session>/subagents/agent-<id>.jsonl`, companions) become sections of their own.
 */
import {
  blocksText,
  emptyTranscript,
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
} from '../../harness-kit/transcript.js';
import { messageUserTurn } from '../../harness-kit/user-turn.js';
import type { UserTurn } from '../types.js';

const SUBAGENT = /(?:^|\/)subagents\/(?:[^/]+\/)*agent-([A-Za-z0-9._-]+)\.jsonl$/;
const SUBAGENT_META = /(?:^|\/)subagents\/(?:[^/]+\/)*agent-([A-Za-z0-9._-]+)\.meta\.json$/;

/** Meta entries, compaction summaries and side chains are not the user typing; the rest are common message shapes. */
export function claudeUserTurn(record: unknown): UserTurn | undefined {
  if (
    isRecord(record) &&
    (record.isMeta === true ||
      record.isCompactSummary === true ||
      record.isSidechain === true ||
      record.isVisibleInTranscriptOnly === true)
  ) {
    return undefined;
  }
  return messageUserTurn(record);
}

export const claudeTranscriptReader: TranscriptReader = {
  userTurn: claudeUserTurn,
  wants: (file) =>
    file.role === 'primary_transcript' ||
    (file.role === 'session_companion' &&
      (SUBAGENT.test(file.native_path ?? '') || SUBAGENT_META.test(file.native_path ?? ''))),
  read: (files) => readClaudeTranscript(files),
};

export function readClaudeTranscript(files: readonly TranscriptSource[]): Transcript {
  const primary = files.find((f) => f.role === 'primary_transcript');
  const main = primary === undefined ? emptyTranscript() : readClaudeJsonl(primary.bytes, false);
  const descriptions = subagentDescriptions(main, files, SUBAGENT_META);
  return withSubagentSections(main, files, {
    pattern: SUBAGENT,
    read: (bytes) => readClaudeJsonl(bytes, true),
    descriptions,
  });
}

/** One Claude Code JSONL file; `sidechain` is true for a subagent's own file (its records are all sidechain). */
export function readClaudeJsonl(bytes: Uint8Array, sidechain: boolean): Transcript {
  const { records, skipped: unreadable } = jsonLines(bytes);
  let skipped = unreadable;
  const turns = new TurnList();
  const toolNames = new Map<string, string>();
  for (const record of records) {
    const type = record.type;
    if (type !== 'user' && type !== 'assistant') continue;
    if (record.isMeta === true || record.isCompactSummary === true || record.isVisibleInTranscriptOnly === true)
      continue;
    if (!sidechain && record.isSidechain === true) continue;
    const message = record.message;
    if (!isRecord(message)) {
      skipped++;
      continue;
    }
    const at = isoTime(record.timestamp);
    const content = message.content;
    if (type === 'assistant') {
      if (typeof content === 'string') {
        turns.appendAssistant(content, undefined, at);
        continue;
      }
      if (!Array.isArray(content)) {
        skipped++;
        continue;
      }
      for (const block of content) {
        if (!isRecord(block)) continue;
        if (block.type === 'text' && typeof block.text === 'string') turns.appendAssistant(block.text, undefined, at);
        else if (block.type === 'tool_use') {
          const name = str(block.name) ?? 'tool';
          if (typeof block.id === 'string') toolNames.set(block.id, name);
          turns.appendAssistant('', toolSummary(name, block.input), at);
        }
      }
      continue;
    }
    // A user record: the person's prompt, or the results of the tools the assistant called.
    if (typeof content === 'string') {
      turns.push({ role: 'user', text: content, ...(at === undefined ? {} : { at }) });
      continue;
    }
    if (!Array.isArray(content)) {
      skipped++;
      continue;
    }
    const text = blocksText(
      content.filter((b) => !(isRecord(b) && b.type === 'tool_result')),
      ['text'],
    );
    if (text.trim() !== '') turns.push({ role: 'user', text, ...(at === undefined ? {} : { at }) });
    for (const block of content) {
      if (!isRecord(block) || block.type !== 'tool_result') continue;
      const id = str(block.tool_use_id);
      const name = id === undefined ? undefined : toolNames.get(id);
      turns.push({
        role: 'tool',
        text: blocksText(block.content, ['text']),
        ...(name === undefined ? {} : { name }),
        ...(at === undefined ? {} : { at }),
        ...(block.is_error === true ? { error: true } : {}),
      });
    }
  }
  return { turns: turns.turns, skipped, truncated: turns.truncated };
}
