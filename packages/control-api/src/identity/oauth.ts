/**
 * The OAuth endpoints Blue names for signing CLIs in: the device authorization grant (RFC 8628) at
 * `POST /api/auth/device/code` and the token endpoint `POST /api/auth/oauth2/token` (device codes and refresh tokens,
 * RFC 6749), and token revocation (RFC 7009) at `POST /api/auth/oauth2/revoke`. Bodies are forms; answers are JSON with
 * `error` as RFC 6749 §5.2 names it. Device codes, their state and every token live in the database, so any replica
 * answers any poll.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { HttpError, readFormBody, sendJson } from '../http.js';
import type { Request, RouteContext } from '../route-context.js';
import { API_SCOPES, type IssuedTokens } from '../store/index.js';
import { formatUserCode, newSecret, newUserCode } from '../store/tokens.js';

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** The OAuth client the agent is (discovery's `oauth.client_id`); a public client, so no secret. */
export const AGENT_CLIENT_ID = 'blue-agent';
/** RFC 8628 §3.5: every slow_down adds this to the interval. */
export const SLOW_DOWN_MS = 5_000;

/** An OAuth error answer (RFC 6749 §5.2): 400 unless said, `error` and a description a person can act on. */
class OAuthError extends HttpError {
  constructor(error: string, description: string, status = 400) {
    super(status, error, description);
  }
}

function sendOAuthError(req: Request, error: OAuthError): void {
  sendJson(req.reply, error.status, { error: error.code, error_description: error.message }, { pragma: 'no-cache' });
}

/** Runs an OAuth endpoint: its own errors in RFC 6749's shape, anything else as the server's usual errors. */
async function oauthEndpoint(req: Request, fn: (form: Map<string, string>) => Promise<void>): Promise<void> {
  let form: Map<string, string>;
  try {
    form = await readFormBody(req.raw);
  } catch (error) {
    if (error instanceof HttpError && error.status === 400)
      return sendOAuthError(req, new OAuthError('invalid_request', error.message));
    throw error;
  }
  try {
    await fn(form);
  } catch (error) {
    if (error instanceof OAuthError) return sendOAuthError(req, error);
    throw error;
  }
}

function required(form: Map<string, string>, name: string): string {
  const value = form.get(name);
  if (value === undefined || value === '')
    throw new OAuthError('invalid_request', `the form field ${name} is required`);
  return value;
}

function checkClient(form: Map<string, string>): string {
  const clientId = required(form, 'client_id');
  if (clientId !== AGENT_CLIENT_ID)
    throw new OAuthError(
      'invalid_client',
      `unknown client_id ${JSON.stringify(printable(clientId).slice(0, 64))}; use ${AGENT_CLIENT_ID}`,
      401,
    );
  return clientId;
}

/**
 * The scopes asked for: the API's, space-separated (OpenID's own are accepted and dropped); none asked means every
 * scope but `admin`. `admin` is granted only to administrators, when the code is approved.
 */
export function requestedScopes(scope: string | undefined): string[] {
  const asked = (scope ?? '').split(' ').filter((s) => s !== '');
  if (asked.length === 0) return API_SCOPES.filter((s) => s !== 'admin');
  const known = new Set<string>(API_SCOPES);
  const ignored = new Set(['openid', 'profile', 'email', 'offline_access']);
  const unknown = asked.find((s) => !known.has(s) && !ignored.has(s));
  if (unknown !== undefined)
    throw new OAuthError(
      'invalid_scope',
      `unknown scope ${JSON.stringify(printable(unknown).slice(0, 64))}; scopes are ${API_SCOPES.join(', ')}`,
    );
  return [...new Set(asked.filter((s) => known.has(s)))];
}

/** What asked, as people read it on the approval page and the sign-in list: its User-Agent, printable and short. */
function clientLabel(raw: IncomingMessage): string {
  const agent = printable(String(raw.headers['user-agent'] ?? ''))
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 120);
  return agent === '' ? 'a device sign-in' : agent;
}

export function deviceHash(deviceCode: string): string {
  return createHash('sha256').update(deviceCode, 'utf8').digest('hex');
}

/** POST /api/auth/device/code (RFC 8628 §3.1–3.2). */
export async function deviceAuthorization(rc: RouteContext, req: Request): Promise<void> {
  await oauthEndpoint(req, async (form) => {
    const clientId = checkClient(form);
    const scopes = requestedScopes(form.get('scope'));
    const now = rc.now();
    const settings = rc.identitySettings;
    const deviceCode = newSecret();
    // A user code taken by another pending sign-in: draw again (20^8 codes; a clash is rare, three in a row absurd).
    for (let attempt = 0; attempt < 3; attempt++) {
      const userCode = newUserCode();
      const added = await rc.store.identity.createDeviceCode({
        device_hash: deviceHash(deviceCode),
        user_code: userCode,
        client_id: clientId,
        scopes,
        client_label: clientLabel(req.raw),
        created_at: now,
        expires_at: now + settings.deviceCodeTtlMs,
        interval_ms: settings.deviceIntervalMs,
      });
      if (!added) continue;
      const verification = `${rc.publicUrl()}/device`;
      sendJson(req.reply, 200, {
        device_code: deviceCode,
        user_code: formatUserCode(userCode),
        verification_uri: verification,
        verification_uri_complete: `${verification}?user_code=${formatUserCode(userCode)}`,
        expires_in: Math.floor(settings.deviceCodeTtlMs / 1000),
        interval: Math.ceil(settings.deviceIntervalMs / 1000),
      });
      return;
    }
    throw new HttpError(503, 'unavailable', 'could not make a user code; try again', { 'retry-after': '1' });
  });
}

/** POST /api/auth/oauth2/token: a device code's tokens (RFC 8628 §3.4–3.5) or a refresh (RFC 6749 §6). */
export async function tokenEndpoint(rc: RouteContext, req: Request): Promise<void> {
  await oauthEndpoint(req, async (form) => {
    const grantType = required(form, 'grant_type');
    const clientId = checkClient(form);
    const now = rc.now();
    const lifetimes = { accessMs: rc.identitySettings.accessTtlMs, refreshMs: rc.identitySettings.refreshTtlMs };
    if (grantType === DEVICE_GRANT) {
      const poll = await rc.store.identity.pollDeviceCode(
        deviceHash(required(form, 'device_code')),
        clientId,
        now,
        lifetimes,
        SLOW_DOWN_MS,
      );
      switch (poll.outcome) {
        case 'approved':
          return sendTokens(req, poll.tokens, now);
        case 'pending':
          throw new OAuthError('authorization_pending', 'the code has not been approved yet; keep polling');
        case 'slow_down':
          throw new OAuthError('slow_down', `polling too fast; wait ${SLOW_DOWN_MS / 1000} s more between polls`);
        case 'expired':
          throw new OAuthError('expired_token', 'the device code expired; start the sign-in again');
        case 'denied':
          throw new OAuthError('access_denied', 'the sign-in was denied');
        case 'unknown':
          throw new OAuthError(
            'invalid_grant',
            'unknown device code (never issued, already used, or for another client)',
          );
      }
    }
    if (grantType === 'refresh_token') {
      const tokens = await rc.store.identity.refresh(required(form, 'refresh_token'), clientId, now, lifetimes);
      if (tokens === undefined)
        throw new OAuthError(
          'invalid_grant',
          'the refresh token is not valid (expired, revoked, or already used); sign in again',
        );
      return sendTokens(req, tokens, now);
    }
    throw new OAuthError('unsupported_grant_type', `grant_type must be ${DEVICE_GRANT} or refresh_token`);
  });
}

function sendTokens(req: Request, tokens: IssuedTokens, now: number): void {
  sendJson(
    req.reply,
    200,
    {
      access_token: tokens.access_token,
      token_type: 'Bearer',
      expires_in: Math.max(1, Math.floor((tokens.access_expires_at - now) / 1000)),
      refresh_token: tokens.refresh_token,
      scope: tokens.scopes.join(' '),
    },
    { pragma: 'no-cache' },
  );
}

/**
 * POST /api/auth/oauth2/revoke (RFC 7009): ends the sign-in a refresh or access token belongs to (`blue-agent
 * logout`). An unknown token is answered 200 too, as the RFC asks: the caller learns nothing about tokens.
 */
export async function revocationEndpoint(rc: RouteContext, req: Request): Promise<void> {
  await oauthEndpoint(req, async (form) => {
    checkClient(form);
    await rc.store.identity.revokeToken(required(form, 'token'), rc.now());
    sendJson(req.reply, 200, {}, { pragma: 'no-cache' });
  });
}
