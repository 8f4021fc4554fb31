/**
 * `GET /metrics`: what the server does, in Prometheus' text format (prom-client), for the operator's scraper. One
 * registry per server (never prom-client's global one), so several servers in one process keep their own counts.
 * Labels are bounded: routes by their template (`/session-uploads/{id}`), never a raw path; statuses as numbers.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ControlStore } from './store/index.js';

export interface ServerMetrics {
  readonly contentType: string;
  /** One answered (or abandoned: status `aborted`) request. */
  request(method: string, route: string, status: string, seconds: number): void;
  /** Bytes of a bundle verified at complete. */
  uploaded(bytes: number): void;
  /** One garbage collection by this server: what it deleted and whether everything went. */
  collected(result: { objects: number; failed: number }, seconds: number): void;
  render(): Promise<string>;
}

/** Request latencies, in seconds: from a cached 304 to a slow bundle PUT. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createMetrics(store: ControlStore): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'blue_control_' });
  const requests = new Counter({
    name: 'blue_control_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status (aborted: the client went away first).',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'blue_control_http_request_duration_seconds',
    help: 'Time to answer a request, by method and route template (presign and complete latencies are their routes).',
    labelNames: ['method', 'route'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const uploadBytes = new Counter({
    name: 'blue_control_upload_bytes_total',
    help: 'Bytes of bundles verified at complete.',
    registers: [registry],
  });
  const uploads = new Counter({
    name: 'blue_control_uploads_completed_total',
    help: 'Uploads verified at complete.',
    registers: [registry],
  });
  const gcRuns = new Counter({
    name: 'blue_control_gc_runs_total',
    help: 'Garbage collections run by this server, by outcome (ok, or partial when an object could not be deleted).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const gcObjects = new Counter({
    name: 'blue_control_gc_deleted_objects_total',
    help: 'Objects deleted by garbage collection: past their retention, or of deleted sessions.',
    registers: [registry],
  });
  const gcSeconds = new Histogram({
    name: 'blue_control_gc_duration_seconds',
    help: 'Time one garbage collection took.',
    buckets: [0.01, 0.1, 1, 10, 60, 300],
    registers: [registry],
  });
  const backend = new Gauge({
    name: 'blue_control_database_info',
    help: 'The database backend in use (always 1).',
    labelNames: ['backend'],
    registers: [registry],
  });
  backend.set({ backend: store.backend }, 1);
  // The connection pool (PostgreSQL), read when scraped.
  new Gauge({
    name: 'blue_control_database_pool_connections',
    help: 'Database connections of this server, by state: idle, in use, and requests waiting for one.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const pool = store.poolStats?.();
      if (pool === undefined) return;
      this.set({ state: 'idle' }, pool.idle);
      this.set({ state: 'in_use' }, pool.total - pool.idle);
      this.set({ state: 'waiting' }, pool.waiting);
    },
  });
  return {
    contentType: registry.contentType,
    request: (method, route, status, seconds) => {
      requests.inc({ method, route, status });
      latency.observe({ method, route }, seconds);
    },
    uploaded: (bytes) => {
      uploads.inc();
      uploadBytes.inc(bytes);
    },
    collected: (result, seconds) => {
      gcRuns.inc({ outcome: result.failed === 0 ? 'ok' : 'partial' });
      gcObjects.inc(result.objects);
      gcSeconds.observe(seconds);
    },
    render: () => registry.metrics(),
  };
}
