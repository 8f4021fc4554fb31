/**
 * A full-screen list to choose from, on the terminal's alternate screen (so the scrollback is left as it was): arrow
 * keys move, typed text filters, Enter chooses, Esc or Ctrl-C cancels. Every line is fitted to the width (an ellipsis
 * where it is cut, never a wrap) and the whole screen is drawn again when the terminal is resized.
 */
import type { Context } from '../context.js';
import { printable, sessionLabel, type CapturedSession } from '../control-api/sessions.js';
import {
  ALT_SCREEN_OFF,
  ALT_SCREEN_ON,
  CLEAR_SCREEN,
  HIDE_CURSOR,
  KeySession,
  SHOW_CURSOR,
  cell,
  colours,
  fit,
  fitPath,
  isCancel,
  terminalSize,
  textWidth,
  typed,
  type Key,
} from './terminal.js';

export interface Column {
  name: string;
  /** Narrowest useful width; below it the column is dropped (by `drop`, lowest first). */
  min: number;
  /** Widest it gets (flexible columns share what is left). */
  max?: number;
  /** Share of the leftover width, for flexible columns. */
  flex?: number;
  /** Dropped first when the terminal is narrow: the higher, the earlier. Undefined: never dropped. */
  drop?: number;
  /** Cut from the left (paths) instead of the right. */
  path?: boolean;
}

export interface SelectItem<T> {
  value: T;
  cells: string[];
  /** Lower-case text the filter searches. */
  search: string;
}

export interface SelectOptions<T> {
  title: string;
  columns: Column[];
  items: SelectItem<T>[];
  /** Typing filters the list (otherwise `n` and `q` cancel, as in the other prompts). */
  filter: boolean;
  /** Shown under the title. */
  note?: string;
  emptyText?: string;
}

/** Widths of the columns shown at `width` columns; dropped columns get 0. Pure. */
export function layout(columns: readonly Column[], width: number): number[] {
  const shown = columns.map(() => true);
  const need = () => columns.reduce((sum, c, i) => sum + (shown[i] ? c.min : 0), 0) + 2 * (shown.filter(Boolean).length - 1);
  const order = columns
    .map((c, i) => ({ c, i }))
    .filter(({ c }) => c.drop !== undefined)
    .sort((a, b) => b.c.drop! - a.c.drop!);
  for (const { i } of order) {
    if (need() <= width) break;
    shown[i] = false;
  }
  const widths = columns.map((c, i) => (shown[i] ? c.min : 0));
  let left = width - need();
  // Fixed columns grow to their max first, then the flexible ones share the rest.
  for (const [i, c] of columns.entries()) {
    if (!shown[i] || c.flex !== undefined || left <= 0) continue;
    const grow = Math.min(left, (c.max ?? c.min) - c.min);
    widths[i]! += grow;
    left -= grow;
  }
  const flexTotal = columns.reduce((sum, c, i) => sum + (shown[i] && c.flex !== undefined ? c.flex : 0), 0);
  if (left > 0 && flexTotal > 0) {
    let given = 0;
    const flexible = columns.map((c, i) => ({ c, i })).filter(({ c, i }) => shown[i] && c.flex !== undefined);
    for (const [n, { c, i }] of flexible.entries()) {
      const share = n === flexible.length - 1 ? left - given : Math.floor((left * c.flex!) / flexTotal);
      const capped = c.max === undefined ? share : Math.min(share, c.max - widths[i]!);
      widths[i]! += capped;
      given += capped;
    }
  }
  // A single column narrower than its minimum still gets the whole line.
  if (need() > width) {
    const only = shown.findIndex(Boolean);
    if (only >= 0) widths[only] = Math.max(1, width);
  }
  return widths;
}

/** The rows of the list, fitted to `width`; pure, for the renderer and for tests. */
export function renderRow(columns: readonly Column[], widths: readonly number[], cells: readonly string[]): string {
  const parts: string[] = [];
  for (const [i, c] of columns.entries()) {
    const w = widths[i]!;
    if (w <= 0) continue;
    const text = printable(cells[i] ?? '');
    parts.push(c.path === true ? cell(fitPath(text, w), w) : cell(text, w));
  }
  return parts.join('  ').trimEnd();
}

export function matchesFilter(search: string, filter: string): boolean {
  const words = filter.toLowerCase().split(/\s+/).filter((w) => w !== '');
  return words.every((w) => search.includes(w));
}

/** Shows the list and resolves with the chosen value, or undefined when cancelled. */
export function select<T>(ctx: Context, options: SelectOptions<T>): Promise<T | undefined> {
  const c = colours(ctx);
  let filter = '';
  let cursor = 0;
  let offset = 0;
  let shown = options.items;

  return new Promise<T | undefined>((resolve, reject) => {
    let session: KeySession | undefined;
    const finish = (value: T | undefined) => {
      session?.close();
      ctx.stderr.write(`${SHOW_CURSOR}${ALT_SCREEN_OFF}`);
      resolve(value);
    };
    const draw = () => {
      const { columns, rows } = terminalSize(ctx);
      const width = columns - 1;
      const lines: string[] = [];
      lines.push(c.bold(fit(options.title, width)));
      if (options.filter) {
        const count = `${shown.length} of ${options.items.length}`;
        const label = fit(`Filter: ${filter}`, Math.max(1, width - count.length - 2));
        lines.push(label + ' '.repeat(Math.max(2, width - count.length - textWidth(label))) + c.dim(count));
      } else if (options.note !== undefined) {
        lines.push(fit(options.note, width));
      }
      const rowWidth = width - 2;
      const widths = layout(options.columns, rowWidth);
      lines.push(c.dim(fit(`  ${renderRow(options.columns, widths, options.columns.map((col) => col.name))}`, width)));
      const room = Math.max(1, rows - lines.length - 1);
      if (cursor < offset) offset = cursor;
      if (cursor >= offset + room) offset = cursor - room + 1;
      offset = Math.max(0, Math.min(offset, Math.max(0, shown.length - room)));
      if (shown.length === 0) lines.push(fit(`  ${options.emptyText ?? 'Nothing matches.'}`, width));
      for (let i = offset; i < Math.min(shown.length, offset + room); i++) {
        const text = fit(renderRow(options.columns, widths, shown[i]!.cells), rowWidth);
        lines.push(i === cursor ? c.inverse(`> ${text}`) : `  ${text}`);
      }
      while (lines.length < rows - 1) lines.push('');
      const keys = options.filter ? '↑/↓ move · type to filter · Enter choose · Esc cancel' : '↑/↓ move · Enter choose · Esc cancel';
      lines.push(c.dim(fit(keys, width)));
      ctx.stderr.write(`${CLEAR_SCREEN}${lines.slice(0, rows).join('\r\n')}`);
    };
    const refilter = () => {
      shown = options.items.filter((item) => matchesFilter(item.search, filter));
      cursor = Math.min(cursor, Math.max(0, shown.length - 1));
    };
    const onKey = (key: Key) => {
      try {
        if (isCancel(key)) return finish(undefined);
        const room = Math.max(1, terminalSize(ctx).rows - 4);
        switch (key.name) {
          case 'up':
            cursor = Math.max(0, cursor - 1);
            return draw();
          case 'down':
            cursor = Math.min(Math.max(0, shown.length - 1), cursor + 1);
            return draw();
          case 'pageup':
            cursor = Math.max(0, cursor - room);
            return draw();
          case 'pagedown':
            cursor = Math.min(Math.max(0, shown.length - 1), cursor + room);
            return draw();
          case 'home':
            cursor = 0;
            return draw();
          case 'end':
            cursor = Math.max(0, shown.length - 1);
            return draw();
          case 'return':
          case 'enter':
            if (shown.length > 0) return finish(shown[cursor]!.value);
            return;
          case 'backspace':
            if (options.filter && filter !== '') {
              filter = [...filter].slice(0, -1).join('');
              refilter();
              draw();
            }
            return;
        }
        if (key.ctrl && key.name === 'u' && options.filter) {
          filter = '';
          refilter();
          return draw();
        }
        const text = typed(key);
        if (text === '') return;
        if (!options.filter) {
          if (text === 'n' || text === 'N' || text === 'q') return finish(undefined);
          return;
        }
        filter = (filter + text).slice(0, 200);
        cursor = 0;
        refilter();
        draw();
      } catch (error) {
        session?.close();
        ctx.stderr.write(`${SHOW_CURSOR}${ALT_SCREEN_OFF}`);
        reject(error);
      }
    };
    ctx.stderr.write(`${ALT_SCREEN_ON}${HIDE_CURSOR}`);
    session = new KeySession(ctx, onKey, draw);
    draw();
  });
}

// ---------------------------------------------------------------------------------------------------------------
// The session picker

export const SESSION_COLUMNS: Column[] = [
  { name: 'TITLE', min: 12, flex: 3 },
  { name: 'HARNESS', min: 6, max: 8, drop: 2 },
  { name: 'OWNER', min: 10, max: 26, drop: 3 },
  { name: 'RECORDED IN', min: 12, flex: 2, drop: 4, path: true },
  { name: 'UPDATED', min: 10, max: 16, drop: 1 },
];

export function sessionItem(upload: CapturedSession, now: number, home?: string): SelectItem<CapturedSession> {
  const title = sessionLabel(upload);
  // The picker's listing (`resumable=true`) marks what the caller does not own as `shared`.
  const owner = upload.shared === true ? `shared by ${upload.user_email}` : 'you';
  const where = upload.cwd === null ? '(unknown)' : home !== undefined && (upload.cwd === home || upload.cwd.startsWith(`${home}/`)) ? `~${upload.cwd.slice(home.length)}` : upload.cwd;
  const cells = [title, upload.harness, owner, where, ago(upload.updated_at, now)];
  const search = [title, upload.summary ?? '', upload.harness, owner, upload.cwd ?? '', upload.native_session_id, upload.id].join('\n').toLowerCase();
  return { value: upload, cells, search };
}

/** `5 min ago`, `3 h ago`, `2 days ago`, or the date. */
export function ago(iso: string, now: number): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return iso.slice(0, 16);
  const s = Math.max(0, Math.round((now - at) / 1000));
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  if (s < 14 * 86400) return `${Math.floor(s / 86400)} day${s < 2 * 86400 ? '' : 's'} ago`;
  return new Date(at).toISOString().slice(0, 10);
}

export function pickSession(ctx: Context, uploads: CapturedSession[], truncated: boolean): Promise<CapturedSession | undefined> {
  return select(ctx, {
    title: `Resume a session (${uploads.length}${truncated ? '+' : ''} you own or that were shared with you)`,
    columns: SESSION_COLUMNS,
    items: uploads.map((u) => sessionItem(u, ctx.clock.now(), ctx.paths.home)),
    filter: true,
    emptyText: 'No session matches the filter.',
  });
}
