/**
 * Applying an uninstall plan: every step it can, whatever the service manager answers. The unit file, its enable link
 * and the managed hooks are files blue-agent removes itself; a manager that cannot be reached (no user manager in this
 * session, no systemctl) is reported beside what was done, never a reason to leave the hooks in place. What does
 * stop the hooks' removal is an agent that still runs and cannot be stopped: it would put them back.
 */
import type { Context } from '../context.js';
import { stopAgentAndHold, type RunningAgent } from '../daemon/stop.js';
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import type { ResolvedPolicy } from '../policy/index.js';
import { reconcile, type ReconcileReport } from '../reconcile/index.js';
import { removeFileIfUnchanged } from '@blue-agent/contract/util/fs.js';
import { removeOurLink } from './install.js';
import { runCommand, systemdAvailability, unreachable as cannotReach, type ManagerFailure } from './manager.js';
import type { ServicePlan, Step } from './plan.js';

/** What became of one step: done, failed (with why), or skipped (with why: an earlier step's failure). */
export interface StepOutcome {
  step: Step;
  /** not_needed: the manager cannot be running anything here (systemd does not run this machine). */
  status: 'done' | 'failed' | 'skipped' | 'not_needed' | 'planned';
  /** Why it failed or was skipped; for a done step, what it did beyond the plan (a link also removed). */
  detail?: string;
  error?: BlueError;
  /** stop-agent: the agents it stopped. */
  stopped?: RunningAgent[];
}

export interface UninstallResult {
  commands: string[][];
  outcomes: StepOutcome[];
  hooks?: ReconcileReport;
  /** Every step done (and the hooks' removal, when asked, went through for every harness). */
  ok: boolean;
}

/**
 * What `--remove-hooks` reconciles against: a policy without session_upload, so every harness's desired hook is none
 * and reconcile removes exactly the entries its ledger and signature say are ours. No policy is read or fetched: the
 * removal works offline and whatever the organisation's policy says.
 */
const NO_CAPTURE: ResolvedPolicy = {
  policy: { revision: 'none' },
  source: 'file',
  location: '(none: blue-agent service uninstall --remove-hooks)',
  revision: 'none',
  stale: false,
  warnings: [],
};

const NO_SYSTEMD = 'systemd does not run this machine, so no user manager runs the service';

export async function applyUninstall(
  ctx: Context,
  plan: ServicePlan,
  options: { dryRun: boolean },
): Promise<UninstallResult> {
  const result: UninstallResult = { commands: [], outcomes: [], ok: true };
  /** Set once the manager could not be reached: its later commands are skipped, not tried in vain. */
  let unreachable: { failure: ManagerFailure; moot: boolean } | undefined;
  let agentLock: { release(): Promise<void> } | undefined;
  let agentError: BlueError | undefined;
  const record = (outcome: StepOutcome): void => {
    result.outcomes.push(outcome);
    if (outcome.status === 'failed' || outcome.status === 'skipped') result.ok = false;
  };
  try {
    for (const step of plan.steps) {
      if (step.kind === 'run') result.commands.push(step.argv);
      if (options.dryRun) {
        if (step.kind === 'remove-hooks') result.hooks = await reconcile(ctx, { dryRun: true, policy: NO_CAPTURE });
        record({ step, status: 'planned' });
        continue;
      }
      switch (step.kind) {
        case 'run': {
          if (unreachable !== undefined) {
            record({
              step,
              status: unreachable.moot ? 'not_needed' : 'skipped',
              detail: unreachable.moot
                ? NO_SYSTEMD
                : `${step.argv[0]} could not be reached: ${unreachable.failure.message}`,
            });
            break;
          }
          const failure = await runCommand(ctx, step.argv);
          if (failure === undefined) record({ step, status: 'done' });
          else if (cannotReach(failure)) {
            // Without systemd on this machine, no user manager runs anything: there is nothing for it to stop.
            const moot =
              failure.argv[0] === 'systemctl' &&
              failure.spawnError === undefined &&
              (await systemdAvailability(ctx)) === 'no_systemd';
            unreachable = { failure, moot };
            record({
              step,
              status: moot ? 'not_needed' : 'failed',
              detail: moot ? `${NO_SYSTEMD} (${failure.message})` : failure.message,
            });
          } else record({ step, status: 'failed', detail: failure.message });
          break;
        }
        case 'stop-agent':
          try {
            const held = await stopAgentAndHold(ctx.paths.runLockFile, {
              why: 'the managed hooks were left in place (it would put them back)',
            });
            agentLock = held.lock;
            record({ step, status: 'done', stopped: held.stopped });
          } catch (error) {
            agentError = toBlueError(error);
            record({ step, status: 'failed', detail: agentError.message, error: agentError });
          }
          break;
        case 'remove-hooks':
          if (agentError !== undefined) {
            record({ step, status: 'skipped', detail: agentError.message });
            break;
          }
          try {
            result.hooks = await reconcile(ctx, { dryRun: false, policy: NO_CAPTURE });
            record({ step, status: 'done' });
            if (!result.hooks.ok) result.ok = false;
          } catch (error) {
            const blue = toBlueError(error);
            record({ step, status: 'failed', detail: blue.message, error: blue });
          }
          break;
        case 'remove':
          try {
            await removeFileIfUnchanged(step.file, step.before);
            // The enable link, which `disable` removes: left behind when it could not run.
            const link = plan.enableLink;
            const removedLink = link !== undefined && (await removeOurLink(link.file, plan.unitFile));
            record({ step, status: 'done', ...(removedLink ? { detail: `also removed ${link.file}` } : {}) });
          } catch (error) {
            const blue = toBlueError(error, { action: 'remove the service unit', file: step.file });
            record({ step, status: 'failed', detail: blue.message, error: blue });
          }
          break;
        default:
          throw new BlueError('INTERNAL', `an uninstall plan has no ${step.kind} step`);
      }
    }
  } finally {
    // Held while the hooks went: no agent started meanwhile. One started from now on applies its policy again.
    await agentLock?.release();
  }
  return result;
}
