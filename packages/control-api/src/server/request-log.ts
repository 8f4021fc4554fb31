/**
 * One log line and one metric per request, once both its response has closed and its handling has finished (a handler
 * may still be reading the body of a client that is already gone): the status, or what happened instead.
 */
import type { IncomingMessage } from 'node:http';
import type { ServerLog } from '../log.js';
import type { ServerMetrics } from '../metrics.js';

/** What is known of a request under way. */
export interface RequestEntry {
  started: number;
  closed: boolean;
  finished: boolean;
  /** The status, or what happened instead (`aborted: ...`). */
  outcome?: string;
  /** The route's template (a bounded metric label), known once routed. */
  route?: string;
}

export class RequestLog {
  readonly #requests = new WeakMap<IncomingMessage, RequestEntry>();
  readonly #log: ServerLog;
  readonly #metrics: ServerMetrics;

  constructor(log: ServerLog, metrics: ServerMetrics) {
    this.#log = log;
    this.#metrics = metrics;
  }

  /** A request has arrived. */
  start(request: IncomingMessage): void {
    this.#requests.set(request, { started: Date.now(), closed: false, finished: false });
  }

  /** The entry of a request not yet logged. */
  entry(request: IncomingMessage): RequestEntry | undefined {
    return this.#requests.get(request);
  }

  /** Notes a change; the request is logged once it has both closed and finished. */
  settle(request: IncomingMessage, change: { closed?: true; finished?: true; outcome?: string }): void {
    const entry = this.#requests.get(request);
    if (entry === undefined) return;
    Object.assign(entry, change);
    if (!entry.closed || !entry.finished) return;
    this.#requests.delete(request);
    const ms = Date.now() - entry.started;
    const outcome = entry.outcome ?? '?';
    const status = /^\d{3}\b/.test(outcome) ? Number(outcome.slice(0, 3)) : null;
    this.#log('info', `${request.method ?? '?'} ${pathOnly(request.url)} ${outcome} ${ms}ms`, {
      event: 'request',
      method: request.method ?? '?',
      path: pathOnly(request.url),
      status,
      outcome,
      duration_ms: ms,
    });
    this.#metrics.request(
      metricMethod(request.method),
      entry.route ?? 'unmatched',
      status === null ? 'aborted' : String(status),
      ms / 1000,
    );
  }
}

/** The method as a metric label: the ones the routes take, anything else `other` (a bounded label set). */
function metricMethod(method: string | undefined): string {
  return method === 'GET' || method === 'POST' || method === 'PUT' || method === 'DELETE' || method === 'HEAD'
    ? method
    : 'other';
}

/** The path without its query: queries may carry search text that does not belong in a log. */
export function pathOnly(url: string | undefined): string {
  return (url ?? '').split('?')[0]!.slice(0, 200);
}
