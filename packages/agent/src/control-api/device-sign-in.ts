/** Signing this machine in with the device flow (RFC 8628) against a Control API's own issuer. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import type { DeviceAuthorization } from '@blue-agent/contract/schema/generated/control-device-authorization.js';
import type { MetaharnessDiscovery } from '@blue-agent/contract/schema/generated/control-discovery.js';
import type { TokenAnswer } from '@blue-agent/contract/schema/generated/control-token-answer.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { checkAnswer, ControlClient } from './client.js';
import {
  AGENT_SCOPES,
  type Credentials,
  DEVICE_GRANT,
  fromTokenAnswer,
  oauthError,
  TIMEOUT_MS,
} from './credentials.js';

export interface DeviceSignIn {
  /** Shown to the person: where to go and the code to type. */
  prompt(code: {
    verification_uri: string;
    verification_uri_complete?: string | undefined;
    user_code: string;
    expires_in: number;
  }): void;
  /** Aborts the wait (Ctrl-C). */
  signal?: AbortSignal;
}

/**
 * The device flow against the Control API at `controlUrl`: discovery names the issuer (on the Control API's own
 * origin), the device code is asked for, the person approves it in a browser, and the token endpoint is polled at the
 * interval it asks for until it answers tokens, a denial or an expiry.
 */
export async function deviceSignIn(ctx: Context, controlUrl: string, how: DeviceSignIn): Promise<Credentials> {
  const client = await ControlClient.create({
    controlUrl,
    token: undefined,
    tokenSource: 'the sign-in',
    env: ctx.env,
    userAgent: `blue-agent/${ctx.self.version}`,
    timeoutMs: TIMEOUT_MS,
  });
  try {
    const discovery = checkAnswer<MetaharnessDiscovery>(
      validators.validateMetaharnessDiscovery,
      await discover(client),
      'GET /.well-known/metaharness',
    );
    const issuer = new URL(discovery.oauth.issuer);
    if (issuer.origin !== client.origin) {
      throw new BlueError(
        'AUTH_FAILED',
        `the Control API names an OAuth issuer on another origin (${issuer.origin}); refusing to sign in there`,
        {
          hint: `Check --control-url: the issuer must be on ${client.origin}.`,
        },
      );
    }
    const base = discovery.oauth.issuer.replace(/\/+$/, '');
    const clientId = discovery.oauth.client_id;
    const offered = new Set(discovery.oauth.scopes);
    const scope = AGENT_SCOPES.filter((s) => offered.has(s)).join(' ');
    const started = await client.postForm(new URL(`${base}/device/code`), {
      client_id: clientId,
      ...(scope === '' ? {} : { scope }),
    });
    if (started.status !== 200) throw signInRefused('the device code', started.status, oauthError(started.body));
    const code = checkAnswer<DeviceAuthorization>(
      validators.validateDeviceAuthorization,
      started.body,
      'the device authorization endpoint',
    );
    how.prompt({
      verification_uri: printable(code.verification_uri),
      verification_uri_complete:
        code.verification_uri_complete === undefined ? undefined : printable(code.verification_uri_complete),
      user_code: printable(code.user_code),
      expires_in: code.expires_in,
    });
    const tokenEndpoint = `${base}/oauth2/token`;
    let intervalMs = (code.interval ?? 5) * 1000;
    const deadline = Date.now() + code.expires_in * 1000;
    while (Date.now() < deadline) {
      await sleep(intervalMs, undefined, how.signal === undefined ? {} : { signal: how.signal });
      const polled = await client.postForm(new URL(tokenEndpoint), {
        grant_type: DEVICE_GRANT,
        device_code: code.device_code,
        client_id: clientId,
      });
      if (polled.status === 200)
        return fromTokenAnswer(
          ctx,
          checkAnswer<TokenAnswer>(validators.validateTokenAnswer, polled.body, 'the token endpoint'),
          tokenEndpoint,
          clientId,
          null,
        );
      const error = oauthError(polled.body);
      if (error.code === 'authorization_pending') continue;
      if (error.code === 'slow_down') {
        intervalMs += 5_000;
        continue;
      }
      if (error.code === 'access_denied')
        throw new BlueError('LOGIN_DENIED', 'the sign-in was denied in the browser', {
          hint: 'Run `blue-agent login` again and approve the code if it is yours.',
        });
      if (error.code === 'expired_token') break;
      throw signInRefused('the token', polled.status, error);
    }
    throw new BlueError('LOGIN_EXPIRED', 'the code expired before it was approved', {
      hint: 'Run `blue-agent login` again and approve the new code within its time.',
    });
  } finally {
    await client.close();
  }
}

/** The discovery document; a server without one offers no device sign-in. */
export async function discover(client: ControlClient): Promise<unknown> {
  try {
    return await client.requestJson('GET', client.routeUrl('.well-known/metaharness'));
  } catch (error) {
    const status = (error as { status?: number }).status;
    // The discovery route missing and the policy route too: not the Control API (its answer says so,
    // CONTROL_URL_WRONG).
    if (status === 404 && (await isWrongUrl(client))) throw error;
    if (status === 404) {
      throw new BlueError(
        'AUTH_FAILED',
        `the Control API at ${client.controlUrl} offers no device sign-in (GET /.well-known/metaharness answered 404)`,
        {
          hint:
            'Check --control-url, or sign in with a token from an administrator: blue-agent login ' +
            '--control-url URL --token-stdin < token-file.',
        },
      );
    }
    if (error instanceof BlueError && error.code === 'UPLOAD_FAILED' && status === undefined) {
      throw new BlueError('CONTROL_API_UNREACHABLE', error.message, {
        hint: 'Check the network and --control-url, then try again.',
      });
    }
    throw error;
  }
}

/**
 * After a 404 for discovery: whether the URL is not the Control API's at all (its policy route is missing too), rather
 * than a Control API without device sign-in (which answers that route, if only to ask for a token).
 */
async function isWrongUrl(client: ControlClient): Promise<boolean> {
  try {
    await client.requestJson('GET', client.routeUrl('governance-config'));
    return false;
  } catch (error) {
    return error instanceof BlueError && error.code === 'CONTROL_URL_WRONG';
  }
}

function signInRefused(what: string, status: number, error: { code?: string; description?: string }): BlueError {
  return new BlueError(
    'AUTH_FAILED',
    `the Control API refused ${what} (HTTP ${status}${error.code === undefined ? '' : `, ${error.code}`}` +
      `${error.description === undefined ? '' : `: ${error.description}`})`,
    {
      hint:
        'Check --control-url, or sign in with a token from an administrator: blue-agent login --control-url ' +
        'URL --token-stdin.',
    },
  );
}

/**
 * Replaces the token file atomically: a new 0600 file beside it, then a rename. A symlink in its place is refused
 * rather than followed, so the token cannot be written wherever a link points.
 */
