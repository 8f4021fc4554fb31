/**
 * `blue-agent run`: the long-running agent. It
 *   - checks the governance policy every ttl_seconds (±10% jitter, If-None-Match), backs off after failures (doubling,
 *     capped at an hour, never before Retry-After) and keeps the last-known-good policy while the server is away;
 *   - listens on the Control API's policy event stream (policy-push.ts) and checks at once when a new revision is
 *     published, so a publish reaches the harnesses in seconds; the ttl check stays the fallback;
 *   - reconciles at once when the policy changes, shortly after a managed config file changes (drift repair; besides
 *     the file watches, a periodic `stat` of the watched files catches a change no watch reported), and in a periodic
 *     full sweep that notices harnesses installed, upgraded or removed;
 *   - drains the spool on a cron schedule and soon after a capture arrives (see drains.ts);
 *   - reports to `POST /client-status` after each reconcile, and leaves `<state>/agent-run.json` for `status`.
 * Everything is timers and native file watches: an idle agent does no work at all.
 */
import { loadAgentConfig, type AgentConfig } from '../config.js';
import { controlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { toBlueError } from '@blue-agent/contract/errors.js';
import { SpoolView } from '../spool/index.js';
import { DEFAULT_CORRECTION_BACKOFF } from './backoff.js';
import { checkDrainSchedule, DEFAULT_DRAIN_SCHEDULE, DrainScheduler, spawnDrain, type DrainResult } from './drains.js';
import { acquireInstanceLock, type InstanceLock } from './lock.js';
import { createRunLogger, detectLogTarget, type RunLogger } from './log.js';
import { DRIFT_CHECK_MS, SWEEP_MS, type DaemonOptions } from './options.js';
import { DEFAULT_POLICY_PUSH, PolicyPush } from './policy-push.js';
import { clientStatusBody, instanceId, type HarnessSummary } from './report.js';
import { DEFAULT_POLICY_SCHEDULE, nextPolicyCheck, type PolicyScheduleOptions } from './schedule.js';
import { writeRunState, type AgentRunState } from './state.js';
import { SweepLoop } from './sweeps.js';
import { PolicyChecks, readPolicyResult, recordCheck } from './policy-checks.js';
import { correctedHarnesses, ReconcileQueue, type ReconcileTrigger } from './reconciles.js';
import { reportDrain, reportStatus } from './run-reports.js';
import { processTasks, taskError, type TaskRunner } from './task-process.js';
import type { PolicyTaskResult, ReconcileTaskResult, StatusTaskResult, SweepTaskResult } from './tasks.js';
import { DriftRepair } from './drift.js';

/** What the agent keeps of the policy in force. */
type PolicyInForce = NonNullable<PolicyTaskResult['resolved']>;

export class Daemon {
  readonly stopped: Promise<number>;
  private resolveStopped!: (code: number) => void;
  private readonly log: RunLogger;
  /** The context handed to reconcile and friends: same world, the run log as its logger. */
  private readonly rctx: Context;
  private readonly schedule: PolicyScheduleOptions;
  private readonly random: () => number;
  private readonly drift: DriftRepair;
  private readonly drains: DrainScheduler;
  private readonly startedAt: number;
  /** The policy in force, as the last check left it: what each reconcile applies. */
  private readonly snapshot: string;

  private stopping = false;
  private fullTimer: NodeJS.Timeout | undefined;
  private readonly push: PolicyPush | undefined;
  private readonly policyChecks: PolicyChecks;
  private readonly reconciles: ReconcileQueue;

  private resolved: PolicyInForce | undefined;
  private readonly tasks: TaskRunner;
  private policyKey: string | undefined;
  /** False while a required policy has gone stale: managed hooks then stay exactly as they are. */
  private policyUsable = false;
  private lastReport: { harnesses: HarnessSummary[] } | undefined;
  private statusPending = false;
  private state: AgentRunState;
  private readonly sweeps: SweepLoop;

  private constructor(
    private readonly ctx: Context,
    private readonly options: DaemonOptions,
    private config: AgentConfig,
    private readonly lock: InstanceLock,
    private readonly instance: string,
    drainSchedule: string,
  ) {
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve));
    this.log = createRunLogger({
      target: options.logTarget ?? detectLogTarget(ctx.env, ctx.paths.runLogFile, options.logMaxBytes),
      stdout: ctx.stdout,
      env: ctx.env,
      now: () => ctx.clock.now(),
    });
    this.rctx = { ...ctx, logger: this.log };
    this.tasks = (options.tasks ?? ((c) => processTasks(c)))(this.rctx);
    this.schedule = { ...DEFAULT_POLICY_SCHEDULE, ...options.policySchedule };
    this.random = options.random ?? Math.random;
    this.policyChecks = new PolicyChecks({
      run: () => this.runPolicyCheck(),
      schedule: this.schedule,
      random: this.random,
      log: this.log,
      stopping: () => this.stopping,
    });
    this.reconciles = new ReconcileQueue(
      (trigger) => this.runReconcile(trigger),
      this.log,
      () => this.stopping,
    );
    this.startedAt = ctx.clock.now();
    this.snapshot = ctx.paths.policySnapshotFile;
    this.state = {
      pid: process.pid,
      started_at_unix_ms: this.startedAt,
      updated_at_unix_ms: this.startedAt,
      instance_id: instance,
      drain_schedule: drainSchedule,
      log: this.log.target.kind === 'stdout' ? 'stdout' : this.log.target.file,
    };
    this.drift = new DriftRepair({
      log: this.log,
      reconcile: () => this.reconciles.request('drift'),
      stopping: () => this.stopping,
      debounceMs: options.debounceMs ?? 1_000,
      checkMs: options.driftCheckMs ?? DRIFT_CHECK_MS,
      backoff: { ...DEFAULT_CORRECTION_BACKOFF, ...options.correctionBackoff },
      ...(options.watch === undefined ? {} : { watch: options.watch }),
    });
    this.sweeps = new SweepLoop({
      now: () => ctx.clock.now(),
      log: this.log,
      periodicMs: options.sweepMs ?? SWEEP_MS,
      mayRun: () => this.resolved !== undefined && this.policyUsable,
      run: async () =>
        (await this.tasks({
          task: 'sweep',
          snapshot: this.snapshot,
          ...(options.idleCaptureMs === undefined ? {} : { idleMs: options.idleCaptureMs }),
        })) as SweepTaskResult,
      onSwept: async (record, captured) => {
        this.state.last_sweep = record;
        await this.saveState();
        if (captured) this.drains.request('sweep');
      },
      ...(options.watchSessions === undefined ? {} : { watch: options.watchSessions }),
    });
    this.push =
      options.policyPush === false
        ? undefined
        : new PolicyPush(
            {
              env: ctx.env,
              userAgent: `blue-agent/${ctx.self.version}`,
              log: this.log,
              random: this.random,
              onRevision: (r) => this.onRevisionPublished(r),
            },
            { ...DEFAULT_POLICY_PUSH, ...options.policyPush },
          );
    this.drains = new DrainScheduler({
      ctx,
      log: this.log,
      schedule: drainSchedule,
      intakeDelayMs: options.intakeDelayMs ?? 500,
      launch: options.launchDrain ?? spawnDrain,
      onResult: (result) => this.onDrain(result),
      hasWork: () => new SpoolView(ctx.paths).hasWork(),
    });
  }

  /** Takes the one-per-user lock, loads the config and starts every loop. Throws when another agent runs. */
  static async start(ctx: Context, options: DaemonOptions = {}): Promise<Daemon> {
    // Wall-clock time, not ctx.clock: the lock's start is compared with the machine's boot time.
    const lock = await acquireInstanceLock(ctx.paths.runLockFile, Date.now());
    let daemon: Daemon;
    try {
      const { config } = await loadAgentConfig(ctx);
      const drainSchedule = checkDrainSchedule(
        options.drainSchedule ?? config.drain_schedule ?? DEFAULT_DRAIN_SCHEDULE,
        ctx.paths.configFile,
      );
      daemon = new Daemon(ctx, options, config, lock, await instanceId(ctx), drainSchedule);
    } catch (error) {
      await lock.release();
      throw error;
    }
    await daemon.begin();
    return daemon;
  }

  private async begin(): Promise<void> {
    const settings = safeSettings(this.ctx, this.config);
    this.log.info('agent started', {
      version: this.ctx.self.version,
      instance_id: this.instance,
      state_dir: this.ctx.paths.stateDir,
      control_url: settings?.controlUrl ?? null,
      drain_schedule: this.drains.schedule,
      log: this.state.log,
    });
    try {
      await this.drains.start();
    } catch (error) {
      await this.shutdown('start-failed');
      throw error;
    }
    this.fullTimer = setInterval(
      () => this.reconciles.request('periodic'),
      this.options.fullReconcileMs ?? 60 * 60_000,
    );
    this.drift.start();
    void this.checkPolicy();
    await this.subscribe(settings);
    if (await new SpoolView(this.ctx.paths).hasWork()) this.drains.request('start');
  }

  /** Listens on the configured Control API's policy event stream (none for a local policy file or no Control API). */
  private async subscribe(settings: ReturnType<typeof safeSettings>): Promise<void> {
    if (this.push === undefined) return;
    if (settings?.controlUrl === undefined || this.config.policy_file !== undefined) {
      await this.push.stop();
      return;
    }
    await this.push.start({
      controlUrl: settings.controlUrl,
      tokenSource: settings.tokenSource,
      readToken: settings.readToken,
    });
  }

  /**
   * The event stream named a revision: check now unless it is the one in force. The revision in force from the cache
   * is no reason to ask either: the scheduled check (and any Retry-After the server gave) stays as it is.
   */
  private onRevisionPublished(revision: string): void {
    if (this.stopping) return;
    if (this.resolved !== undefined && String(this.resolved.revision) === revision) return;
    this.log.info('policy revision published', { revision });
    void this.checkPolicy();
  }

  /** Asks the Control API now (SIGHUP does, after reloading the config). */
  checkPolicy(): Promise<void> {
    return this.policyChecks.check();
  }

  /**
   * Compares every watched file with what the agent left (a `stat` each, nothing read): a change that no watch event
   * reported starts the usual drift reconcile. Resolves with the files found changed.
   */
  checkDrift(): Promise<string[]> {
    return this.drift.check();
  }

  /** SIGHUP: reads config.yaml again; a bad file is reported and the config in force is kept. */
  async reload(): Promise<void> {
    if (this.stopping) return;
    try {
      const { config } = await loadAgentConfig(this.ctx);
      // A stop may have come while the file was read: a stopping agent starts nothing (no new cron task, no check).
      if (this.stopping) return;
      const schedule = checkDrainSchedule(
        this.options.drainSchedule ?? config.drain_schedule ?? DEFAULT_DRAIN_SCHEDULE,
        this.ctx.paths.configFile,
      );
      const settings = controlSettings(this.ctx, config);
      this.config = config;
      this.drains.reschedule(schedule);
      this.state.drain_schedule = schedule;
      this.log.info('config reloaded', {
        file: this.ctx.paths.configFile,
        drain_schedule: schedule,
        control_url: settings.controlUrl ?? null,
      });
      await this.subscribe(settings);
    } catch (error) {
      const blue = toBlueError(error);
      this.log.error('config reload failed; keeping the config in force', { code: blue.code, error: blue.message });
      return;
    }
    if (this.stopping) return;
    await this.checkPolicy();
  }

  /** SIGTERM/SIGINT: stop scheduling, let the write in progress finish, release claims, exit 0. */
  async stop(reason = 'stop'): Promise<number> {
    if (!this.stopping) void this.shutdown(reason);
    return this.stopped;
  }

  // ---------------------------------------------------------------------------------------------------------------

  private async shutdown(reason: string): Promise<void> {
    this.stopping = true;
    this.log.info('stopping', { reason });
    this.policyChecks.halt();
    clearInterval(this.fullTimer);
    this.drift.halt();
    this.sweeps.halt();
    this.reconciles.clear();
    await this.drift.close();
    await this.sweeps.close();
    await this.push?.stop();
    // Bounded, in parallel (the unit's TimeoutStopSec is 30 s; all of this stays under about 20 s):
    //   - a running drain gets its grace, then SIGTERM, then SIGKILL (5 + 5 s by default);
    //   - a reconcile in progress finishes its writes (quick and bounded; at most reconcileStopMs, 8 s);
    //   - a policy check is waited for briefly: its one write, the last-known-good cache, is atomic.
    await Promise.all([
      this.drains
        .stop(this.options.drainGraceMs ?? 5_000, this.options.drainKillMs ?? 5_000)
        .catch((error: unknown) => this.log.error('stopping the drain failed', { error: String(error) })),
      this.reconciles.inFlight === undefined
        ? undefined
        : within(this.reconciles.inFlight, this.options.reconcileStopMs ?? 8_000),
      this.sweeps.inFlight === undefined
        ? undefined
        : within(this.sweeps.inFlight, this.options.reconcileStopMs ?? 8_000),
      this.policyChecks.inFlight === undefined ? undefined : within(this.policyChecks.inFlight, 2_000),
    ]);
    // A step child still running (a hung reconcile or check, a client status) is stopped: SIGTERM, then SIGKILL.
    const left = await this.tasks.stop?.(this.options.taskKillMs ?? 2_000).catch(() => 0);
    if (left !== undefined && left > 0)
      this.log.warn('stopped step processes that were still running', { count: left });
    this.state.stopped_at_unix_ms = this.ctx.clock.now();
    await this.saveState(true);
    await this.lock.release();
    this.log.info('stopped', { reason });
    this.resolveStopped(0);
  }

  /** One check; resolves with when the next one is due (ms). */
  private async runPolicyCheck(): Promise<number> {
    const now = this.ctx.clock.now();
    let result: PolicyTaskResult;
    try {
      result = (await this.tasks({ task: 'policy', config: this.config, snapshot: this.snapshot })) as PolicyTaskResult;
    } catch (error) {
      result = { error: taskError(error) };
    }
    const { outcome, lastError, usable } = readPolicyResult(result, this.log);
    if (usable !== undefined) this.policyUsable = usable;
    const { resolved } = result;
    if (resolved !== undefined) {
      const changed = resolved.key !== this.policyKey;
      this.resolved = resolved;
      if (changed) {
        this.policyKey = resolved.key;
        this.log.info('policy revision in force', { revision: resolved.revision, source: resolved.source });
        this.reconciles.request('policy');
      } else if (this.statusPending && outcome.ok && this.lastReport !== undefined) {
        await this.sendStatus(this.lastReport.harnesses, new Set());
      }
    }
    const next = nextPolicyCheck(this.policyChecks.failures, outcome, this.schedule, this.random);
    this.policyChecks.failures = next.failures;
    this.state.policy = recordCheck(this.log, {
      outcome,
      next,
      resolved: this.resolved,
      previous: this.state.policy,
      startedAt: now,
      checkedAt: this.ctx.clock.now(),
      ...(lastError === undefined ? {} : { lastError }),
    });
    await this.saveState();
    return next.delayMs;
  }

  private async runReconcile(trigger: ReconcileTrigger): Promise<void> {
    if (this.stopping) return;
    if (this.resolved === undefined || !this.policyUsable) {
      this.log.info('reconcile skipped: no policy to apply', { trigger });
      return;
    }
    const at = this.ctx.clock.now();
    let result: ReconcileTaskResult;
    // Changes seen while the step writes are judged against what it leaves (its fingerprints), not before.
    this.drift.watcher.hold();
    try {
      result = (await this.tasks({ task: 'reconcile', snapshot: this.snapshot })) as ReconcileTaskResult;
    } catch (error) {
      result = { ok: false, harnesses: [], watch: [], error: taskError(error) };
    }
    if (result.watch.length > 0) await this.drift.watcher.setFiles(result.watch);
    // A step that crashed left no fingerprints: what was remembered before stays, so its drift is not forgotten.
    await this.drift.watcher.remember(result.fingerprints);
    if (result.error !== undefined) {
      this.log.error('reconcile failed', { trigger, code: result.error.code, error: result.error.message });
      this.state.last_reconcile = { at_unix_ms: at, ok: false, corrected: [], error: result.error, trigger };
      await this.saveState();
      return;
    }
    const corrected = correctedHarnesses(
      this.log,
      trigger,
      result.harnesses,
      this.lastReport?.harnesses,
      this.drift.corrections,
    );
    this.lastReport = { harnesses: result.harnesses };
    this.log.info('reconciled', {
      trigger,
      revision: this.resolved.revision,
      ok: result.ok,
      corrected: [...corrected],
      harnesses: Object.fromEntries(result.harnesses.map((h) => [h.harness, { state: h.state, action: h.action }])),
    });
    this.state.last_reconcile = { at_unix_ms: at, ok: result.ok, corrected: [...corrected], trigger };
    await this.saveState();
    // A new policy or a harness installed or upgraded may change what is swept and how long idle is.
    if (trigger === 'policy' || trigger === 'start' || trigger === 'periodic' || this.state.last_sweep === undefined)
      this.requestSweep(this.ctx.clock.now());
    await this.sendStatus(result.harnesses, corrected);
  }

  /** Sweeps at `at` (ms), unless a sweep is already due earlier. */
  requestSweep(at: number): void {
    if (this.stopping) return;
    this.sweeps.request(at);
  }

  /** Runs the idle sweep now (one at a time; a request meanwhile runs once more afterwards). */
  sweep(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return this.sweeps.sweep();
  }

  private async sendStatus(harnesses: HarnessSummary[], corrected: ReadonlySet<string>): Promise<void> {
    if (this.stopping) return;
    if (safeSettings(this.ctx, this.config)?.controlUrl === undefined) return;
    const at = this.ctx.clock.now();
    const body = clientStatusBody(this.ctx, this.instance, { harnesses }, this.resolved?.revision, corrected);
    let result: StatusTaskResult;
    try {
      result = (await this.tasks({
        task: 'status',
        body,
        timeoutMs: this.options.statusTimeoutMs ?? 10_000,
      })) as StatusTaskResult;
    } catch (error) {
      result = { ok: false, error: taskError(error) };
    }
    this.statusPending = !result.ok;
    this.state.last_status_report = reportStatus(this.log, result, at, this.resolved?.revision, corrected);
    await this.saveState();
  }

  private async onDrain(result: DrainResult): Promise<void> {
    this.state.last_drain = reportDrain(this.log, result);
    await this.saveState();
  }

  private async saveState(final = false): Promise<void> {
    if (this.stopping && !final) return;
    this.state.updated_at_unix_ms = this.ctx.clock.now();
    const next = this.drains.nextRunAt();
    if (next !== undefined && !final) this.state.next_drain_at_unix_ms = next;
    else delete this.state.next_drain_at_unix_ms;
    await writeRunState(this.ctx, this.state).catch((error: unknown) =>
      this.log.warn('cannot write agent-run.json', { error: String(error) }),
    );
  }
}

function safeSettings(ctx: Context, config: AgentConfig) {
  try {
    return controlSettings(ctx, config);
  } catch {
    return undefined;
  }
}

/** Waits for `promise`, at most `ms`; leaves no timer behind. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      promise.catch(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
