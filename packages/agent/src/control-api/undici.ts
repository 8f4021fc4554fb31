/**
 * Loads undici on first use (most commands never touch the network). In dist/ the bundler turns the CommonJS package
 * into a chunk whose only export is `default`, while Node's own loader also gives the named exports: accept both.
 */
import type { Dispatcher } from 'undici';

type Undici = typeof import('undici');

let loaded: Promise<Undici> | undefined;

export function loadUndici(): Promise<Undici> {
  loaded ??= import('undici').then((mod) => {
    const named = mod as Partial<Undici> & { default?: Undici };
    return typeof named.Agent === 'function' ? (named as Undici) : named.default!;
  });
  return loaded;
}

/**
 * One connection pool with timeouts, through the proxy the Context's environment names (never process.env directly:
 * the Context decides what the environment is).
 */
export function createDispatcher(
  undici: Undici,
  env: Readonly<Record<string, string | undefined>>,
  timeouts: { connectMs: number; responseMs: number },
): Dispatcher {
  const options = {
    connect: { timeout: timeouts.connectMs },
    headersTimeout: timeouts.responseMs,
    bodyTimeout: timeouts.responseMs,
  };
  const httpProxy = env.http_proxy ?? env.HTTP_PROXY;
  const httpsProxy = env.https_proxy ?? env.HTTPS_PROXY;
  if (!httpProxy && !httpsProxy) return new undici.Agent(options);
  return new undici.EnvHttpProxyAgent({
    ...options,
    httpProxy: httpProxy ?? '',
    httpsProxy: httpsProxy ?? '',
    noProxy: env.no_proxy ?? env.NO_PROXY ?? '',
  });
}
