/**
 * Text that came from elsewhere (a bundle, a server, a native file, a person) is shown on terminals and on the
 * dashboard's pages: control characters (escape sequences among them, C1 included) and bidirectional formatting
 * characters must not reach either, or a crafted string could move the cursor, recolour, retitle or reorder what a
 * person reads (a title that displays reversed).
 */

/**
 * The one set, as a regular expression's character class: C0 controls, DEL, C1 controls, and the bidirectional
 * formatting characters (the Arabic letter mark, LRM and RLM, embeddings and overrides, isolates).
 */
export const CONTROL_CHARACTERS = '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069';
const UNSAFE = new RegExp(`(?![\\t\\n])[${CONTROL_CHARACTERS}]`, 'g');
const UNSAFE_OR_BREAK = new RegExp(`[${CONTROL_CHARACTERS}]+`, 'g');

/** For one-line fields (titles, ids, paths): every control character, line breaks included, becomes a space. */
export function printable(text: string): string {
  return text.replace(UNSAFE_OR_BREAK, ' ');
}

/** For messages that may span lines: tabs and line feeds stay, every other control character is shown escaped. */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
