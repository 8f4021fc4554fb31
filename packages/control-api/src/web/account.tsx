/**
 * A person's own account page: who they are signed in as, and their sign-ins (personal tokens and device sign-ins),
 * each revocable here; a revoked one fails at its next request.
 */
import { HttpError } from '../http.js';
import { userActor } from '../store/index.js';
import type { Request, RouteContext } from '../route-context.js';
import { browserSession, readPagePost, redirect, sendPage, toSignIn } from './http.js';
import { Page } from './layout.js';
import { TokenTable } from './tokens.js';

/** GET /account. */
export async function accountPage(rc: RouteContext, req: Request): Promise<void> {
  const session = await browserSession(rc, req);
  if (session === undefined) return toSignIn(req);
  const now = rc.now();
  const grants = await rc.store.identity.grants(session.user.id);
  sendPage(
    req.reply,
    200,
    <Page title="Your account" session={session} nav="account">
      <h1>Your account</h1>
      <p>
        Signed in as <strong>{session.user.email}</strong> ({session.user.is_admin ? 'administrator' : 'member'}).
      </p>
      <h2 id="tokens">Your tokens</h2>
      <p class="muted">
        Personal tokens and the devices you signed in with <code>blue-agent login</code>. The tokens themselves are
        never shown again.
      </p>
      <TokenTable
        grants={grants}
        csrf={session.csrf}
        now={now}
        revokeAction={(g) => `/account/tokens/${g.id}/revoke`}
      />
    </Page>,
  );
}

/** POST /account/tokens/{id}/revoke: one's own sign-in. */
export async function revokeOwnToken(rc: RouteContext, req: Request): Promise<void> {
  const session = await browserSession(rc, req);
  if (session === undefined) throw new HttpError(401, 'unauthenticated', 'sign in first');
  await readPagePost(rc, req, session);
  const grant = await rc.store.identity.grant(req.params[0]!);
  if (grant === undefined || grant.user_id !== session.user.id)
    throw new HttpError(404, 'not_found', 'no such token of yours');
  await rc.store.identity.revokeGrant(grant.id, rc.now(), userActor(session.user));
  redirect(req.reply, '/account#tokens');
}
