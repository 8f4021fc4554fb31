/**
 * GET <control_url>/governance-config with a bearer token and a conditional ETag, bounded in time and size.
 * Outcomes the caller may fall back from (network down, 5xx, timeouts, a captive portal) are returned as
 * `unavailable`; answers that mean "fix something" (bad token, missing route, oversize reply) are thrown.
 */
import type { Dispatcher } from 'undici';
import type { Env } from '../context.js';
import { BlueError } from '../errors.js';
import { redact } from '../logger.js';
import { createDispatcher, loadUndici } from '../util/undici.js';

export const GOVERNANCE_CONFIG_ROUTE = 'governance-config';
export const DEFAULT_FETCH_TIMEOUT_MS = 10_000;
const MAX_REDIRECTS = 3;

export interface FetchRequest {
  url: URL;
  token: string | undefined;
  /** Describes where the token came from (never the token). */
  tokenSource: string;
  etag: string | undefined;
  timeoutMs: number;
  maxBytes: number;
  userAgent: string;
  env: Env;
}

export type FetchOutcome =
  | { kind: 'ok'; text: string; etag: string | undefined }
  | { kind: 'not-modified' }
  | { kind: 'unavailable'; reason: string; /** The server's Retry-After header, when it sent one (503, 429). */ retryAfter?: string };

/** `<control_url>/governance-config`, keeping any path prefix of the base URL and dropping its query and fragment. */
export function governanceConfigUrl(controlUrl: string): URL {
  const url = new URL(controlUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${GOVERNANCE_CONFIG_ROUTE}`;
  url.search = '';
  url.hash = '';
  return url;
}

export async function fetchGovernanceConfig(req: FetchRequest): Promise<FetchOutcome> {
  // Loaded on first use: most commands never talk to the network, and start-up should not pay for it.
  const undici = await loadUndici();
  const dispatcher = createDispatcher(undici, req.env, { connectMs: Math.min(req.timeoutMs, 5_000), responseMs: req.timeoutMs });
  const signal = AbortSignal.timeout(req.timeoutMs);
  try {
    return await fetchWith(undici.request, dispatcher, signal, req);
  } catch (error) {
    if (error instanceof BlueError) throw error;
    return { kind: 'unavailable', reason: describeNetworkError(error, req) };
  } finally {
    await dispatcher.destroy().catch(() => undefined);
  }
}

async function fetchWith(
  request: typeof import('undici').request,
  dispatcher: Dispatcher,
  signal: AbortSignal,
  req: FetchRequest,
): Promise<FetchOutcome> {
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': req.userAgent };
  if (req.token !== undefined) headers.authorization = `Bearer ${req.token}`;
  if (req.etag !== undefined) headers['if-none-match'] = req.etag;

  let url = req.url;
  for (let hop = 0; ; hop++) {
    const response = await request(url, { method: 'GET', headers, dispatcher, signal });
    const status = response.statusCode;
    if (status >= 300 && status < 400 && status !== 304) {
      await response.body.dump().catch(() => undefined);
      const location = header(response.headers, 'location');
      const next = location === undefined ? undefined : safeUrl(location, url);
      if (next === undefined) return { kind: 'unavailable', reason: `answered HTTP ${status} without a usable Location` };
      // The bearer token must never follow a redirect to somebody else (a captive portal does exactly that).
      if (next.origin !== req.url.origin) {
        return { kind: 'unavailable', reason: `redirected to another origin (${next.origin}), which is refused` };
      }
      if (hop >= MAX_REDIRECTS) return { kind: 'unavailable', reason: `redirected more than ${MAX_REDIRECTS} times` };
      url = next;
      continue;
    }
    if (status === 304) {
      await response.body.dump().catch(() => undefined);
      return { kind: 'not-modified' };
    }
    if (status === 401 || status === 403) {
      await response.body.dump().catch(() => undefined);
      throw new BlueError(
        'AUTH_FAILED',
        req.token === undefined
          ? `the Control API at ${req.url.origin} requires a token (HTTP ${status}), and none is configured`
          : `the Control API at ${req.url.origin} refused the token from ${req.tokenSource} (HTTP ${status})`,
        {
          hint:
            status === 401
              ? 'Run `blue-agent login` again, or set BLUE_AGENT_TOKEN to a valid token.'
              : 'The token is valid but not allowed to read the governance policy; ask an administrator for access.',
        },
      );
    }
    if (status >= 500 || status === 408 || status === 429) {
      await response.body.dump().catch(() => undefined);
      const retryAfter = header(response.headers, 'retry-after');
      return { kind: 'unavailable', reason: `answered HTTP ${status}`, ...(retryAfter === undefined ? {} : { retryAfter }) };
    }
    if (status === 404 && (await isNoPolicyAnswer(response))) {
      // The Control API speaks, and the URL is right: nobody has published a policy yet.
      throw new BlueError('POLICY_MISSING', `the Control API at ${req.url.origin} has no governance policy yet`, {
        hint: 'An administrator publishes one on the server: `blue-agent control-plane policy publish FILE` (examples/policy.yaml is a start).',
      });
    }
    if (status !== 200) {
      await response.body.dump().catch(() => undefined);
      throw new BlueError('POLICY_UNREACHABLE', `GET ${url.href} answered HTTP ${status}`, {
        hint:
          status === 404
            ? 'Check control_url (or BLUE_AGENT_CONTROL_URL): it must be the Control API base URL, including any path prefix.'
            : 'Check control_url (or BLUE_AGENT_CONTROL_URL) and the Control API logs.',
      });
    }
    const type = header(response.headers, 'content-type');
    if (type !== undefined && !/\bjson\b/i.test(type)) {
      // An HTML login page from a proxy or captive portal is not the Control API speaking.
      await response.body.dump().catch(() => undefined);
      return { kind: 'unavailable', reason: `answered with ${type.split(';')[0]} instead of JSON` };
    }
    const text = await readCapped(response, req.maxBytes, url);
    return { kind: 'ok', text, etag: header(response.headers, 'etag') };
  }
}

/** Whether a 404 is the Control API's own `{error: {code: "no_policy"}}` (read up to 4 KiB; anything else is not). */
async function isNoPolicyAnswer(response: Dispatcher.ResponseData): Promise<boolean> {
  const type = header(response.headers, 'content-type');
  if (type === undefined || !/\bjson\b/i.test(type)) {
    await response.body.dump().catch(() => undefined);
    return false;
  }
  let text: string;
  try {
    text = await readCapped(response, 4096, new URL('http://127.0.0.1'));
  } catch {
    return false;
  }
  try {
    return (JSON.parse(text) as { error?: { code?: unknown } } | null)?.error?.code === 'no_policy';
  } catch {
    return false;
  }
}

async function readCapped(response: Dispatcher.ResponseData, maxBytes: number, url: URL): Promise<string> {
  const tooLarge = () =>
    new BlueError('POLICY_INVALID', `GET ${url.href}: the response is larger than ${maxBytes} bytes; refusing it`, {
      hint: 'A governance policy is a small JSON document; check that control_url points at the Control API.',
    });
  const declared = Number(header(response.headers, 'content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    response.body.destroy();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      response.body.destroy();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describeNetworkError(error: unknown, req: FetchRequest): string {
  const err = error as { name?: string; code?: unknown; message?: string; cause?: { code?: unknown } };
  const seconds = Math.round(req.timeoutMs / 100) / 10;
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `timed out after ${seconds} s`;
  const code = typeof err.code === 'string' ? err.code : typeof err.cause?.code === 'string' ? err.cause.code : undefined;
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'unreachable (connect timeout)';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return `timed out after ${seconds} s`;
    case undefined:
      return `unreachable (${scrub(err.message ?? String(error), req.token)})`;
    default:
      return code.startsWith('UND_ERR_') ? `unreachable (${scrub(err.message ?? code, req.token)})` : `unreachable (${code})`;
  }
}

/** Library messages are not ours: make sure none can carry the token. */
function scrub(message: string, token: string | undefined): string {
  const masked = token === undefined || token === '' ? message : message.split(token).join('[redacted]');
  return redact(masked).slice(0, 200);
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function safeUrl(value: string, base: URL): URL | undefined {
  try {
    return new URL(value, base);
  } catch {
    return undefined;
  }
}
