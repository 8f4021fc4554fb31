/**
 * The user service that runs `blue-agent run`: a systemd user unit on Linux, a LaunchAgent on macOS.
 *
 * Plan, then apply the same plan: `planInstall` / `planUninstall` read the unit file (and, for launchd, whether the
 * agent is loaded) and return the exact steps — file writes and removals, service-manager commands — that
 * install.ts and uninstall.ts then carry out and `--dry-run` prints. Rendering the unit is pure (systemd.ts,
 * launchd.ts). A failed install undoes what it did; an uninstall does every step it can, whatever the manager says.
 */
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { ReconcileReport } from '../reconcile/index.js';
import { readTextIfExists } from '@blue-agent/contract/util/fs.js';
import type { RunResult } from '@blue-agent/contract/util/process.js';
import { applyInstall } from './install.js';
import {
  firstLines,
  launchdAvailability,
  launchdTarget,
  runQuery,
  systemdAvailability,
  type Availability,
} from './manager.js';
import {
  isOurs,
  planInstall,
  planUninstall,
  renderUnit,
  serviceManager,
  unitFilePath,
  type ServicePlan,
} from './plan.js';
import { SYSTEMD_UNIT_NAME } from './systemd.js';
import { applyUninstall, type StepOutcome } from './uninstall.js';

export { LAUNCHD_LABEL } from './spec.js';
export { SYSTEMD_UNIT_NAME } from './systemd.js';
export { quoteWord, unavailableReason, type Availability } from './manager.js';
export {
  checkAgentConfig,
  configWarning,
  planInstall,
  planUninstall,
  renderUnit,
  serviceManager,
  unitFilePath,
  type FileAction,
  type ServiceManager,
  type ServicePlan,
  type Step,
} from './plan.js';
export type { StepOutcome } from './uninstall.js';

export interface ServiceState {
  manager: 'systemd' | 'launchd' | 'none';
  unitFile: string | undefined;
  installed: boolean;
  ours: boolean;
  current: boolean;
  enabled: boolean | undefined;
  active: boolean | undefined;
  /** Whether this session has a manager that can run the agent (undefined: no supported manager on this platform). */
  availability?: Availability | undefined;
  detail: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Apply

export interface AppliedPlan {
  plan: ServicePlan;
  dryRun: boolean;
  /** The commands run (or, on a dry run, that would run), in order. */
  commands: string[][];
  /** The reconcile that removed the managed hooks (`--remove-hooks`). */
  hooks?: ReconcileReport;
  /** Uninstall: what became of each step. */
  outcomes?: StepOutcome[];
  /** Every step done; an install that fails throws instead. */
  ok: boolean;
}

/**
 * Installs (or, dry, shows) the service. An agent config that does not validate refuses a real install: the agent
 * would exit at start and the service manager restart it in vain. There is no override; fix the file first. A step
 * that fails undoes the ones before it: nothing is left installed.
 */
export async function serviceInstall(ctx: Context, options: { dryRun: boolean }): Promise<AppliedPlan> {
  const plan = await planInstall(ctx);
  const bad = plan.configError;
  if (bad !== undefined && !options.dryRun) {
    throw new BlueError('CONFIG_INVALID', `${bad.message}: the service would fail at start, so it is not installed`, {
      ...(bad.file === undefined ? {} : { file: bad.file }),
      ...(bad.line === undefined ? {} : { line: bad.line }),
      ...(bad.column === undefined ? {} : { column: bad.column }),
      hint: `${bad.hint ?? `Fix ${ctx.paths.configFile}.`} Then run \`blue-agent service install\` again.`,
    });
  }
  const { commands } = await applyInstall(ctx, plan, options);
  return { plan, dryRun: options.dryRun, commands, ok: true };
}

/**
 * Stops and removes the service and, with `removeHooks`, the agent that runs and the managed hooks: every step it
 * can, reported one by one (`ok` is false when one failed or was skipped).
 */
export async function serviceUninstall(
  ctx: Context,
  options: { dryRun: boolean; removeHooks?: boolean },
): Promise<AppliedPlan> {
  const plan = await planUninstall(ctx, options.removeHooks === true ? { removeHooks: true } : {});
  const applied = await applyUninstall(ctx, plan, { dryRun: options.dryRun });
  return {
    plan,
    dryRun: options.dryRun,
    commands: applied.commands,
    outcomes: applied.outcomes,
    ok: applied.ok,
    ...(applied.hooks === undefined ? {} : { hooks: applied.hooks }),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Status

export async function serviceStatus(ctx: Context): Promise<ServiceState> {
  const manager = serviceManager(ctx);
  const unitFile = unitFilePath(ctx);
  if (manager === 'none' || unitFile === undefined) {
    return {
      manager: 'none',
      unitFile: undefined,
      installed: false,
      ours: false,
      current: false,
      enabled: undefined,
      active: undefined,
      availability: undefined,
      detail: `no supported service manager on ${ctx.platform}`,
    };
  }
  const asked = manager === 'systemd' ? await askSystemd(ctx) : await askLaunchd(ctx);
  const text = await readTextIfExists(unitFile);
  const installed = text !== null;
  const ours = text !== null && isOurs(ctx, text);
  let current = false;
  const notes: string[] = [];
  if (text === null)
    notes.push(asked.availability === 'available' ? 'not installed (`blue-agent service install`)' : 'not installed');
  else if (!ours) notes.push(`${unitFile} was not written by blue-agent`);
  else {
    try {
      current = text === renderUnit(ctx);
    } catch (error) {
      notes.push(error instanceof Error ? error.message : String(error));
    }
    notes.push(
      current
        ? 'installed and current'
        : 'installed, but not what `blue-agent service install` would write now (run it again)',
    );
  }
  notes.push(...asked.notes);
  return {
    manager,
    unitFile,
    installed,
    ours,
    current,
    enabled: asked.enabled,
    active: asked.active,
    availability: asked.availability,
    detail: notes.join('; '),
  };
}

interface ManagerAnswer {
  enabled: boolean | undefined;
  active: boolean | undefined;
  availability: Availability;
  notes: string[];
}

const AVAILABILITY_NOTES: Partial<Record<Availability, string>> = {
  no_systemd: 'systemd does not run this machine',
  no_user_manager: 'no systemd user manager in this session',
  no_gui_session: 'no GUI login session for this user',
};

async function askSystemd(ctx: Context): Promise<ManagerAnswer> {
  const [isEnabled, isActive] = await Promise.all([
    runQuery(ctx, ['systemctl', '--user', 'is-enabled', SYSTEMD_UNIT_NAME]),
    runQuery(ctx, ['systemctl', '--user', 'is-active', SYSTEMD_UNIT_NAME]),
  ]);
  if (isEnabled.spawnError !== undefined) {
    return {
      enabled: undefined,
      active: undefined,
      availability: 'no_manager_command',
      notes: [`systemctl could not be run (${isEnabled.spawnError})`],
    };
  }
  // An unknown unit: older systemctl says so on stderr only, newer ones print `not-found`.
  const e = answer(isEnabled) || (/No such file or directory|not found/i.test(isEnabled.stderr) ? 'not-found' : '');
  const a = answer(isActive);
  // systemctl prints the state on stdout; an error (no user manager) goes to stderr with an empty stdout.
  // is-enabled reads unit files and may answer without a manager; is-active needs the manager itself.
  const enabled = e === '' ? undefined : e === 'enabled' || e === 'enabled-runtime';
  const active = a === '' ? undefined : a === 'active' || a === 'reloading';
  if (e !== '' && a !== '') return { enabled, active, availability: 'available', notes: [`${e}, ${a}`] };
  const availability = a !== '' ? 'available' : await systemdAvailability(ctx);
  const why = AVAILABILITY_NOTES[availability];
  return {
    enabled,
    active,
    availability,
    notes: [
      `systemctl --user could not answer: ${firstLines(isActive.stderr || isEnabled.stderr) || 'no output'}` +
        `${why === undefined ? '' : ` (${why})`}`,
    ],
  };
}

async function askLaunchd(ctx: Context): Promise<ManagerAnswer> {
  const printed = await runQuery(ctx, ['launchctl', 'print', launchdTarget()]);
  if (printed.spawnError !== undefined || printed.timedOut) {
    const availability = printed.spawnError === undefined ? 'unknown' : 'no_manager_command';
    return {
      enabled: undefined,
      active: undefined,
      availability,
      notes: [`launchctl could not be asked (${printed.spawnError ?? 'timed out'})`],
    };
  }
  if (printed.exitCode === 0) {
    const state = /^\s*state = (.+)$/m.exec(printed.stdout)?.[1]?.trim();
    return {
      enabled: true,
      active: state === 'running',
      availability: 'available',
      notes: [`loaded, ${state ?? 'state unknown'}`],
    };
  }
  // Not loaded: is there a GUI session to load it into at all?
  const availability = await launchdAvailability(ctx);
  const why = AVAILABILITY_NOTES[availability];
  return { enabled: false, active: false, availability, notes: [`not loaded${why === undefined ? '' : ` (${why})`}`] };
}

function answer(result: RunResult): string {
  return result.stdout.trim().split('\n')[0]?.trim() ?? '';
}

/** The service state as `service status --json` and `status --json` print it (snake_case, null when unknown). */
export function serviceStateJson(state: ServiceState): Record<string, unknown> {
  return {
    manager: state.manager,
    unit_file: state.unitFile ?? null,
    installed: state.installed,
    ours: state.ours,
    current: state.current,
    enabled: state.enabled ?? null,
    active: state.active ?? null,
    availability: state.availability ?? null,
    detail: state.detail,
  };
}
