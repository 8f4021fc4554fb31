/**
 * Talking to the service manager: running `systemctl --user` and `launchctl` (bounded), and telling from their answers
 * whether this session has a manager that can run the agent at all.
 */
import type { Context } from '../context.js';
import type { RunResult } from '@blue-agent/contract/util/process.js';
import { LAUNCHD_LABEL } from './label.js';
import { cronLine, serviceSpec } from './spec.js';

/** Mutating service-manager commands: starting a service may take a moment. */
export const COMMAND_TIMEOUT_MS = 30_000;
/** Read-only queries (status, is-enabled, print). */
export const QUERY_TIMEOUT_MS = 10_000;

function uid(): number {
  return process.getuid?.() ?? 0;
}

export const launchdDomain = (): string => `gui/${uid()}`;
export const launchdTarget = (): string => `${launchdDomain()}/${LAUNCHD_LABEL}`;

export async function runQuery(
  ctx: Context,
  argv: readonly string[],
  timeoutMs = QUERY_TIMEOUT_MS,
): Promise<RunResult> {
  return ctx.run(argv[0]!, argv.slice(1), { timeoutMs, env: ctx.env, maxOutputBytes: 256 * 1024 });
}

/** Why a manager command did not succeed, as a person reads it. */
export interface ManagerFailure {
  argv: readonly string[];
  /** "`systemctl --user daemon-reload` failed (exit 1): Failed to connect to bus: No medium found". */
  message: string;
  /** The command could not be started at all (not on PATH). */
  spawnError?: string;
  /** What the manager said (its first lines), empty when nothing. */
  said: string;
}

/** Runs a mutating command: undefined when it succeeded, else what went wrong. */
export async function runCommand(ctx: Context, argv: readonly string[]): Promise<ManagerFailure | undefined> {
  const result = await runQuery(ctx, argv, COMMAND_TIMEOUT_MS);
  if (result.exitCode === 0) return undefined;
  const shown = argv.map(quoteWord).join(' ');
  if (result.spawnError !== undefined) {
    return {
      argv,
      message: `${argv[0]} could not be run (${result.spawnError}), so \`${shown}\` did not happen`,
      spawnError: result.spawnError,
      said: '',
    };
  }
  const why = result.timedOut
    ? `did not finish within ${COMMAND_TIMEOUT_MS / 1000} s`
    : `failed (exit ${result.exitCode})`;
  const said = firstLines(result.stderr || result.stdout);
  return { argv, message: `\`${shown}\` ${why}${said === '' ? '' : `: ${said}`}`, said };
}

/** systemctl's words for a session without a user manager: there is no bus to reach one. */
const NO_BUS = /Failed to connect to (user scope )?bus|DBUS_SESSION_BUS_ADDRESS|XDG_RUNTIME_DIR/i;

/** The command could not reach the manager at all (not on PATH, or no bus): its next commands would not either. */
export function unreachable(failure: ManagerFailure): boolean {
  return failure.spawnError !== undefined || (failure.argv[0] === 'systemctl' && NO_BUS.test(failure.said));
}

export function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 3).join(' ').replace(/\s+/g, ' ').slice(0, 500);
}

/** True when launchd has the agent loaded, false when it does not, undefined when launchctl cannot be asked. */
export async function launchdLoaded(ctx: Context): Promise<boolean | undefined> {
  const result = await runQuery(ctx, ['launchctl', 'print', launchdTarget()]);
  if (result.spawnError !== undefined || result.timedOut) return undefined;
  return result.exitCode === 0;
}

/** A command as a person would type it in a POSIX shell. */
export function quoteWord(word: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Whether this session has a service manager that can run the agent for this user:
 *   - `available`: it answered;
 *   - `no_manager_command`: systemctl or launchctl is not on PATH;
 *   - `no_systemd`: systemd does not run this machine (a container, WSL without systemd): no user manager can exist;
 *   - `no_user_manager`: systemd runs the machine, but this session has no user manager (a login without lingering,
 *     `su`/`sudo` without a session): `loginctl enable-linger` gives it one;
 *   - `no_gui_session`: launchd has no GUI session for this user (an SSH login while nobody is logged in at the Mac),
 *     and a LaunchAgent runs only there;
 *   - `unknown`: the manager did not answer and nothing tells why.
 */
export type Availability =
  | 'available'
  | 'no_manager_command'
  | 'no_systemd'
  | 'no_user_manager'
  | 'no_gui_session'
  | 'unknown';

/** States `systemctl is-system-running` prints for a manager that runs (everything but `offline` and errors). */
const RUNNING_STATES = new Set(['running', 'degraded', 'starting', 'initializing', 'maintenance', 'stopping']);

/** Why systemd's user manager cannot be reached, asked of the system manager (read-only, one bounded query). */
export async function systemdAvailability(ctx: Context): Promise<Exclude<Availability, 'no_gui_session'>> {
  const result = await runQuery(ctx, ['systemctl', 'is-system-running']);
  if (result.spawnError !== undefined) return 'no_manager_command';
  const state = result.stdout.trim().split('\n')[0]?.trim() ?? '';
  // `offline`: systemd is not PID 1 (documented for is-system-running); older systemctls only say so on stderr.
  if (state === 'offline' || /not been booted with systemd/i.test(result.stderr)) return 'no_systemd';
  if (RUNNING_STATES.has(state)) return 'no_user_manager';
  return 'unknown';
}

/** Whether launchd has this user's GUI domain, where a LaunchAgent runs. */
export async function launchdAvailability(ctx: Context): Promise<Availability> {
  const result = await runQuery(ctx, ['launchctl', 'print', launchdDomain()]);
  if (result.spawnError !== undefined) return 'no_manager_command';
  if (result.timedOut) return 'unknown';
  return result.exitCode === 0 ? 'available' : 'no_gui_session';
}

/** What can run the agent where the service manager cannot: a sentence for a hint or a doctor's fix. */
export function foregroundAdvice(ctx: Context): string {
  const inWsl = ctx.env.WSL_DISTRO_NAME !== undefined && ctx.env.WSL_DISTRO_NAME !== '';
  const wsl = inWsl
    ? '; or turn systemd on in WSL ([boot] systemd=true in /etc/wsl.conf, then `wsl --shutdown`) and install the ' +
      'service'
    : '';
  return (
    `run the agent yourself: \`blue-agent run\` in a session that stays open (tmux or screen), or at boot ` +
    `from cron (this line in \`crontab -e\`, which gives the agent the PATH it needs to find the harnesses: \`` +
    `${cronLine(serviceSpec(ctx))}\`)${wsl}`
  );
}

/** Why the service cannot run here, and what works instead; undefined when the manager is there (or nothing is known).
 * */
export function unavailableReason(
  ctx: Context,
  availability: Availability | undefined,
): { why: string; fix: string } | undefined {
  switch (availability) {
    case 'no_manager_command':
      return {
        why: `there is no ${ctx.platform === 'darwin' ? 'launchctl' : 'systemctl'} on PATH`,
        fix: foregroundAdvice(ctx),
      };
    case 'no_systemd':
      return {
        why: 'systemd does not run this machine (a container, or WSL without systemd), so there is no user manager',
        fix: foregroundAdvice(ctx),
      };
    case 'no_user_manager':
      return {
        why: 'there is no systemd user manager in this session (a remote login without lingering, or su/sudo)',
        fix:
          `\`loginctl enable-linger $USER\`, log in again and run \`blue-agent service install\` again; or ` +
          `${foregroundAdvice(ctx)}`,
      };
    case 'no_gui_session':
      return {
        why: 'a LaunchAgent runs in your login session at the Mac, and there is none now (an SSH login)',
        fix:
          `log in at the Mac (or by screen sharing) and run \`blue-agent service install\` again; or ` +
          `${foregroundAdvice(ctx)}`,
      };
    default:
      return undefined;
  }
}
