/**
 * Text that came from elsewhere (a bundle, a server, a native file) is shown on terminals: control characters
 * (escape sequences among them, C1 included) and bidirectional overrides must not reach one, or a crafted string
 * could move the cursor, recolour, retitle or reorder what a person reads.
 */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_OR_BREAK = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g;

/** For one-line fields (titles, ids, paths): every control character, line breaks included, becomes a space. */
export function printable(text: string): string {
  return text.replace(UNSAFE_OR_BREAK, ' ');
}

/** For messages that may span lines: tabs and line feeds stay, every other control character is shown escaped. */
export function escapeControls(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
