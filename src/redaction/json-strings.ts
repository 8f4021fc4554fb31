/**
 * The string values of a JSON or JSONL text, found without re-encoding anything: each value's exact span in the text
 * and its decoded value. Redaction replaces a span by the JSON encoding of the redacted value and keeps every other
 * byte, so numbers, key order, escapes and white space stay exactly as the harness wrote them, and every line still
 * parses. Object keys are names, not content: they are not listed.
 */

export interface JsonString {
  /** Offsets in the text: the opening quote, and one past the closing quote. */
  start: number;
  end: number;
  value: string;
}

/**
 * Whether `text` is JSON (one document) or JSONL (every non-empty line one document): then its string values, else
 * undefined (the text is redacted as plain text).
 */
export function jsonStrings(text: string): JsonString[] | undefined {
  if (!isJson(text)) return undefined;
  const found: JsonString[] = [];
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) !== 0x22) continue;
    let j = i + 1;
    while (j < text.length) {
      const c = text.charCodeAt(j);
      if (c === 0x5c) j += 2;
      else if (c === 0x22) break;
      else j++;
    }
    const end = j + 1;
    let k = end;
    while (k < text.length && (text[k] === ' ' || text[k] === '\t' || text[k] === '\r' || text[k] === '\n')) k++;
    if (text[k] !== ':') found.push({ start: i, end, value: JSON.parse(text.slice(i, end)) as string });
    i = j;
  }
  return found;
}

function isJson(text: string): boolean {
  if (parses(text)) return true;
  let any = false;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (!parses(line)) return false;
    any = true;
  }
  return any;
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
