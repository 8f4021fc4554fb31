import type { Context } from '../context.js';
import type { BlueError } from '@blue-agent/contract/errors.js';
import { escapeControls } from '@blue-agent/contract/util/terminal-text.js';

/** Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org). */
export function useColor(ctx: Context): boolean {
  if (ctx.env.NO_COLOR !== undefined && ctx.env.NO_COLOR !== '') return false;
  if (ctx.env.FORCE_COLOR !== undefined && ctx.env.FORCE_COLOR !== '0') return true;
  return ctx.stdout.isTTY && ctx.env.TERM !== 'dumb';
}

export function reportError(ctx: Context, error: BlueError, json: boolean): void {
  if (json) {
    ctx.stdout.write(`${JSON.stringify({ ok: false, error: error.toJSON() }, null, 2)}\n`);
    return;
  }
  // Messages quote what came from elsewhere (native files, bundles, servers): no control character reaches the
  // terminal.
  ctx.stderr.write(`blue-agent: error [${error.code}]: ${escapeControls(error.message)}\n`);
  if (error.hint !== undefined) ctx.stderr.write(`  hint: ${escapeControls(error.hint)}\n`);
}
