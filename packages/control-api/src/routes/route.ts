/** What a route is: its path as Fastify matches it and as people read it, its handlers and the scope each needs. */
import type { Request, RouteContext } from '../route-context.js';
import type { ApiScope } from '../store/index.js';

type Handler = (rc: RouteContext, req: Request) => Promise<void>;

export interface Route {
  /** The route as Fastify matches it (`:id` with its pattern). */
  path: string;
  /** The same, for telling 405 from 404. */
  pattern: RegExp;
  /** Answered without a bearer token. */
  public: boolean;
  /** The path as people read it (`/session-uploads/{id}`): the route's label in metrics. */
  template: string;
  methods: Partial<Record<string, Handler>>;
  /** The scope a token needs, per method (`any`: any valid token); public routes have none. */
  scopes: Partial<Record<string, ApiScope | 'any'>>;
  /** A browser page (its own session cookie, forms with CSRF): errors are answered as pages. */
  page: boolean;
}

export const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

export const ID = `:id(^${UUID}$)`;

/** A session as a page's address names it: its id, or the start of it as the CLI takes it (the page resolves it). */
export const SESSION_REF = ':id(^[0-9A-Fa-f-]{1,36}$)';

/** A route's parameters as a pattern (405 or 404) and as people read them (metrics). */
const PARAM = /:id\(\^(.+?)\$\)/g;

/** The path as a regular expression: its text as it is, each parameter as its own pattern. */
function pathPattern(path: string): RegExp {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  let source = '';
  let last = 0;
  for (const match of path.matchAll(PARAM)) {
    source += `${literal(path.slice(last, match.index))}(?:${match[1]})`;
    last = match.index + match[0].length;
  }
  return new RegExp(`^${source}${literal(path.slice(last))}$`);
}

/** A route; each method of one that is not public names the scope it needs (`[handler, scope]`). */
export function route(
  path: string,
  methods: Partial<Record<string, Handler | [Handler, ApiScope | 'any']>>,
  options: { public?: boolean; page?: boolean } = {},
): Route {
  const handlers: Route['methods'] = {};
  const scopes: Route['scopes'] = {};
  for (const [method, entry] of Object.entries(methods)) {
    if (entry === undefined) continue;
    if (Array.isArray(entry)) [handlers[method], scopes[method]] = entry;
    else if (options.public === true || options.page === true) handlers[method] = entry;
    else throw new Error(`${method} ${path} names no scope`);
  }
  return {
    path,
    pattern: pathPattern(path),
    public: options.public === true || options.page === true,
    template: path.replace(PARAM, '{id}'),
    methods: handlers,
    scopes,
    page: options.page === true,
  };
}
