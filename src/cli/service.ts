/**
 * `blue-agent service install|uninstall|status [--dry-run] [--json]`: the user service that runs `blue-agent run`.
 */
import type { Context } from '../context.js';
import type { ReconcileReport } from '../reconcile/index.js';
import { configWarning, quoteWord, serviceInstall, serviceStateJson, serviceStatus, serviceUninstall, type AppliedPlan, type ServiceState } from '../service/index.js';
import { SYSTEMD_UNIT_NAME } from '../service/systemd.js';
import { LAUNCHD_LABEL } from '../service/spec.js';

export interface ServiceCommandOptions {
  dryRun?: boolean;
  json?: boolean;
  removeHooks?: boolean;
}

export async function serviceCommand(ctx: Context, action: 'install' | 'uninstall' | 'status', opts: ServiceCommandOptions): Promise<number> {
  if (action === 'status') {
    const state = await serviceStatus(ctx);
    ctx.stdout.write(opts.json === true ? `${JSON.stringify({ ok: true, ...serviceStateJson(state) }, null, 2)}\n` : renderStatus(state));
    return 0;
  }
  const dryRun = opts.dryRun === true;
  const applied =
    action === 'install'
      ? await serviceInstall(ctx, { dryRun })
      : await serviceUninstall(ctx, { dryRun, ...(opts.removeHooks === true ? { removeHooks: true } : {}) });
  // Only a dry run gets here with a config that does not validate (a real install is refused): warn.
  if (applied.plan.configError !== undefined) ctx.stderr.write(`warning: ${configWarning(applied.plan.configError)}\n`);
  const ok = applied.hooks === undefined || applied.hooks.ok;
  ctx.stdout.write(opts.json === true ? `${JSON.stringify(appliedJson(applied, ok), null, 2)}\n` : renderApplied(applied));
  return ok ? 0 : 1;
}


export function renderStatus(state: ServiceState): string {
  const yesNo = (value: boolean | undefined) => (value === undefined ? 'unknown' : value ? 'yes' : 'no');
  const installed = !state.installed ? 'no' : !state.ours ? 'yes, but not written by blue-agent' : state.current ? 'yes (current)' : 'yes (outdated: run `blue-agent service install`)';
  return [
    `manager:   ${state.manager}`,
    `unit file: ${state.unitFile ?? '-'}`,
    `installed: ${installed}`,
    `enabled:   ${yesNo(state.enabled)}`,
    `active:    ${yesNo(state.active)}`,
    `detail:    ${state.detail}`,
    '',
  ].join('\n');
}

function hooksJson(report: ReconcileReport): unknown[] {
  return report.harnesses.map((h) => ({
    harness: h.harness,
    state: h.state,
    reason: h.reason,
    action: h.action,
    files: h.files.map((f) => ({ path: f.path, action: f.action, ...(f.error === undefined ? {} : { error: f.error }) })),
  }));
}

function appliedJson(applied: AppliedPlan, ok: boolean): Record<string, unknown> {
  const { plan } = applied;
  return {
    ok,
    action: plan.action,
    dry_run: applied.dryRun,
    manager: plan.manager,
    unit_file: plan.unitFile,
    file: plan.file,
    ...(plan.content === undefined ? {} : { content: plan.content }),
    commands: applied.commands,
    ...(applied.hooks === undefined ? {} : { hooks: hooksJson(applied.hooks) }),
    notes: plan.configError === undefined ? plan.notes : [...plan.notes, configWarning(plan.configError)],
  };
}

export function renderApplied(applied: AppliedPlan): string {
  const { plan, dryRun } = applied;
  const out: string[] = [];
  for (const note of plan.notes) out.push(`note: ${note}\n`);
  if (plan.action === 'install' && plan.file === 'unchanged') out.push(`${plan.unitFile} is unchanged\n`);
  for (const step of plan.steps) {
    switch (step.kind) {
      case 'mkdir':
        out.push(`${dryRun ? 'Would create' : 'Created'} directory ${step.dir}\n`);
        break;
      case 'write': {
        const verb = step.before === null ? (dryRun ? 'Would create' : 'Created') : dryRun ? 'Would update' : 'Updated';
        out.push(dryRun ? `${verb} ${step.file}:\n${step.content}` : `${verb} ${step.file}\n`);
        break;
      }
      case 'remove':
        out.push(`${dryRun ? 'Would remove' : 'Removed'} ${step.file}\n`);
        break;
      case 'run':
        out.push(`${dryRun ? 'Would run' : 'Ran'}: ${step.argv.map(quoteWord).join(' ')}\n`);
        break;
      case 'remove-hooks':
        out.push(renderHooks(applied.hooks, dryRun));
        break;
    }
  }
  const name = plan.manager === 'systemd' ? `systemd user unit ${SYSTEMD_UNIT_NAME}` : `LaunchAgent ${LAUNCHD_LABEL}`;
  if (plan.action === 'install') {
    out.push(dryRun ? 'Nothing was changed (--dry-run).\n' : `The ${name} is installed and started.\n`);
  } else if (plan.steps.length === 0) {
    out.push(`The ${name} is not installed; nothing to do.\n`);
  } else {
    out.push(dryRun ? 'Nothing was changed (--dry-run).\n' : plan.file === 'absent' ? 'Done.\n' : `The ${name} is stopped and removed.\n`);
  }
  return out.join('');
}

function renderHooks(report: ReconcileReport | undefined, dryRun: boolean): string {
  if (report === undefined) return '';
  const lines: string[] = [];
  for (const h of report.harnesses) {
    if (h.action === 'error') {
      lines.push(`  ${h.harness}: left untouched: ${h.reason}\n`);
      continue;
    }
    for (const f of h.files) if (f.action !== 'unchanged') lines.push(`  ${h.harness}: ${f.action} ${f.path}\n`);
  }
  const head = `${dryRun ? 'Would remove' : 'Removed'} the managed hooks`;
  return lines.length === 0 ? `${head}: none found\n` : `${head}:\n${lines.join('')}`;
}
