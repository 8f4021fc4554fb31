/** The demo's steps and its report: each step numbered, timed and bounded; what a failed one throws. */
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import type { RecordedAsset } from './session.js';
import { controlApiMissing } from '../control-api-package.js';

export const STEPS = [
  'control-api',
  'login',
  'harness',
  'reconcile',
  'session',
  'capture',
  'drain',
  'list',
  'restore',
] as const;
export type StepId = (typeof STEPS)[number];

/** Time each step may take at most, in milliseconds. */
export const STEP_TIMEOUT_MS: Readonly<Record<StepId, number>> = {
  'control-api': 15_000,
  login: 30_000,
  harness: 5_000,
  reconcile: 30_000,
  session: 15_000,
  capture: 20_000,
  drain: 120_000,
  list: 30_000,
  restore: 60_000,
};

export interface StepResult {
  n: number;
  id: StepId;
  ok: boolean;
  ms: number;
  /** One line: what the step did and where. */
  summary: string;
  /** Further lines worth showing (commands to run, paths). */
  notes: string[];
  details: Record<string, unknown>;
}

/** Why a step failed: the code of the error behind it (a blue-agent error code, or TIMEOUT, INTERRUPTED, EXIT). */
export interface StepCause {
  code: string;
  message: string;
  hint?: string;
}

export class DemoStepError extends BlueError {
  constructor(
    readonly step: { n: number; id: StepId },
    readonly reason: StepCause,
    exitCode?: number,
  ) {
    super('DEMO_STEP_FAILED', `step ${step.n} (${step.id}) failed: [${reason.code}] ${reason.message}`, {
      hint:
        reason.hint ?? 'Run `blue-agent demo --keep` to keep the temporary directories and look at what the step left.',
      ...(exitCode === undefined ? {} : { exitCode }),
    });
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), step: this.step, cause: this.reason };
  }
}

export interface DemoOptions {
  /** Keep the temporary root (and everything in it) for inspection. */
  keep: boolean;
  /** The loopback port of the Control API; default an ephemeral one. */
  port?: number;
  /** Aborted on Ctrl-C: the running step stops, cleanup follows. Its reason is the signal's name. */
  signal?: AbortSignal;
  /** Called once the temporary root exists, before the first step. */
  onStart?: (info: { root: string; asset: RecordedAsset }) => void;
  /** Called as each step ends (also for the failed one). */
  onStep?: (step: StepResult) => void;
}

export interface DemoReport {
  ok: boolean;
  root: string;
  kept: boolean;
  control_url: string | null;
  recorded: { harness: HarnessName; version: string; session_id: string; prompt: string; stand_in: string };
  steps: StepResult[];
  session: {
    /** The captured session's id on the Control API (what `resume` takes). */
    id: string;
    session_id: string;
    home_a: string;
    home_b: string;
    destination: string;
    restored: string[];
    command: string[];
    command_line: string;
  } | null;
  error?: Record<string, unknown>;
}

export const ACTION_WORDS: Readonly<Record<string, string>> = {
  create: 'created',
  update: 'updated',
  unchanged: 'left unchanged',
  remove: 'removed',
};

export interface StepOutcome<T> {
  value: T;
  summary: string;
  notes?: string[];
  details: Record<string, unknown>;
}

/** Numbers, times and bounds the steps; turns what a step throws into a DemoStepError naming it. */
export class StepRunner {
  constructor(
    private readonly report: DemoReport,
    private readonly options: DemoOptions,
  ) {}

  async step<T>(id: StepId, work: (signal: AbortSignal) => Promise<StepOutcome<T>>): Promise<T> {
    const n = this.report.steps.length + 1;
    const started = performance.now();
    const timeoutMs = STEP_TIMEOUT_MS[id];
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort('TIMEOUT'), timeoutMs);
    const signal =
      this.options.signal === undefined ? timeout.signal : AbortSignal.any([this.options.signal, timeout.signal]);
    try {
      throwIfAborted(signal);
      const outcome = await raceAbort(work(signal), signal);
      const result: StepResult = {
        n,
        id,
        ok: true,
        ms: Math.round(performance.now() - started),
        summary: outcome.summary,
        notes: outcome.notes ?? [],
        details: outcome.details,
      };
      this.report.steps.push(result);
      this.options.onStep?.(result);
      return outcome.value;
    } catch (error) {
      const reason =
        timeout.signal.aborted && this.options.signal?.aborted !== true
          ? { code: 'TIMEOUT', message: `the step did not finish within ${timeoutMs / 1000} s` }
          : causeOf(error, this.options.signal);
      const failed: StepResult = {
        n,
        id,
        ok: false,
        ms: Math.round(performance.now() - started),
        summary: `[${reason.code}] ${reason.message}`,
        notes: [],
        details: {},
      };
      this.report.steps.push(failed);
      this.options.onStep?.(failed);
      throw new DemoStepError(
        { n, id },
        reason,
        reason.code === 'INTERRUPTED' ? interruptExit(this.options.signal) : undefined,
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

class CauseError extends Error {
  constructor(readonly stepCause: StepCause) {
    super(stepCause.message);
  }
}

export function cause(code: string, message: string, hint?: string): CauseError {
  return new CauseError({ code, message, ...(hint === undefined ? {} : { hint }) });
}

export function causeOf(error: unknown, outer: AbortSignal | undefined): StepCause {
  if (outer?.aborted === true)
    return {
      code: 'INTERRUPTED',
      message: `interrupted by ${String(outer.reason)}; the temporary directories were cleaned up`,
    };
  if (error instanceof CauseError) return error.stepCause;
  const blue = toBlueError(controlApiMissing(error));
  return { code: blue.code, message: blue.message, ...(blue.hint === undefined ? {} : { hint: blue.hint }) };
}

function interruptExit(signal: AbortSignal | undefined): number {
  return signal?.reason === 'SIGTERM' ? 143 : 130;
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new Error(`aborted (${String(signal.reason)})`);
}

/** The step's promise, or a rejection as soon as the signal aborts (its work is left to the abort's effects). */
function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error(`aborted (${String(signal.reason)})`));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

export function listenCause(error: unknown, port: number): CauseError {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE')
    return cause(
      'ADDRESS_IN_USE',
      `127.0.0.1:${port} is in use`,
      'Leave --port out to use a free port, or pick another one.',
    );
  if (code === 'EACCES')
    return cause(
      'PERMISSION_DENIED',
      `not allowed to listen on 127.0.0.1:${port}`,
      'Use a port of 1024 or more, or leave --port out.',
    );
  return cause(
    code ?? 'INTERNAL',
    `the Control API could not listen on 127.0.0.1:${port}: ${(error as Error).message}`,
  );
}
