/**
 * `sessions export`: a verified bundle (and, when it came from the Control API, the session's record) rendered as
 * markdown — a heading, a metadata list and the conversation turn by turn — or as JSON (the manifest and the server's
 * metadata). Pure: the CLI reads the bundle and its conversation (the contract's transcript readers) and writes the
 * result; this module renders.
 */
import type { BundleManifest } from '@blue-agent/contract/bundle/index.js';
import type { CapturedSession } from '../control-api/sessions.js';
import { recordTranscript, type SessionRecord } from '@blue-agent/contract/bundle/record.js';
import {
  cleanText,
  emptyTranscript,
  type Transcript,
  type TranscriptTurn,
} from '@blue-agent/contract/harness-kit/transcript.js';

export const EXPORT_FORMATS = ['markdown', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A user or assistant turn is cut after this many characters. */
export const MAX_TEXT_CHARS = 20_000;
/** ... and this many lines. */
export const MAX_TEXT_LINES = 500;
/** Tool output is cut after this many characters or lines. */
export const MAX_TOOL_CHARS = 4_000;
export const MAX_TOOL_LINES = 40;
/** The whole markdown document stops growing after this many characters. */
export const MAX_MARKDOWN_CHARS = 32 * 1024 * 1024;

export interface ExportInput {
  manifest: BundleManifest;
  /** The Control API's record (its CapturedSession), when the bundle was downloaded from it. */
  session?: CapturedSession;
  /** The bundle file's size and SHA-256. */
  bundle: { size: number; sha256: string };
  /** The conversation (markdown only). */
  transcript?: Transcript;
}

/** The heading: the session's title, else `Session <first 8 characters of the id>`. */
export function exportTitle(input: Pick<ExportInput, 'manifest' | 'session'>): string {
  const title = cleanText(input.session?.title ?? input.manifest.title ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  if (title !== '') return title;
  return `Session ${(input.session?.id ?? input.manifest.native_session_id).slice(0, 8)}`;
}

export function renderJson(input: ExportInput): string {
  const doc = {
    id: input.session?.id ?? null,
    source: input.session === undefined ? 'bundle-file' : 'control-api',
    title: exportTitle(input),
    session: input.session ?? null,
    bundle: input.bundle,
    manifest: input.manifest,
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

export function renderMarkdown(input: ExportInput): string {
  const { manifest: m, session: s } = input;
  const out = new Bounded(MAX_MARKDOWN_CHARS);
  out.add(`# ${inline(exportTitle(input))}\n\n`);
  const repository = s?.repository.root ?? m.repository?.root;
  const remote = s?.repository.remote ?? m.repository?.remote;
  const captured = m.captured_at_unix_ms;
  const fields: [string, string | undefined][] = [
    ['Id', s === undefined ? undefined : code(s.id)],
    ['Harness', inline(m.harness)],
    ['Profile', code(m.compatibility_profile)],
    ['Native id', code(m.native_session_id)],
    ['Cwd', m.cwd === undefined ? undefined : code(m.cwd)],
    [
      'Repository',
      repository === undefined || repository === null
        ? undefined
        : `${code(repository)}${remote === undefined || remote === null ? '' : ` (${code(remote)})`}`,
    ],
    ['Captured', new Date(captured).toISOString()],
    ['Updated', s?.updated_at === undefined ? undefined : inline(s.updated_at)],
  ];
  for (const [key, value] of fields) if (value !== undefined) out.add(`- **${key}:** ${value}\n`);
  const summary = cleanText(s?.summary ?? m.summary ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  if (summary !== '' && summary !== exportTitle(input)) out.add(`\n> ${inline(summary)}\n`);
  out.add('\n## Conversation\n');
  renderTranscript(out, input.transcript ?? emptyTranscript(), '###');
  for (const section of input.transcript?.sections ?? []) {
    out.add(`\n## ${inline(cleanText(section.title).replace(/\s+/g, ' ').trim())}\n`);
    renderTranscript(out, section.transcript, '###');
  }
  return out.finish();
}

/** A session record (stored or imported) and, from the Control API, its session. */
export interface RecordExportInput {
  record: SessionRecord;
  session?: CapturedSession;
  object: { size: number; sha256: string };
}

function recordTitle(input: RecordExportInput): string {
  const title = cleanText(input.record.title).replace(/\s+/g, ' ').trim();
  return title !== '' ? title : `Session ${(input.session?.id ?? input.record.provider_session_id ?? '').slice(0, 8)}`;
}

export function renderRecordJson(input: RecordExportInput): string {
  const doc = {
    id: input.session?.id ?? null,
    source: 'control-api',
    title: recordTitle(input),
    session: input.session ?? null,
    object: input.object,
    record: input.record,
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** The heading (the title, else `Session <first 8 of the id>`), the metadata list, then what the record says. */
export function renderRecordMarkdown(input: RecordExportInput): string {
  const { record: r, session: s } = input;
  const out = new Bounded(MAX_MARKDOWN_CHARS);
  out.add(`# ${inline(recordTitle(input))}\n\n`);
  const fields: [string, string | undefined][] = [
    ['Id', s === undefined ? undefined : code(s.id)],
    ['Provider', inline(r.provider)],
    ['Provider session id', r.provider_session_id === undefined ? undefined : code(r.provider_session_id)],
    ['Tags', r.tags.length === 0 ? undefined : r.tags.map((t) => code(t)).join(', ')],
    ['Created', r.created_at_unix_ms === undefined ? undefined : new Date(r.created_at_unix_ms).toISOString()],
    ['Updated', s?.updated_at === undefined ? undefined : inline(s.updated_at)],
    ['Resumable', 'no (a stored record)'],
  ];
  for (const [key, value] of fields) if (value !== undefined) out.add(`- **${key}:** ${value}\n`);
  if (r.content !== undefined) out.add(`\n## Content\n\n${safeBlock(r.content)}\n`);
  if (r.messages !== undefined) {
    out.add('\n## Conversation\n');
    renderTranscript(out, recordTranscript({ ...r, content: undefined }), '###');
  }
  return out.finish();
}

function renderTranscript(out: Bounded, t: Transcript, level: string): void {
  if (t.turns.length === 0) out.add('\n_No conversation could be read from this transcript._\n');
  for (const turn of t.turns) {
    if (out.full) break;
    out.add(`\n${level} ${turnHeading(turn)}\n\n`);
    if (turn.role === 'tool') {
      const kept = cut(turn.text, MAX_TOOL_CHARS, MAX_TOOL_LINES);
      out.add(`${fenced(kept)}\n`);
      if (kept.length < turn.text.length) out.add(`\n_Output cut: ${cutNote(turn.text, kept)}._\n`);
      continue;
    }
    if (turn.text !== '') {
      const kept = cut(turn.text, MAX_TEXT_CHARS, MAX_TEXT_LINES);
      out.add(`${safeBlock(kept)}\n`);
      if (kept.length < turn.text.length) out.add(`\n_Text cut: ${cutNote(turn.text, kept)}._\n`);
    }
    if (turn.tools !== undefined) {
      if (turn.text !== '') out.add('\n');
      for (const tool of turn.tools) out.add(`- Tool call: ${code(tool)}\n`);
    }
  }
  const notes: string[] = [];
  if (t.truncated) notes.push('the transcript has more turns than an export shows; the rest were left out');
  if (t.skipped > 0)
    notes.push(
      `${t.skipped} record${t.skipped === 1 ? '' : 's'} of the transcript could not be read and ` +
        `${t.skipped === 1 ? 'was' : 'were'} skipped`,
    );
  if (notes.length > 0) out.add(`\n_Note: ${notes.join('; ')}._\n`);
}

function turnHeading(turn: TranscriptTurn): string {
  const who =
    turn.role === 'user'
      ? 'User'
      : turn.role === 'assistant'
        ? 'Assistant'
        : `Tool result${turn.name === undefined ? '' : `: ${turn.name}`}${turn.error === true ? ' (error)' : ''}`;
  return `${inline(who)}${turn.at === undefined ? '' : ` · ${turn.at}`}`;
}

/** Text of at most `maxChars` characters and `maxLines` lines, cut at a line end when one is near, never inside a
 * surrogate pair. */
function cut(text: string, maxChars: number, maxLines: number): string {
  let end = Math.min(text.length, maxChars);
  let lines = 0;
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10 && ++lines >= maxLines) {
      end = i;
      break;
    }
  }
  if (end >= text.length) return text;
  const newline = text.lastIndexOf('\n', end);
  if (newline > end * 0.8) end = newline;
  const unit = text.charCodeAt(end - 1);
  if (unit >= 0xd800 && unit <= 0xdbff) end--;
  return text.slice(0, end);
}

function cutNote(text: string, kept: string): string {
  const count = (s: string) => (s.match(/\n/g)?.length ?? 0) + 1;
  const lines = count(text) - count(kept);
  const chars = (text.length - kept.length).toLocaleString('en-US');
  return lines > 0
    ? `${lines.toLocaleString('en-US')} more line${lines === 1 ? '' : 's'} (${chars} characters)`
    : `${chars} more characters`;
}

/** Inline text: characters with a meaning in markdown escaped, one line. */
export function inline(text: string): string {
  return cleanText(text)
    .replace(/\s+/g, ' ')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/[\\`*_[\]#|~!]/g, (c) => `\\${c}`);
}

/** An inline code span that its content cannot close (CommonMark: a longer backtick run). */
export function code(text: string): string {
  const one = cleanText(text).replace(/\s+/g, ' ');
  const longest = Math.max(0, ...[...one.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  const pad = one.startsWith('`') || one.endsWith('`') || one === '' ? ' ' : '';
  return `${ticks}${pad}${one}${pad}${ticks}`;
}

/** A fenced code block its content cannot close. */
export function fenced(text: string): string {
  const clean = cleanText(text);
  const longest = Math.max(0, ...[...clean.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return `${fence}text\n${clean}${clean.endsWith('\n') || clean === '' ? '' : '\n'}${fence}`;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * A turn's own text (often markdown itself) made safe to embed: its code fences are kept but closed at the end; outside
 * them, headings, setext underlines and HTML are escaped so the text cannot change the document's structure.
 */
export function safeBlock(text: string): string {
  const lines = cleanText(text).split('\n');
  const out: string[] = [];
  let open: { char: string; length: number } | undefined;
  for (const line of lines) {
    const fence = FENCE.exec(line);
    if (open !== undefined) {
      out.push(line);
      if (
        fence !== null &&
        fence[1]![0] === open.char &&
        fence[1]!.length >= open.length &&
        line.slice(fence[0].length).trim() === ''
      )
        open = undefined;
      continue;
    }
    if (fence !== null && !(fence[1]![0] === '`' && line.slice(fence[0].length).includes('`'))) {
      open = { char: fence[1]![0]!, length: fence[1]!.length };
      out.push(line);
      continue;
    }
    out.push(escapeLine(line));
  }
  if (open !== undefined) out.push(open.char.repeat(open.length));
  return out.join('\n');
}

function escapeLine(line: string): string {
  let escaped = line;
  if (/^ {0,3}#/.test(escaped)) escaped = escaped.replace('#', '\\#');
  else if (/^ {0,3}(=+|-+)\s*$/.test(escaped)) escaped = escaped.replace(/[=-]/, (c) => `\\${c}`);
  // `<` that could open HTML, outside inline code spans.
  let result = '';
  let i = 0;
  while (i < escaped.length) {
    const ch = escaped[i]!;
    if (ch === '`') {
      let n = 1;
      while (escaped[i + n] === '`') n++;
      const ticks = '`'.repeat(n);
      let close = escaped.indexOf(ticks, i + n);
      while (close !== -1 && escaped[close + n] === '`') close = escaped.indexOf(ticks, close + n + 1);
      if (close !== -1) {
        result += escaped.slice(i, close + n);
        i = close + n;
        continue;
      }
      result += ticks;
      i += n;
      continue;
    }
    if (ch === '<' && /[A-Za-z/!?]/.test(escaped[i + 1] ?? '')) result += '&lt;';
    else result += ch;
    i++;
  }
  return result;
}

/** A string builder that stops at a size and says so. */
class Bounded {
  private parts: string[] = [];
  private size = 0;
  full = false;

  constructor(private readonly max: number) {}

  add(text: string): void {
    if (this.full) return;
    if (this.size + text.length > this.max) {
      this.full = true;
      this.parts.push('\n_The export stops here: it reached its size limit._\n');
      return;
    }
    this.parts.push(text);
    this.size += text.length;
  }

  finish(): string {
    return this.parts.join('');
  }
}
