/**
 * Titles and previews of captured sessions, by Blue's rules (no model is asked):
 *
 *   1. Native metadata first: an index or export record whose `id`, `session_id` or `sessionId` is exactly the
 *      session id gives the title (`title`, `session_title`, `thread_name`, `name`, `summary`) and the preview
 *      (`summary`, `firstPrompt`, `prompt`, `preview`).
 *   2. Otherwise the first real user turn of the transcript (JSON or JSONL; `message`/`info` envelopes; text as a
 *      string, a content array, a parts array or a prompt field; each harness's reader says where its records keep
 *      the user's turn), skipping what the harness injected on the user's behalf (the contract's
 *      harness-kit/injected.ts), slash-command wrappers, tool results and synthetic parts.
 *
 * Every result is white-space normalised, has obvious secrets masked and is cut by whole graphemes (never inside a
 * surrogate pair, an emoji sequence or a base letter's combining marks), counting Unicode code points like the
 * manifest schema does:
 *   - a native title at 256, a preview at 1024: cut at the last whole grapheme, ending in "…";
 *   - a title derived from the transcript at 80: cut at a word boundary when one falls in the last 40 % of the
 *     allowed length (else at a grapheme, for scripts written without spaces), ending in "…".
 * The "…" counts toward the limit. Masking runs before cutting, so a cut never leaves half a key readable.
 */
import { isRecord } from '@blue-agent/contract/util/record.js';
import type { UserTurnOf } from '@blue-agent/contract/harnesses/types.js';
import { isInjected } from '@blue-agent/contract/harness-kit/injected.js';
import { messageUserTurn } from '@blue-agent/contract/harness-kit/user-turn.js';
import { maskSecrets } from '@blue-agent/contract/util/secrets.js';

export const NATIVE_TITLE_MAX = 256;
export const DERIVED_TITLE_MAX = 80;
export const SUMMARY_MAX = 1024;
export const ELLIPSIS = '…';

/** How much of a transcript is read to find the first user turn. */
export const HEAD_MAX_BYTES = 2 * 1024 * 1024;
export const HEAD_MAX_RECORDS = 5000;

const ID_FIELDS = ['id', 'session_id', 'sessionId'] as const;
const TITLE_FIELDS = ['title', 'session_title', 'thread_name', 'name', 'summary'] as const;
const PREVIEW_FIELDS = ['summary', 'firstPrompt', 'prompt', 'preview'] as const;

export interface NativeMetadata {
  title?: string;
  preview?: string;
}

export interface TitleAndSummary {
  title?: string;
  summary?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Text

/** Runs of white space and control characters become one space; lone surrogates become U+FFFD. */
export function normalizeWhitespace(text: string): string {
  return text
    .toWellFormed()
    .replace(/[\s\p{Cc}]+/gu, ' ')
    .trim();
}

export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

// Made on first use: building a Segmenter loads ICU data, which commands that never cut a title skip.
let graphemes: Intl.Segmenter | undefined;

/**
 * The longest prefix of whole graphemes that holds at most `budget` code points. A single grapheme longer than the
 * budget (a pathological run of combining marks) is cut by code points instead.
 */
function graphemePrefix(text: string, budget: number): string {
  let used = 0;
  let end = 0;
  graphemes ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  for (const { segment, index } of graphemes.segment(text)) {
    const size = codePointLength(segment);
    if (used + size > budget) {
      if (end === 0) return Array.from(text).slice(0, budget).join('');
      break;
    }
    used += size;
    end = index + segment.length;
  }
  return text.slice(0, end);
}

/** `text` if it has at most `max` code points, else a cut ending in "…" that fits in `max`. */
export function cutText(text: string, max: number, options: { wordBoundary?: boolean } = {}): string {
  if (codePointLength(text) <= max) return text;
  const budget = max - ELLIPSIS.length;
  let head = graphemePrefix(text, budget);
  // A prefix that already ends before white space ends at a word; otherwise go back to the last space.
  if (options.wordBoundary === true && !/^\s/u.test(text.slice(head.length))) {
    const space = head.search(/\s\S*$/u);
    if (space > 0 && codePointLength(head.slice(0, space)) >= Math.floor(budget * 0.6)) head = head.slice(0, space);
  }
  head = head.replace(/[\s,;:.\-\u2013\u2014\u2026]+$/u, '');
  return `${head}${ELLIPSIS}`;
}

function finish(text: string | undefined, max: number, wordBoundary: boolean): string | undefined {
  if (text === undefined) return undefined;
  const clean = normalizeWhitespace(maskSecrets(normalizeWhitespace(text)));
  if (clean === '') return undefined;
  return cutText(clean, max, { wordBoundary });
}

/** A title the harness itself keeps: normalised, masked, at most 256 code points. */
export function finishNativeTitle(text: string | undefined): string | undefined {
  return finish(text, NATIVE_TITLE_MAX, false);
}

/** A title made from the first user turn: normalised, masked, at most 80 code points, cut at a word. */
export function finishDerivedTitle(text: string | undefined): string | undefined {
  return finish(text, DERIVED_TITLE_MAX, true);
}

/** A preview: normalised, masked, at most 1024 code points. */
export function finishSummary(text: string | undefined): string | undefined {
  return finish(text, SUMMARY_MAX, false);
}

/** The final title and summary: native values first, the first user turn otherwise. */
export function titleAndSummary(input: {
  native?: NativeMetadata | undefined;
  firstUserTurn?: string | undefined;
}): TitleAndSummary {
  const title = finishNativeTitle(input.native?.title) ?? finishDerivedTitle(input.firstUserTurn);
  const summary = finishSummary(input.native?.preview) ?? finishSummary(input.firstUserTurn);
  return { ...(title === undefined ? {} : { title }), ...(summary === undefined ? {} : { summary }) };
}

// ---------------------------------------------------------------------------------------------------------------
// Native metadata

function firstString(record: Record<string, unknown>, fields: readonly string[]): string | undefined {
  for (const field of fields) {
    const value = record[field];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  return undefined;
}

/**
 * The title and preview an index or export record gives for `sessionId`. One of the record's id fields must be the
 * session id, exactly (same string, no case folding, no prefix match); with `idOptional`, a record with no id field
 * at all also counts (records inside the session's own files), but one whose ids all name something else never does.
 */
export function nativeMetadataOf(
  record: unknown,
  sessionId: string,
  options: { idOptional?: boolean } = {},
): NativeMetadata | undefined {
  if (!isRecord(record)) return undefined;
  const ids = ID_FIELDS.map((field) => record[field]).filter((value) => value !== undefined && value !== null);
  if (ids.length === 0 ? options.idOptional !== true : !ids.includes(sessionId)) return undefined;
  const title = firstString(record, TITLE_FIELDS);
  const preview = firstString(record, PREVIEW_FIELDS);
  if (title === undefined && preview === undefined) return undefined;
  return { ...(title === undefined ? {} : { title }), ...(preview === undefined ? {} : { preview }) };
}

/** Over records in file order (oldest first): the newest title and the newest preview given for the session. */
export function newestNativeMetadata(
  records: Iterable<unknown>,
  sessionId: string,
  options: { idOptional?: boolean } = {},
): NativeMetadata | undefined {
  let title: string | undefined;
  let preview: string | undefined;
  for (const record of records) {
    const found = nativeMetadataOf(record, sessionId, options);
    if (found?.title !== undefined) title = found.title;
    if (found?.preview !== undefined) preview = found.preview;
  }
  if (title === undefined && preview === undefined) return undefined;
  return { ...(title === undefined ? {} : { title }), ...(preview === undefined ? {} : { preview }) };
}

// ---------------------------------------------------------------------------------------------------------------
// Transcripts

/**
 * The records of a transcript's text: a JSON document (an array of messages, or an object holding `messages`, like
 * an export) or JSON lines. Lines that do not parse (a cut last line, garbage) are skipped.
 */
export function parseTranscript(text: string, maxRecords = HEAD_MAX_RECORDS): unknown[] {
  const trimmed = text.trimStart();
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) {
    try {
      const doc: unknown = JSON.parse(text);
      if (Array.isArray(doc)) return doc.slice(0, maxRecords);
      if (isRecord(doc) && Array.isArray(doc.messages)) return doc.messages.slice(0, maxRecords);
      if (isRecord(doc)) return [doc];
    } catch {
      // Not one document: JSON lines.
    }
  }
  const records: unknown[] = [];
  for (const line of text.split('\n')) {
    if (records.length >= maxRecords) break;
    const body = line.trim();
    if (body === '') continue;
    try {
      records.push(JSON.parse(body));
    } catch {
      // A partial or foreign line.
    }
  }
  return records;
}

const COMMAND_NAME = /<command-name>(.*?)<\/command-name>/s;
const BASH_INPUT = /<bash-input>([\s\S]*?)<\/bash-input>/;

/**
 * The first thing the user typed, over records in file order: injected context skipped, texts of one turn joined.
 * A turn made only of a slash command counts only when nothing else does (the way harnesses show `/init` themselves).
 * `userTurnOf` is the harness's reading of one record.
 */
export function firstUserTurn(
  records: Iterable<unknown>,
  userTurnOf: UserTurnOf = messageUserTurn,
  maxRecords = HEAD_MAX_RECORDS,
): string | undefined {
  let commandFallback: string | undefined;
  let seen = 0;
  for (const record of records) {
    if (++seen > maxRecords) break;
    const turn = userTurnOf(record);
    if (turn === undefined || turn.toolResult) continue;
    const kept: string[] = [];
    for (const raw of turn.texts) {
      const text = raw.trim();
      if (text === '') continue;
      const command = COMMAND_NAME.exec(text);
      if (command?.[1] !== undefined) {
        commandFallback ??= command[1].trim();
        continue;
      }
      const bash = BASH_INPUT.exec(text);
      if (bash?.[1] !== undefined) {
        kept.push(`! ${bash[1].trim()}`);
        continue;
      }
      if (isInjected(text)) continue;
      kept.push(text);
    }
    if (kept.length > 0) return kept.join(' ');
  }
  return commandFallback === '' ? undefined : commandFallback;
}
