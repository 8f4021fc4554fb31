/** What the agent can be told when it starts, besides its config file: timings and stand-ins, mostly for tests. */
import type { Context } from '../context.js';
import type { CorrectionBackoffOptions } from './backoff.js';
import type { DrainLauncher } from './drains.js';
import type { LogTarget } from './log.js';
import type { PolicyPushOptions } from './policy-push.js';
import type { PolicyScheduleOptions } from './schedule.js';
import type { DirWatchFactory } from './session-watch.js';
import type { TaskRunner } from './task-process.js';
import type { WatchFactory } from './watcher.js';

export interface DaemonOptions {
  /** Jitter source, [0, 1). */
  random?: () => number;
  policySchedule?: Partial<PolicyScheduleOptions>;
  /** Quiet time after a config file changes before the drift reconcile. */
  debounceMs?: number;
  /** The periodic full reconcile. */
  fullReconcileMs?: number;
  /** The periodic safety check of the watched files' fingerprints (a `stat` each; a reconcile only when one differs).
   * */
  driftCheckMs?: number;
  /** How config files are watched; native watches of their folders by default. */
  watch?: WatchFactory;
  /** Quiet time after a new capture before its drain. */
  intakeDelayMs?: number;
  /** On stop: how long a running drain may go on before it is stopped, and how long it gets to stop before SIGKILL. */
  drainGraceMs?: number;
  drainKillMs?: number;
  /** Overrides drain_schedule from the config. */
  drainSchedule?: string;
  /** Where the log goes; detected from the environment by default. */
  logTarget?: LogTarget;
  logMaxBytes?: number;
  /** How a drain is run; the CLI's `drain --json` as a child process by default. */
  launchDrain?: DrainLauncher;
  statusTimeoutMs?: number;
  /** How the heavy steps run (policy check, reconcile, client status); a child process each by default. */
  tasks?: (ctx: Context) => TaskRunner;
  /** On stop: how long a reconcile in progress may go on, and how long step children get between SIGTERM and SIGKILL.
   * */
  reconcileStopMs?: number;
  taskKillMs?: number;
  /** Repeated drift corrections of one file are spaced out (doubling from baseMs up to capMs). */
  correctionBackoff?: Partial<CorrectionBackoffOptions>;
  /** The policy event stream's timings; false: no stream, the ttl check alone. */
  policyPush?: Partial<PolicyPushOptions> | false;
  /** Overrides the policy's session_upload.idle_capture_minutes (tests). */
  idleCaptureMs?: number;
  /** The periodic idle sweep (a sweep also comes once the idle time has passed after a session changed). */
  sweepMs?: number;
  /** How session folders are watched; native watches by default. */
  watchSessions?: DirWatchFactory;
}

/** The periodic idle sweep. */
export const SWEEP_MS = 5 * 60_000;

/** How often the watched files are `stat`ed in case a change raised no event. */
export const DRIFT_CHECK_MS = 5 * 60_000;
