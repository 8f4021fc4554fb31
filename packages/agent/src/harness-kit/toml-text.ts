/**
 * TOML as text, for planners that splice a user's config file instead of re-serialising it: parsing with a located
 * error, quoting strings, and a scanner that finds the byte offsets of table headers and key/value lines, which the
 * parser does not expose.
 */
import { parse, TomlError } from 'smol-toml';

export type TomlParseOptions = Parameters<typeof parse>[1];

/** Why and where smol-toml rejected a text. */
export interface TomlRejection {
  /** The first line of the parser's message, without its "Invalid TOML document:" prefix. */
  reason: string;
  /** Where the parser stopped, when it said. */
  at: { line: number; column: number } | undefined;
  error: unknown;
}

/** Parses a TOML document; when smol-toml rejects it, throws the error `reject` makes of the rejection. */
export function parseTomlOr(
  text: string,
  reject: (rejection: TomlRejection) => Error,
  options?: TomlParseOptions,
): Record<string, unknown> {
  try {
    return parse(text, options) as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // smol-toml follows the first line with an excerpt of the text; the position is given separately.
    const reason = (message.split('\n')[0] ?? message).replace(/^Invalid TOML document:\s*/, '');
    const at = error instanceof TomlError ? { line: error.line, column: error.column } : undefined;
    throw reject({ reason, at, error });
  }
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\t': '\\t',
  '\r': '\\r',
  '\b': '\\b',
  '\f': '\\f',
};

/**
 * A TOML basic string. `hexCase` only sets the spelling of `\uXXXX` escapes; callers keep theirs so that the text
 * they write for a given value never changes.
 */
/** A TOML table (or a JSON object): never an array, and never one of the datetimes smol-toml parses to a Date. */
export function isTomlTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

export function tomlString(value: string, hexCase: 'lower' | 'upper' = 'lower'): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (SHORT_ESCAPES[ch] !== undefined) out += SHORT_ESCAPES[ch];
    else if (code < 0x20 || code === 0x7f) {
      const hex = code.toString(16).padStart(4, '0');
      out += `\\u${hexCase === 'upper' ? hex.toUpperCase() : hex}`;
    } else out += ch;
  }
  return `${out}"`;
}

// ---------------------------------------------------------------------------------------------------------------
// Scanning. It runs only on text smol-toml has accepted, so it can be strict: anything it does not expect is
// reported as a TomlScanError rather than guessed at.

export interface TomlKeyValue {
  /** Offset of the start of the line holding the key. */
  start: number;
  /** The key as written, dotted parts split and quoted parts decoded. */
  key: string[];
  valueStart: number;
  valueEnd: number;
  /** Offset just past the line's terminator (or the end of the text). */
  lineEnd: number;
}

export interface TomlSection {
  /** Null for the root section (before any header). */
  path: string[] | null;
  /** A `[[array.of.tables]]` header. */
  array: boolean;
  /** Offset of the start of the header line (0 for the root section). */
  start: number;
  /** Offset just past the header line. */
  headerEnd: number;
  entries: TomlKeyValue[];
  /** Offset just past the last line that belongs to this table (its last key/value, or the header). */
  contentEnd: number;
}

export class TomlScanError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

const BARE_KEY_CHAR = /[A-Za-z0-9_-]/;
const SIMPLE_ESCAPES: Record<string, string> = {
  b: '\b',
  t: '\t',
  n: '\n',
  f: '\f',
  r: '\r',
  e: '\x1b',
  '"': '"',
  '\\': '\\',
};

/**
 * The root section, then one section per table header in document order, each with its key/value lines. Offsets are
 * UTF-16 indices into `text`, so a caller can cut or replace exact ranges.
 */
export function scanToml(text: string): TomlSection[] {
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const root: TomlSection = { path: null, array: false, start: 0, headerEnd: 0, entries: [], contentEnd: 0 };
  const sections: TomlSection[] = [root];
  let current = root;

  const fail = (message: string, at: number): never => {
    throw new TomlScanError(message, at);
  };

  const skipBlanks = (p: number): number => {
    while (p < n && (text[p] === ' ' || text[p] === '\t')) p++;
    return p;
  };

  /** From `p`, skip trailing blanks and an optional comment, then the line terminator. */
  const finishLine = (p: number): number => {
    p = skipBlanks(p);
    if (p < n && text[p] === '#') {
      while (p < n && text[p] !== '\n') p++;
    }
    if (p < n && text[p] === '\r' && text[p + 1] === '\n') p++;
    if (p < n) {
      if (text[p] !== '\n') fail('unexpected text after a value', p);
      p++;
    }
    return p;
  };

  const readBasic = (p: number): { value: string; end: number } => {
    // p points at the opening quote of a single-line basic string.
    let out = '';
    let q = p + 1;
    while (q < n && text[q] !== '"') {
      const ch = text[q]!;
      if (ch === '\n') fail('unterminated string', q);
      if (ch === '\\') {
        const esc = text[q + 1];
        if (esc !== undefined && SIMPLE_ESCAPES[esc] !== undefined) {
          out += SIMPLE_ESCAPES[esc];
          q += 2;
          continue;
        }
        const width = esc === 'u' ? 4 : esc === 'U' ? 8 : esc === 'x' ? 2 : 0;
        if (width === 0) fail('invalid escape', q);
        const hex = text.slice(q + 2, q + 2 + width);
        if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== width) fail('invalid escape', q);
        const code = Number.parseInt(hex, 16);
        if (code > 0x10ffff) fail('invalid escape', q);
        out += String.fromCodePoint(code);
        q += 2 + width;
        continue;
      }
      out += ch;
      q++;
    }
    if (q >= n) fail('unterminated string', p);
    return { value: out, end: q + 1 };
  };

  const readKey = (p: number): { key: string[]; end: number } => {
    const key: string[] = [];
    for (;;) {
      p = skipBlanks(p);
      const ch = text[p];
      if (ch === '"') {
        const s = readBasic(p);
        key.push(s.value);
        p = s.end;
      } else if (ch === "'") {
        const close = text.indexOf("'", p + 1);
        if (close < 0 || text.slice(p + 1, close).includes('\n')) fail('unterminated key', p);
        key.push(text.slice(p + 1, close));
        p = close + 1;
      } else {
        const begin = p;
        while (p < n && BARE_KEY_CHAR.test(text[p]!)) p++;
        if (p === begin) fail('expected a key', p);
        key.push(text.slice(begin, p));
      }
      p = skipBlanks(p);
      if (text[p] !== '.') return { key, end: p };
      p++;
    }
  };

  /** Skips any string form starting at `p`; returns the offset past it. */
  const skipString = (p: number): number => {
    const quote = text[p]!;
    const triple = text.startsWith(quote.repeat(3), p);
    if (triple) {
      let q = p + 3;
      for (;;) {
        if (q >= n) fail('unterminated multi-line string', p);
        if (quote === '"' && text[q] === '\\') {
          q += 2;
          continue;
        }
        if (text.startsWith(quote.repeat(3), q)) {
          let end = q + 3;
          // Up to two quotes may sit right before the closing delimiter.
          for (let extra = 0; extra < 2 && text[end] === quote; extra++) end++;
          return end;
        }
        q++;
      }
    }
    if (quote === '"') return readBasic(p).end;
    const close = text.indexOf("'", p + 1);
    if (close < 0) fail('unterminated string', p);
    return close + 1;
  };

  const skipValue = (p: number): number => {
    const ch = text[p];
    if (ch === undefined) return fail('expected a value', p);
    if (ch === '"' || ch === "'") return skipString(p);
    if (ch === '[' || ch === '{') {
      // Arrays and inline tables may span lines and hold comments; only strings and nesting matter here.
      let depth = 0;
      let q = p;
      while (q < n) {
        const c = text[q]!;
        if (c === '"' || c === "'") {
          q = skipString(q);
          continue;
        }
        if (c === '#') {
          while (q < n && text[q] !== '\n') q++;
          continue;
        }
        if (c === '[' || c === '{') depth++;
        else if (c === ']' || c === '}') {
          depth--;
          if (depth === 0) return q + 1;
        }
        q++;
      }
      return fail('unterminated array or inline table', p);
    }
    // A bare value (number, boolean, date and time) runs to a comment or the end of the line.
    let q = p;
    while (q < n && text[q] !== '#' && text[q] !== '\n') q++;
    while (q > p && /[ \t\r]/.test(text[q - 1]!)) q--;
    if (q === p) fail('expected a value', p);
    return q;
  };

  while (i < n) {
    const lineStart = i;
    const p = skipBlanks(i);
    const ch = text[p];
    if (ch === undefined) break;
    if (ch === '\n' || (ch === '\r' && text[p + 1] === '\n') || ch === '#') {
      i = finishLine(p);
      continue;
    }
    if (ch === '[') {
      const array = text[p + 1] === '[';
      const k = readKey(p + (array ? 2 : 1));
      let q = k.end;
      if (text[q] !== ']' || (array && text[q + 1] !== ']')) fail('malformed table header', q);
      q += array ? 2 : 1;
      const headerEnd = finishLine(q);
      current = { path: k.key, array, start: lineStart, headerEnd, entries: [], contentEnd: headerEnd };
      sections.push(current);
      i = headerEnd;
      continue;
    }
    const k = readKey(p);
    if (text[k.end] !== '=') fail('expected "=" after a key', k.end);
    const valueStart = skipBlanks(k.end + 1);
    const valueEnd = skipValue(valueStart);
    const lineEnd = finishLine(valueEnd);
    current.entries.push({ start: lineStart, key: k.key, valueStart, valueEnd, lineEnd });
    current.contentEnd = lineEnd;
    i = lineEnd;
  }
  return sections;
}

/** Where the statement whose line starts at `lineStart` begins: its `[` or the first character of its key. */
export function statementAt(text: string, lineStart: number): number {
  let p = lineStart;
  while (p < text.length && (text[p] === ' ' || text[p] === '\t')) p++;
  return p;
}

export function samePath(a: readonly string[] | null, b: readonly string[]): boolean {
  return a !== null && a.length === b.length && a.every((part, index) => part === b[index]);
}

/** True when `path` is `prefix` or lies under it. */
export function pathStartsWith(path: readonly string[] | null, prefix: readonly string[]): boolean {
  return path !== null && path.length >= prefix.length && prefix.every((part, index) => path[index] === part);
}
