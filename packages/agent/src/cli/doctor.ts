/**
 * `blue-agent doctor [--json]`: checks this machine's set-up — Node.js, the agent config, the Control API and the
 * token (one bounded request), the policy, the spool's permissions, each harness against the profiles, the checks a
 * harness adds (its hook trust) and the service — and prints the fix for every problem. Changes nothing. Exits 1 when a
 * check fails.
 */
import type { Context } from '../context.js';
import { runChecks } from '../doctor/checks.js';
import { collectDoctorFacts, type DoctorOptions } from '../doctor/collect.js';
import { doctorJson, renderDoctor, summarise } from '../doctor/render.js';
import { useColor } from './output.js';

export async function doctorCommand(ctx: Context, opts: { json?: boolean } & DoctorOptions): Promise<number> {
  const checks = runChecks(await collectDoctorFacts(ctx, opts));
  if (opts.json === true) ctx.stdout.write(`${JSON.stringify(doctorJson(checks), null, 2)}\n`);
  else ctx.stdout.write(renderDoctor(checks, { color: useColor(ctx) }));
  return summarise(checks).fail > 0 ? 1 : 0;
}
