/**
 * What each harness's transcript reader (../harnesses/<name>/transcript.ts) is built from: it turns its native files
 * into the harness-neutral conversation of ../bundle/transcript.ts, for exports, search and the transcript viewer.
 * Readers are pure functions over bytes: bounded, and never throwing on a line they do not understand (it is skipped
 * and counted). The same reader tells titles (./user-turn.ts) where a record keeps the user's turn, so a format is
 * understood in one place.
 */
import { cleanText, type Transcript, type TranscriptTurn } from '../bundle/transcript.js';
import { isRecord } from '../util/record.js';
import type { TranscriptReader, TranscriptSource } from '../harnesses/types.js';

export { cleanText, type Transcript, type TranscriptTurn, type TurnRole } from '../bundle/transcript.js';

export type { TranscriptReader, TranscriptSource };

/** At most this many turns per conversation. */
export const MAX_TURNS = 5000;
/** At most this many JSON lines are looked at per file. */
export const MAX_RECORDS = 200_000;
/** A single line longer than this is skipped rather than parsed. */
export const MAX_LINE_CHARS = 8 * 1024 * 1024;
/** Tool call summaries are cut at this many characters. */
export const TOOL_SUMMARY_MAX = 200;

/** One line of text: white space collapsed, cut at `max` characters with an ellipsis. */
export function oneLine(text: string, max = TOOL_SUMMARY_MAX): string {
  const line = cleanText(text).replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export { isRecord };

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Parses JSON lines: blank lines are ignored, anything unparsable or not an object is counted in `skipped`. */
export function jsonLines(bytes: Uint8Array): { records: Record<string, unknown>[]; skipped: number } {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const records: Record<string, unknown>[] = [];
  let skipped = 0;
  let start = 0;
  let seen = 0;
  while (start < text.length && seen < MAX_RECORDS) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (line === '') continue;
    seen++;
    if (line.length > MAX_LINE_CHARS) {
      skipped++;
      continue;
    }
    try {
      const value = JSON.parse(line) as unknown;
      if (isRecord(value)) records.push(value);
      else skipped++;
    } catch {
      skipped++;
    }
  }
  return { records, skipped };
}

/** An ISO time from an ISO string, milliseconds or seconds since the epoch; undefined for anything else. */
export function isoTime(value: unknown): string | undefined {
  if (typeof value === 'string') {
    if (value.length > 64) return undefined;
    const ms = Date.parse(value);
    return Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
  }
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) {
    // Seconds or milliseconds, by harness: no real session is from before 2001 in milliseconds.
    const ms = value < 1e11 ? value * 1000 : value;
    const date = new Date(Math.round(ms));
    return Number.isFinite(date.getTime()) && date.getUTCFullYear() < 10000 ? date.toISOString() : undefined;
  }
  return undefined;
}

/** Collects turns up to MAX_TURNS; consecutive assistant text and tool calls of one reply may be merged. */
export class TurnList {
  readonly turns: TranscriptTurn[] = [];
  truncated = false;

  push(turn: TranscriptTurn): void {
    const text = cleanText(turn.text);
    const tools = turn.tools?.map((t) => oneLine(t));
    if (text.trim() === '' && (tools === undefined || tools.length === 0) && turn.role !== 'tool') return;
    if (this.turns.length >= MAX_TURNS) {
      this.truncated = true;
      return;
    }
    this.turns.push({
      role: turn.role,
      text: text.replace(/^\n+|\s+$/g, ''),
      ...(tools === undefined || tools.length === 0 ? {} : { tools }),
      ...(turn.name === undefined ? {} : { name: oneLine(turn.name, 100) }),
      ...(turn.at === undefined ? {} : { at: turn.at }),
      ...(turn.error === true ? { error: true } : {}),
    });
  }

  /** Adds text or tool calls to the last assistant turn when it is the last turn; else starts one. */
  appendAssistant(text: string, tool: string | undefined, at: string | undefined): void {
    const last = this.turns.at(-1);
    if (last !== undefined && last.role === 'assistant') {
      const clean = cleanText(text).replace(/\s+$/g, '');
      if (clean.trim() !== '')
        last.text = last.text === '' ? clean.replace(/^\n+/, '') : `${last.text}\n\n${clean.replace(/^\n+/, '')}`;
      if (tool !== undefined) (last.tools ??= []).push(oneLine(tool));
      return;
    }
    this.push({
      role: 'assistant',
      text,
      ...(tool === undefined ? {} : { tools: [tool] }),
      ...(at === undefined ? {} : { at }),
    });
  }
}

/** `name: argument` for a tool call: the most telling argument (command, path, pattern, ...) or the JSON of all. */
export function toolSummary(name: string, input: unknown): string {
  let args: unknown = input;
  if (typeof input === 'string') {
    try {
      args = JSON.parse(input) as unknown;
    } catch {
      args = input;
    }
  }
  let detail = '';
  if (isRecord(args)) {
    for (const key of [
      'command',
      'cmd',
      'file_path',
      'path',
      'filePath',
      'pattern',
      'query',
      'url',
      'description',
      'prompt',
    ]) {
      const v = args[key];
      if (typeof v === 'string' && v.trim() !== '') {
        detail = v;
        break;
      }
      if (Array.isArray(v) && v.every((x) => typeof x === 'string') && v.length > 0) {
        detail = v.join(' ');
        break;
      }
    }
    if (detail === '' && Object.keys(args).length > 0) detail = safeJson(args);
  } else if (typeof args === 'string') {
    detail = args;
  } else if (args !== undefined && args !== null) {
    detail = safeJson(args);
  }
  const label = oneLine(name, 80) || 'tool';
  return detail === '' ? label : oneLine(`${label}: ${detail}`);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value).slice(0, 1000);
  } catch {
    return '';
  }
}

/** Text of a content value: a string, or an array of blocks with `text` (other blocks ignored). */
export function blocksText(content: unknown, types: readonly string[] = ['text', 'input_text', 'output_text']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: string[] = [];
  for (const block of content) {
    if (typeof block === 'string') parts.push(block);
    else if (
      isRecord(block) &&
      (block.type === undefined || types.includes(String(block.type))) &&
      typeof block.text === 'string'
    )
      parts.push(block.text);
  }
  return parts.join('\n\n');
}

export function emptyTranscript(skipped = 0): Transcript {
  return { turns: [], skipped, truncated: false };
}

/** Subagent transcripts rendered at most; past them the transcript says it was truncated. */
export const MAX_SUBAGENT_SECTIONS = 50;

/**
 * Subagents' descriptions from their meta files: `meta` matches a meta file's native path, its group 1 naming the
 * subagent; a meta file that is not JSON counts as a skipped record of `main`.
 */
export function subagentDescriptions(
  main: Transcript,
  files: readonly TranscriptSource[],
  meta: RegExp,
): Map<string, string> {
  const descriptions = new Map<string, string>();
  for (const file of files) {
    const m = meta.exec(file.native_path ?? '');
    if (m === null) continue;
    try {
      const value = JSON.parse(new TextDecoder().decode(file.bytes)) as unknown;
      if (isRecord(value) && typeof value.description === 'string') descriptions.set(m[1]!, value.description);
    } catch {
      main.skipped++;
    }
  }
  return descriptions;
}

/**
 * `main` with a section per subagent transcript — a file (of `role`, when given) whose native path `pattern` matches,
 * its group 1 naming the subagent —, read by `read` and titled `Subagent <id>` (`: <description>` when it has one), in
 * native-path order, at most MAX_SUBAGENT_SECTIONS.
 */
export function withSubagentSections(
  main: Transcript,
  files: readonly TranscriptSource[],
  options: {
    pattern: RegExp;
    read: (bytes: Uint8Array) => Transcript;
    role?: string;
    descriptions?: ReadonlyMap<string, string>;
  },
): Transcript {
  const subagents = files
    .map((f) => ({
      f,
      m: options.role === undefined || f.role === options.role ? options.pattern.exec(f.native_path ?? '') : null,
    }))
    .filter((x): x is { f: TranscriptSource; m: RegExpExecArray } => x.m !== null)
    .sort((a, b) =>
      (a.f.native_path ?? '') < (b.f.native_path ?? '')
        ? -1
        : (a.f.native_path ?? '') > (b.f.native_path ?? '')
          ? 1
          : 0,
    );
  const sections = subagents.slice(0, MAX_SUBAGENT_SECTIONS).map(({ f, m }) => {
    const description = options.descriptions?.get(m[1]!);
    return {
      title: `Subagent ${m[1]!}${description === undefined ? '' : `: ${description}`}`,
      transcript: options.read(f.bytes),
    };
  });
  if (subagents.length > MAX_SUBAGENT_SECTIONS) main.truncated = true;
  return sections.length === 0 ? main : { ...main, sections };
}

export { isInjected } from './injected.js';
