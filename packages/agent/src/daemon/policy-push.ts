/**
 * Policy push for `blue-agent run`: one long-lived `GET /governance-config/events` stream
 * (control-api/policy-events.ts) that tells the agent about a new revision as soon as it is published, so that it
 * checks (and reconciles) within seconds instead of at its next ttl. The stream only says *that* something changed: the
 * policy itself is still fetched and validated by the usual check, so polling stays the fallback and the source of
 * truth.
 * A dropped stream is opened again after a backoff (1 s doubling to 60 s, ±20% jitter, never before Retry-After;
 * a stream that named revisions and then ended starts again from 1 s, one that broke a bound of the stream backs off
 * like a failure); a Control API without the route (404/405/501) is asked again only hourly, in case it is upgraded.
 */
import type { Env } from '../context.js';
import { ControlClient } from '../control-api/client.js';
import { readPolicyEvents, type StreamEnd } from '../control-api/policy-events.js';
import type { RunLogger } from './log.js';

export interface PolicyPushOptions {
  /** Silence (no event, no keepalive: the server sends one every 15 s) after which the connection counts as dead. */
  idleMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** How long to wait before asking a Control API without an event stream again. */
  unsupportedRetryMs: number;
  /** A new revision is acted on after a random wait in [0, spreadMs), so a fleet does not fetch all in the same
   * instant. */
  spreadMs: number;
}

export const DEFAULT_POLICY_PUSH: PolicyPushOptions = {
  idleMs: 45_000,
  backoffBaseMs: 1_000,
  backoffCapMs: 60_000,
  unsupportedRetryMs: 60 * 60_000,
  spreadMs: 250,
};

export interface PushTarget {
  controlUrl: string;
  tokenSource: string;
  readToken: () => Promise<string | undefined>;
}

export interface PolicyPushDeps {
  env: Env;
  userAgent: string;
  log: RunLogger;
  random: () => number;
  /** A revision the stream named (the current one on every connect, then each new one). */
  onRevision: (revision: string) => void;
}

export class PolicyPush {
  private controller: AbortController | undefined;
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private spreadTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: PolicyPushDeps,
    private readonly options: PolicyPushOptions = DEFAULT_POLICY_PUSH,
  ) {}

  /** (Re)subscribes to `target`'s event stream; a stream already open is closed first. */
  async start(target: PushTarget): Promise<void> {
    await this.stop();
    const controller = new AbortController();
    this.controller = controller;
    this.running = this.loop(target, controller.signal).catch((error: unknown) =>
      this.deps.log.error('policy event stream crashed; polling only', { error: String(error) }),
    );
  }

  async stop(): Promise<void> {
    this.controller?.abort();
    this.wake?.();
    clearTimeout(this.spreadTimer);
    this.spreadTimer = undefined;
    await this.running;
    this.controller = undefined;
    this.running = undefined;
  }

  private async loop(target: PushTarget, signal: AbortSignal): Promise<void> {
    let failures = 0;
    /** Streams dropped in a row for breaking a bound: they open fine, so opening proves nothing until one ends well. */
    let refusals = 0;
    let quiet = false;
    while (!signal.aborted) {
      const end = await this.once(target, signal, () => {
        if (refusals > 0) return;
        if (failures > 0 || !quiet)
          this.deps.log.info('policy event stream open', {
            url: `${target.controlUrl.replace(/\/+$/, '')}/governance-config/events`,
          });
        quiet = true;
      });
      if (signal.aborted || end.kind === 'aborted') return;
      let delayMs: number;
      if (end.kind === 'unsupported') {
        this.deps.log.info('the Control API has no policy event stream; checking on the ttl only', {
          status: end.status,
          next_try_in_ms: this.options.unsupportedRetryMs,
        });
        delayMs = this.options.unsupportedRetryMs;
        quiet = false;
      } else if (end.kind === 'ended' && end.events > 0) {
        // A stream that was open and ended (the server's lifetime limit, a replica restarting): straight back, spread.
        failures = 0;
        refusals = 0;
        delayMs = this.jitter(this.options.backoffBaseMs);
        this.deps.log.debug('policy event stream ended; reconnecting', { reason: end.reason, next_try_in_ms: delayMs });
      } else {
        failures++;
        refusals = end.kind === 'refused' ? refusals + 1 : 0;
        const backoff = Math.min(
          this.options.backoffCapMs,
          this.options.backoffBaseMs * 2 ** Math.min(failures - 1, 30),
        );
        const retryAfter = end.kind === 'failed' ? end.retryAfterMs : undefined;
        delayMs = Math.min(this.options.backoffCapMs, Math.max(this.jitter(backoff), retryAfter ?? 0));
        // Said once when the stream goes away (or first breaks a bound), then only in the debug log: a laptop offline
        // for a day, or a server that keeps breaking its stream, logs one line.
        const fields = { reason: end.reason, failures, next_try_in_ms: delayMs };
        if (quiet || refusals === 1)
          this.deps.log.warn('policy event stream unavailable; retrying (the ttl check goes on)', fields);
        else this.deps.log.debug('policy event stream unavailable; retrying', fields);
        quiet = false;
      }
      await this.sleep(delayMs, signal);
    }
  }

  private async once(target: PushTarget, signal: AbortSignal, onOpen: () => void): Promise<StreamEnd> {
    let token: string | undefined;
    try {
      token = await target.readToken();
    } catch (error) {
      return { kind: 'failed', reason: error instanceof Error ? error.message : String(error) };
    }
    const client = await ControlClient.create({
      controlUrl: target.controlUrl,
      token,
      tokenSource: target.tokenSource,
      env: this.deps.env,
      userAgent: this.deps.userAgent,
      timeoutMs: this.options.idleMs,
      connectTimeoutMs: 10_000,
      // Error answers only: the stream itself is read chunk by chunk.
      maxResponseBytes: 4096,
    });
    try {
      return await readPolicyEvents(client, { signal, onOpen, onRevision: (revision) => this.announce(revision) });
    } finally {
      await client.close();
    }
  }

  private announce(revision: string): void {
    if (this.options.spreadMs <= 0) {
      this.deps.onRevision(revision);
      return;
    }
    clearTimeout(this.spreadTimer);
    this.spreadTimer = setTimeout(
      () => {
        this.spreadTimer = undefined;
        this.deps.onRevision(revision);
      },
      Math.floor(this.deps.random() * this.options.spreadMs),
    );
  }

  private jitter(ms: number): number {
    return Math.round(ms * (0.8 + 0.4 * this.deps.random()));
  }

  private sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
