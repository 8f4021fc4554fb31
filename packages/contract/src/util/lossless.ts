/**
 * Lossless text for files that are not always valid UTF-8. Decoding maps every byte that is not part of a well-formed
 * UTF-8 sequence to a lone surrogate U+DC80..U+DCFF ("surrogate escape"); encoding maps those back to the very byte.
 * Well-formed UTF-8 never yields a lone surrogate, so `encodeLossless(decodeLossless(b))` is `b` for every `b`, and
 * planners can keep working on strings while every byte outside their splices survives.
 */
import { BlueError } from '../errors.js';

const ESCAPE_BASE = 0xdc00;
const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The text of `bytes`; a byte-order mark is kept as U+FEFF, invalid bytes become U+DC80..U+DCFF. */
export function decodeLossless(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    return decodeSlow(bytes);
  }
}

/** The length of the well-formed UTF-8 sequence starting at `i`, or 0 when the byte there starts none. */
function sequenceAt(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
  // 0xED followed by 0xA0..0xBF would encode a surrogate, which UTF-8 does not allow.
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;
  if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0;
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

function decodeSlow(bytes: Uint8Array): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: string[] = [];
  let run = 0;
  let i = 0;
  while (i < buf.length) {
    const len = sequenceAt(buf, i);
    if (len > 0) {
      i += len;
      continue;
    }
    if (run < i) parts.push(buf.toString('utf8', run, i));
    parts.push(String.fromCharCode(ESCAPE_BASE + buf[i]!));
    i++;
    run = i;
  }
  if (run < buf.length) parts.push(buf.toString('utf8', run, buf.length));
  return parts.join('');
}

/** The bytes of `text`, escaped bytes given back as they were. */
export function encodeLossless(text: string): Buffer {
  if (text.isWellFormed()) return Buffer.from(text, 'utf8');
  const parts: Buffer[] = [];
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0xd800 || code > 0xdfff) continue;
    if (code <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
    }
    if (code < 0xdc80 || code > 0xdcff) {
      // Only the decoder makes lone surrogates; any other one comes from a planner.
      throw new BlueError(
        'INTERNAL',
        `text to write holds a lone surrogate U+${code.toString(16).toUpperCase()} at index ${i}`,
        {
          hint: 'This is a bug in blue-agent; nothing was written. Please report it with the command you ran.',
        },
      );
    }
    parts.push(Buffer.from(text.slice(run, i), 'utf8'), Buffer.from([code - ESCAPE_BASE]));
    run = i + 1;
  }
  parts.push(Buffer.from(text.slice(run), 'utf8'));
  return Buffer.concat(parts);
}

/** For display: escaped bytes shown as `\xNN`, so a terminal never gets a lone surrogate. */
export function showEscapes(text: string): string {
  return text.isWellFormed()
    ? text
    : text.replace(
        /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/g,
        (ch) => `\\x${(ch.charCodeAt(0) - ESCAPE_BASE).toString(16).padStart(2, '0')}`,
      );
}
