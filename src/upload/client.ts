/**
 * A client for the Control API's session-upload routes: one connection pool, bounded in time and size, with the bearer
 * token sent only to the Control API's own origin. Every failure is an UploadError that says whether a retry can help;
 * no message ever holds the token or a signed URL's query.
 */
import type { Dispatcher } from 'undici';
import { controlSettings, loadAgentConfig, TOKEN_ENV } from '../config.js';
import type { Context, Env } from '../context.js';
import { BlueError } from '../errors.js';
import { redact } from '../logger.js';
import { originOf } from '../policy/validate.js';
import { describeNetworkError, parseRetryAfter, statusKind, UploadError } from './retry.js';
import { createDispatcher, loadUndici } from '../util/undici.js';

export const PRESIGN_ROUTE = 'session-uploads/presign';
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Control API answers are small JSON documents. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;

/** `POST /session-uploads/presign`, Blue's field names (generated from schemas/control-presign.schema.json). */
export type { PresignRequest } from '../schema/generated/control-presign.js';
import type { PresignRequest } from '../schema/generated/control-presign.js';

export interface SignedUpload {
  method: string;
  url: string;
  headers: Record<string, string>;
}

export type PresignResponse =
  | { upload_id: string; status: 'complete' }
  | { upload_id: string; status: 'pending'; upload: SignedUpload; complete_url: string | undefined };

export interface ControlClientOptions {
  controlUrl: string;
  /** Never logged, never part of a message. */
  token: string | undefined;
  /** Where the token came from, for messages. */
  tokenSource: string;
  env: Env;
  userAgent: string;
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** Clock for Retry-After dates. */
  now?: () => number;
}

export class ControlClient {
  readonly controlUrl: string;
  /** `scheme://host[:port]` of the Control API: the only origin the token is sent to. */
  readonly origin: string;
  readonly timeoutMs: number;
  readonly userAgent: string;
  private readonly token: string | undefined;
  private readonly tokenSource: string;
  private readonly maxResponseBytes: number;
  private readonly now: () => number;

  private constructor(
    private readonly undici: typeof import('undici'),
    /** Shared by the Control API calls and the uploads: one pool, one set of timeouts and proxy settings. */
    readonly dispatcher: Dispatcher,
    options: ControlClientOptions,
  ) {
    this.controlUrl = options.controlUrl;
    this.origin = originOf(options.controlUrl);
    this.token = options.token;
    this.tokenSource = options.tokenSource;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.userAgent = options.userAgent;
    this.now = options.now ?? Date.now;
  }

  static async create(options: ControlClientOptions): Promise<ControlClient> {
    if (originOf(options.controlUrl) === '') {
      throw new BlueError('CONFIG_INVALID', `the Control API URL ${safeUrl(options.controlUrl)} is not an http(s) URL`);
    }
    // Loaded on first use: most commands never talk to the network.
    const undici = await loadUndici();
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    return new ControlClient(undici, createDispatcher(undici, options.env, { connectMs: Math.min(timeoutMs, 10_000), responseMs: timeoutMs }), options);
  }

  /** A client from the agent config and environment; throws CONFIG_INVALID when no Control API is configured. */
  static async fromContext(ctx: Context, options: { timeoutMs?: number; maxResponseBytes?: number } = {}): Promise<ControlClient> {
    const { config } = await loadAgentConfig(ctx);
    const settings = controlSettings(ctx, config);
    if (settings.controlUrl === undefined) {
      throw new BlueError('CONFIG_INVALID', 'no Control API is configured, so captured sessions cannot be uploaded', {
        hint: 'Run `blue-agent login --control-url URL --token-stdin`, or set BLUE_AGENT_CONTROL_URL and BLUE_AGENT_TOKEN.',
      });
    }
    return ControlClient.create({
      controlUrl: settings.controlUrl,
      token: await settings.readToken(),
      tokenSource: settings.tokenSource,
      env: ctx.env,
      userAgent: `blue-agent/${ctx.self.version}`,
      now: () => ctx.clock.now(),
      ...options,
    });
  }

  /** `<control_url>/<route>`, keeping the base URL's path prefix. */
  routeUrl(route: string): URL {
    const url = new URL(this.controlUrl);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/${route.replace(/^\/+/, '')}`;
    url.search = '';
    url.hash = '';
    return url;
  }

  /** `url` is the policy's presign_url, already checked to be on the Control API's origin. */
  async presign(request: PresignRequest, url?: URL): Promise<PresignResponse> {
    const body = await this.requestJson('POST', url ?? this.routeUrl(PRESIGN_ROUTE), request);
    return parsePresignResponse(body, this.origin);
  }

  /**
   * `POST /session-uploads/{id}/complete`: the server checks the stored object's size and digest. `completeUrl` is the
   * presign answer's, already checked to be on the Control API's origin. `expected` repeats what was presigned, so the
   * server can refuse an object that is not the bundle this client meant.
   */
  async complete(uploadId: string, completeUrl?: string, expected?: { sha256: string; size_bytes: number }): Promise<unknown> {
    const url = completeUrl === undefined ? this.routeUrl(`session-uploads/${encodeURIComponent(uploadId)}/complete`) : new URL(completeUrl);
    return this.requestJson('POST', url, expected ?? {});
  }

  /**
   * One JSON request to the Control API, with the bearer token. Redirects are not followed: a token must not travel
   * somewhere the configuration did not name, and the upload routes have no reason to move.
   */
  async requestJson(method: 'GET' | 'POST' | 'PUT', url: URL, body?: unknown): Promise<unknown> {
    if (url.origin !== this.origin) {
      throw new UploadError('service', 'UPLOAD_FAILED', `refusing to send the token to ${url.origin}, which is not the Control API (${this.origin})`);
    }
    const where = `${method} ${safeUrl(url.href)}`;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.userAgent };
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    let response: Dispatcher.ResponseData;
    try {
      response = await this.undici.request(url, {
        method,
        headers,
        ...(payload === undefined ? {} : { body: payload }),
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new UploadError('transient', 'UPLOAD_FAILED', `${where}: ${describeNetworkError(error)}`);
    }
    const status = response.statusCode;
    let text: string;
    try {
      text = await readCapped(response, this.maxResponseBytes);
    } catch (error) {
      if (error instanceof TooLarge) {
        throw new UploadError('service', 'UPLOAD_FAILED', `${where}: the answer is larger than ${this.maxResponseBytes} bytes; refusing it`, {
          status,
          hint: 'Check that control_url points at the Control API.',
        });
      }
      throw new UploadError('transient', 'UPLOAD_FAILED', `${where}: ${describeNetworkError(error)} while reading the answer`, { status });
    }
    if (status >= 200 && status < 300) {
      if (text.trim() === '') return {};
      try {
        return JSON.parse(text) as unknown;
      } catch {
        // A captive portal or proxy answering 200 with HTML is not the Control API.
        throw new UploadError('transient', 'UPLOAD_FAILED', `${where}: the answer is not JSON`, { status });
      }
    }
    throw this.failure(where, status, text, header(response.headers, 'retry-after'));
  }

  /** Closes the connection pool. */
  async close(): Promise<void> {
    await this.dispatcher.destroy().catch(() => undefined);
  }

  private failure(where: string, status: number, text: string, retryAfter: string | undefined): UploadError {
    const server = serverError(text);
    const said = server === undefined ? '' : `: ${server.code === undefined ? '' : `[${server.code}] `}${server.message}`;
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
      // Most often a wrong control_url or path prefix: failing every record over it would lose them all.
      return new UploadError('service', 'UPLOAD_FAILED', message, {
        ...extra,
        hint: 'Check control_url (or BLUE_AGENT_CONTROL_URL): it must be the Control API base URL, including any path prefix.',
      });
    }
    if (statusKind(status) === 'transient') {
      const retryAfterMs = parseRetryAfter(retryAfter, this.now());
      return new UploadError('transient', 'UPLOAD_FAILED', message, { ...extra, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) });
    }
    return new UploadError('record', 'UPLOAD_REJECTED', message, extra);
  }

  private scrub(text: string): string {
    return scrubText(text, this.token);
  }
}

/**
 * What to do about a refused token, by where it came from: BLUE_AGENT_TOKEN overrides the token file, so logging in
 * again cannot help while it is set.
 */
export function authFailedHint(tokenSource: string, hasToken: boolean): string {
  if (!hasToken) return 'No token is configured: run `blue-agent login --control-url URL --token-stdin`, or set BLUE_AGENT_TOKEN.';
  if (tokenSource === TOKEN_ENV) return `The token was refused. ${TOKEN_ENV} (from the environment) overrides the token file: correct or unset it.`;
  return `The token from ${tokenSource} was refused: run \`blue-agent login --control-url URL --token-stdin\`.`;
}

/** The server's `{error:{code,message}}`, bounded and stripped of control characters. */
export function serverError(text: string): { code: string | undefined; message: string } | undefined {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(data)) return undefined;
  const error = data.error;
  if (typeof error === 'string') return { code: undefined, message: clean(error, 300) };
  if (!isRecord(error)) return undefined;
  const code = typeof error.code === 'string' ? clean(error.code, 64) : undefined;
  const message = typeof error.message === 'string' ? clean(error.message, 300) : '';
  if (code === undefined && message === '') return undefined;
  return { code, message: message === '' ? '(no message)' : message };
}

/** Text fit for a message: the token masked, every URL's query masked, and whatever `redact` knows masked. */
export function scrubText(text: string, token?: string): string {
  const masked = token === undefined || token === '' ? text : text.split(token).join('[redacted]');
  return redact(masked.replace(/\bhttps?:\/\/[^\s"'<>]+/gi, (url) => safeUrl(url)));
}

/** A URL fit for a message: scheme, host and path; a query (where signatures live) is replaced by `?[redacted]`. */
export function safeUrl(value: string): string {
  try {
    const url = new URL(value);
    return `${url.origin}${url.pathname}${url.search === '' ? '' : '?[redacted]'}`;
  } catch {
    return '[unparseable URL]';
  }
}

function parsePresignResponse(body: unknown, controlOrigin: string): PresignResponse {
  const bad = (what: string) =>
    new UploadError('service', 'UPLOAD_FAILED', `the presign answer is not usable: ${what}`, {
      hint: 'The Control API and this agent disagree on the presign contract; check the server version.',
    });
  if (!isRecord(body)) throw bad('not a JSON object');
  const id = body.upload_id;
  // The id goes into a URL path and into spool records.
  if (typeof id !== 'string' || !/^[A-Za-z0-9._:-]{1,200}$/.test(id)) throw bad('upload_id is missing or malformed');
  if (body.status === 'complete') return { upload_id: id, status: 'complete' };
  if (body.status !== 'pending') throw bad(`status is ${JSON.stringify(body.status)?.slice(0, 40)}, not pending or complete`);
  const url = body.upload_url;
  if (typeof url !== 'string' || originOf(url) === '') throw bad('upload_url is missing or not an http(s) URL');
  if (new URL(url).username !== '' || new URL(url).password !== '') throw bad('upload_url carries credentials');
  const method = body.method ?? 'PUT';
  if (method !== 'PUT' && method !== 'POST') throw bad(`method ${JSON.stringify(method)?.slice(0, 20)} is neither PUT nor POST`);
  const headers: Record<string, string> = {};
  if (body.headers !== undefined && body.headers !== null) {
    if (!isRecord(body.headers)) throw bad('headers is not an object');
    for (const [name, value] of Object.entries(body.headers)) {
      if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw bad('a header name is not a valid token');
      if (typeof value !== 'string' || /[\r\n\u0000]/.test(value)) throw bad(`header ${name} has no usable value`);
      headers[name] = value;
    }
  }
  let completeUrl: string | undefined;
  if (body.complete_url !== undefined && body.complete_url !== null) {
    if (typeof body.complete_url !== 'string') throw bad('complete_url is not a string');
    // complete carries the bearer token: it may only go back to the Control API itself.
    if (originOf(body.complete_url) !== controlOrigin) {
      throw new UploadError('service', 'UPLOAD_FAILED', `the presign answer's complete_url is on ${originOf(body.complete_url) || 'no http(s) origin'}, not on the Control API's origin ${controlOrigin}; refusing it`, {
        hint: 'complete_url must be on the Control API origin, since the token is sent to it.',
      });
    }
    completeUrl = body.complete_url;
  }
  return { upload_id: id, status: 'pending', upload: { method, url, headers }, complete_url: completeUrl };
}

class TooLarge extends Error {}

async function readCapped(response: Dispatcher.ResponseData, maxBytes: number): Promise<string> {
  const declared = Number(header(response.headers, 'content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.body.destroy();
    throw new TooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      response.body.destroy();
      throw new TooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads at most `maxBytes` of an answer's body for a message and throws the rest away. */
export async function readSome(response: Dispatcher.ResponseData, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (size < maxBytes) chunks.push(chunk.subarray(0, maxBytes - size));
      size += chunk.length;
      if (size >= maxBytes) break;
    }
  } catch {
    // Only for a message: what arrived is enough.
  }
  response.body.destroy();
  return Buffer.concat(chunks).toString('utf8');
}

export function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function clean(text: string, max: number): string {
  return text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim().slice(0, max);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
