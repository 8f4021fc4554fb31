/**
 * The reference Control API server: Fastify routes on a `node:http` server of our own, SQLite metadata, a pluggable
 * blob store. The `node:http` server keeps the transport's limits (headers and whole-request timeouts, malformed HTTP
 * answered 400 as JSON); every request goes first to the blob store (the local store answers its own signed URLs),
 * then to Fastify, which routes it, authenticates it with a bearer token and runs its handler. Bodies are read by
 * http.ts (bounded in size and time), never by Fastify's parsers. No input can crash it: every failure is a JSON
 * `{error: <message>, code}` with a 4xx status, and anything unexpected a 500 without details.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { BlobStore } from './blobs/types.js';
import { ClientGoneError, DEFAULT_BODY_TIMEOUT_MS, errorBody, HttpError, sendError } from './http.js';
import type { ServerLog } from './log.js';
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { createMetrics } from './metrics.js';
import { collectWith } from './admin.js';
import { RevisionFeed } from './revision-feed.js';
import { SearchIndexer } from './search-indexer.js';
import type { RouteContext } from './route-context.js';
import { ROUTES } from './routes/index.js';
import type { ApiScope, ControlStore, User } from './store/index.js';
import { storeUnavailable } from './store/unavailable.js';
import { DEFAULT_IDENTITY, type IdentitySettings } from './identity/settings.js';
import { OidcSignIn, type OidcSettings } from './identity/oidc.js';
import { sendErrorPage } from './web/errors.js';
import { wantsPage } from './web/http.js';

export interface ControlServerOptions {
  /** The opened database (store/index.ts `openStore`); the server closes it. */
  store: ControlStore;
  /** Base URL clients reach this server at (behind a proxy, say); default: the address it listens on. */
  publicUrl?: string | undefined;
  /**
   * Where bundles are kept. A factory is called at `listen` with the public URL, for stores whose URLs point back at
   * this server (the local store) when the port is only known once bound.
   */
  blobs: BlobStore | ((publicUrl: string) => Promise<BlobStore>);
  clock?: { now(): number } | undefined;
  uploadUrlTtlSeconds?: number | undefined;
  downloadUrlTtlSeconds?: number | undefined;
  retentionDays?: number | undefined;
  maxBodyBytes?: number | undefined;
  /** The document `GET /harness-metadata` answers (see harnessMetadataDocument); absent: that route answers 404. */
  harnessMetadata?: unknown;
  /** The profiles a presign may name (see knownProfiles); absent: any is accepted. */
  profiles?: RouteContext['profiles'];
  /** The profiles themselves, to verify a completed bundle and index what it says; absent: titles and summaries only.
   * */
  bundleProfiles?: ProfileSet | undefined;
  /** The search indexer's timings (search-indexer.ts). */
  indexer?: { pollMs?: number | undefined; leaseMs?: number | undefined; manual?: boolean | undefined } | undefined;
  /**
   * Slow clients: all headers must arrive within `headersMs` (default 30 s) and the whole request within `requestMs`
   * (300 s, room for a bundle PUT to the local store), else 408; a JSON body within `bodyMs` (30 s), else 408.
   */
  timeouts?:
    | { headersMs?: number | undefined; requestMs?: number | undefined; bodyMs?: number | undefined }
    | undefined;
  /** `GET /governance-config/events`: how often the database is asked for a new revision, and the streams' limits. */
  events?:
    | {
        pollMs?: number | undefined;
        keepaliveMs?: number | undefined;
        maxStreams?: number | undefined;
        maxLifetimeMs?: number | undefined;
      }
    | undefined;
  /** One line per request and per unexpected error, with its fields for structured logs (log.ts). Never given tokens.
   * */
  log?: ServerLog | undefined;
  /**
   * Garbage collection in the background (collectWith: objects past retention and of deleted sessions), first after
   * `firstMs` (default: a random time within the interval, so replicas spread), then every `intervalMs` (default an
   * hour); 0 turns it off.
   */
  gc?: { intervalMs?: number | undefined; firstMs?: number | undefined } | undefined;
  /** Token, device code, browser session and sign-in link lifetimes (identity/settings.ts: DEFAULT_IDENTITY). */
  identity?: Partial<IdentitySettings> | undefined;
  /** The dashboard's built assets (dist/assets). */
  assetsDir?: string | undefined;
  /** Browser sign-in through an OpenID provider; absent: one-time sign-in links only. */
  oidc?: OidcSettings | undefined;
  /** What `control-plane` commands add to reach this server's database (` --data DIR`), for the commands pages print.
   * */
  adminFlags?: string | undefined;
}

export interface ControlServer {
  /** Resolves once every completed session's text has been indexed (tests). */
  searchIdle(): Promise<void>;
  listen(host: string, port: number): Promise<{ url: string }>;
  close(): Promise<void>;
  readonly store: ControlStore;
  readonly server: Server;
  readonly blobs: BlobStore;
}

const MAX_TOKEN_LENGTH = 512;
const MAX_URL_LENGTH = 8192;

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller (set before the handler of every route that is not public). */
    user: User;
    /** The request URL, parsed once. */
    parsedUrl: URL;
  }
}

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
            etag:
              `"` +
              `${createHash('sha256').update(JSON.stringify(options.harnessMetadata)).digest('base64url').slice(0, 27)}"`,
          },
  };

  const headersTimeout = options.timeouts?.headersMs ?? 30_000;
  const requestTimeout = Math.max(options.timeouts?.requestMs ?? 300_000, headersTimeout);
  // Malformed HTTP never reaches a handler: answer it here rather than dropping the socket silently.
  const clientError = (error: NodeJS.ErrnoException, socket: Socket): void => {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    const answer =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? {
            status: '431 Request Header Fields Too Large',
            code: 'headers_too_large',
            message: 'the request line or headers are too large',
          }
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? {
              status: '408 Request Timeout',
              code: 'request_timeout',
              message:
                `the request did not arrive in time (headers within ${headersTimeout} ms, all of it within ` +
                `${requestTimeout} ms)`,
            }
          : { status: '400 Bad Request', code: 'bad_http', message: 'the request is not well-formed HTTP' };
    log('info', `client error: ${answer.status.split(' ')[0]} ${answer.code}`, {
      event: 'client_error',
      status: Number(answer.status.split(' ')[0]),
      code: answer.code,
    });
    const body = JSON.stringify({ error: answer.message, code: answer.code });
    const status = answer.status;
    socket.end(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: ` +
        `close\r\n\r\n${body}`,
    );
  };

  // One log line per request, once both its response has closed and its handling has finished (a handler may still be
  // reading the body of a client that is already gone): the status, or what happened instead.
  const requests = new WeakMap<
    IncomingMessage,
    { started: number; closed: boolean; finished: boolean; outcome?: string; route?: string }
  >();
  const settle = (request: IncomingMessage, change: { closed?: true; finished?: true; outcome?: string }): void => {
    const entry = requests.get(request);
    if (entry === undefined) return;
    Object.assign(entry, change);
    if (!entry.closed || !entry.finished) return;
    requests.delete(request);
    const ms = Date.now() - entry.started;
    const outcome = entry.outcome ?? '?';
    const status = /^\d{3}\b/.test(outcome) ? Number(outcome.slice(0, 3)) : null;
    log('info', `${request.method ?? '?'} ${pathOnly(request.url)} ${outcome} ${ms}ms`, {
      event: 'request',
      method: request.method ?? '?',
      path: pathOnly(request.url),
      status,
      outcome,
      duration_ms: ms,
    });
    metrics.request(
      metricMethod(request.method),
      entry.route ?? 'unmatched',
      status === null ? 'aborted' : String(status),
      ms / 1000,
    );
  };
  let server!: Server;
  const app: FastifyInstance = Fastify({
    logger: false,
    // Bodies are read by the handlers (http.ts), so no limit of Fastify's applies; URLs are checked in onRequest.
    routerOptions: { maxParamLength: 200 },
    return503OnClosing: false,
    clientErrorHandler: clientError,
    serverFactory: (handler) => {
      server = createServer(
        // Node checks the two timeouts every connectionsCheckingInterval: often enough that a short one is kept.
        {
          requestTimeout,
          headersTimeout,
          connectionsCheckingInterval: Math.min(30_000, Math.max(10, Math.floor(headersTimeout / 2))),
        },
        (request: IncomingMessage, response: ServerResponse) => {
          requests.set(request, { started: Date.now(), closed: false, finished: false });
          response.once('close', () =>
            settle(request, { closed: true, outcome: requests.get(request)?.outcome ?? String(response.statusCode) }),
          );
          // The local blob store answers its own signed URLs before any route is looked at.
          void offerToBlobs(rc, request, response).then(
            (answered) => {
              if (answered) {
                requests.get(request)!.route = 'blob';
                settle(request, { finished: true });
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
              settle(request, { finished: true });
            },
          );
        },
      );
      return server;
    },
  });

  // Bodies are read by the handlers, bounded in size and time: Fastify's parsers leave the stream alone.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  app.addHook('onRequest', async (request) => {
    // The route's template for metrics (a bounded label), known once routed.
    const template = (request.routeOptions.config as { template?: string } | undefined)?.template;
    const entry = requests.get(request.raw);
    if (entry !== undefined && template !== undefined) entry.route = template;
    const rawUrl = request.raw.url ?? '';
    if (rawUrl.length > MAX_URL_LENGTH)
      throw new HttpError(400, 'url_too_long', `the request URL is longer than ${MAX_URL_LENGTH} characters`);
    if (!rawUrl.startsWith('/')) throw new HttpError(400, 'bad_path', 'the request path is not valid');
    try {
      request.parsedUrl = new URL(rawUrl, 'http://control.invalid');
    } catch {
      throw new HttpError(400, 'bad_path', 'the request path is not valid');
    }
  });

  for (const route of ROUTES) {
    for (const [method, handle] of Object.entries(route.methods)) {
      if (handle === undefined) continue;
      app.route({
        method: method as 'GET' | 'POST' | 'PUT' | 'DELETE',
        url: route.path,
        config: { template: route.template, page: route.page },
        // After routing: public routes need no token, every other one is refused before anything else is read.
        ...(route.public
          ? {}
          : {
              preHandler: async (request: FastifyRequest) =>
                void (request.user = await authenticate(rc, request.raw, route.scopes[method]!)),
            }),
        handler: async (request: FastifyRequest, reply: FastifyReply) => {
          const params = Object.values((request.params ?? {}) as Record<string, string>);
          await handle(rc, {
            raw: request.raw,
            reply,
            url: request.parsedUrl,
            user: route.public ? undefined : request.user,
            params,
          });
          // A handler that took the response over (an event stream) is through once it returns.
          if (reply.sent && !requests.get(request.raw)?.finished)
            settle(request.raw, { finished: true, outcome: String(reply.raw.statusCode) });
        },
      });
    }
  }

  // A path that exists with other methods is 405 with Allow; anything else 404.
  app.setNotFoundHandler(async (request) => {
    const path = request.parsedUrl?.pathname ?? pathOnly(request.raw.url);
    const route = ROUTES.find((r) => r.pattern.test(path));
    if (route === undefined) {
      throw new HttpError(
        404,
        'not_found',
        wantsPage(request.raw.headers.accept)
          ? `There is no page at ${path.slice(0, 200)}.`
          : `no route ${path.slice(0, 200)}`,
      );
    }
    const allow = Object.keys(route.methods).join(', ');
    throw new HttpError(405, 'method_not_allowed', `${path.slice(0, 200)} accepts ${allow}`, { allow });
  });

  app.setErrorHandler(async (error: unknown, request, reply) => {
    if (error instanceof ClientGoneError || (!request.raw.complete && request.raw.socket.destroyed)) {
      settle(request.raw, {
        finished: true,
        outcome:
          `aborted: ` +
          `${error instanceof ClientGoneError ? error.message : 'the client closed the connection mid-request'}`,
      });
      return reply.hijack();
    }
    // A page's error is a page; so is an unmatched path's, to a browser (an API client gets JSON).
    const config = request.routeOptions.config as { page?: boolean; template?: string } | undefined;
    const page = config?.page === true || (config?.template === undefined && wantsPage(request.raw.headers.accept));
    if (error instanceof HttpError) {
      const entry = requests.get(request.raw);
      if (entry !== undefined) entry.outcome = `${error.status} ${error.code}`;
      return page ? sendErrorPage(reply, error) : sendReplyError(reply, error);
    }
    const unavailable = storeUnavailable(error);
    if (unavailable !== undefined) {
      log('error', `${request.method} ${pathOnly(request.raw.url)}: ${unavailable}`, {
        event: 'database_unavailable',
        method: request.method,
        path: pathOnly(request.raw.url),
      });
      return sendReplyError(
        reply,
        new HttpError(503, 'database_unavailable', `${unavailable}; try again shortly`, { 'retry-after': '2' }),
      );
    }
    log(
      'error',
      `internal error on ${request.method} ${pathOnly(request.raw.url)}: ${(error as Error)?.stack ?? String(error)}`,
      { event: 'internal_error', method: request.method, path: pathOnly(request.raw.url) },
    );
    const internal = new HttpError(
      500,
      'internal',
      'the server failed to answer this request; the error is in its log',
    );
    return page ? sendErrorPage(reply, internal) : sendReplyError(reply, internal);
  });

  // Answered: the handling is over (the status or the error's outcome is already known).
  app.addHook('onResponse', async (request, reply) => {
    const entry = requests.get(request.raw);
    settle(request.raw, { finished: true, outcome: entry?.outcome ?? String(reply.statusCode) });
  });

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

  // Background garbage collection: idempotent, so every replica may run it; started at a random point of the interval.
  const gcEvery = options.gc?.intervalMs ?? 60 * 60_000;
  let gcTimer: NodeJS.Timeout | undefined;
  let gcRunning: Promise<void> | undefined;
  const collect = async (): Promise<void> => {
    const started = Date.now();
    try {
      const result = await collectWith(store, rc.blobs, clock.now());
      const objects = result.deleted.length + result.deleted_objects.length;
      metrics.collected({ objects, failed: result.failed.length }, (Date.now() - started) / 1000);
      if (objects > 0 || result.failed.length > 0) {
        log(
          result.failed.length === 0 ? 'info' : 'error',
          `gc: deleted ${objects} object${objects === 1 ? '' : 's'}` +
            `${result.failed.length === 0 ? '' : `, ${result.failed.length} could not be deleted (the first: ${result.failed[0]!.error})`}`,
          {
            event: 'gc',
            deleted: objects,
            failed: result.failed.length,
          },
        );
      }
    } catch (error) {
      metrics.collected({ objects: 0, failed: 1 }, (Date.now() - started) / 1000);
      log(
        'error',
        `gc failed; it runs again in ${Math.round(gcEvery / 60_000)} min: ` +
          `${error instanceof Error ? error.message : String(error)}`,
        { event: 'gc', failed: 1 },
      );
    }
  };
  const scheduleGc = (delayMs: number): void => {
    if (gcEvery <= 0) return;
    gcTimer = setTimeout(() => {
      gcRunning = collect().finally(() => {
        gcRunning = undefined;
        scheduleGc(gcEvery);
      });
    }, delayMs);
    gcTimer.unref();
  };

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
            scheduleGc(options.gc?.firstMs ?? Math.floor(Math.random() * gcEvery));
            indexer?.start();
            resolve({ url });
            return;
          }
          factory(publicUrl).then(
            (blobs) => {
              rc.blobs = blobs;
              scheduleGc(options.gc?.firstMs ?? Math.floor(Math.random() * gcEvery));
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
        clearTimeout(gcTimer);
        server.close(async () => {
          // A collection under way finishes first: its deletes and their records go together; so does an indexing.
          await gcRunning;
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

/** The method as a metric label: the ones the routes take, anything else `other` (a bounded label set). */
function metricMethod(method: string | undefined): string {
  return method === 'GET' || method === 'POST' || method === 'PUT' || method === 'DELETE' || method === 'HEAD'
    ? method
    : 'other';
}

function sendReplyError(reply: FastifyReply, error: HttpError): FastifyReply {
  if (reply.sent || reply.raw.headersSent) {
    reply.raw.destroy();
    return reply.hijack();
  }
  return reply
    .code(error.status)
    .headers({ 'cache-control': 'no-store', ...error.headers })
    .type('application/json; charset=utf-8')
    .send(errorBody(error));
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

/**
 * The caller of a bearer token that holds `scope` (RFC 6750: 401 with `invalid_token` for a token that is unknown,
 * revoked or expired, 403 `insufficient_scope` for one that may not do this). An administrator whose token lacks the
 * `admin` scope is a member for this request.
 */
async function authenticate(rc: RouteContext, request: IncomingMessage, scope: ApiScope | 'any'): Promise<User> {
  const header = request.headers.authorization;
  const challenge = (error?: string, description?: string) => ({
    'www-authenticate':
      `Bearer realm="blue-control"${error === undefined ? '' : `, error="${error}"`}` +
      `${description === undefined ? '' : `, error_description="${description}"`}`,
  });
  if (header === undefined)
    throw new HttpError(401, 'unauthenticated', 'send a bearer token: Authorization: Bearer <token>', challenge());
  const match = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i.exec(header);
  if (match === null || match[1]!.length > MAX_TOKEN_LENGTH) {
    throw new HttpError(
      401,
      'unauthenticated',
      'the Authorization header must be "Bearer <token>"',
      challenge('invalid_request'),
    );
  }
  const found = await rc.store.identity.authenticate(match[1]!, rc.now());
  if (found === 'expired') {
    throw new HttpError(
      401,
      'token_expired',
      'the access token expired; refresh it (blue-agent does so by itself) or sign in again',
      challenge('invalid_token', 'The access token expired'),
    );
  }
  if (found === undefined) {
    throw new HttpError(
      401,
      'invalid_token',
      'the bearer token is not valid (unknown or revoked); sign in again: blue-agent login --control-url URL',
      challenge('invalid_token'),
    );
  }
  // A member at an administrator's route hears that it is for administrators (from the route), not about scopes.
  const personCould = scope !== 'admin' || found.user.is_admin;
  if (scope !== 'any' && personCould && !found.scopes.includes(scope)) {
    throw new HttpError(
      403,
      'insufficient_scope',
      `this token may not do this: it needs the scope ${scope}; sign in again asking for it`,
      {
        'www-authenticate': `Bearer realm="blue-control", error="insufficient_scope", scope="${scope}"`,
      },
    );
  }
  return found.user.is_admin && !found.scopes.includes('admin') ? { ...found.user, is_admin: false } : found.user;
}

/** The path without its query: queries may carry search text that does not belong in a log. */
function pathOnly(url: string | undefined): string {
  return (url ?? '').split('?')[0]!.slice(0, 200);
}

/** The entries of `settings` that are set: an undefined option keeps its default. */
function definedOnly<T extends object>(settings: T): Partial<T> {
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined)) as Partial<T>;
}
