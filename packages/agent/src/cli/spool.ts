/**
 * `blue-agent spool list [--json]`: every record in the spool with its state, session, bundle size, attempts and last
 * error.
 */
import type { Context } from '../context.js';
import { Spool, type ListedRecord } from '../spool/index.js';

export async function spoolListCommand(ctx: Context, opts: { json?: boolean }): Promise<number> {
  const spool = await Spool.open(ctx.paths);
  const records = await spool.listRecords();
  if (opts.json === true) {
    ctx.stdout.write(
      `${JSON.stringify(
        {
          ok: true,
          spool: spool.root,
          records: records.map((r) => ({
            ...r,
            created_at: r.created_at_unix_ms === null ? null : new Date(r.created_at_unix_ms).toISOString(),
            bundle: r.state === 'ready' || r.state === 'uploading' ? spool.bundleFile(r.id) : null,
          })),
        },
        null,
        2,
      )}\n`,
    );
    return 0;
  }
  ctx.stdout.write(renderRecords(records, spool.root));
  return 0;
}

export function renderRecords(records: readonly ListedRecord[], root: string): string {
  if (records.length === 0) return `The spool (${root}) is empty.\n`;
  const rows = [
    ['ID', 'STATE', 'HARNESS', 'PROFILE', 'SESSION', 'SIZE', 'ATTEMPTS', 'CREATED', 'LAST ERROR'],
    ...records.map((r) => [
      r.id,
      (r.state === 'building' || r.state === 'uploading') && r.worker_alive === false
        ? `${r.state} (worker gone)`
        : r.waits_for_pid !== undefined
          ? `${r.state} (until pid ${r.waits_for_pid} exits)`
          : r.state,
      r.harness,
      r.profile,
      shorten(r.session_id, 40),
      r.size === null ? '-' : String(r.size),
      `${r.attempts}${r.upload_attempts > 0 ? ` (+${r.upload_attempts} upload)` : ''}` +
        `${r.interruptions > 0 ? ` (+${r.interruptions} interrupted)` : ''}`,
      r.created_at_unix_ms === null ? '-' : new Date(r.created_at_unix_ms).toISOString().replace(/\.\d+Z$/, 'Z'),
      // The last column, so never cut: the reason is usually at the end of the message.
      r.damaged ?? (r.last_error === null ? '-' : r.last_error.replace(/\s+/g, ' ')),
    ]),
  ];
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows
    .map(
      (row) =>
        `${row
          .map((cell, col) => cell.padEnd(widths[col]!))
          .join('  ')
          .trimEnd()}\n`,
    )
    .join('');
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
