import type { Context } from '../context.js';
import { reconcile } from '../reconcile/index.js';
import { renderHuman, toJson } from '../reconcile/render.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { useColor } from './output.js';

/** The options of `reconcile`, as commander (main.ts) or the plain reading (plain-reconcile.ts) hands them on. */
export interface ReconcileOptions {
  dryRun?: boolean;
  json?: boolean;
  policy?: string;
  harness?: string[];
}

export async function reconcileCommand(ctx: Context, opts: ReconcileOptions): Promise<number> {
  const report = await reconcile(ctx, {
    dryRun: opts.dryRun === true,
    ...(opts.policy === undefined ? {} : { policyFile: opts.policy }),
    ...(opts.harness === undefined ? {} : { harnesses: opts.harness as HarnessName[] }),
  });
  if (opts.json === true) ctx.stdout.write(`${JSON.stringify(toJson(report), null, 2)}\n`);
  else ctx.stdout.write(renderHuman(report, { color: useColor(ctx), home: ctx.paths.home }));
  return report.ok ? 0 : 1;
}
