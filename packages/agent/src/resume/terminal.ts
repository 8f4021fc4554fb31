/**
 * The little terminal layer the resume prompts are built on: keys from node:readline's keypress events in raw mode,
 * output on stderr (stdout stays for what scripts read), text fitted to the width so that nothing ever wraps, and a
 * redraw when the terminal is resized. No UI framework: a few escape sequences are all it takes.
 */
import { emitKeypressEvents } from 'node:readline';
import type { Context } from '../context.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';

export interface Key {
  /** The text the key types, when it types one. */
  sequence: string;
  name: string | undefined;
  ctrl: boolean;
  meta: boolean;
}

export const ESC = '\u001b[';
export const HIDE_CURSOR = `${ESC}?25l`;
export const SHOW_CURSOR = `${ESC}?25h`;
export const ALT_SCREEN_ON = `${ESC}?1049h`;
export const ALT_SCREEN_OFF = `${ESC}?1049l`;
export const CLEAR_SCREEN = `${ESC}H${ESC}2J`;
export const CLEAR_LINE = `\r${ESC}2K`;

/** A terminal we may ask questions on: keys from stdin, drawing on stderr. */
export function isInteractive(ctx: Context): boolean {
  return ctx.stdin.isTTY && ctx.stderr.isTTY && ctx.env.TERM !== 'dumb';
}

export function terminalSize(ctx: Context): { columns: number; rows: number } {
  const size = ctx.stderr.size?.();
  return { columns: Math.max(10, size?.columns ?? 80), rows: Math.max(4, size?.rows ?? 24) };
}

export function colours(ctx: Context): {
  bold(s: string): string;
  dim(s: string): string;
  inverse(s: string): string;
  red(s: string): string;
} {
  const on = (ctx.env.NO_COLOR === undefined || ctx.env.NO_COLOR === '') && ctx.stderr.isTTY;
  const wrap = (code: string, off: string) => (s: string) => (on ? `${ESC}${code}m${s}${ESC}${off}m` : s);
  return { bold: wrap('1', '22'), dim: wrap('2', '22'), inverse: wrap('7', '27'), red: wrap('31', '39') };
}

/**
 * A session with the keyboard: raw mode on while it lasts, every key to `onKey`, resizes to `onResize`. `close` puts
 * the terminal back exactly as it was (raw mode off, stdin paused so a child process gets the keys).
 */
export class KeySession {
  private readonly stream: NodeJS.ReadableStream;
  private readonly listener: (text: string | undefined, key: Partial<Key> | undefined) => void;
  private readonly stopResize: () => void;
  private closed = false;

  constructor(
    private readonly ctx: Context,
    onKey: (key: Key) => void,
    onResize: () => void,
  ) {
    this.stream = ctx.stdin.stream();
    emitKeypressEvents(this.stream);
    this.listener = (text, key) => {
      onKey({
        sequence: key?.sequence ?? text ?? '',
        name: key?.name,
        ctrl: key?.ctrl === true,
        meta: key?.meta === true,
      });
    };
    ctx.stdin.setRawMode?.(true);
    this.stream.on('keypress', this.listener);
    this.stream.resume();
    this.stopResize = ctx.stderr.onResize?.(onResize) ?? (() => undefined);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stream.off('keypress', this.listener);
    this.stopResize();
    this.ctx.stdin.setRawMode?.(false);
    this.stream.pause();
  }
}

/** Keys that cancel any prompt. */
export function isCancel(key: Key): boolean {
  return key.name === 'escape' || (key.ctrl && (key.name === 'c' || key.name === 'd'));
}

/** Printable text a key types (nothing for control keys). */
export function typed(key: Key): string {
  if (key.ctrl || key.meta) return '';
  if (
    key.name === 'return' ||
    key.name === 'enter' ||
    key.name === 'tab' ||
    key.name === 'backspace' ||
    key.name === 'escape'
  )
    return '';
  const text = key.sequence;
  return /^[^\u0000-\u001f\u007f-\u009f]+$/u.test(text) ? text : '';
}

// ---------------------------------------------------------------------------------------------------------------
// Width

/** Columns a code point takes on a terminal: 0 for combining marks and controls, 2 for wide East Asian and emoji. */
export function charWidth(cp: number): number {
  if (cp < 32 || (cp >= 0x7f && cp < 0xa0)) return 0;
  if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0xfe00 && cp <= 0xfe0f)) return 0;
  if (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0xa4cf && cp !== 0x303f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  ) {
    return 2;
  }
  return 1;
}

export function textWidth(text: string): number {
  let width = 0;
  for (const ch of text) width += charWidth(ch.codePointAt(0)!);
  return width;
}

/** `text` cut to at most `width` columns, ending in an ellipsis when it was cut; control characters become spaces. */
export function fit(text: string, width: number): string {
  const clean = printable(text);
  if (width <= 0) return '';
  if (textWidth(clean) <= width) return clean;
  let out = '';
  let used = 0;
  for (const ch of clean) {
    const w = charWidth(ch.codePointAt(0)!);
    if (used + w > width - 1) break;
    out += ch;
    used += w;
  }
  return `${out}…`;
}

/** `text` fitted to `width` and padded with spaces to exactly `width` columns. */
export function cell(text: string, width: number): string {
  const fitted = fit(text, width);
  return fitted + ' '.repeat(Math.max(0, width - textWidth(fitted)));
}

/** Shortens a path from the left (`…/deep/dir`), which keeps the part people recognise. */
export function fitPath(text: string, width: number): string {
  if (textWidth(text) <= width) return text;
  if (width <= 1) return fit(text, width);
  const chars = [...text];
  let out = '';
  let used = 0;
  for (let i = chars.length - 1; i >= 0; i--) {
    const w = charWidth(chars[i]!.codePointAt(0)!);
    if (used + w > width - 1) break;
    out = chars[i]! + out;
    used += w;
  }
  return `…${out}`;
}
