/**
 * JSON from elsewhere, bounded in nesting. V8's JSON.parse takes any depth, but what follows it may not:
 * JSON.stringify, structuredClone and a validator's own walk recurse, and a few hundred KiB of brackets overflow the
 * stack there, far from the read that let them in. The depth is checked on the text, before anything is built.
 */

/** Thrown by `parseJsonBounded` for text nested deeper than allowed. */
export class JsonTooDeep extends Error {
  constructor(readonly maxDepth: number) {
    super(`nests deeper than ${maxDepth} levels`);
    this.name = 'JsonTooDeep';
  }
}

/**
 * Offset of the first `[` or `{` that opens a level deeper than `limit`, or -1. Text inside strings is skipped;
 * invalid JSON is scanned all the same (JSON.parse judges it). One pass, no recursion.
 */
export function jsonNestingBeyond(text: string, limit: number): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return i;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) {
      depth--;
    }
  }
  return -1;
}

/** JSON.parse, refusing (JsonTooDeep) text nested deeper than `maxDepth`; a syntax error throws as JSON.parse does. */
export function parseJsonBounded(text: string, maxDepth: number): unknown {
  if (jsonNestingBeyond(text, maxDepth) >= 0) throw new JsonTooDeep(maxDepth);
  return JSON.parse(text) as unknown;
}
