/**
 * The service's plans: what `service install` and `service uninstall` will do, step by step, read from the unit file
 * and the service manager and nothing else. `--dry-run` prints a plan; install.ts and uninstall.ts apply it.
 */
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { validDrainSchedule } from '../daemon/drains.js';
import { runningAgent, type RunningAgent } from '../daemon/stop.js';
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import { readTextIfExists } from '@blue-agent/contract/util/fs.js';
import { isOurPlist, renderLaunchdPlist } from './launchd.js';
import { launchdDomain, launchdLoaded, launchdTarget, quoteWord } from './manager.js';
import { LAUNCHD_LABEL, MARKER, serviceSpec } from './spec.js';
import { isOurSystemdUnit, renderSystemdUnit, SYSTEMD_UNIT_NAME } from './systemd.js';

export type ServiceManager = 'systemd' | 'launchd' | 'none';

export function serviceManager(ctx: Context): ServiceManager {
  if (ctx.platform === 'linux') return 'systemd';
  if (ctx.platform === 'darwin') return 'launchd';
  return 'none';
}

/** Where the unit lives: `$XDG_CONFIG_HOME/systemd/user/blue-agent.service` or `~/Library/LaunchAgents/<label>.plist`.
 * */
export function unitFilePath(ctx: Context): string | undefined {
  switch (serviceManager(ctx)) {
    case 'systemd':
      return path.join(ctx.paths.configHome, 'systemd', 'user', SYSTEMD_UNIT_NAME);
    case 'launchd':
      return path.join(ctx.paths.home, 'Library', 'LaunchAgents', `${LAUNCHD_LABEL}.plist`);
    case 'none':
      return undefined;
  }
}

/** The unit text `service install` would write now. */
export function renderUnit(ctx: Context): string {
  const spec = serviceSpec(ctx);
  return serviceManager(ctx) === 'launchd' ? renderLaunchdPlist(spec) : renderSystemdUnit(spec);
}

export function isOurs(ctx: Context, text: string): boolean {
  return serviceManager(ctx) === 'launchd' ? isOurPlist(text) : isOurSystemdUnit(text);
}

// ---------------------------------------------------------------------------------------------------------------
// Plans

export type Step =
  /** `created`: the folders it makes, innermost first (a failed install removes them again when empty). */
  | { kind: 'mkdir'; dir: string; created: string[] }
  | { kind: 'write'; file: string; content: string; before: string | null; created: string[] }
  | { kind: 'remove'; file: string; before: string }
  | { kind: 'run'; argv: string[] }
  /** Stop the agent that runs (found by its instance lock; `running` as seen when planned) and hold its lock. */
  | { kind: 'stop-agent'; running: RunningAgent | undefined }
  | { kind: 'remove-hooks' };

export type FileAction = 'create' | 'update' | 'unchanged' | 'remove' | 'absent';

export interface ServicePlan {
  action: 'install' | 'uninstall';
  manager: Exclude<ServiceManager, 'none'>;
  unitFile: string;
  /** The unit as rendered now (install only). */
  content?: string;
  file: FileAction;
  steps: Step[];
  /** Remarks for a person: why a step is missing, what was found. */
  notes: string[];
  /**
   * systemd: the link `enable` makes for the unit (WantedBy=default.target), and whether it was there before: a failed
   * install that made it removes it, and uninstall removes it when `disable` could not.
   */
  enableLink?: { file: string; existed: boolean };
  /**
   * Install only: why the agent config does not validate (file, line and column when it does not parse). The service
   * would fail at start: a real install is refused, a dry run warns.
   */
  configError?: BlueError;
}

/**
 * The agent config as `blue-agent run` reads it at start (the unit passes the same BLUE_AGENT_CONFIG): undefined when
 * it loads, else the error that would stop the agent.
 */
export async function checkAgentConfig(ctx: Context): Promise<BlueError | undefined> {
  try {
    const { config, file } = await loadAgentConfig(ctx);
    const schedule = config.drain_schedule;
    if (schedule !== undefined && !validDrainSchedule(schedule)) {
      return new BlueError(
        'CONFIG_INVALID',
        `${file}: drain_schedule "${schedule.slice(0, 100)}" is not a valid cron expression`,
        {
          file,
          hint:
            'Use five fields (minute hour day month weekday), e.g. "*/5 * * * *" for every 5 minutes, or six ' +
            'with seconds first.',
        },
      );
    }
    return undefined;
  } catch (error) {
    return toBlueError(error);
  }
}

/** The warning a dry run prints (stderr, and a `notes` entry in --json) when the agent config does not validate. */
export function configWarning(error: BlueError): string {
  return (
    `the agent config does not validate, so the service would fail at start: ${error.message}` +
    `${error.hint === undefined ? '' : ` (${error.hint.replace(/\.$/, '')})`}`
  );
}

function requireManager(ctx: Context): { manager: Exclude<ServiceManager, 'none'>; unitFile: string } {
  const manager = serviceManager(ctx);
  const unitFile = unitFilePath(ctx);
  if (manager === 'none' || unitFile === undefined) {
    throw new BlueError(
      'SERVICE_UNSUPPORTED',
      `blue-agent can install its service with systemd (Linux) or launchd (macOS), not on ${ctx.platform}`,
      {
        hint: "Start `blue-agent run` with this system's own service manager or autostart mechanism.",
      },
    );
  }
  return { manager, unitFile };
}

function foreignUnit(ctx: Context, file: string, verb: 'install' | 'uninstall'): BlueError {
  const manager = serviceManager(ctx);
  const how =
    verb === 'install'
      ? 'Move it aside (or remove it, if it is an old unit you wrote yourself), then run `blue-agent service ' +
        'install` again.'
      : manager === 'launchd'
        ? `blue-agent leaves it alone; unload and remove it yourself: launchctl bootout ${launchdTarget()} && rm ` +
          `${quoteWord(file)}`
        : `blue-agent leaves it alone; stop and remove it yourself: systemctl --user disable --now ` +
          `${SYSTEMD_UNIT_NAME} && rm ${quoteWord(file)}`;
  return new BlueError(
    'SERVICE_CONFLICT',
    `${file} exists but was not written by blue-agent (it lacks the "${MARKER}" marker), so it is not ` +
      `${verb === 'install' ? 'overwritten' : 'removed'}`,
    {
      file,
      hint: how,
    },
  );
}

export async function planInstall(ctx: Context): Promise<ServicePlan> {
  const { manager, unitFile } = requireManager(ctx);
  const content = renderUnit(ctx);
  const before = await readTextIfExists(unitFile);
  if (before !== null && !isOurs(ctx, before)) throw foreignUnit(ctx, unitFile, 'install');
  const file: FileAction = before === null ? 'create' : before === content ? 'unchanged' : 'update';
  const steps: Step[] = [];
  const notes: string[] = [];
  const write: Step = {
    kind: 'write',
    file: unitFile,
    content,
    before,
    created: await missingDirs(path.dirname(unitFile)),
  };
  if (manager === 'systemd') {
    if (file !== 'unchanged') steps.push(write);
    steps.push({ kind: 'run', argv: ['systemctl', '--user', 'daemon-reload'] });
    if (file === 'update') {
      // enable --now leaves a running service on its old command line: restart it onto the new unit.
      steps.push({ kind: 'run', argv: ['systemctl', '--user', 'enable', SYSTEMD_UNIT_NAME] });
      steps.push({ kind: 'run', argv: ['systemctl', '--user', 'restart', SYSTEMD_UNIT_NAME] });
    } else {
      steps.push({ kind: 'run', argv: ['systemctl', '--user', 'enable', '--now', SYSTEMD_UNIT_NAME] });
    }
  } else {
    const spec = serviceSpec(ctx);
    // launchd does not create the log files' directory.
    const logDir = path.dirname(spec.stdoutPath);
    const logDirs = await missingDirs(logDir);
    if (logDirs.length > 0) steps.push({ kind: 'mkdir', dir: logDir, created: logDirs });
    if (file !== 'unchanged') steps.push(write);
    const loaded = await launchdLoaded(ctx);
    if (loaded === undefined)
      notes.push(`could not ask launchctl whether ${LAUNCHD_LABEL} is loaded; assuming it is not`);
    // enable undoes an earlier `launchctl disable`, without which bootstrap is refused.
    const enable = ['launchctl', 'enable', launchdTarget()];
    if (loaded === true && file === 'unchanged') {
      steps.push({ kind: 'run', argv: enable }, { kind: 'run', argv: ['launchctl', 'kickstart', launchdTarget()] });
    } else {
      if (loaded === true) steps.push({ kind: 'run', argv: ['launchctl', 'bootout', launchdTarget()] });
      steps.push(
        { kind: 'run', argv: enable },
        { kind: 'run', argv: ['launchctl', 'bootstrap', launchdDomain(), unitFile] },
      );
    }
  }
  const configError = await checkAgentConfig(ctx);
  return {
    action: 'install',
    manager,
    unitFile,
    content,
    file,
    steps,
    notes,
    ...(manager === 'systemd' ? { enableLink: await enableLink(ctx, unitFile) } : {}),
    ...(configError === undefined ? {} : { configError }),
  };
}

export async function planUninstall(ctx: Context, options: { removeHooks?: boolean } = {}): Promise<ServicePlan> {
  const { manager, unitFile } = requireManager(ctx);
  const before = await readTextIfExists(unitFile);
  if (before !== null && !isOurs(ctx, before)) throw foreignUnit(ctx, unitFile, 'uninstall');
  const steps: Step[] = [];
  const notes: string[] = [];
  // The service stops before the hooks go, and so does an agent run by hand (or one the service manager could not
  // stop): a running agent would put them back.
  const hooks: Step[] =
    options.removeHooks === true
      ? [{ kind: 'stop-agent', running: await runningAgent(ctx.paths.runLockFile) }, { kind: 'remove-hooks' }]
      : [];
  if (manager === 'systemd') {
    if (before !== null) {
      steps.push({ kind: 'run', argv: ['systemctl', '--user', 'disable', '--now', SYSTEMD_UNIT_NAME] });
      steps.push(...hooks);
      steps.push({ kind: 'remove', file: unitFile, before });
      steps.push({ kind: 'run', argv: ['systemctl', '--user', 'daemon-reload'] });
    } else {
      steps.push(...hooks);
    }
  } else {
    const loaded = await launchdLoaded(ctx);
    if (loaded === undefined)
      notes.push(`could not ask launchctl whether ${LAUNCHD_LABEL} is loaded; assuming it is not`);
    if (loaded === true) steps.push({ kind: 'run', argv: ['launchctl', 'bootout', launchdTarget()] });
    steps.push(...hooks);
    if (before !== null) steps.push({ kind: 'remove', file: unitFile, before });
  }
  return {
    action: 'uninstall',
    manager,
    unitFile,
    file: before === null ? 'absent' : 'remove',
    steps,
    notes,
    ...(manager === 'systemd' ? { enableLink: await enableLink(ctx, unitFile) } : {}),
  };
}

/** The link `systemctl --user enable` makes for our unit (its WantedBy=default.target), and whether it is there. */
async function enableLink(_ctx: Context, unitFile: string): Promise<{ file: string; existed: boolean }> {
  const file = path.join(path.dirname(unitFile), 'default.target.wants', path.basename(unitFile));
  const existed = await lstat(file).then(
    () => true,
    () => false,
  );
  return { file, existed };
}

/** The folders `mkdir -p dir` would create, innermost first. */
async function missingDirs(dir: string): Promise<string[]> {
  const missing: string[] = [];
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const found = await lstat(current).then(
      () => true,
      (error: NodeJS.ErrnoException) => error.code !== 'ENOENT',
    );
    if (found || path.dirname(current) === current) return missing;
    missing.push(current);
  }
}
