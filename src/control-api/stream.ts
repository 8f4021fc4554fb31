/**
 * One long-lived GET on Node's own HTTP client (ControlClient.openStream). node:http and node:https are loaded with
 * require on first use: an ES module import of node:http evaluates its lazy `WebSocket` export, which loads Node's
 * bundled undici (about 14 MiB). The environment's proxy settings apply as in the pool (Node's `proxyEnv`: http_proxy,
 * https_proxy, no_proxy, CONNECT for https).
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type { Env } from '../context.js';

export interface StreamAnswer {
  statusCode: number;
  headers: IncomingHttpHeaders;
  body: IncomingMessage;
}

export interface StreamRequest {
  headers: Record<string, string>;
  env: Env;
  connectMs: number;
  /** The longest wait for the answer, and the longest silence within it. */
  idleMs: number;
  signal: AbortSignal;
}

const load = createRequire(import.meta.url);

export function openStream(url: URL, request: StreamRequest): Promise<StreamAnswer> {
  const https = url.protocol === 'https:';
  const lib = (https ? load('node:https') : load('node:http')) as typeof import('node:https');
  const agent = new lib.Agent({ keepAlive: false, proxyEnv: proxyEnv(request.env) } as import('node:https').AgentOptions);
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { method: 'GET', headers: request.headers, agent, signal: request.signal });
    const connectTimer = setTimeout(() => req.destroy(timeoutError('CONNECT_TIMEOUT', 'connect timeout')), request.connectMs);
    req.once('socket', (socket) => {
      if (!socket.connecting) clearTimeout(connectTimer);
      else socket.once('connect', () => clearTimeout(connectTimer));
    });
    req.setTimeout(request.idleMs, () => req.destroy(timeoutError('STREAM_TIMEOUT', 'timed out')));
    req.once('response', (response) => {
      clearTimeout(connectTimer);
      resolve({ statusCode: response.statusCode ?? 0, headers: response.headers, body: response });
    });
    req.once('error', (error) => {
      clearTimeout(connectTimer);
      reject(error);
    });
    req.once('close', () => {
      clearTimeout(connectTimer);
      agent.destroy();
    });
    req.end();
  });
}

/** What `proxyEnv` reads, from the Context's environment (never process.env directly). */
function proxyEnv(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'no_proxy', 'NO_PROXY']) {
    const value = env[name];
    if (value !== undefined && value !== '') out[name] = value;
  }
  return out;
}

/** A timeout as `networkFailure` reads it: a name of TimeoutError is "timed out"; a code, the connect timeout. */
function timeoutError(code: string, message: string): Error {
  const error = new Error(message) as Error & { code: string };
  error.name = code === 'STREAM_TIMEOUT' ? 'TimeoutError' : 'ConnectTimeoutError';
  error.code = code;
  return error;
}
