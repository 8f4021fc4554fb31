/**
 * The reference Control API server: Fastify routes on a `node:http` server of our own, SQLite metadata, a pluggable
 * blob store. The `node:http` server keeps the transport's limits (headers and whole-request timeouts, malformed HTTP
 * answered 400 as JSON); every request goes first to the blob store (the local store answers its own signed URLs),
 * then to Fastify, which routes it, authenticates it with a bearer token and runs its handler. Bodies are read by
 * http.ts (bounded in size and time), never by Fastify's parsers. No input can crash it: every failure is a JSON
 * `{error: <message>, code}` with a 4xx status, and anything unexpected a 500 without details. Here the server is
 * started and its parts wired; server/ holds what befalls a request (hooks.ts) and what runs beside it.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import type { BlobStore } from './blobs/types.js';
import { DEFAULT_BODY_TIMEOUT_MS, HttpError, sendError } from './http.js';
import { createMetrics } from './metrics.js';
import { RevisionFeed } from './revision-feed.js';
import { SearchIndexer } from './search-indexer.js';
import type { RouteContext } from './route-context.js';
import { DEFAULT_IDENTITY } from './identity/settings.js';
import { OidcSignIn } from './identity/oidc.js';
import { answerBadHttp } from './server/bad-http.js';
import { BackgroundGc } from './server/gc.js';
import { routeRequests } from './server/hooks.js';
import type { ControlServer, ControlServerOptions } from './server/options.js';
import { pathOnly, RequestLog } from './server/request-log.js';

export type { ControlServer, ControlServerOptions } from './server/options.js';

export function createControlServer(options: ControlServerOptions): ControlServer {
  const store = options.store;
  const clock = options.clock ?? { now: () => Date.now() };
  const log = options.log ?? (() => {});
  const metrics = createMetrics(store);
  let publicUrl = options.publicUrl?.replace(/\/+$/, '');
  const factory = typeof options.blobs === 'function' ? options.blobs : undefined;
  const rc: RouteContext = {
    store,
    blobs: typeof options.blobs === 'function' ? unboundBlobs : options.blobs,
    now: () => clock.now(),
    publicUrl: () => publicUrl ?? 'http://127.0.0.1',
    uploadUrlTtlMs: (options.uploadUrlTtlSeconds ?? 900) * 1000,
    downloadUrlTtlMs: (options.downloadUrlTtlSeconds ?? 300) * 1000,
    retentionMs: (options.retentionDays ?? 90) * 86_400_000,
    maxBodyBytes: options.maxBodyBytes ?? 64 * 1024,
    bodyTimeoutMs: options.timeouts?.bodyMs ?? DEFAULT_BODY_TIMEOUT_MS,
    profiles: options.profiles,
    identitySettings: { ...DEFAULT_IDENTITY, ...definedOnly(options.identity ?? {}) },
    assetsDir: options.assetsDir,
    oidc: options.oidc === undefined ? undefined : new OidcSignIn(options.oidc),
    bundleProfiles: options.bundleProfiles,
    adminFlags: options.adminFlags ?? '',
    revisions: new RevisionFeed(store, { intervalMs: options.events?.pollMs, log }),
    log,
    metrics,
    eventStreams: {
      keepaliveMs: options.events?.keepaliveMs ?? 15_000,
      maxStreams: options.events?.maxStreams ?? 20_000,
      maxLifetimeMs: options.events?.maxLifetimeMs ?? 3_600_000,
    },
    harnessMetadata:
      options.harnessMetadata === undefined
        ? undefined
        : {
            body: options.harnessMetadata,
            etag: etagOf(options.harnessMetadata),
          },
  };

  const headersTimeout = options.timeouts?.headersMs ?? 30_000;
  const requestTimeout = Math.max(options.timeouts?.requestMs ?? 300_000, headersTimeout);
  const requests = new RequestLog(log, metrics);
  let server!: Server;
  const app: FastifyInstance = Fastify({
    logger: false,
    // Bodies are read by the handlers (http.ts), so no limit of Fastify's applies; URLs are checked in onRequest.
    routerOptions: { maxParamLength: 200 },
    return503OnClosing: false,
    clientErrorHandler: answerBadHttp(log, headersTimeout, requestTimeout),
    serverFactory: (handler) => {
      server = createServer(
        // Node checks the two timeouts every connectionsCheckingInterval: often enough that a short one is kept.
        {
          requestTimeout,
          headersTimeout,
          connectionsCheckingInterval: Math.min(30_000, Math.max(10, Math.floor(headersTimeout / 2))),
        },
        (request: IncomingMessage, response: ServerResponse) => {
          requests.start(request);
          response.once('close', () =>
            requests.settle(request, {
              closed: true,
              outcome: requests.entry(request)?.outcome ?? String(response.statusCode),
            }),
          );
          // The local blob store answers its own signed URLs before any route is looked at.
          void offerToBlobs(rc, request, response).then(
            (answered) => {
              if (answered) {
                requests.entry(request)!.route = 'blob';
                requests.settle(request, { finished: true });
              } else handler(request, response);
            },
            (error: unknown) => {
              log(
                'error',
                `internal error on ${request.method ?? '?'} ${pathOnly(request.url)}: ` +
                  `${(error as Error)?.stack ?? String(error)}`,
                { event: 'internal_error', method: request.method ?? '?', path: pathOnly(request.url) },
              );
              sendError(
                response,
                new HttpError(500, 'internal', 'the server failed to answer this request; the error is in its log'),
              );
              requests.settle(request, { finished: true });
            },
          );
        },
      );
      return server;
    },
  });

  routeRequests(app, rc, requests);

  const ready = app.ready();

  const indexer =
    options.bundleProfiles === undefined
      ? undefined
      : new SearchIndexer({
          store,
          blobs: () => rc.blobs,
          profiles: options.bundleProfiles,
          log,
          now: () => clock.now(),
          pollMs: options.indexer?.pollMs,
          leaseMs: options.indexer?.leaseMs,
          manual: options.indexer?.manual,
        });
  rc.indexer = indexer;

  const gcEvery = options.gc?.intervalMs ?? 60 * 60_000;
  const gc = new BackgroundGc(rc, gcEvery);

  return {
    store,
    server,
    listen: async (host, port) => {
      await ready;
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          const url = `http://${hostPart}:${address.port}`;
          publicUrl ??= url;
          if (factory === undefined) {
            gc.schedule(options.gc?.firstMs ?? Math.floor(Math.random() * gcEvery));
            indexer?.start();
            resolve({ url });
            return;
          }
          factory(publicUrl).then(
            (blobs) => {
              rc.blobs = blobs;
              gc.schedule(options.gc?.firstMs ?? Math.floor(Math.random() * gcEvery));
              indexer?.start();
              resolve({ url });
            },
            (error: unknown) => server.close(() => reject(error)),
          );
        });
      });
    },
    get blobs() {
      return rc.blobs;
    },
    searchIdle: async () => {
      await indexer?.idle();
    },
    close: () =>
      new Promise((resolve) => {
        rc.revisions.close();
        gc.stop();
        server.close(async () => {
          // A collection under way finishes first: its deletes and their records go together; so does an indexing.
          await gc.running;
          await indexer?.close();
          void store.close();
          void app.close();
          // A store made by the factory belongs to this server; one passed in belongs to the caller.
          if (factory !== undefined && rc.blobs !== unboundBlobs) void rc.blobs.close().finally(resolve);
          else resolve();
        });
        server.closeAllConnections();
      }),
  };
}

async function offerToBlobs(rc: RouteContext, request: IncomingMessage, response: ServerResponse): Promise<boolean> {
  return (
    rc.blobs.serve !== undefined &&
    rc.blobs.serve(request, response, { wanted: (key) => rc.store.uploadWanted(key, rc.now()) })
  );
}

/** Stands in until `listen` has made the real store; never reached, as nothing is served before that. */
const unboundBlobs: BlobStore = {
  kind: 'local',
  presignUpload: () => Promise.reject(new Error('blob store not ready')),
  presignDownload: () => Promise.reject(new Error('blob store not ready')),
  stat: () => Promise.reject(new Error('blob store not ready')),
  delete: () => Promise.reject(new Error('blob store not ready')),
  close: () => Promise.resolve(),
};

/** A strong ETag of a JSON document: the start of its SHA-256. */
function etagOf(body: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(body)).digest('base64url').slice(0, 27)}"`;
}

/** The entries of `settings` that are set: an undefined option keeps its default. */
function definedOnly<T extends object>(settings: T): Partial<T> {
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined)) as Partial<T>;
}
