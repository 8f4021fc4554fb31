/**
 * `blue-agent resume [ID] [--dest DIR] [--yes] [--no-launch] [--json]`: the flow lives in src/resume/; this file only
 * turns a cancel into one calm line.
 */
import type { Context } from '../context.js';

export async function resumeCommand(
  ctx: Context,
  id: string | undefined,
  opts: { dest?: string; yes?: boolean; launch?: boolean; json?: boolean },
): Promise<number> {
  const { resume, Cancelled } = await import('../resume/run.js');
  try {
    return await resume(ctx, id, opts);
  } catch (error) {
    if (error instanceof Cancelled) {
      ctx.stderr.write(`Cancelled (${error.why}): nothing was changed.\n`);
      return 1;
    }
    throw error;
  }
}
