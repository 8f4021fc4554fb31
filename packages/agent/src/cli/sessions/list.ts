/** `sessions list`: a page of the captured sessions, as a table fitted to the terminal or as JSON. */
import type { Context } from '../../context.js';
import { usageError } from '@blue-agent/contract/errors.js';
import { printable, sessionLabel, type CapturedSession } from '../../control-api/sessions.js';

import { withApi, writeJson, sessionJson, ownerLabel, shortTime } from './common.js';

// ---------------------------------------------------------------------------------------------------------------
// list

/** `sessions list --limit`: how many rows at most, and by default. */
export const LIST_LIMIT_MAX = 200;
export const LIST_LIMIT_DEFAULT = 20;
export const PROVIDER = /^[a-z0-9][a-z0-9_.-]{0,63}$/;

export interface ListFlags {
  q?: string;
  harness?: string[];
  provider?: string[];
  tag?: string;
  all?: boolean;
  json?: boolean;
  limit?: string;
  offset?: string;
}

/** A whole number flag in [min, max]; a usage error naming the flag otherwise. */
function wholeFlag(name: string, value: string | undefined, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d{1,9}$/.test(value.trim()) || n < min || n > max)
    throw usageError(
      `--${name} must be a whole number from ${min} to ${max}, not "${printable(value).slice(0, 20)}"`,
      `For example: --${name} ${fallback === 0 ? 20 : fallback}.`,
    );
  return n;
}

/**
 * One row per session with a completed upload (the Control API lists no other), newest first (best match first with
 * --q), `--limit` rows from `--offset`, and how many there are in all. Without --all only the caller's own
 * (the Control API filters by owner, so the total counts them alone).
 */
export async function sessionsListCommand(ctx: Context, opts: ListFlags): Promise<number> {
  const limit = wholeFlag('limit', opts.limit, 1, LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT);
  const offset = wholeFlag('offset', opts.offset, 0, 1_000_000_000, 0);
  const harnesses = [...new Set([...(opts.harness ?? []), ...(opts.provider ?? [])])];
  for (const h of harnesses) {
    if (!PROVIDER.test(h))
      throw usageError(
        `--provider "${printable(h).slice(0, 64)}" is not a harness or provider name`,
        'Lower-case letters, digits, "_", "." and "-": --provider chatgpt_export.',
      );
  }
  const tag = opts.tag;
  if (tag !== undefined && (tag.trim() === '' || /[\s,\u0000-\u001f\u007f]/.test(tag) || tag.length > 64))
    throw usageError('--tag must be one word of 1 to 64 characters', 'For example: --tag design.');
  const q = opts.q?.trim();
  const query = {
    ...(q === undefined || q === '' ? {} : { q }),
    ...(harnesses.length === 0 ? {} : { harnesses }),
    ...(tag === undefined ? {} : { tag }),
  };
  const { rows, total, others } = await withApi(ctx, async (api) => {
    const me = await api.me();
    const { items, total } = await api.window(
      { ...query, ...(opts.all === true ? {} : { owner: me.id }) },
      offset,
      limit,
    );
    const rows = items.map((s) => ({
      session: s,
      owned: s.user_id === me.id,
      json: sessionJson(api, s, s.user_id === me.id),
    }));
    // Nothing of yours: say whether others are visible (one more question, only then).
    const others = opts.all !== true && total === 0 ? (await api.window(query, 0, 1)).total : 0;
    return { rows, total, others };
  });
  const truncated = offset + rows.length < total;
  if (opts.json === true) {
    writeJson(ctx, { all: opts.all === true, total, offset, limit, truncated, sessions: rows.map((r) => r.json) });
    return 0;
  }
  if (rows.length === 0) {
    const none =
      total > 0
        ? `No sessions from --offset ${offset}: there ${total === 1 ? 'is' : 'are'} ${total}.`
        : opts.all === true
          ? 'No sessions.'
          : `No sessions of yours${q === undefined || q === '' ? '' : ' match'}.` +
            `${others > 0 ? ' Others are visible to you: add --all to see them.' : ''}`;
    ctx.stdout.write(`${none}\n`);
    return 0;
  }
  ctx.stdout.write(sessionTable(rows, terminalColumns(ctx)));
  const shown =
    offset === 0 && !truncated
      ? `${total} session${total === 1 ? '' : 's'}.`
      : `${offset + 1}-${offset + rows.length} of ${total} sessions` +
        `${truncated ? ` (next: --offset ${offset + rows.length})` : ''}.`;
  ctx.stdout.write(`${shown}\n`);
  return 0;
}

function terminalColumns(ctx: Context): number | undefined {
  if (!ctx.stdout.isTTY) return undefined;
  const columns = (ctx.stdout as { columns?: unknown }).columns;
  return typeof columns === 'number' && columns > 0 ? columns : 80;
}

const MIN_TITLE = 12;
const MIN_OWNER = 10;

/** The table `sessions list` prints; on a terminal narrower than it, ids are shortened to 8 characters, then titles
 * cut. */
export function sessionTable(rows: readonly { session: CapturedSession; owned: boolean }[], columns?: number): string {
  const header = ['TITLE', 'HARNESS', 'OWNER', 'STATUS', 'UPDATED', 'ID'];
  let cells = rows.map(({ session: s, owned }) => [
    `${sessionLabel(s)}${s.tags.length === 0 ? '' : ` #${s.tags.join(' #')}`}`,
    s.harness,
    printable(ownerLabel(s, owned)),
    s.status ?? '-',
    shortTime(printable(s.updated_at)),
    s.id,
  ]);
  const width = (all: string[][]) => {
    const widths = header.map((h, col) => Math.max(h.length, ...all.map((r) => r[col]!.length)));
    return { widths, total: widths.reduce((a, b) => a + b, 0) + 2 * (widths.length - 1) };
  };
  let { widths, total } = width(cells);
  if (columns !== undefined && total > columns) {
    cells = cells.map((r) => [...r.slice(0, 5), r[5]!.slice(0, 8)]);
    ({ widths, total } = width(cells));
  }
  // Then the title, then the owner, each down to a floor.
  for (const [col, floor] of [
    [0, MIN_TITLE],
    [2, MIN_OWNER],
  ] as const) {
    if (columns === undefined || total <= columns) break;
    const room = Math.max(floor, widths[col]! - (total - columns));
    cells = cells.map((r) =>
      r.map((cell, i) => (i === col && cell.length > room ? `${cell.slice(0, room - 1)}…` : cell)),
    );
    ({ widths, total } = width(cells));
  }
  // A search's snippet goes under its row, indented, cut to the terminal.
  const snippet = (i: number): string => {
    const text = rows[i]!.session.snippet;
    if (text === undefined) return '';
    const room = columns === undefined ? text.length : Math.max(10, columns - 4);
    return `    ${text.length > room ? `${text.slice(0, room - 1)}…` : text}\n`;
  };
  const line = (r: string[]) =>
    `${r
      .map((cell, col) => cell.padEnd(widths[col]!))
      .join('  ')
      .trimEnd()}\n`;
  return line(header) + cells.map((r, i) => line(r) + snippet(i)).join('');
}
