/**
 * A full-screen list to choose from, on the terminal's alternate screen (so the scrollback is left as it was): arrow
 * keys move, typed text filters, Enter chooses, Esc or Ctrl-C cancels. Every line is fitted to the width (an ellipsis
 * where it is cut, never a wrap) and the whole screen is drawn again when the terminal is resized. Given a `search`,
 * what is typed is also asked of the server once typing pauses (one question at a time); its matches come first, with
 * their snippets, and nothing the local filter shows is taken away.
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
  /** Identifies the item among a search's answers (the same item found twice is shown once). */
  key?: string;
  /** A second, dimmed line under the row (a search's snippet). */
  detail?: string;
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
  /** Asks for what `text` finds beyond the local filter (the server's search); a failure is shown, not thrown. */
  search?: (text: string) => Promise<SelectItem<T>[]>;
}

/** Typing pauses this long before the server is asked. */
export const SEARCH_PAUSE_MS = 250;

/** Whether `text` is worth a server search: at least two letters or digits. */
export function searchable(text: string): boolean {
  return (text.match(/[\p{L}\p{N}]/gu)?.length ?? 0) >= 2;
}

/** A search's answers first (ranked), then what the local filter shows that the search did not find. Pure. */
export function mergeFound<T>(found: readonly SelectItem<T>[], local: readonly SelectItem<T>[]): SelectItem<T>[] {
  const seen = new Set(found.map((item) => item.key).filter((key) => key !== undefined));
  return [...found, ...local.filter((item) => item.key === undefined || !seen.has(item.key))];
}

/** The first item to show so that the one at `cursor` is whole on `room` lines, each item `height(i)` lines. Pure. */
export function scrollOffset(
  offset: number,
  cursor: number,
  count: number,
  room: number,
  height: (i: number) => number,
): number {
  const span = (from: number, to: number) => {
    let lines = 0;
    for (let i = from; i <= to; i++) lines += height(i);
    return lines;
  };
  let first = Math.max(0, Math.min(offset, cursor));
  while (first < cursor && span(first, cursor) > room) first++;
  // A short tail pulls the list back down so the screen stays full.
  while (first > 0 && span(first - 1, count - 1) <= room) first--;
  return first;
}

/**
 * Widths of the columns shown at `width` columns; dropped columns get 0. Pure. `widest`, the widest text each column
 * shows (its name included), keeps a column from growing past what it holds, so the width goes where the text is
 * cut (an owner "you" padded to 26 characters while the title is cut at 12).
 */
export function layout(columns: readonly Column[], width: number, widest?: readonly number[]): number[] {
  const shown = columns.map(() => true);
  const need = () =>
    columns.reduce((sum, c, i) => sum + (shown[i] ? c.min : 0), 0) + 2 * (shown.filter(Boolean).length - 1);
  const order = columns
    .map((c, i) => ({ c, i }))
    .filter(({ c }) => c.drop !== undefined)
    .sort((a, b) => b.c.drop! - a.c.drop!);
  for (const { i } of order) {
    if (need() <= width) break;
    shown[i] = false;
  }
  const widths = columns.map((c, i) => (shown[i] ? c.min : 0));
  /** How wide column `i` may grow: its max, and no wider than its text when that is known. */
  const cap = (i: number) => {
    const c = columns[i]!;
    const limit = c.max ?? (c.flex !== undefined ? Infinity : c.min);
    const text = widest?.[i];
    return text === undefined ? limit : Math.min(limit, Math.max(c.min, text));
  };
  let left = width - need();
  // Fixed columns grow to their cap first, then the flexible ones share the rest.
  for (const [i, c] of columns.entries()) {
    if (!shown[i] || c.flex !== undefined || left <= 0) continue;
    const grow = Math.min(left, cap(i) - widths[i]!);
    widths[i]! += grow;
    left -= grow;
  }
  // By their shares; what one cannot take (at its cap) goes round to the others, a bounded number of rounds.
  for (let round = 0; round < columns.length && left > 0; round++) {
    const flexible = columns
      .map((c, i) => ({ c, i }))
      .filter(({ c, i }) => shown[i] && c.flex !== undefined && widths[i]! < cap(i));
    const flexTotal = flexible.reduce((sum, { c }) => sum + c.flex!, 0);
    if (flexTotal === 0) break;
    let given = 0;
    for (const [n, { c, i }] of flexible.entries()) {
      const share = n === flexible.length - 1 ? left - given : Math.floor((left * c.flex!) / flexTotal);
      const capped = Math.min(share, cap(i) - widths[i]!);
      widths[i]! += capped;
      given += capped;
    }
    left -= given;
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
  const words = filter
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== '');
  return words.every((w) => search.includes(w));
}

/** Shows the list and resolves with the chosen value, or undefined when cancelled. */
export function select<T>(ctx: Context, options: SelectOptions<T>): Promise<T | undefined> {
  const c = colours(ctx);
  let filter = '';
  let cursor = 0;
  let offset = 0;
  let shown = options.items;
  // The server's search: its latest answer, whether one is being asked, and why the last one failed.
  let found: { text: string; items: SelectItem<T>[] } | undefined;
  let searching = false;
  let searchFailed: string | undefined;
  let pause: NodeJS.Timeout | undefined;
  let closed = false;

  return new Promise<T | undefined>((resolve, reject) => {
    let session: KeySession | undefined;
    const close = () => {
      closed = true;
      clearTimeout(pause);
      session?.close();
      ctx.stderr.write(`${SHOW_CURSOR}${ALT_SCREEN_OFF}`);
    };
    const finish = (value: T | undefined) => {
      close();
      resolve(value);
    };
    const draw = () => {
      const { columns, rows } = terminalSize(ctx);
      const width = columns - 1;
      const lines: string[] = [];
      lines.push(c.bold(fit(options.title, width)));
      if (options.filter) {
        const count = `${shown.length} of ${options.items.length}${searching ? ' · searching…' : ''}`;
        const label = fit(
          `${options.search === undefined ? 'Filter' : 'Search'}: ${filter}`,
          Math.max(1, width - count.length - 2),
        );
        lines.push(label + ' '.repeat(Math.max(2, width - count.length - textWidth(label))) + c.dim(count));
      } else if (options.note !== undefined) {
        lines.push(fit(options.note, width));
      }
      const rowWidth = width - 2;
      const widest = options.columns.map((col) => textWidth(col.name));
      for (const item of shown)
        for (const [i, text] of item.cells.entries()) widest[i] = Math.max(widest[i] ?? 0, textWidth(printable(text)));
      const widths = layout(options.columns, rowWidth, widest);
      lines.push(
        c.dim(
          fit(
            `  ${renderRow(
              options.columns,
              widths,
              options.columns.map((col) => col.name),
            )}`,
            width,
          ),
        ),
      );
      // A failed search says why on the line above the keys (its end, where the server's reason is).
      const failed =
        searchFailed === undefined ? undefined : `Search failed: ${fitPath(searchFailed, Math.max(1, width - 15))}`;
      const footer = failed === undefined ? 1 : 2;
      const room = Math.max(1, rows - lines.length - footer);
      const height = (i: number) => (shown[i]!.detail === undefined ? 1 : 2);
      offset = scrollOffset(offset, cursor, shown.length, room, height);
      if (shown.length === 0) lines.push(fit(`  ${options.emptyText ?? 'Nothing matches.'}`, width));
      const last = rows - footer;
      for (let i = offset; i < shown.length && lines.length < last; i++) {
        const item = shown[i]!;
        const text = fit(renderRow(options.columns, widths, item.cells), rowWidth);
        lines.push(i === cursor ? c.inverse(`> ${text}`) : `  ${text}`);
        if (item.detail !== undefined && lines.length < last)
          lines.push(c.dim(`    ${fit(printable(item.detail), Math.max(1, width - 4))}`));
      }
      while (lines.length < rows - footer) lines.push('');
      if (failed !== undefined) lines.push(c.red(fit(failed, width)));
      const typing = options.search === undefined ? 'type to filter' : 'type to search';
      const keys = options.filter
        ? `↑/↓ move · ${typing} · Enter choose · Esc cancel`
        : '↑/↓ move · Enter choose · Esc cancel';
      lines.push(c.dim(fit(keys, width)));
      ctx.stderr.write(`${CLEAR_SCREEN}${lines.slice(0, rows).join('\r\n')}`);
    };
    /** Recomputes what is shown; `keepChosen` when a search's answer reorders the list under the person's cursor. */
    const refilter = (keepChosen: boolean) => {
      const chosen = shown[cursor]?.key;
      const local = options.items.filter((item) => matchesFilter(item.search, filter));
      shown = found !== undefined && found.text === filter.trim() ? mergeFound(found.items, local) : local;
      const kept = keepChosen && chosen !== undefined ? shown.findIndex((item) => item.key === chosen) : -1;
      cursor = kept >= 0 ? kept : Math.min(cursor, Math.max(0, shown.length - 1));
    };
    const ask = () => {
      const search = options.search;
      const text = filter.trim();
      if (search === undefined || closed || searching || !searchable(text) || found?.text === text) return;
      searching = true;
      draw();
      search(text)
        .then(
          (items) => {
            found = { text, items };
            searchFailed = undefined;
          },
          (error: unknown) => {
            searchFailed = printable(
              error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error),
            ).slice(0, 1000);
          },
        )
        .finally(() => {
          searching = false;
          if (closed) return;
          refilter(true);
          draw();
          // Typed on while the server was asked: ask again for what is there now.
          if (filter.trim() !== text) ask();
        })
        .catch(() => {});
    };
    /** The filter changed: the local filter at once, the server's search once typing pauses. */
    const typedOn = () => {
      if (!searchable(filter)) searchFailed = undefined;
      refilter(false);
      draw();
      clearTimeout(pause);
      if (options.search !== undefined) pause = setTimeout(ask, SEARCH_PAUSE_MS);
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
              typedOn();
            }
            return;
        }
        if (key.ctrl && key.name === 'u' && options.filter) {
          filter = '';
          return typedOn();
        }
        const text = typed(key);
        if (text === '') return;
        if (!options.filter) {
          if (text === 'n' || text === 'N' || text === 'q') return finish(undefined);
          return;
        }
        filter = (filter + text).slice(0, 200);
        cursor = 0;
        typedOn();
      } catch (error) {
        close();
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
  const where =
    upload.cwd === null
      ? '(unknown)'
      : home !== undefined && (upload.cwd === home || upload.cwd.startsWith(`${home}/`))
        ? `~${upload.cwd.slice(home.length)}`
        : upload.cwd;
  const cells = [title, upload.harness, owner, where, ago(upload.updated_at, now)];
  const search = [
    title,
    upload.summary ?? '',
    upload.harness,
    owner,
    upload.cwd ?? '',
    upload.native_session_id,
    upload.id,
  ]
    .join('\n')
    .toLowerCase();
  return {
    value: upload,
    cells,
    search,
    key: upload.id,
    ...(upload.snippet === undefined ? {} : { detail: upload.snippet }),
  };
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

/**
 * The resume picker over `uploads`; `search` (the server's, as the person types) finds sessions by what they say and
 * brings a snippet for each.
 */
export function pickSession(
  ctx: Context,
  uploads: CapturedSession[],
  truncated: boolean,
  search?: (text: string) => Promise<CapturedSession[]>,
): Promise<CapturedSession | undefined> {
  const item = (u: CapturedSession) => sessionItem(u, ctx.clock.now(), ctx.paths.home);
  return select(ctx, {
    title: `Resume a session (${uploads.length}${truncated ? '+' : ''} you own or that were shared with you)`,
    columns: SESSION_COLUMNS,
    items: uploads.map(item),
    filter: true,
    emptyText: search === undefined ? 'No session matches the filter.' : 'No session matches the search.',
    ...(search === undefined ? {} : { search: async (text: string) => (await search(text)).map(item) }),
  });
}
