/**
 * A download progress bar on stderr, one line redrawn at most ten times a second, fitted to the terminal's width.
 * Without a known total (Blue's server may not say the size) it shows the bytes received alone.
 */
import { formatBytes } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../context.js';
import { CLEAR_LINE, fit, terminalSize } from './terminal.js';

export function progressBar(
  ctx: Context,
  label: string,
): { update(received: number, total: number | undefined): void; done(): void } {
  if (!ctx.stderr.isTTY) return { update: () => undefined, done: () => undefined };
  let last = 0;
  let drawn = false;
  const draw = (received: number, total: number | undefined) => {
    const width = terminalSize(ctx).columns - 1;
    if (total === undefined) {
      ctx.stderr.write(`${CLEAR_LINE}${fit(`${label} ${formatBytes(received)}`, width)}`);
      drawn = true;
      return;
    }
    const ratio = total > 0 ? Math.min(1, received / total) : 1;
    const tail = ` ${String(Math.floor(ratio * 100)).padStart(3)}% ${formatBytes(received)}/${formatBytes(total)}`;
    const barWidth = Math.max(0, Math.min(30, width - label.length - tail.length - 3));
    const filled = Math.round(ratio * barWidth);
    const bar = barWidth > 0 ? ` [${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}]` : '';
    ctx.stderr.write(`${CLEAR_LINE}${fit(`${label}${bar}${tail}`, width)}`);
    drawn = true;
  };
  let latest: { received: number; total: number | undefined } = { received: 0, total: 0 };
  return {
    update(received, total) {
      latest = { received, total };
      const now = Date.now();
      if (now - last < 100 && (total === undefined || received < total)) return;
      last = now;
      draw(received, total);
    },
    done() {
      if (drawn || latest.total === undefined || latest.total >= 0) draw(latest.total ?? latest.received, latest.total);
      ctx.stderr.write('\n');
    },
  };
}
