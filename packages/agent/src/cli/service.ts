/**
 * `blue-agent service install|uninstall|status [--dry-run] [--json]`: the user service that runs `blue-agent run`.
 */
import type { Context } from '../context.js';
import type { ReconcileReport } from '../reconcile/index.js';
import {
  configWarning,
  quoteWord,
  serviceInstall,
  serviceStateJson,
  serviceStatus,
  serviceUninstall,
  type AppliedPlan,
  type ServiceState,
  type Step,
  type StepOutcome,
} from '../service/index.js';
import { SYSTEMD_UNIT_NAME } from '../service/systemd.js';
import { LAUNCHD_LABEL } from '../service/spec.js';

export interface ServiceCommandOptions {
  dryRun?: boolean;
  json?: boolean;
  removeHooks?: boolean;
}

export async function serviceCommand(
  ctx: Context,
  action: 'install' | 'uninstall' | 'status',
  opts: ServiceCommandOptions,
): Promise<number> {
  if (action === 'status') {
    const state = await serviceStatus(ctx);
    ctx.stdout.write(
      opts.json === true
        ? `${JSON.stringify({ ok: true, ...serviceStateJson(state) }, null, 2)}\n`
        : renderStatus(state),
    );
    return 0;
  }
  const dryRun = opts.dryRun === true;
  const applied =
    action === 'install'
      ? await serviceInstall(ctx, { dryRun })
      : await serviceUninstall(ctx, { dryRun, ...(opts.removeHooks === true ? { removeHooks: true } : {}) });
  // Only a dry run gets here with a config that does not validate (a real install is refused): warn.
  if (applied.plan.configError !== undefined) ctx.stderr.write(`warning: ${configWarning(applied.plan.configError)}\n`);
  const ok = applied.ok && (applied.hooks === undefined || applied.hooks.ok);
  ctx.stdout.write(
    opts.json === true ? `${JSON.stringify(appliedJson(applied, ok), null, 2)}\n` : renderApplied(applied),
  );
  return ok ? 0 : 1;
}

export function renderStatus(state: ServiceState): string {
  const yesNo = (value: boolean | undefined) => (value === undefined ? 'unknown' : value ? 'yes' : 'no');
  const installed = !state.installed
    ? 'no'
    : !state.ours
      ? 'yes, but not written by blue-agent'
      : state.current
        ? 'yes (current)'
        : 'yes (outdated: run `blue-agent service install`)';
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
    files: h.files.map((f) => ({
      path: f.path,
      action: f.action,
      ...(f.error === undefined ? {} : { error: f.error }),
    })),
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
    ...(applied.outcomes === undefined ? {} : { steps: applied.outcomes.map(outcomeJson) }),
    ...(applied.hooks === undefined ? {} : { hooks: hooksJson(applied.hooks) }),
    notes: plan.configError === undefined ? plan.notes : [...plan.notes, configWarning(plan.configError)],
  };
}

export function renderApplied(applied: AppliedPlan): string {
  const { plan, dryRun } = applied;
  const out: string[] = [];
  for (const note of plan.notes) out.push(`note: ${note}\n`);
  if (plan.action === 'install' && plan.file === 'unchanged') out.push(`${plan.unitFile} is unchanged\n`);
  const outcomes: StepOutcome[] =
    applied.outcomes ?? plan.steps.map((step) => ({ step, status: dryRun ? 'planned' : 'done' }));
  for (const outcome of outcomes) out.push(renderOutcome(outcome, applied));
  const name = plan.manager === 'systemd' ? `systemd user unit ${SYSTEMD_UNIT_NAME}` : `LaunchAgent ${LAUNCHD_LABEL}`;
  if (plan.action === 'install') {
    out.push(dryRun ? 'Nothing was changed (--dry-run).\n' : `The ${name} is installed and started.\n`);
  } else if (plan.steps.length === 0) {
    out.push(`The ${name} is not installed; nothing to do.\n`);
  } else if (dryRun) {
    out.push('Nothing was changed (--dry-run).\n');
  } else if (!applied.ok) {
    out.push(unfinished(applied, outcomes));
  } else {
    out.push(plan.file === 'absent' ? 'Done.\n' : `The ${name} is stopped and removed.\n`);
  }
  return out.join('');
}

function renderOutcome(outcome: StepOutcome, applied: AppliedPlan): string {
  const { step, status, detail } = outcome;
  const planned = status === 'planned';
  switch (step.kind) {
    case 'mkdir':
      return `${planned ? 'Would create' : 'Created'} directory ${step.dir}\n`;
    case 'write': {
      const verb = step.before === null ? (planned ? 'Would create' : 'Created') : planned ? 'Would update' : 'Updated';
      return planned ? `${verb} ${step.file}:\n${step.content}` : `${verb} ${step.file}\n`;
    }
    case 'remove':
      if (status === 'failed') return `Not removed: ${detail ?? step.file}\n`;
      return `${planned ? 'Would remove' : 'Removed'} ${step.file}\n${detail === undefined ? '' : `  (${detail})\n`}`;
    case 'run': {
      const shown = step.argv.map(quoteWord).join(' ');
      if (status === 'failed') return `Failed: ${detail ?? shown}\n`;
      if (status === 'skipped') return `Not run: ${shown} (${step.argv[0]} could not be reached)\n`;
      if (status === 'not_needed') return `Not needed: ${shown} (${detail ?? 'no service manager runs here'})\n`;
      return `${planned ? 'Would run' : 'Ran'}: ${shown}\n`;
    }
    case 'stop-agent':
      if (status === 'failed') return `Not stopped: ${detail ?? 'the running agent'}\n`;
      if (planned)
        return step.running === undefined
          ? ''
          : `Would stop the running agent (\`blue-agent run\`, pid ${step.running.pid}) and wait for it to exit\n`;
      return (outcome.stopped ?? [])
        .map((a) => `Stopped the running agent (\`blue-agent run\`, pid ${a.pid})\n`)
        .join('');
    case 'remove-hooks':
      if (status === 'skipped')
        return 'Left the managed hooks in place: the agent still runs and would put them back\n';
      if (status === 'failed') return `Could not remove the managed hooks: ${detail ?? 'unknown error'}\n`;
      return renderHooks(applied.hooks, planned);
  }
}

/** A service manager's step as the closing lines name it: `systemctl --user disable` → `disable`. */
function managerStep(argv: readonly string[]): string {
  const skip = argv[0] === 'systemctl' ? 2 : 1;
  return argv.slice(skip, skip + 1).join(' ');
}

/** The closing lines of an uninstall that could not do everything: what was done, what was not, how to finish. */
function unfinished(applied: AppliedPlan, outcomes: readonly StepOutcome[]): string {
  const { plan } = applied;
  const is = (kind: Step['kind'], ...statuses: StepOutcome['status'][]) =>
    outcomes.filter((o) => o.step.kind === kind && statuses.includes(o.status));
  const hooksGone = is('remove-hooks', 'done').length > 0 && applied.hooks?.ok !== false;
  const done = [
    ...(is('stop-agent', 'done').some((o) => (o.stopped ?? []).length > 0) ? ['the running agent is stopped'] : []),
    ...(hooksGone ? ['the managed hooks are removed'] : []),
    ...(is('remove', 'done').length > 0 ? [`${plan.unitFile} is removed`] : []),
  ];
  const manager = is('run', 'failed', 'skipped').map((o) => (o.step as Extract<Step, { kind: 'run' }>).argv);
  const agent = is('stop-agent', 'failed')[0]?.error;
  const notDone = [
    ...(manager.length > 0 ? [`${plan.manager} did not do its part (${manager.map(managerStep).join(', ')})`] : []),
    ...(agent === undefined
      ? []
      : ['the managed hooks were left in place: the agent still runs and would put them back']),
    ...(applied.hooks?.ok === false ? ['some harnesses keep their managed hook (listed above as left untouched)'] : []),
    ...(is('remove', 'failed').length > 0 ? [`${plan.unitFile} was not removed`] : []),
    ...(is('remove-hooks', 'failed').length > 0 ? ['the managed hooks were not removed'] : []),
  ];
  const lines = [...(done.length === 0 ? [] : [`Done: ${done.join('; ')}.`]), `Not done: ${notDone.join('; ')}.`];
  if (manager.length > 0) {
    // With the unit file gone, `disable` has nothing to read: stopping the service is what is left to ask.
    const unitGone = is('remove', 'done').length > 0;
    const commands = manager.map((argv) =>
      unitGone && plan.manager === 'systemd' && argv.includes('disable')
        ? ['systemctl', '--user', 'stop', SYSTEMD_UNIT_NAME]
        : argv,
    );
    lines.push(
      `hint: where ${plan.manager} can be reached (your login session at the machine), finish with: ` +
        `${commands.map((argv) => argv.map(quoteWord).join(' ')).join(' && ')}`,
    );
  }
  if (agent?.hint !== undefined) lines.push(`hint: ${agent.hint}`);
  if (applied.hooks?.ok === false) lines.push('hint: fix what each harness left untouched names, then run this again.');
  return `${lines.join('\n')}\n`;
}

function outcomeJson(outcome: StepOutcome): Record<string, unknown> {
  const { step } = outcome;
  const what: Record<string, unknown> =
    step.kind === 'run'
      ? { step: 'run', command: step.argv }
      : step.kind === 'remove' || step.kind === 'write'
        ? { step: step.kind, file: step.file }
        : step.kind === 'mkdir'
          ? { step: 'mkdir', dir: step.dir }
          : step.kind === 'stop-agent'
            ? {
                step: 'stop-agent',
                running: step.running === undefined ? null : { pid: step.running.pid, host: step.running.host },
                stopped: (outcome.stopped ?? []).map((a) => ({ pid: a.pid, host: a.host })),
              }
            : { step: step.kind };
  return {
    ...what,
    status: outcome.status,
    ...(outcome.detail === undefined ? {} : { detail: outcome.detail }),
    ...(outcome.error === undefined
      ? {}
      : {
          error: {
            code: outcome.error.code,
            message: outcome.error.message,
            ...(outcome.error.hint === undefined ? {} : { hint: outcome.error.hint }),
          },
        }),
  };
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
