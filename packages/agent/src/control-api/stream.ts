/**
 * One long-lived GET on Node's own HTTP client (ControlClient.openStream). node:http and node:https are loaded with
 * require on first use: an ES module import of node:http evaluates its lazy `WebSocket` export, which loads Node's
 * bundled undici, and keeps it resident (bench/run-idle.mjs). The environment's proxy settings apply as in the pool
 * (Node's `proxyEnv`: http_proxy, https_proxy, no_proxy, CONNECT for https).
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
  /** The longest wait for the answer (its status line and headers, in all), and the longest silence within it. */
  idleMs: number;
  signal: AbortSignal;
}

const load = createRequire(import.meta.url);

export function openStream(url: URL, request: StreamRequest): Promise<StreamAnswer> {
  const https = url.protocol === 'https:';
  const lib = (https ? load('node:https') : load('node:http')) as typeof import('node:https');
  const agent = new lib.Agent({
    keepAlive: false,
    proxyEnv: proxyEnv(request.env),
  } as import('node:https').AgentOptions);
  return new Promise((resolve, reject) => {
    const req = lib.request(url, { method: 'GET', headers: request.headers, agent, signal: request.signal });
    let answer: IncomingMessage | undefined;
    const connectTimer = setTimeout(
      () => req.destroy(timeoutError('CONNECT_TIMEOUT', 'connect timeout')),
      request.connectMs,
    );
    // The idle timeout below restarts with every byte: headers trickled a byte at a time would never end without this.
    const answerTimer = setTimeout(() => req.destroy(timeoutError('STREAM_TIMEOUT', 'timed out')), request.idleMs);
    req.once('socket', (socket) => {
      if (!socket.connecting) clearTimeout(connectTimer);
      else socket.once('connect', () => clearTimeout(connectTimer));
    });
    req.setTimeout(request.idleMs, () => {
      // The body, once there, is what the reader waits on: it must end with the timeout, not a reset.
      const error = timeoutError('STREAM_TIMEOUT', 'timed out');
      answer?.destroy(error);
      req.destroy(error);
    });
    req.once('response', (response) => {
      clearTimeout(connectTimer);
      clearTimeout(answerTimer);
      answer = response;
      resolve({ statusCode: response.statusCode ?? 0, headers: response.headers, body: response });
    });
    req.on('error', (error) => {
      clearTimeout(connectTimer);
      clearTimeout(answerTimer);
      reject(error);
    });
    req.once('close', () => {
      clearTimeout(connectTimer);
      clearTimeout(answerTimer);
      agent.destroy();
    });
    req.end();
  });
}

/**
 * What `proxyEnv` reads, from the Context's environment (never process.env directly). As in the pool (undici's
 * EnvHttpProxyAgent), https goes through the http proxy when no https proxy is named.
 */
function proxyEnv(env: Env): Record<string, string> {
  const pick = (lower: string, upper: string) => [env[lower], env[upper]].find((v) => v !== undefined && v !== '');
  const http = pick('http_proxy', 'HTTP_PROXY');
  const https = pick('https_proxy', 'HTTPS_PROXY') ?? http;
  const none = pick('no_proxy', 'NO_PROXY');
  return {
    ...(http === undefined ? {} : { http_proxy: http }),
    ...(https === undefined ? {} : { https_proxy: https }),
    ...(none === undefined ? {} : { no_proxy: none }),
  };
}

/** A timeout as `networkFailure` reads it: a name of TimeoutError is "timed out"; a code, the connect timeout. */
function timeoutError(code: string, message: string): Error {
  const error = new Error(message) as Error & { code: string };
  error.name = code === 'STREAM_TIMEOUT' ? 'TimeoutError' : 'ConnectTimeoutError';
  error.code = code;
  return error;
}
