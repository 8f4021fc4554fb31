/**
 * A line scanner for TOML documents that smol-toml has already accepted. It finds table headers and top-level
 * key/value lines with their exact byte offsets, which the parser does not expose, so that managed entries can be cut
 * or edited without re-serialising the user's document.
 */

export interface TomlKeyValue {
  /** Offset of the start of the line holding the key. */
  start: number;
  key: string[];
  valueStart: number;
  valueEnd: number;
  /** Offset just past the line's terminator (or the end of the text). */
  lineEnd: number;
}

export interface TomlSection {
  /** Null for the root section (before any header). */
  path: string[] | null;
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

const BARE_KEY_STOP = new Set([' ', '\t', '.', '=', '[', ']', '#', '"', "'", '\r', '\n']);

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
        const simple: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', e: '\x1b', '"': '"', '\\': '\\' };
        if (esc !== undefined && simple[esc] !== undefined) {
          out += simple[esc];
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
        while (p < n && !BARE_KEY_STOP.has(text[p]!)) p++;
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
          let extra = 0;
          while (extra < 2 && text[end] === quote) {
            end++;
            extra++;
          }
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

export function samePath(a: readonly string[] | null, b: readonly string[]): boolean {
  return a !== null && a.length === b.length && a.every((part, index) => part === b[index]);
}
