/** A person's sign-ins: personal tokens for automation, one-time sign-in links, listing and revoking them. */
import { BlueError } from '@blue-agent/contract/errors.js';
import {
  API_SCOPES,
  MEMBER_SCOPES,
  type AuditActor,
  type Grant,
  type StoreOptions,
  type User,
} from '../store/index.js';
import { userNamed } from './users.js';
import { withStore } from './with-store.js';

/** `control-plane tokens add`: a new personal token for an existing user (every scope their role allows). */
export async function addToken(
  where: StoreOptions,
  email: string,
  label: string | undefined,
  now: number,
  by?: AuditActor,
): Promise<{ user: User; token: string; grant: Grant }> {
  return withStore({ ...where, create: false }, async (store) => {
    const user = await userNamed(store, email);
    const scopes = user.is_admin ? API_SCOPES : MEMBER_SCOPES;
    const made = await store.identity.addPersonalToken(
      user.id,
      scopes,
      (label ?? 'token from tokens add').slice(0, 200),
      now,
      by,
    );
    return { user, ...made };
  });
}

/** How long a sign-in link made by `users link` or a first start works. */
export const SIGN_IN_LINK_TTL_MS = 15 * 60_000;

/** The browser URL of a sign-in link: its secret in the fragment, which browsers never send to a server. */
export function signInLinkUrl(publicUrl: string, secret: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/auth/link#${secret}`;
}

/** `control-plane users link`: a one-time browser sign-in link for a user, on the URL `serve` recorded. */
export async function makeSignInLink(
  where: StoreOptions,
  email: string,
  now: number,
  by?: AuditActor,
): Promise<{ user: User; url: string; expires_at: number }> {
  return withStore({ ...where, create: false }, async (store) => {
    const user = await userNamed(store, email);
    const publicUrl = await store.publicUrl();
    if (publicUrl === undefined) {
      throw new BlueError('USAGE', 'this Control API has not been served yet, so its address is not known', {
        hint: 'Start `blue-agent control-plane serve` once, then make the link.',
      });
    }
    const secret = await store.identity.createSignInLink(user.id, now, SIGN_IN_LINK_TTL_MS, by);
    return { user, url: signInLinkUrl(publicUrl, secret), expires_at: now + SIGN_IN_LINK_TTL_MS };
  });
}

/** `control-plane tokens list`: everyone's sign-ins, or one user's, newest first. */
export async function listTokens(where: StoreOptions, email: string | undefined): Promise<Grant[]> {
  return withStore({ ...where, create: false }, async (store) =>
    store.identity.grants(email === undefined ? undefined : (await userNamed(store, email)).id),
  );
}

/** `control-plane tokens revoke`: ends a sign-in; its tokens fail at the next request to any replica. */
export async function revokeToken(where: StoreOptions, id: string, now: number, by?: AuditActor): Promise<Grant> {
  return withStore({ ...where, create: false }, async (store) => {
    const revoked = await store.identity.revokeGrant(id, now, by);
    if (revoked === undefined)
      throw new BlueError('USAGE', `there is no token ${id}`, { hint: 'See `blue-agent control-plane tokens list`.' });
    return revoked;
  });
}
