/**
 * `blue-agent status [--json]`: what this machine applies and holds, read without the network and without writing
 * anything — the policy and its age, each harness's capture state, the spool, the last drain, the agent and its
 * service.
 */
import type { Context } from '../context.js';
import { collectStatus } from '../status/collect.js';
import { renderStatus, statusJson } from '../status/render.js';
import { useColor } from './output.js';

export async function statusCommand(ctx: Context, opts: { json?: boolean }): Promise<number> {
  const report = await collectStatus(ctx);
  if (opts.json === true) ctx.stdout.write(`${JSON.stringify(statusJson(report), null, 2)}\n`);
  else ctx.stdout.write(renderStatus(report, { color: useColor(ctx), home: ctx.paths.home }));
  return 0;
}
