/**
 * HTTP plumbing for the Control API: JSON error bodies with a stable code, bounded JSON request bodies, and schema
 * validation with the offending field named. Nothing here trusts the request: every failure becomes a 4xx answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { describeSchemaError, type AjvError } from '@blue-agent/contract/schema/index.js';

export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** The client closed the connection before its request was complete: nobody is left to answer. */
export class ClientGoneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClientGoneError';
  }
}

/** How long a JSON request body may take to arrive, by default. */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

export const badRequest = (message: string, code = 'invalid_request'): HttpError => new HttpError(400, code, message);
export const notFound = (message = 'not found'): HttpError => new HttpError(404, 'not_found', message);
export const forbidden = (message: string): HttpError => new HttpError(403, 'forbidden', message);

/** The reply side of a request: a Fastify reply (routes), or the raw response (errors before routing). */
export function sendJson(
  reply: FastifyReply,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  void reply
    .code(status)
    .headers({ 'cache-control': 'no-store', ...headers })
    .type('application/json; charset=utf-8')
    .send(`${JSON.stringify(body)}\n`);
}

/** A short plain-text answer (the health probes). */
export function sendText(reply: FastifyReply, status: number, text: string): void {
  void reply.code(status).headers({ 'cache-control': 'no-store' }).type('text/plain; charset=utf-8').send(text);
}

/**
 * The body of an error answer: the message where Blue's clients read it (`error`), and a stable code for scripts and
 * blue-agent's own client.
 */
export function errorBody(error: HttpError): string {
  return `${JSON.stringify({ error: error.message, code: error.code })}\n`;
}

/** A bodiless answer (304 Not Modified, 204 No Content). */
export function sendEmpty(reply: FastifyReply, status: number, headers: Record<string, string> = {}): void {
  void reply.code(status).headers(headers).send();
}

/** An error answer on a raw response, for failures outside any route (the blob store's turn). */
export function sendError(response: ServerResponse, error: HttpError): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const text = errorBody(error);
  response.writeHead(error.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...error.headers,
  });
  response.end(text);
}

/**
 * Reads and parses a JSON body of at most `maxBytes`, within `timeoutMs` (else 408). A missing body reads as `{}` only
 * when `allowEmpty`; anything that is not `application/json` is refused before a byte is parsed. A client that goes
 * away mid-body is a ClientGoneError, not a failure of the server.
 */
export async function readJsonBody(
  request: IncomingMessage,
  maxBytes: number,
  allowEmpty = false,
  timeoutMs = DEFAULT_BODY_TIMEOUT_MS,
): Promise<unknown> {
  const declared = request.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    request.resume();
    throw new HttpError(413, 'body_too_large', `the request body is larger than ${maxBytes} bytes`, {
      connection: 'close',
    });
  }
  const body = await readBody(request, maxBytes, timeoutMs);
  const size = body.length;
  if (size === 0) {
    if (allowEmpty) return {};
    throw badRequest('the request needs a JSON body');
  }
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `the request body must be application/json, not ${type === '' ? 'untyped' : JSON.stringify(type.slice(0, 100))}`,
    );
  }
  const text = body.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message.slice(0, 200)}`, 'invalid_json');
  }
}

/** Form bodies (OAuth endpoints, the dashboard's forms) are small. */
export const MAX_FORM_BYTES = 16 * 1024;

/**
 * Reads an `application/x-www-form-urlencoded` body of at most `maxBytes` (MAX_FORM_BYTES unless a form needs more):
 * each field at most once (a repeated one is a 400, as RFC 6749 §3.2 asks), every value at most `maxValue` characters.
 */
export async function readFormBody(
  request: IncomingMessage,
  timeoutMs = DEFAULT_BODY_TIMEOUT_MS,
  maxValue = 4096,
  maxBytes = MAX_FORM_BYTES,
): Promise<Map<string, string>> {
  const declared = request.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    request.resume();
    throw new HttpError(413, 'body_too_large', `the request body is larger than ${maxBytes} bytes`, {
      connection: 'close',
    });
  }
  const body = await readBody(request, maxBytes, timeoutMs);
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (body.length > 0 && type !== 'application/x-www-form-urlencoded') {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `the request body must be application/x-www-form-urlencoded, not ` +
        `${type === '' ? 'untyped' : JSON.stringify(type.slice(0, 100))}`,
    );
  }
  const fields = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(body.toString('utf8'))) {
    if (fields.has(name))
      throw badRequest(`the form field ${JSON.stringify(name.slice(0, 50))} is given more than once`);
    if (value.length > maxValue)
      throw badRequest(`the form field ${JSON.stringify(name.slice(0, 50))} is longer than ${maxValue} characters`);
    fields.set(name, value);
  }
  return fields;
}

export type Validate = ((data: unknown) => boolean) & { errors?: AjvError[] | null };

/** Validates `data` against a precompiled schema validator; a 400 names the first offending field. */
export function validateBody<T>(validate: Validate, data: unknown, what: string): T {
  if (validate(data)) return data as T;
  const errors = validate.errors ?? [];
  const error = errors.find((e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf') ?? errors[0];
  if (error === undefined) throw badRequest(`invalid ${what}`, 'validation_failed');
  const at = error.instancePath === '' ? '/' : error.instancePath;
  throw badRequest(`invalid ${what}: ${at} ${describeSchemaError(error)}`, 'validation_failed');
}

/**
 * The body, once it has ended. Events rather than an async iterator: giving up (too large, too slow) must leave the
 * request alone, so that the error answer can still be written on its connection (`connection: close` ends it after).
 */
function readBody(request: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const declared = request.headers['content-length'];
    const finish = (error?: Error): void => {
      clearTimeout(timer);
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onGone);
      request.off('close', onClose);
      if (error === undefined) resolve(Buffer.concat(chunks));
      else reject(error);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes)
        finish(
          new HttpError(413, 'body_too_large', `the request body is larger than ${maxBytes} bytes`, {
            connection: 'close',
          }),
        );
      else chunks.push(chunk);
    };
    const onEnd = (): void => finish();
    const onGone = (): void =>
      finish(
        new ClientGoneError(
          `the client closed the connection after ${size}${declared === undefined ? '' : ` of ${declared}`} body bytes`,
        ),
      );
    const onClose = (): void => {
      if (!request.complete) onGone();
    };
    const timer = setTimeout(
      () =>
        finish(
          new HttpError(408, 'request_timeout', `the request body did not arrive within ${timeoutMs} ms`, {
            connection: 'close',
          }),
        ),
      timeoutMs,
    );
    // A late 'aborted' after giving up has nobody to tell.
    request.on('error', () => undefined);
    if (request.destroyed && !request.complete) {
      onGone();
      return;
    }
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onGone);
    request.on('close', onClose);
  });
}
