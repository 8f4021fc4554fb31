/**
 * A text cut into the pieces the redactor looks at, without re-encoding anything: in JSON, and in each line of JSONL
 * that parses, every string (values and object keys) with its exact span and decoded value; every run of other lines
 * (a line cut off by a crash, plain text) as one piece of text. Redaction replaces a string's span by the JSON encoding
 * of the redacted string and a text piece by its redacted text, and keeps every other byte, so numbers, key order,
 * escapes and white space stay exactly as the harness wrote them, and every line that parsed still parses.
 *
 * A value under a key also says where it stands (`chain`: its path of keys, arrays' items alike), so that the values
 * one message was streamed in — consecutive records' deltas, the blocks of one content array — can be scanned joined,
 * and the key it is assigned to.
 */

export interface JsonPiece {
  kind: 'value' | 'key' | 'text';
  /** Offsets in the text: a string's opening quote and one past its closing quote; a text piece's first and last
   * character. */
  start: number;
  end: number;
  /** The decoded string, or the text as it is. */
  value: string;
  /**
   * A value's path of keys (`message.content[].text`), as a number: values under the same path form one chain. -1 for
   * a key, a text piece, and an item of a list of strings.
   */
  chain: number;
  /** The key a value is assigned to. */
  key: string | undefined;
  /** A key's object (numbered in order): its keys must stay distinct (-1 else). */
  object: number;
}

/** A short identifier (`type`, `content`, `tool_use_id`) holds nothing any rule finds: such a key is not listed. */
export const PLAIN_NAME = /^[A-Za-z_$][A-Za-z0-9_$]{0,15}$/;

/** A whole text as one piece of plain text. */
export function textPiece(text: string): JsonPiece {
  return { kind: 'text', start: 0, end: text.length, value: text, chain: -1, key: undefined, object: -1 };
}

/** The pieces of `text`: JSON when the whole text parses; else JSONL line by line, other lines as text. */
export function jsonPieces(text: string): JsonPiece[] {
  const out: JsonPiece[] = [];
  const chains = new Map<string, number>();
  const counter = { objects: 0 };
  if (text.trim() !== '' && parses(text)) {
    tokenize(text, 0, text.length, out, chains, counter);
    return out;
  }
  let runStart = -1;
  let runEnd = -1;
  const flush = (): void => {
    if (runStart >= 0)
      out.push({
        kind: 'text',
        start: runStart,
        end: runEnd,
        value: text.slice(runStart, runEnd),
        chain: -1,
        key: undefined,
        object: -1,
      });
    runStart = -1;
  };
  let any = false;
  for (let start = 0; start <= text.length; ) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    if (line.trim() !== '') {
      if (mayParse(line) && parses(line)) {
        flush();
        tokenize(text, start, end, out, chains, counter);
        any = true;
      } else {
        if (runStart < 0) runStart = start;
        runEnd = end;
      }
    }
    start = end + 1;
  }
  flush();
  // Not JSON at all: the whole text is one piece, as it is.
  return any ? out : text === '' ? [] : [textPiece(text)];
}

/** What a JSON document can start with (after white space): others are not tried. */
function mayParse(line: string): boolean {
  const c = line.trimStart().charCodeAt(0);
  return c === 0x7b || c === 0x5b || c === 0x22;
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

interface Frame {
  object: boolean;
  id: number;
  path: string;
  key: string;
  /** An object's: the chain of its current key's value, once known. */
  chain: number;
}

/** The strings of the JSON document text[from, to) (known to parse), in order. */
function tokenize(
  text: string,
  from: number,
  to: number,
  out: JsonPiece[],
  chains: Map<string, number>,
  counter: { objects: number },
): void {
  const stack: Frame[] = [];
  let expectKey = false;
  const chainOf = (path: string): number => {
    let chain = chains.get(path);
    if (chain === undefined) chains.set(path, (chain = chains.size));
    return chain;
  };
  const childPath = (top: Frame | undefined): string =>
    top === undefined ? '' : top.object ? `${top.path}.${top.key}` : `${top.path}[]`;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      const inner = text.slice(i + 1, end - 1);
      const value = inner.includes('\\') ? (JSON.parse(text.slice(i, end)) as string) : inner;
      const top = stack.at(-1);
      if (top?.object === true && expectKey) {
        if (!PLAIN_NAME.test(value))
          out.push({ kind: 'key', start: i, end, value, chain: -1, key: undefined, object: top.id });
        top.key = value;
        top.chain = -1;
        expectKey = false;
      } else if (top?.object !== true) {
        // An item of a list of strings (tags, argv) is a thing of its own, not a part of one.
        out.push({ kind: 'value', start: i, end, value, chain: -1, key: undefined, object: -1 });
      } else {
        if (top.chain < 0) top.chain = chainOf(childPath(top));
        out.push({ kind: 'value', start: i, end, value, chain: top.chain, key: top.key, object: -1 });
      }
      i = end - 1;
    } else if (c === 0x7b || c === 0x5b) {
      const top = stack.at(-1);
      stack.push({
        object: c === 0x7b,
        id: c === 0x7b ? counter.objects++ : -1,
        path: childPath(top),
        key: '',
        chain: -1,
      });
      expectKey = c === 0x7b;
    } else if (c === 0x7d || c === 0x5d) {
      stack.pop();
      expectKey = false;
    } else if (c === 0x2c) {
      expectKey = stack.at(-1)?.object === true;
    }
  }
}

/** One past the closing quote of the string opening at `start`. */
function stringEnd(text: string, start: number): number {
  let at = start + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    at = quote + 1;
  }
}
