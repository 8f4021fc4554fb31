/**
 * GET <control_url>/governance-config with a bearer token and a conditional ETag, bounded in time and size, sending
 * the contract negotiation headers (X-Blue-Contract-Version, X-Blue-Capabilities: contract.ts).
 * Outcomes the caller may fall back from (network down, 5xx, timeouts, a captive portal) are returned as
 * `unavailable`; answers that mean "fix something" (bad token, missing route, oversize reply, 426 Upgrade Required)
 * are thrown. The pin the server states in X-Blue-Required-Client-Version is handed on with the answer; the policy
 * module parses and validates the text and judges the pin against the document (src/policy/).
 */
import type { Dispatcher } from 'undici';
import type { Env } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { ControlClient, wrongControlUrl } from './client.js';
import { contractHeaders, judgeClientVersion, policyIncompatible, REQUIRED_CLIENT_VERSION_HEADER } from './contract.js';
import {
  discard,
  header,
  isJsonType,
  readCapped,
  readSome,
  resolveLocation,
  ResponseTooLarge,
  routeUrl,
  serverError,
} from './http.js';
import { describeNetworkError, networkFailure, safeUrl } from './scrub.js';

export const GOVERNANCE_CONFIG_ROUTE = 'governance-config';
export const DEFAULT_FETCH_TIMEOUT_MS = 10_000;
const MAX_REDIRECTS = 3;
/** The most of a 404's body read to tell the Control API's own `no_policy` answer from any other. */
const NO_POLICY_PROBE_BYTES = 4096;
/** The most of a 426's body read for its message. */
const UPGRADE_BODY_BYTES = 4096;

export interface FetchRequest {
  url: URL;
  token: string | undefined;
  /** Describes where the token came from (never the token). */
  tokenSource: string;
  etag: string | undefined;
  timeoutMs: number;
  maxBytes: number;
  userAgent: string;
  /** This agent's own version (`ctx.self.version`): a 426 pinning another major names it. */
  clientVersion: string;
  env: Env;
}

export type FetchOutcome =
  /** `requiredClientVersion`: the server's X-Blue-Required-Client-Version, when it sent one. */
  | { kind: 'ok'; text: string; etag: string | undefined; requiredClientVersion?: string }
  | { kind: 'not-modified'; requiredClientVersion?: string }
  | {
      kind: 'unavailable';
      reason: string /** The server's Retry-After header, when it sent one (503, 429). */;
      retryAfter?: string;
    };

/** `<control_url>/governance-config`, keeping any path prefix of the base URL and dropping its query and fragment. */
export function governanceConfigUrl(controlUrl: string): URL {
  return routeUrl(controlUrl, GOVERNANCE_CONFIG_ROUTE);
}

export async function fetchGovernanceConfig(req: FetchRequest): Promise<FetchOutcome> {
  const client = await ControlClient.create({
    controlUrl: req.url.href,
    token: req.token,
    tokenSource: req.tokenSource,
    env: req.env,
    userAgent: req.userAgent,
    timeoutMs: req.timeoutMs,
    connectTimeoutMs: Math.min(req.timeoutMs, 5_000),
    maxResponseBytes: req.maxBytes,
  });
  // One bound on the whole exchange, redirects and body included.
  const signal = AbortSignal.timeout(req.timeoutMs);
  try {
    return await fetchWith(client, signal, req);
  } catch (error) {
    if (error instanceof BlueError) throw error;
    return { kind: 'unavailable', reason: unreachable(error, req.timeoutMs) };
  } finally {
    await client.close();
  }
}

/** Why the Control API could not be asked, as the policy's warnings say it: `unreachable (ECONNREFUSED)`, `timed out
 * after 10 s`. */
function unreachable(error: unknown, timeoutMs: number): string {
  const failure = networkFailure(error);
  if (failure.timedOut) return describeNetworkError(error, timeoutMs);
  return `unreachable (${failure.code ?? failure.words})`;
}

async function fetchWith(client: ControlClient, signal: AbortSignal, req: FetchRequest): Promise<FetchOutcome> {
  const headers: Record<string, string> = {
    ...contractHeaders(),
    ...(req.etag === undefined ? {} : { 'if-none-match': req.etag }),
  };
  let url = req.url;
  for (let hop = 0; ; hop++) {
    const response = await client.send('GET', url, { headers, signal });
    const status = response.statusCode;
    const where = `GET ${safeUrl(url.href)}`;
    if (status >= 300 && status < 400 && status !== 304) {
      await discard(response);
      const location = header(response.headers, 'location');
      const next = location === undefined ? undefined : resolveLocation(location, url);
      if (next === undefined)
        return { kind: 'unavailable', reason: `answered HTTP ${status} without a usable Location` };
      // The bearer token must never follow a redirect to somebody else (a captive portal does exactly that).
      if (next.origin !== client.origin) {
        return { kind: 'unavailable', reason: `redirected to another origin (${next.origin}), which is refused` };
      }
      if (hop >= MAX_REDIRECTS) return { kind: 'unavailable', reason: `redirected more than ${MAX_REDIRECTS} times` };
      url = next;
      continue;
    }
    if (status === 304) {
      await discard(response);
      const pinned = requiredClientVersion(response.headers, where);
      return { kind: 'not-modified', ...(pinned === undefined ? {} : { requiredClientVersion: pinned }) };
    }
    if (status === 401 || status === 403) {
      await discard(response);
      throw new BlueError(
        'AUTH_FAILED',
        req.token === undefined
          ? `the Control API at ${client.origin} requires a token (HTTP ${status}), and none is configured`
          : `the Control API at ${client.origin} refused the token from ${req.tokenSource} (HTTP ${status})`,
        {
          hint:
            status === 401
              ? 'Run `blue-agent login` again, or set BLUE_AGENT_TOKEN to a valid token.'
              : 'The token is valid but not allowed to read the governance policy; ask an administrator for access.',
        },
      );
    }
    if (status === 426) {
      // The token was accepted; this client falls short of what the current revision needs. The header says which
      // release the organisation pins, even though the document is withheld.
      const pinned = requiredClientVersion(response.headers, where);
      const said = serverError(await readSome(response, UPGRADE_BODY_BYTES));
      if (pinned !== undefined) {
        const verdict = judgeClientVersion(pinned, req.clientVersion, `the Control API at ${client.origin}`);
        if (verdict.kind === 'mismatch') throw verdict.error;
      }
      throw policyIncompatible(
        `the Control API at ${client.origin}`,
        `it refuses this blue-agent the governance policy (HTTP 426 Upgrade Required` +
          `${said === undefined ? '' : `: ${said.message}`})`,
        pinned,
      );
    }
    if (status >= 500 || status === 408 || status === 429) {
      await discard(response);
      const retryAfter = header(response.headers, 'retry-after');
      return {
        kind: 'unavailable',
        reason: `answered HTTP ${status}`,
        ...(retryAfter === undefined ? {} : { retryAfter }),
      };
    }
    if (status === 404 && (await isNoPolicyAnswer(response))) {
      // The Control API speaks, and the URL is right: nobody has published a policy yet.
      throw new BlueError('POLICY_MISSING', `the Control API at ${client.origin} has no governance policy yet`, {
        hint:
          'An administrator publishes one on the server: `blue-agent control-plane policy publish FILE` ' +
          '(examples/policy.yaml is a start).',
      });
    }
    if (status === 404 || status === 405) {
      // A server answered, but not the Control API's route: the URL, or its path prefix, is not the Control API's.
      await discard(response);
      throw wrongControlUrl(`${where} answered HTTP ${status}`, new URL('.', req.url).href);
    }
    if (status !== 200) {
      await discard(response);
      throw new BlueError('POLICY_UNREACHABLE', `${where} answered HTTP ${status}`, {
        hint: 'Check control_url (or BLUE_AGENT_CONTROL_URL) and the Control API logs.',
      });
    }
    const type = header(response.headers, 'content-type');
    if (type !== undefined && !isJsonType(type)) {
      // An HTML login page from a proxy or captive portal is not the Control API speaking.
      await discard(response);
      return { kind: 'unavailable', reason: `answered with ${type.split(';')[0]} instead of JSON` };
    }
    let text: string;
    try {
      text = await readCapped(response, req.maxBytes);
    } catch (error) {
      if (!(error instanceof ResponseTooLarge)) throw error;
      throw new BlueError(
        'POLICY_INVALID',
        `${where}: the response is larger than ${req.maxBytes} bytes; refusing it`,
        {
          hint: 'A governance policy is a small JSON document; check that control_url points at the Control API.',
        },
      );
    }
    const pinned = requiredClientVersion(response.headers, where);
    return {
      kind: 'ok',
      text,
      etag: header(response.headers, 'etag'),
      ...(pinned === undefined ? {} : { requiredClientVersion: pinned }),
    };
  }
}

/**
 * X-Blue-Required-Client-Version, when the server sent it. More than one value (repeated, or joined by commas) is
 * POLICY_INVALID: the organisation pins exactly one release, and picking one would be a guess.
 */
function requiredClientVersion(headers: Dispatcher.ResponseData['headers'], where: string): string | undefined {
  const raw = headers[REQUIRED_CLIENT_VERSION_HEADER];
  if (raw === undefined) return undefined;
  const values = (Array.isArray(raw) ? raw : [raw]).flatMap((v) => v.split(',')).map((v) => v.trim());
  if (values.length !== 1 || values[0] === '') {
    throw new BlueError(
      'POLICY_INVALID',
      `${where}: the answer carries ${values.length === 1 ? 'an empty' : `${values.length} values of`} ` +
        `X-Blue-Required-Client-Version (${printable(values.join(', ')).slice(0, 120)}); exactly one release may ` +
        `be pinned`,
      {
        hint: 'The Control API (or a proxy before it) sends a broken header; tell its administrator.',
      },
    );
  }
  return printable(values[0]!).slice(0, 64);
}

/**
 * Whether a 404 says that no policy was published: this project's server (`code: "no_policy"`, or the older
 * `{error: {code: "no_policy"}}`) or Blue's (`{"error": "organization has no governance configuration"}`). Anything
 * else, or unreadable, is not.
 */
async function isNoPolicyAnswer(response: Dispatcher.ResponseData): Promise<boolean> {
  if (!isJsonType(header(response.headers, 'content-type'))) {
    await discard(response);
    return false;
  }
  try {
    const said = serverError(await readCapped(response, NO_POLICY_PROBE_BYTES));
    return said !== undefined && (said.code === 'no_policy' || /no governance configuration/i.test(said.message));
  } catch {
    return false;
  }
}
