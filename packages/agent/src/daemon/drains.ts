/**
 * Drains from the run loop: on a cron schedule (cron.ts; default every 5 minutes) and soon after a new intake record
 * appears in `<state>/spool/intake/`, never two at a time in this process.
 *
 * Each drain is the CLI's own `blue-agent drain --json`, run as a child process, rather than `drain()` in-process:
 *   - stopping is safe and bounded: on SIGTERM the agent lets a running drain finish for a grace period, then stops
 *     it; the spool's renames make every point a safe one to stop at, and once the child is gone the agent releases
 *     its claims itself (they name a dead pid) before it exits, so no claim stays held. An in-process drain cannot be
 *     cut short, and its claims, naming the agent's own pid, could only be released after the agent had exited;
 *   - the long-lived process never loads the bundle, tar and upload code, and stays small while idle;
 *   - the child writes last-drain.json and capture.log exactly as every other drain does.
 * The child runs in its own process group (detached): a Ctrl-C at the terminal, or a service manager signalling
 * the agent, reaches the agent alone, and only the agent decides when its drain stops (after the grace). Should the
 * agent itself be SIGKILLed, the drain goes on to its natural end — a drain is bounded anyway (at most 5 passes over
 * what is waiting, every request with a timeout) — and under systemd (KillMode=mixed) the cgroup is killed with it.
 * A cron tick with nothing to drain (no record in intake/ or ready/, no claim in building/ or uploading/) starts
 * nothing and writes nothing: an idle agent stays idle.
 */
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { Logger } from '../logger.js';
import { Spool } from '../spool/index.js';
import { scheduleCron, validCron, type CronTimer } from './cron.js';
import { FolderWatch } from './native-watch.js';
import { writeLastDrain, type LastDrain } from './state.js';

export const DEFAULT_DRAIN_SCHEDULE = '*/5 * * * *';
const MAX_REPORT_BYTES = 4 * 1024 * 1024;

export type DrainTrigger = 'schedule' | 'intake' | 'start' | 'request' | 'sweep';

/** What a drain reports, as last-drain.json keeps it. */
export type DrainSummary = Omit<LastDrain, 'finished_at_unix_ms' | 'ok'>;

export interface DrainResult {
  trigger: DrainTrigger;
  ok: boolean;
  started_at_unix_ms: number;
  finished_at_unix_ms: number;
  exit_code: number | null;
  signal: string | null;
  /** The drain's own report, when it finished and printed one. */
  summary?: DrainSummary;
  /** Cut short by the agent stopping. */
  interrupted: boolean;
  /** Claims the agent released after the drain process was gone. */
  released: string[];
  error?: string;
}

/** One running drain: resolves when it is over; `stop` asks it to end now. */
export interface DrainProcess {
  pid?: number;
  done: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>;
  stop(signal: 'SIGTERM' | 'SIGKILL'): void;
}

export type DrainLauncher = (ctx: Context) => DrainProcess;

/** `node <entry> drain --json`, the same CLI a capture hook starts. */
export const spawnDrain: DrainLauncher = (ctx) => {
  const child = spawn(ctx.self.node, [ctx.self.entry, 'drain', '--json'], {
    env: { ...ctx.env },
    cwd: ctx.paths.home,
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: terminal and service-manager signals reach the agent only (see above).
    detached: true,
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let outBytes = 0;
  child.stdout.on('data', (c: Buffer) => {
    outBytes += c.length;
    if (outBytes <= MAX_REPORT_BYTES) out.push(c);
  });
  child.stderr.on('data', (c: Buffer) => {
    if (err.length < 64) err.push(c);
  });
  const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>(
    (resolve) => {
      child.on('error', (error) => resolve({ code: null, signal: null, stdout: '', stderr: error.message }));
      child.on('close', (code, signal) =>
        resolve({
          code,
          signal,
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8').slice(0, 2000),
        }),
      );
    },
  );
  return {
    ...(child.pid === undefined ? {} : { pid: child.pid }),
    done,
    stop: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
};

export interface DrainSchedulerOptions {
  ctx: Context;
  log: Logger;
  schedule: string;
  /** Quiet time after the last new intake record before a drain starts (records often come in bursts). */
  intakeDelayMs: number;
  launch: DrainLauncher;
  onResult(result: DrainResult): void | Promise<void>;
  /** Whether the spool holds anything a drain would act on; a cron tick without work starts nothing. */
  hasWork?(): Promise<boolean>;
}

export class DrainScheduler {
  private task: CronTimer | undefined;
  private intake: FolderWatch | undefined;
  private intakeTimer: NodeJS.Timeout | undefined;
  private readonly seen = new Set<string>();
  private running: { process: DrainProcess; interrupted: boolean; finished: Promise<void> } | undefined;
  private pending: DrainTrigger | undefined;
  private stopping = false;
  private lookingForWork = false;
  private scheduleExpr: string;

  constructor(private readonly options: DrainSchedulerOptions) {
    this.scheduleExpr = options.schedule;
  }

  get schedule(): string {
    return this.scheduleExpr;
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  async start(): Promise<void> {
    this.startCron();
    // The spool's folders must exist for the watch to see records land in intake/ (open creates them, private).
    const spool = await Spool.open(this.options.ctx.paths, { now: () => this.options.ctx.clock.now() });
    const dir = spool.intakeDir();
    // A name the watch reports may have come or gone: only a record that is there is new. Without a name, the
    // schedule finds the record.
    this.intake = new FolderWatch(
      dir,
      (name) => {
        if (name?.endsWith('.json')) void isFile(path.join(dir, name)).then((there) => there && this.onIntake(name));
      },
      (error) => this.options.log.warn('intake watcher error', { error: String(error) }),
    );
    await this.intake.start();
  }

  /** Replaces the schedule (SIGHUP with a new drain_schedule). */
  reschedule(expr: string): void {
    if (this.stopping || expr === this.scheduleExpr) return;
    this.scheduleExpr = expr;
    this.task?.stop();
    this.startCron();
  }

  nextRunAt(): number | undefined {
    return this.task?.nextAt();
  }

  /** Drain now, or right after the running drain when one runs (several requests meanwhile make one drain). */
  request(trigger: DrainTrigger): void {
    if (this.stopping) return;
    if (this.running !== undefined) {
      this.pending ??= trigger;
      return;
    }
    if (trigger === 'schedule' && this.options.hasWork !== undefined) {
      if (this.lookingForWork) return;
      this.lookingForWork = true;
      void this.options
        .hasWork()
        .catch(() => true)
        .then((work) => {
          this.lookingForWork = false;
          if (this.stopping) return;
          if (!work) {
            this.options.log.debug('scheduled drain skipped: the spool is empty');
            return;
          }
          if (this.running !== undefined) this.pending ??= trigger;
          else this.launch(trigger);
        });
      return;
    }
    this.launch(trigger);
  }

  private launch(trigger: DrainTrigger): void {
    const process = this.options.launch(this.options.ctx);
    const started = this.options.ctx.clock.now();
    const entry = { process, interrupted: false, finished: Promise.resolve() };
    this.running = entry;
    this.options.log.info('drain started', { trigger });
    entry.finished = process.done
      // Ended by a signal while the agent stops: interrupted, whoever sent it.
      .then(async (exit) =>
        this.finish(trigger, started, exit, entry.interrupted || (this.stopping && exit.signal !== null)),
      )
      .catch((error: unknown) => this.options.log.error('drain bookkeeping failed', { error: String(error) }))
      .finally(() => {
        this.running = undefined;
        const next = this.pending;
        this.pending = undefined;
        if (next !== undefined && !this.stopping) this.request(next);
      });
  }

  /** Stops scheduling; lets a running drain go on for `graceMs`, then stops it (SIGTERM, then SIGKILL after `killMs`).
   * */
  async stop(graceMs: number, killMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.intakeTimer);
    const task = this.task;
    this.task = undefined;
    task?.stop();
    await this.intake?.close();
    const running = this.running;
    if (running === undefined) return;
    const finished = running.finished;
    if (await within(finished, graceMs)) return;
    running.interrupted = true;
    this.options.log.info('stopping the running drain', { grace_ms: graceMs });
    running.process.stop('SIGTERM');
    if (await within(finished, killMs)) return;
    running.process.stop('SIGKILL');
    await finished;
  }

  private startCron(): void {
    this.task = scheduleCron(this.scheduleExpr, () => this.request('schedule'));
  }

  private onIntake(name: string): void {
    if (this.stopping) return;
    // A record released back to intake after a failed try is not new: the schedule retries it.
    if (this.seen.has(name)) return;
    if (this.seen.size > 10_000) this.seen.clear();
    this.seen.add(name);
    clearTimeout(this.intakeTimer);
    this.intakeTimer = setTimeout(() => this.request('intake'), this.options.intakeDelayMs);
  }

  private async finish(
    trigger: DrainTrigger,
    started: number,
    exit: { code: number | null; signal: string | null; stdout: string; stderr: string },
    interrupted: boolean,
  ): Promise<void> {
    const { ctx } = this.options;
    const summary = parseSummary(exit.stdout);
    const result: DrainResult = {
      trigger,
      ok: exit.code === 0,
      started_at_unix_ms: started,
      finished_at_unix_ms: ctx.clock.now(),
      exit_code: exit.code,
      signal: exit.signal,
      interrupted,
      released: [],
      ...(summary === undefined ? {} : { summary }),
    };
    if (summary === undefined) {
      // The drain did not finish its report (stopped, killed, crashed): release what it held, and say how it ended.
      const spool = await Spool.open(ctx.paths, { now: () => ctx.clock.now() });
      const recovered = await spool.releaseDeadClaims();
      await spool.removeOrphanTemps();
      result.released = [...recovered.released, ...recovered.completed];
      result.error =
        exit.signal !== null
          ? `the drain process ended on ${exit.signal}`
          : `the drain process exited with code ${exit.code}: ${firstLine(exit.stderr)}`;
      await writeLastDrain(ctx, {
        finished_at_unix_ms: result.finished_at_unix_ms,
        ok: false,
        built: 0,
        uploaded: 0,
        failed: 0,
        retried: 0,
        left: (await spool.idsIn('intake')).length,
        left_ready: (await spool.idsIn('ready')).length,
        stopped: { code: interrupted ? 'INTERRUPTED' : 'DRAIN_FAILED', reason: result.error },
        notes: [],
      }).catch(() => undefined);
    }
    await this.options.onResult(result);
  }
}

function parseSummary(stdout: string): DrainSummary | undefined {
  try {
    const report = JSON.parse(stdout) as Record<string, unknown>;
    const count = (v: unknown) => (Array.isArray(v) ? v.length : typeof v === 'number' ? v : 0);
    return {
      built: count(report.built),
      uploaded: count(report.uploaded),
      failed: count(report.failed),
      retried: count(report.retried),
      left: count(report.left),
      left_ready: count(report.left_ready),
      ...(Array.isArray(report.held) && report.held.length > 0 ? { held: heldOf(report.held) } : {}),
      ...(typeof report.stopped === 'object' && report.stopped !== null
        ? { stopped: report.stopped as DrainSummary['stopped'] & object }
        : {}),
      notes: Array.isArray(report.notes) ? report.notes.filter((n): n is string => typeof n === 'string') : [],
    };
  } catch {
    return undefined;
  }
}

/** The records another drain held, as last-drain.json keeps them (at most 20). */
function heldOf(held: unknown[]): NonNullable<DrainSummary['held']> {
  return held.slice(0, 20).flatMap((h) => {
    const { id, state, pid } = (h ?? {}) as Record<string, unknown>;
    return typeof id === 'string' && (state === 'building' || state === 'uploading') && typeof pid === 'number'
      ? [{ id, state, pid }]
      : [];
  });
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0]?.slice(0, 300) ?? '';
}

/** True when `promise` settles within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function validDrainSchedule(expr: string): boolean {
  return validCron(expr);
}

/** `expr` when it is a valid drain schedule; CONFIG_INVALID, naming the config `file`, when not. */
export function checkDrainSchedule(expr: string, file: string): string {
  if (!validDrainSchedule(expr)) {
    throw new BlueError(
      'CONFIG_INVALID',
      `${file}: drain_schedule "${expr.slice(0, 100)}" is not a valid cron expression`,
      {
        file,
        hint:
          'Use five fields (minute hour day month weekday), e.g. "*/5 * * * *" for every 5 minutes, or six ' +
          'with seconds first.',
      },
    );
  }
  return expr;
}

async function isFile(file: string): Promise<boolean> {
  return stat(file).then(
    (info) => info.isFile(),
    () => false,
  );
}
