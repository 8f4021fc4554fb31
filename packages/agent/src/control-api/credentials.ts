/**
 * This machine's credentials: kept fresh here; got by the device flow (RFC 8628, `device-sign-in.ts`) and given up
 * by a sign-out (RFC 7009, `sign-out.ts`).
 * The token file holds either a bare bearer token (`login --token-stdin`, BLUE_AGENT_TOKEN's format) or, after a device
 * sign-in, credentials: a short-lived access token, the refresh token that replaces it, and where to refresh. A refresh
 * runs under the credentials' lock and reads the file again first: refresh tokens are spent once, and two processes
 * spending the same one would end the sign-in. A sign-out takes the same lock.
 */
import { constants } from 'node:fs';
import { chmod, lstat, mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { withLock } from '../lock/lock.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
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
export const TIMEOUT_MS = 15_000;

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

export const TOKEN = /^[A-Za-z0-9._~+/=-]{1,4096}$/;

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

export function fromTokenAnswer(
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

export function oauthError(body: unknown): { code?: string; description?: string } {
  if (typeof body !== 'object' || body === null) return {};
  const { error, error_description: description } = body as { error?: unknown; error_description?: unknown };
  return {
    ...(typeof error === 'string' ? { code: printable(error).slice(0, 64) } : {}),
    ...(typeof description === 'string' ? { description: printable(description).slice(0, 300) } : {}),
  };
}

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
