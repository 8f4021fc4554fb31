/** Signing this machine out: what the token file holds revoked on the Control API, then the file removed. */
import { lstat, readFile, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { withLock } from '../lock/lock.js';
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import type { MetaharnessDiscovery } from '@blue-agent/contract/schema/generated/control-discovery.js';
import { fsyncDir } from '@blue-agent/contract/util/startup/fs-light.js';
import { checkAnswer, ControlClient } from './client.js';
import { type Credentials, oauthError, parseCredentials, TIMEOUT_MS, TOKEN } from './credentials.js';
import { discover } from './device-sign-in.js';

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
        (error.code === undefined
          ? ''
          : ` (${error.code}${error.description === undefined ? '' : `: ${error.description}`})`),
    };
  } catch (error) {
    return { state: 'failed', reason: error instanceof BlueError ? error.message : String(error) };
  } finally {
    await client.close();
  }
}
