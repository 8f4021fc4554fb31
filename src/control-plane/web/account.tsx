/**
 * A person's own account page: who they are signed in as, and their sign-ins (personal tokens and device sign-ins),
 * each revocable here; a revoked one fails at its next request.
 */
import { HttpError } from '../http.js';
import { isActive } from '../identity/users.js';
import type { Request, RouteContext } from '../routes.js';
import type { Grant } from '../store/index.js';
import { browserSession, readPagePost, redirect, sendPage, toSignIn } from './http.js';
import { Page } from './layout.js';

const when = (at: number | null): string => (at === null ? '—' : new Date(at).toISOString().replace('T', ' ').slice(0, 16) + ' UTC');

/** GET /account. */
export async function accountPage(rc: RouteContext, req: Request): Promise<void> {
  const session = await browserSession(rc, req);
  if (session === undefined) return toSignIn(req);
  const now = rc.now();
  const grants = await rc.store.identity.grants(session.user.id);
  const state = (g: Grant) => (g.revoked_at !== null ? 'revoked' : isActive(g, now) ? 'active' : 'lapsed');
  sendPage(
    req.reply,
    200,
    <Page title="Your account" session={session} nav="account">
      <h1>Your account</h1>
      <p>
        Signed in as <strong>{session.user.email}</strong> ({session.user.is_admin ? 'administrator' : 'member'}).
      </p>
      <h2 id="tokens">Your tokens</h2>
      <p class="muted">Personal tokens and the devices you signed in with `blue-agent login`. The tokens themselves are never shown again.</p>
      {grants.length === 0 ? (
        <p>No tokens.</p>
      ) : (
        <table class="responsive" aria-labelledby="tokens">
          <thead>
            <tr>
              <th scope="col">What</th>
              <th scope="col">Kind</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">State</th>
              <th scope="col">
                <span class="sr-only">Action</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {grants.map((g) => (
              <tr key={g.id}>
                <td>{g.label}</td>
                <td>{g.kind === 'device' ? 'device sign-in' : 'personal token'}</td>
                <td>{when(g.created_at)}</td>
                <td>{when(g.last_used_at)}</td>
                <td>{state(g)}</td>
                <td>
                  {state(g) !== 'active' ? null : (
                    <form method="post" action={`/account/tokens/${g.id}/revoke`} class="inline">
                      <input type="hidden" name="csrf" value={session.csrf} />
                      <button type="submit" class="danger" aria-label={`Revoke ${g.label}, created ${when(g.created_at)}`}>
                        Revoke
                      </button>
                    </form>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>,
  );
}

/** POST /account/tokens/{id}/revoke: one's own sign-in. */
export async function revokeOwnToken(rc: RouteContext, req: Request): Promise<void> {
  const session = await browserSession(rc, req);
  if (session === undefined) throw new HttpError(401, 'unauthenticated', 'sign in first');
  await readPagePost(rc, req, session);
  const grant = await rc.store.identity.grant(req.params[0]!);
  if (grant === undefined || grant.user_id !== session.user.id) throw new HttpError(404, 'not_found', 'no such token of yours');
  await rc.store.identity.revokeGrant(grant.id, rc.now());
  redirect(req.reply, '/account#tokens');
}
