/**
 * Signing this machine in with the device flow (RFC 8628), keeping its tokens fresh, and signing it out (RFC 7009).
 * The token file holds either a bare bearer token (`login --token-stdin`, BLUE_AGENT_TOKEN's format) or, after a device
 * sign-in, credentials: a short-lived access token, the refresh token that replaces it, and where to refresh. A refresh
 * runs under the credentials' lock and reads the file again first: refresh tokens are spent once, and two processes
 * spending the same one would end the sign-in. A sign-out takes the same lock.
 */
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { withLock } from '../lock/lock.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import type { DeviceAuthorization } from '@blue-agent/contract/schema/generated/control-device-authorization.js';
import type { MetaharnessDiscovery } from '@blue-agent/contract/schema/generated/control-discovery.js';
import type { TokenAnswer } from '@blue-agent/contract/schema/generated/control-token-answer.js';
import { fsyncDir, randomHex } from '@blue-agent/contract/util/startup/fs-light.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { checkAnswer, ControlClient } from './client.js';

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** What the agent asks for: the policy, sessions (upload, list, resume), status; refreshable. */
export const AGENT_SCOPES = [
  'governance:read',
  'session:read',
  'session:write',
  'client-status:write',
  'offline_access',
];
/** An access token this close to its expiry is refreshed first. */
export const REFRESH_MARGIN_MS = 60_000;
const TIMEOUT_MS = 15_000;

export interface Credentials {
  version: 1;
  access_token: string;
  refresh_token: string | null;
  /** When the access token expires (ms since the epoch); null: unknown (never refreshed first). */
  expires_at: number | null;
  token_endpoint: string;
  client_id: string;
  scope: string;
}

const TOKEN = /^[A-Za-z0-9._~+/=-]{1,4096}$/;

/** What the token file holds: credentials (JSON), else a bare token; undefined when it is not a credentials document.
 * */
export function parseCredentials(text: string, file: string): Credentials | undefined {
  if (!text.trimStart().startsWith('{')) return undefined;
  const invalid = (why: string) =>
    new BlueError('CONFIG_INVALID', `the token file ${file} holds credentials that cannot be used: ${why}`, {
      file,
      hint: 'Run `blue-agent login --control-url URL` again.',
    });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw invalid('it is not valid JSON');
  }
  const c = value as Partial<Credentials>;
  if (typeof c !== 'object' || c === null || c.version !== 1) throw invalid('unknown version');
  if (typeof c.access_token !== 'string' || !TOKEN.test(c.access_token)) throw invalid('no usable access_token');
  if (c.refresh_token !== null && (typeof c.refresh_token !== 'string' || !TOKEN.test(c.refresh_token)))
    throw invalid('refresh_token is not a token');
  if (c.expires_at !== null && (typeof c.expires_at !== 'number' || !Number.isFinite(c.expires_at)))
    throw invalid('expires_at is not a time');
  if (typeof c.token_endpoint !== 'string' || !/^https?:\/\//.test(c.token_endpoint))
    throw invalid('token_endpoint is not an http(s) URL');
  if (typeof c.client_id !== 'string' || c.client_id === '') throw invalid('no client_id');
  return {
    version: 1,
    access_token: c.access_token,
    refresh_token: c.refresh_token ?? null,
    expires_at: c.expires_at ?? null,
    token_endpoint: c.token_endpoint,
    client_id: c.client_id,
    scope: typeof c.scope === 'string' ? c.scope : '',
  };
}

/**
 * The access token of `credentials`, refreshed first when it expires within a minute (under the lock, reading the
 * file again: another process may have refreshed meanwhile).
 */
export async function freshAccessToken(ctx: Context, file: string, credentials: Credentials): Promise<string> {
  if (!needsRefresh(ctx, credentials)) return credentials.access_token;
  return withLock(ctx.paths.locksDir, `credentials:${file}`, async () => {
    const current = parseCredentials(await readFile(file, 'utf8'), file) ?? credentials;
    if (!needsRefresh(ctx, current)) return current.access_token;
    const refreshed = await refresh(ctx, current);
    await writeTokenFile(file, `${JSON.stringify(refreshed)}\n`);
    return refreshed.access_token;
  });
}

function needsRefresh(ctx: Context, credentials: Credentials): boolean {
  return (
    credentials.refresh_token !== null &&
    credentials.expires_at !== null &&
    credentials.expires_at - ctx.clock.now() <= REFRESH_MARGIN_MS
  );
}

async function refresh(ctx: Context, credentials: Credentials): Promise<Credentials> {
  const client = await ControlClient.create({
    controlUrl: credentials.token_endpoint,
    token: undefined,
    tokenSource: 'the refresh',
    env: ctx.env,
    userAgent: `blue-agent/${ctx.self.version}`,
    timeoutMs: TIMEOUT_MS,
  });
  try {
    const answer = await client.postForm(new URL(credentials.token_endpoint), {
      grant_type: 'refresh_token',
      refresh_token: credentials.refresh_token!,
      client_id: credentials.client_id,
    });
    if (answer.status === 200)
      return fromTokenAnswer(
        ctx,
        checkAnswer<TokenAnswer>(validators.validateTokenAnswer, answer.body, 'the token endpoint'),
        credentials.token_endpoint,
        credentials.client_id,
        credentials.refresh_token,
      );
    const error = oauthError(answer.body);
    if (answer.status === 400 || answer.status === 401) {
      throw new BlueError(
        'AUTH_FAILED',
        `this machine's sign-in ended (${error.code ?? `HTTP ${answer.status}`}: revoked, lapsed, or used elsewhere)`,
        {
          hint: `Sign in again: blue-agent login --control-url ${new URL(credentials.token_endpoint).origin}`,
        },
      );
    }
    throw new BlueError(
      'CONTROL_API_UNREACHABLE',
      `refreshing the access token failed: the Control API answered HTTP ${answer.status}`,
      { hint: 'It is tried again at the next request.' },
    );
  } finally {
    await client.close();
  }
}

function fromTokenAnswer(
  ctx: Context,
  answer: TokenAnswer,
  tokenEndpoint: string,
  clientId: string,
  previousRefresh: string | null,
): Credentials {
  return {
    version: 1,
    access_token: answer.access_token,
    // A server that does not rotate refresh tokens answers none: the one we have stays good.
    refresh_token: answer.refresh_token ?? previousRefresh,
    expires_at: answer.expires_in === undefined ? null : ctx.clock.now() + answer.expires_in * 1000,
    token_endpoint: tokenEndpoint,
    client_id: clientId,
    scope: answer.scope ?? '',
  };
}

function oauthError(body: unknown): { code?: string; description?: string } {
  if (typeof body !== 'object' || body === null) return {};
  const { error, error_description: description } = body as { error?: unknown; error_description?: unknown };
  return {
    ...(typeof error === 'string' ? { code: printable(error).slice(0, 64) } : {}),
    ...(typeof description === 'string' ? { description: printable(description).slice(0, 300) } : {}),
  };
}

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
async function discover(client: ControlClient): Promise<unknown> {
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
export async function writeTokenFile(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const existing = await lstat(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (existing !== undefined && !existing.isFile()) {
    throw new BlueError(
      'UNSAFE_PATH',
      `the token file ${file} is ${existing.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}; refusing ` +
        `to write the token there`,
      {
        file,
        hint: `Remove ${file}, or point token_file in the agent config at a regular file, then log in again.`,
      },
    );
  }
  const temp = path.join(dir, `.${path.basename(file)}.${randomHex(12)}.tmp`);
  const handle = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
    0o600,
  );
  try {
    try {
      await handle.writeFile(text, 'utf8');
      // The umask may have taken bits away, never added any; chmod states the mode exactly.
      await handle.chmod(0o600);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await chmod(file, 0o600);
  await fsyncDir(dir);
}

/** What a sign-out found and did. */
export interface SignedOut {
  /** What the token file held: device credentials, a bare token (`login --token-stdin`), something unreadable, or
   * nothing. */
  held: 'device' | 'token' | 'unreadable' | 'nothing';
  /** Whether the token file was removed. */
  removed: boolean;
  /** Revocation on the Control API: done, not asked for, or failed (with why). */
  revocation: { state: 'revoked' | 'not_asked' | 'failed'; reason?: string };
}

/** A token file larger than this holds no credentials of ours; it is removed unread. */
const MAX_TOKEN_FILE_BYTES = 64 * 1024;

/**
 * Signs this machine out: revokes what the token file holds on the Control API when `revoke` says so for its kind
 * (best effort: a failure is reported, never thrown), then removes the file. Under the credentials' lock, so a
 * refresh running meanwhile cannot write the credentials back.
 */
export async function signOut(
  ctx: Context,
  file: string,
  controlUrl: string | undefined,
  revoke: { device: boolean; token: boolean },
): Promise<SignedOut> {
  const found = await lstat(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (found === undefined) return { held: 'nothing', removed: false, revocation: { state: 'not_asked' } };
  if (!found.isFile()) {
    throw new BlueError(
      'UNSAFE_PATH',
      `the token file ${file} is ${found.isSymbolicLink() ? 'a symbolic link' : 'not a regular file'}; it is left ` +
        `alone`,
      {
        file,
        hint: `Look at ${file} and remove it yourself if it is yours.`,
      },
    );
  }
  return withLock(ctx.paths.locksDir, `credentials:${file}`, async () => {
    const text = found.size > MAX_TOKEN_FILE_BYTES ? undefined : await readFile(file, 'utf8').catch(() => undefined);
    let held: SignedOut['held'] = 'unreadable';
    let credentials: Credentials | undefined;
    let token: string | undefined;
    try {
      credentials = text === undefined ? undefined : parseCredentials(text, file);
      token = text === undefined || credentials !== undefined ? undefined : text.trim();
      held = credentials !== undefined ? 'device' : token !== undefined && TOKEN.test(token) ? 'token' : 'unreadable';
    } catch {
      held = 'unreadable';
    }
    let revocation: SignedOut['revocation'] = { state: 'not_asked' };
    if (held === 'device' && revoke.device) {
      revocation = await revokeAt(
        ctx,
        new URL('revoke', credentials!.token_endpoint),
        credentials!.refresh_token ?? credentials!.access_token,
        credentials!.client_id,
      );
    } else if (held === 'token' && revoke.token) {
      revocation =
        controlUrl === undefined
          ? { state: 'failed', reason: 'no Control API is configured to ask' }
          : await revokeBareToken(ctx, controlUrl, token!);
    } else if (held === 'unreadable' && (revoke.device || revoke.token)) {
      revocation = { state: 'failed', reason: 'the token file holds nothing blue-agent can revoke' };
    }
    await unlink(file).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
    await fsyncDir(path.dirname(file)).catch(() => undefined);
    return { held, removed: true, revocation };
  });
}

/** A token from `login --token-stdin`: revoked at the revocation endpoint of the issuer the Control API names. */
async function revokeBareToken(ctx: Context, controlUrl: string, token: string): Promise<SignedOut['revocation']> {
  const client = await ControlClient.create({
    controlUrl,
    token: undefined,
    tokenSource: 'the sign-out',
    env: ctx.env,
    userAgent: `blue-agent/${ctx.self.version}`,
    timeoutMs: TIMEOUT_MS,
  });
  let discovery: MetaharnessDiscovery;
  try {
    discovery = checkAnswer<MetaharnessDiscovery>(
      validators.validateMetaharnessDiscovery,
      await discover(client),
      'GET /.well-known/metaharness',
    );
  } catch (error) {
    return { state: 'failed', reason: error instanceof BlueError ? error.message : String(error) };
  } finally {
    await client.close();
  }
  const issuer = new URL(discovery.oauth.issuer);
  if (issuer.origin !== client.origin)
    return {
      state: 'failed',
      reason: `the Control API names an issuer on another origin (${issuer.origin}); the token was not sent there`,
    };
  return revokeAt(
    ctx,
    new URL(`${discovery.oauth.issuer.replace(/\/+$/, '')}/oauth2/revoke`),
    token,
    discovery.oauth.client_id,
  );
}

/** RFC 7009 at `url`: 200 means the sign-in the token belongs to has ended (or was not known there). */
async function revokeAt(ctx: Context, url: URL, token: string, clientId: string): Promise<SignedOut['revocation']> {
  const client = await ControlClient.create({
    controlUrl: url.href,
    token: undefined,
    tokenSource: 'the sign-out',
    env: ctx.env,
    userAgent: `blue-agent/${ctx.self.version}`,
    timeoutMs: TIMEOUT_MS,
  });
  try {
    const answer = await client.postForm(url, { token, client_id: clientId });
    if (answer.status === 200) return { state: 'revoked' };
    if (answer.status === 404 || answer.status === 405)
      return {
        state: 'failed',
        reason: `the Control API does not revoke tokens (POST ${url.pathname} answered HTTP ${answer.status})`,
      };
    const error = oauthError(answer.body);
    return {
      state: 'failed',
      reason:
        `the Control API answered HTTP ${answer.status}` +
        `${error.code === undefined ? '' : ` (${error.code}${error.description === undefined ? '' : `: ${error.description}`})`}`,
    };
  } catch (error) {
    return { state: 'failed', reason: error instanceof BlueError ? error.message : String(error) };
  } finally {
    await client.close();
  }
}
