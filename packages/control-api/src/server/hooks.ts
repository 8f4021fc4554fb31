/**
 * What Fastify does with a routed request: the URL checked and parsed, bearer authentication with the scope each route
 * names (public routes and the browser's pages need none), the handler, and every failure answered — JSON to API
 * clients, a page to a browser; 405 with Allow for a path that takes other methods, 404 for any other. Bodies are read
 * by the handlers (http.ts), bounded in size and time, never by Fastify's parsers.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ClientGoneError, errorBody, HttpError } from '../http.js';
import type { RouteContext } from '../route-context.js';
import { ROUTES } from '../routes/index.js';
import type { User } from '../store/index.js';
import { storeUnavailable } from '../store/unavailable.js';
import { sendErrorPage } from '../web/errors.js';
import { wantsPage } from '../web/http.js';
import { authenticate } from './authenticate.js';
import { pathOnly, type RequestLog } from './request-log.js';

const MAX_URL_LENGTH = 8192;

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated caller (set before the handler of every route that is not public). */
    user: User;
    /** The request URL, parsed once. */
    parsedUrl: URL;
  }
}

/** Registers every route on `app`, with the hooks and handlers above; `requests` logs each request once. */
export function routeRequests(app: FastifyInstance, rc: RouteContext, requests: RequestLog): void {
  const log = rc.log;
  // Bodies are read by the handlers, bounded in size and time: Fastify's parsers leave the stream alone.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  app.addHook('onRequest', async (request) => {
    // The route's template for metrics (a bounded label), known once routed.
    const template = (request.routeOptions.config as { template?: string } | undefined)?.template;
    const entry = requests.entry(request.raw);
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
          if (reply.sent && !requests.entry(request.raw)?.finished)
            requests.settle(request.raw, { finished: true, outcome: String(reply.raw.statusCode) });
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
      requests.settle(request.raw, {
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
      const entry = requests.entry(request.raw);
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
    const entry = requests.entry(request.raw);
    requests.settle(request.raw, { finished: true, outcome: entry?.outcome ?? String(reply.statusCode) });
  });
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
