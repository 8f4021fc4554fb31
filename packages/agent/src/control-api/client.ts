/**
 * The one client of the Control API: one connection pool, bounded in time and size, with the bearer token sent only to
 * the Control API's own origin. `requestJson` is what the session-upload, session and status routes use: every
 * failure is an UploadError that says whether a retry can help. The policy fetch (governance-config.ts) uses `send`
 * for its own answers (ETag, same-origin redirects). No message ever holds the token or a signed URL's query.
 * The pool (undici) is made on first use; `openStream` (the policy event stream the long-running agent holds) goes
 * through Node's own HTTP client instead, which keeps the idle agent small: undici's dispatcher alone stays resident
 * many times over what node:http does (bench/run-idle.mjs).
 */
import type { Dispatcher } from 'undici';
import type { Env } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { describeSchemaError, type AjvError } from '@blue-agent/contract/schema/describe.js';
import { CONTROL_URL_ENV, TOKEN_ENV } from './env.js';
import { UploadError } from './errors.js';
import { JsonTooDeep, parseJsonBounded } from '@blue-agent/contract/util/json-depth.js';
import { originOf } from '@blue-agent/contract/util/url.js';
import {
  header,
  MAX_ANSWER_DEPTH,
  parseRetryAfter,
  readCapped,
  ResponseTooLarge,
  routeUrl,
  serverError,
  statusKind,
} from './http.js';
import { describeNetworkError, safeUrl, scrubText } from './scrub.js';
import { createDispatcher, loadUndici } from './undici.js';
import { openStream, type StreamAnswer } from './stream.js';

export const DEFAULT_TIMEOUT_MS = 30_000;
/** Control API answers are small JSON documents. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;

export interface ControlClientOptions {
  controlUrl: string;
  /** Never logged, never part of a message. */
  token: string | undefined;
  /** Where the token came from, for messages. */
  tokenSource: string;
  env: Env;
  userAgent: string;
  timeoutMs?: number;
  /** How long connecting may take; defaults to the smaller of timeoutMs and 10 s. */
  connectTimeoutMs?: number;
  maxResponseBytes?: number;
  /** Clock for Retry-After dates. */
  now?: () => number;
}

export interface SendOptions {
  /** JSON text; sent with `content-type: application/json`. */
  json?: string;
  headers?: Record<string, string>;
  /** Defaults to the client's timeout for this one request. */
  signal?: AbortSignal;
}

export class ControlClient {
  readonly controlUrl: string;
  /** `scheme://host[:port]` of the Control API: the only origin the token is sent to. */
  readonly origin: string;
  readonly timeoutMs: number;
  readonly userAgent: string;
  readonly maxResponseBytes: number;
  private readonly token: string | undefined;
  private readonly tokenSource: string;
  private readonly now: () => number;

  private readonly env: Env;
  private readonly connectMs: number;
  private pool: Promise<{ undici: typeof import('undici'); dispatcher: Dispatcher }> | undefined;

  private constructor(options: ControlClientOptions) {
    this.controlUrl = options.controlUrl;
    this.origin = originOf(options.controlUrl);
    this.token = options.token;
    this.tokenSource = options.tokenSource;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.userAgent = options.userAgent;
    this.now = options.now ?? Date.now;
    this.env = options.env;
    this.connectMs = options.connectTimeoutMs ?? Math.min(this.timeoutMs, 10_000);
  }

  static async create(options: ControlClientOptions): Promise<ControlClient> {
    if (originOf(options.controlUrl) === '') {
      throw new BlueError('CONFIG_INVALID', `the Control API URL ${safeUrl(options.controlUrl)} is not an http(s) URL`);
    }
    return new ControlClient(options);
  }

  /**
   * The connection pool, made on first use (undici loads then: most commands never talk to the network). Shared by
   * the Control API calls and the signed-URL transfers: one pool, one set of timeouts and proxy settings.
   */
  connectionPool(): Promise<Dispatcher> {
    return this.connect().then((pool) => pool.dispatcher);
  }

  private connect(): Promise<{ undici: typeof import('undici'); dispatcher: Dispatcher }> {
    const pool = (this.pool ??= loadUndici().then((undici) => ({
      undici,
      dispatcher: createDispatcher(undici, this.env, { connectMs: this.connectMs, responseMs: this.timeoutMs }),
    })));
    // A pool that could not be made (a bad proxy URL) is tried again by the next call.
    pool.catch(() => {
      if (this.pool === pool) this.pool = undefined;
    });
    return pool;
  }

  /** `<control_url>/<route>`, keeping the base URL's path prefix. */
  routeUrl(route: string): URL {
    return routeUrl(this.controlUrl, route);
  }

  /**
   * One request to the Control API with the bearer token, the answer unread. Rejects with the network library's error
   * when no answer came (describe it with `describeNetworkError`), and with an UploadError for a URL off the Control
   * API's origin: a token must not travel somewhere the configuration did not name.
   */
  async send(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: URL,
    options: SendOptions = {},
  ): Promise<Dispatcher.ResponseData> {
    const headers = this.headersFor(url, options);
    const { undici, dispatcher } = await this.connect();
    return undici.request(url, {
      method,
      headers,
      ...(options.json === undefined ? {} : { body: options.json }),
      dispatcher,
      signal: options.signal ?? AbortSignal.timeout(this.timeoutMs),
    });
  }

  /**
   * A long-lived GET, the answer unread, with `send`'s rules (the token only to the Control API's origin, the proxy
   * settings of the environment). The client's timeout bounds connecting, the wait for the answer and each silence in
   * it; `signal` ends it. Rejects as `send` does when no answer came.
   */
  async openStream(
    url: URL,
    options: { headers?: Record<string, string>; signal: AbortSignal },
  ): Promise<StreamAnswer> {
    const headers = this.headersFor(url, options);
    return openStream(url, {
      headers,
      env: this.env,
      connectMs: this.connectMs,
      idleMs: this.timeoutMs,
      signal: options.signal,
    });
  }

  private headersFor(url: URL, options: SendOptions): Record<string, string> {
    if (url.origin !== this.origin) {
      throw new UploadError(
        'service',
        'UPLOAD_FAILED',
        `refusing to send the token to ${url.origin}, which is not the Control API (${this.origin})`,
      );
    }
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.userAgent,
      ...options.headers,
    };
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    return headers;
  }

  /**
   * One JSON request to the Control API, with the bearer token. Redirects are not followed: a token must not travel
   * somewhere the configuration did not name, and these routes have no reason to move. A 204 (POST /client-status)
   * answers undefined: there is no body to read; callers that need one validate what they get.
   */
  async requestJson(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: URL, body?: unknown): Promise<unknown> {
    const where = `${method} ${safeUrl(url.href)}`;
    let response: Dispatcher.ResponseData;
    try {
      response = await this.send(method, url, body === undefined ? {} : { json: JSON.stringify(body) });
    } catch (error) {
      if (error instanceof BlueError) throw error;
      throw new UploadError('transient', 'UPLOAD_FAILED', `${where}: ${describeNetworkError(error)}`);
    }
    const status = response.statusCode;
    let text: string;
    try {
      text = await readCapped(response, this.maxResponseBytes);
    } catch (error) {
      if (error instanceof ResponseTooLarge) {
        throw new UploadError(
          'service',
          'UPLOAD_FAILED',
          `${where}: the answer is larger than ${this.maxResponseBytes} bytes; refusing it`,
          {
            status,
            hint: 'Check that control_url points at the Control API.',
          },
        );
      }
      throw new UploadError(
        'transient',
        'UPLOAD_FAILED',
        `${where}: ${describeNetworkError(error)} while reading the answer`,
        { status },
      );
    }
    if (status === 204) return undefined;
    if (status >= 200 && status < 300) {
      if (text.trim() === '') return {};
      try {
        return parseJsonBounded(text, MAX_ANSWER_DEPTH);
      } catch (error) {
        if (error instanceof JsonTooDeep) {
          throw new UploadError('service', 'UPLOAD_FAILED', `${where}: the answer ${error.message}; refusing it`, {
            status,
            hint: 'Check that control_url points at the Control API.',
          });
        }
        // A captive portal or proxy answering 200 with HTML is not the Control API.
        throw new UploadError('transient', 'UPLOAD_FAILED', `${where}: the answer is not JSON`, { status });
      }
    }
    throw this.failure(where, status, text, header(response.headers, 'retry-after'));
  }

  /**
   * A form POST to an OAuth endpoint of the Control API's origin, never with the bearer token: the status and the JSON
   * answer (undefined when it is not JSON). No answer at all is CONTROL_API_UNREACHABLE.
   */
  async postForm(url: URL, fields: Record<string, string>): Promise<{ status: number; body: unknown }> {
    const where = `POST ${safeUrl(url.href)}`;
    if (url.origin !== this.origin)
      throw new BlueError(
        'AUTH_FAILED',
        `refusing to sign in at ${url.origin}, which is not the Control API (${this.origin})`,
      );
    let text: string;
    let status: number;
    try {
      const { undici, dispatcher } = await this.connect();
      const response = await undici.request(url, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'user-agent': this.userAgent,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams(fields).toString(),
        dispatcher,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      status = response.statusCode;
      text = await readCapped(response, this.maxResponseBytes);
    } catch (error) {
      throw new BlueError(
        'CONTROL_API_UNREACHABLE',
        `${where}: ${error instanceof ResponseTooLarge ? 'the answer is too large' : describeNetworkError(error)}`,
        {
          hint: 'Check the network and --control-url, then try again.',
        },
      );
    }
    try {
      return { status, body: parseJsonBounded(text, MAX_ANSWER_DEPTH) };
    } catch (error) {
      if (error instanceof JsonTooDeep) throw unusableAnswer(where, `it ${error.message}`);
      return { status, body: undefined };
    }
  }

  /** Text fit for a message: `scrubText` with this client's token. */
  scrub(text: string): string {
    return scrubText(text, this.token);
  }

  /** Closes the connection pool, if one was made. */
  async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    if (pool !== undefined) await pool.then((p) => p.dispatcher.destroy()).catch(() => undefined);
  }

  private failure(where: string, status: number, text: string, retryAfter: string | undefined): UploadError {
    const server = serverError(text);
    const said =
      server === undefined ? '' : `: ${server.code === undefined ? '' : `[${server.code}] `}${server.message}`;
    const message = this.scrub(`${where} answered HTTP ${status}${said}`);
    const extra = { status, ...(server?.code === undefined ? {} : { serverCode: server.code }) };
    if (status === 401 || status === 403) {
      return new UploadError('service', 'AUTH_FAILED', message, {
        ...extra,
        hint: authFailedHint(this.tokenSource, this.token !== undefined),
      });
    }
    if (status >= 300 && status < 400) {
      return new UploadError('service', 'UPLOAD_FAILED', message, {
        ...extra,
        hint: 'The Control API redirected; set control_url to the address it redirects to.',
      });
    }
    if (status === 404 || status === 405) {
      // Most often a wrong control_url or path prefix: failing every record over it would lose them all. (A session
      // route's 404 about one session is told apart by the caller, by its status.)
      const wrong = wrongControlUrl(message, this.controlUrl);
      return new UploadError('service', wrong.code, wrong.message, { ...extra, hint: wrong.hint! });
    }
    if (statusKind(status) === 'transient') {
      const retryAfterMs = parseRetryAfter(retryAfter, this.now());
      return new UploadError('transient', 'UPLOAD_FAILED', message, {
        ...extra,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    }
    return new UploadError('record', 'UPLOAD_REJECTED', message, extra);
  }
}

/**
 * A server answered at the Control API URL, but 404 (or 405) for one of the Control API's routes (`answered` says
 * which, fit for a message): what answers there is not the Control API, most often because the URL's path prefix is
 * wrong or missing.
 */
export function wrongControlUrl(answered: string, controlUrl: string): BlueError {
  const prefix = new URL(controlUrl).pathname.replace(/\/+$/, '');
  return new BlueError(
    'CONTROL_URL_WRONG',
    `${answered}; a server answers at ${originOf(controlUrl)} but not with the Control API's routes` +
      `${prefix === '' ? '' : ` under the path ${prefix}`}`,
    {
      hint:
        `Check the Control API URL (--control-url, control_url or ${CONTROL_URL_ENV}): it must be the Control ` +
        `API's base URL, with its path prefix if it has one (https://example.com/blue), and nothing more.`,
    },
  );
}

/**
 * What to do about a refused token, by where it came from: BLUE_AGENT_TOKEN overrides the token file, so logging in
 * again cannot help while it is set.
 */
export function authFailedHint(tokenSource: string, hasToken: boolean): string {
  if (!hasToken) return 'No token is configured: run `blue-agent login --control-url URL`, or set BLUE_AGENT_TOKEN.';
  if (tokenSource === TOKEN_ENV)
    return `The token was refused. ${TOKEN_ENV} (from the environment) overrides the token file: correct or unset it.`;
  return (
    `The token from ${tokenSource} was refused (revoked, or from another server): run \`blue-agent login ` +
    `--control-url URL\` again.`
  );
}

type Validate = ((data: unknown) => boolean) & { errors?: AjvError[] | null };

/** An answer the Control API's contract does not allow: the server and this agent disagree, or it is not the Control
 * API. */
export function unusableAnswer(where: string, why: string): BlueError {
  return new BlueError('UPLOAD_FAILED', `${where}: the Control API's answer is not usable: ${why}`, {
    hint: 'Check that control_url points at the Control API.',
  });
}

/** Checks an answer against its generated validator (schemas/); throws `unusableAnswer` naming the first problem. */
export function checkAnswer<T>(validate: Validate, value: unknown, where: string): T {
  if (validate(value)) return value as T;
  const error =
    (validate.errors ?? []).find((e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf' && e.keyword !== 'if') ??
    validate.errors?.[0];
  throw unusableAnswer(
    where,
    error === undefined
      ? 'it does not match the contract'
      : `${error.instancePath || '/'} ${describeSchemaError(error)}`,
  );
}
