/**
 * The user service that runs `blue-agent run`: a systemd user unit on Linux, a LaunchAgent on macOS.
 *
 * Plan, then apply the same plan: `planInstall` / `planUninstall` read the unit file (and, for launchd, whether the
 * agent is loaded) and return the exact steps — file writes and removals, service-manager commands — that
 * `applyPlan` then carries out and `--dry-run` prints. Rendering the unit is pure (systemd.ts, launchd.ts).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { validDrainSchedule } from '../daemon/drains.js';
import { BlueError, toBlueError } from '../errors.js';
import type { ResolvedPolicy } from '../policy/index.js';
import { reconcile, type ReconcileReport } from '../reconcile/index.js';
import { ensurePrivateDir, readTextIfExists, removeFileIfUnchanged, replaceFileAtomically } from '../util/fs.js';
import type { RunResult } from '../util/process.js';
import { isOurPlist, renderLaunchdPlist } from './launchd.js';
import { LAUNCHD_LABEL, MARKER, serviceSpec } from './spec.js';
import { isOurSystemdUnit, renderSystemdUnit, SYSTEMD_UNIT_NAME } from './systemd.js';

export { LAUNCHD_LABEL } from './spec.js';
export { SYSTEMD_UNIT_NAME } from './systemd.js';

export type ServiceManager = 'systemd' | 'launchd' | 'none';

export interface ServiceState {
  manager: 'systemd' | 'launchd' | 'none';
  unitFile: string | undefined;
  installed: boolean;
  ours: boolean;
  current: boolean;
  enabled: boolean | undefined;
  active: boolean | undefined;
  detail: string;
}

/** Mutating service-manager commands: starting a service may take a moment. */
const COMMAND_TIMEOUT_MS = 30_000;
/** Read-only queries (status, is-enabled, print). */
const QUERY_TIMEOUT_MS = 10_000;

export function serviceManager(ctx: Context): ServiceManager {
  if (ctx.platform === 'linux') return 'systemd';
  if (ctx.platform === 'darwin') return 'launchd';
  return 'none';
}

/** Where the unit lives: `$XDG_CONFIG_HOME/systemd/user/blue-agent.service` or `~/Library/LaunchAgents/<label>.plist`. */
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

function isOurs(ctx: Context, text: string): boolean {
  return serviceManager(ctx) === 'launchd' ? isOurPlist(text) : isOurSystemdUnit(text);
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

function uid(): number {
  return process.getuid?.() ?? 0;
}

const launchdDomain = (): string => `gui/${uid()}`;
const launchdTarget = (): string => `${launchdDomain()}/${LAUNCHD_LABEL}`;

// ---------------------------------------------------------------------------------------------------------------
// Plans

export type Step =
  | { kind: 'mkdir'; dir: string }
  | { kind: 'write'; file: string; content: string; before: string | null }
  | { kind: 'remove'; file: string; before: string }
  | { kind: 'run'; argv: string[] }
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
      return new BlueError('CONFIG_INVALID', `${file}: drain_schedule "${schedule.slice(0, 100)}" is not a valid cron expression`, {
        file,
        hint: 'Use five fields (minute hour day month weekday), e.g. "*/5 * * * *" for every 5 minutes, or six with seconds first.',
      });
    }
    return undefined;
  } catch (error) {
    return toBlueError(error);
  }
}

/** The warning a dry run prints (stderr, and a `notes` entry in --json) when the agent config does not validate. */
export function configWarning(error: BlueError): string {
  return `the agent config does not validate, so the service would fail at start: ${error.message}${error.hint === undefined ? '' : ` (${error.hint.replace(/\.$/, '')})`}`;
}

function requireManager(ctx: Context): { manager: Exclude<ServiceManager, 'none'>; unitFile: string } {
  const manager = serviceManager(ctx);
  const unitFile = unitFilePath(ctx);
  if (manager === 'none' || unitFile === undefined) {
    throw new BlueError('SERVICE_UNSUPPORTED', `blue-agent can install its service with systemd (Linux) or launchd (macOS), not on ${ctx.platform}`, {
      hint: 'Start `blue-agent run` with this system\'s own service manager or autostart mechanism.',
    });
  }
  return { manager, unitFile };
}

function foreignUnit(ctx: Context, file: string, verb: 'install' | 'uninstall'): BlueError {
  const manager = serviceManager(ctx);
  const how =
    verb === 'install'
      ? 'Move it aside (or remove it, if it is an old unit you wrote yourself), then run `blue-agent service install` again.'
      : manager === 'launchd'
        ? `blue-agent leaves it alone; unload and remove it yourself: launchctl bootout ${launchdTarget()} && rm ${quoteWord(file)}`
        : `blue-agent leaves it alone; stop and remove it yourself: systemctl --user disable --now ${SYSTEMD_UNIT_NAME} && rm ${quoteWord(file)}`;
  return new BlueError('SERVICE_CONFLICT', `${file} exists but was not written by blue-agent (it lacks the "${MARKER}" marker), so it is not ${verb === 'install' ? 'overwritten' : 'removed'}`, {
    file,
    hint: how,
  });
}

export async function planInstall(ctx: Context): Promise<ServicePlan> {
  const { manager, unitFile } = requireManager(ctx);
  const content = renderUnit(ctx);
  const before = await readTextIfExists(unitFile);
  if (before !== null && !isOurs(ctx, before)) throw foreignUnit(ctx, unitFile, 'install');
  const file: FileAction = before === null ? 'create' : before === content ? 'unchanged' : 'update';
  const steps: Step[] = [];
  const notes: string[] = [];
  if (manager === 'systemd') {
    if (file !== 'unchanged') steps.push({ kind: 'write', file: unitFile, content, before });
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
    if (!(await exists(logDir))) steps.push({ kind: 'mkdir', dir: logDir });
    if (file !== 'unchanged') steps.push({ kind: 'write', file: unitFile, content, before });
    const loaded = await launchdLoaded(ctx);
    if (loaded === undefined) notes.push(`could not ask launchctl whether ${LAUNCHD_LABEL} is loaded; assuming it is not`);
    // enable undoes an earlier `launchctl disable`, without which bootstrap is refused.
    const enable = ['launchctl', 'enable', launchdTarget()];
    if (loaded === true && file === 'unchanged') {
      steps.push({ kind: 'run', argv: enable }, { kind: 'run', argv: ['launchctl', 'kickstart', launchdTarget()] });
    } else {
      if (loaded === true) steps.push({ kind: 'run', argv: ['launchctl', 'bootout', launchdTarget()] });
      steps.push({ kind: 'run', argv: enable }, { kind: 'run', argv: ['launchctl', 'bootstrap', launchdDomain(), unitFile] });
    }
  }
  const configError = await checkAgentConfig(ctx);
  return { action: 'install', manager, unitFile, content, file, steps, notes, ...(configError === undefined ? {} : { configError }) };
}

export async function planUninstall(ctx: Context, options: { removeHooks?: boolean } = {}): Promise<ServicePlan> {
  const { manager, unitFile } = requireManager(ctx);
  const before = await readTextIfExists(unitFile);
  if (before !== null && !isOurs(ctx, before)) throw foreignUnit(ctx, unitFile, 'uninstall');
  const steps: Step[] = [];
  const notes: string[] = [];
  // The service stops before the hooks go: a running agent would put them back.
  if (manager === 'systemd') {
    if (before !== null) {
      steps.push({ kind: 'run', argv: ['systemctl', '--user', 'disable', '--now', SYSTEMD_UNIT_NAME] });
      if (options.removeHooks === true) steps.push({ kind: 'remove-hooks' });
      steps.push({ kind: 'remove', file: unitFile, before });
      steps.push({ kind: 'run', argv: ['systemctl', '--user', 'daemon-reload'] });
    } else if (options.removeHooks === true) {
      steps.push({ kind: 'remove-hooks' });
    }
  } else {
    const loaded = await launchdLoaded(ctx);
    if (loaded === undefined) notes.push(`could not ask launchctl whether ${LAUNCHD_LABEL} is loaded; assuming it is not`);
    if (loaded === true) steps.push({ kind: 'run', argv: ['launchctl', 'bootout', launchdTarget()] });
    if (options.removeHooks === true) steps.push({ kind: 'remove-hooks' });
    if (before !== null) steps.push({ kind: 'remove', file: unitFile, before });
  }
  return { action: 'uninstall', manager, unitFile, file: before === null ? 'absent' : 'remove', steps, notes };
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
}

/** A failed file step, named by the unit's path rather than the temporary beside it. */
function named(action: string, file: string): (error: unknown) => never {
  return (error) => {
    throw toBlueError(error, { action, file });
  };
}

export async function applyPlan(ctx: Context, plan: ServicePlan, options: { dryRun: boolean }): Promise<AppliedPlan> {
  const result: AppliedPlan = { plan, dryRun: options.dryRun, commands: [] };
  for (const step of plan.steps) {
    switch (step.kind) {
      case 'mkdir':
        if (!options.dryRun) await ensurePrivateDir(step.dir).catch(named('create the folder', step.dir));
        break;
      case 'write':
        if (!options.dryRun) {
          await replaceFileAtomically(step.file, step.content, {
            expected: step.before,
            newFileMode: 0o644,
            verify: (text) => {
              if (!isOurs(ctx, text)) throw new BlueError('WRITE_VERIFY_FAILED', `${step.file} does not hold the unit blue-agent wrote`, { file: step.file });
            },
          }).catch(named('write the service unit', step.file));
        }
        break;
      case 'remove':
        if (!options.dryRun) await removeFileIfUnchanged(step.file, step.before).catch(named('remove the service unit', step.file));
        break;
      case 'run':
        result.commands.push(step.argv);
        if (!options.dryRun) await runManager(ctx, plan, step.argv);
        break;
      case 'remove-hooks':
        result.hooks = await reconcile(ctx, { dryRun: options.dryRun, policy: NO_CAPTURE });
        break;
    }
  }
  return result;
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

/**
 * Installs (or, dry, shows) the service. An agent config that does not validate refuses a real install: the agent
 * would exit at start and the service manager restart it in vain. There is no override; fix the file first.
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
  return applyPlan(ctx, plan, options);
}

export async function serviceUninstall(ctx: Context, options: { dryRun: boolean; removeHooks?: boolean }): Promise<AppliedPlan> {
  return applyPlan(ctx, await planUninstall(ctx, options.removeHooks === true ? { removeHooks: true } : {}), options);
}

async function run(ctx: Context, argv: readonly string[], timeoutMs: number): Promise<RunResult> {
  return ctx.run(argv[0]!, argv.slice(1), { timeoutMs, env: ctx.env, maxOutputBytes: 256 * 1024 });
}

/** Runs a mutating command; any failure is a SERVICE_FAILED that says how to finish by hand. */
async function runManager(ctx: Context, plan: ServicePlan, argv: readonly string[]): Promise<void> {
  const result = await run(ctx, argv, COMMAND_TIMEOUT_MS);
  if (result.exitCode === 0) return;
  const shown = argv.map(quoteWord).join(' ');
  const manual = manualSteps(plan);
  if (result.spawnError !== undefined) {
    throw new BlueError('SERVICE_FAILED', `${argv[0]} could not be run (${result.spawnError}), so \`${shown}\` did not happen`, {
      hint: `${argv[0] === 'systemctl' ? 'This machine has no systemd on PATH.' : 'launchctl is not on PATH.'} ${manual}`,
    });
  }
  const why = result.timedOut ? `did not finish within ${COMMAND_TIMEOUT_MS / 1000} s` : `failed (exit ${result.exitCode})`;
  const said = firstLines(result.stderr || result.stdout);
  const noBus = argv[0] === 'systemctl' && /Failed to connect to (user scope )?bus|DBUS_SESSION_BUS_ADDRESS|XDG_RUNTIME_DIR/i.test(said);
  throw new BlueError('SERVICE_FAILED', `\`${shown}\` ${why}${said === '' ? '' : `: ${said}`}`, {
    hint: noBus
      ? `There is no systemd user manager in this session (a container, or a remote login without lingering): \`loginctl enable-linger $USER\`, log in again, and run the command again. ${manual}`
      : manual,
  });
}

function manualSteps(plan: ServicePlan): string {
  const words: string[] = [];
  for (const step of plan.steps) {
    if (step.kind === 'run') words.push(step.argv.map(quoteWord).join(' '));
    else if (step.kind === 'remove') words.push(`rm ${quoteWord(step.file)}`);
  }
  const head = plan.action === 'install' ? `The unit file is ${plan.unitFile}. ` : '';
  const hooks = plan.steps.some((s) => s.kind === 'remove-hooks') ? '; then run `blue-agent service uninstall --remove-hooks` again for the hooks' : '';
  return `${head}To finish by hand, run: ${words.join(' && ')}${hooks}`;
}

function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 3).join(' ').replace(/\s+/g, ' ').slice(0, 500);
}

/** True when launchd has the agent loaded, false when it does not, undefined when launchctl cannot be asked. */
async function launchdLoaded(ctx: Context): Promise<boolean | undefined> {
  const result = await run(ctx, ['launchctl', 'print', launchdTarget()], QUERY_TIMEOUT_MS);
  if (result.spawnError !== undefined || result.timedOut) return undefined;
  return result.exitCode === 0;
}

/** A command as a person would type it in a POSIX shell. */
export function quoteWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
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
      detail: `no supported service manager on ${ctx.platform}`,
    };
  }
  const text = await readTextIfExists(unitFile);
  const installed = text !== null;
  const ours = text !== null && isOurs(ctx, text);
  let current = false;
  const notes: string[] = [];
  if (text === null) notes.push('not installed (`blue-agent service install`)');
  else if (!ours) notes.push(`${unitFile} was not written by blue-agent`);
  else {
    try {
      current = text === renderUnit(ctx);
    } catch (error) {
      notes.push(error instanceof Error ? error.message : String(error));
    }
    notes.push(current ? 'installed and current' : 'installed, but not what `blue-agent service install` would write now (run it again)');
  }

  let enabled: boolean | undefined;
  let active: boolean | undefined;
  if (manager === 'systemd') {
    const [isEnabled, isActive] = await Promise.all([
      run(ctx, ['systemctl', '--user', 'is-enabled', SYSTEMD_UNIT_NAME], QUERY_TIMEOUT_MS),
      run(ctx, ['systemctl', '--user', 'is-active', SYSTEMD_UNIT_NAME], QUERY_TIMEOUT_MS),
    ]);
    if (isEnabled.spawnError !== undefined) {
      notes.push(`systemctl could not be run (${isEnabled.spawnError})`);
    } else {
      // An unknown unit: older systemctl says so on stderr only, newer ones print `not-found`.
      const e = answer(isEnabled) || (/No such file or directory|not found/i.test(isEnabled.stderr) ? 'not-found' : '');
      const a = answer(isActive);
      // systemctl prints the state on stdout; an error (no user manager) goes to stderr with an empty stdout.
      if (e !== '') enabled = e === 'enabled' || e === 'enabled-runtime';
      if (a !== '') active = a === 'active' || a === 'reloading';
      if (e === '' || a === '') notes.push(`systemctl --user could not answer: ${firstLines(isEnabled.stderr || isActive.stderr) || 'no output'}`);
      else notes.push(`${e}, ${a}`);
    }
  } else {
    const printed = await run(ctx, ['launchctl', 'print', launchdTarget()], QUERY_TIMEOUT_MS);
    if (printed.spawnError !== undefined || printed.timedOut) {
      notes.push(`launchctl could not be asked (${printed.spawnError ?? 'timed out'})`);
    } else if (printed.exitCode === 0) {
      enabled = true;
      const state = /^\s*state = (.+)$/m.exec(printed.stdout)?.[1]?.trim();
      active = state === 'running';
      notes.push(`loaded, ${state ?? 'state unknown'}`);
    } else {
      enabled = false;
      active = false;
      notes.push('not loaded');
    }
  }
  return { manager, unitFile, installed, ours, current, enabled, active, detail: notes.join('; ') };
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
    detail: state.detail,
  };
}
