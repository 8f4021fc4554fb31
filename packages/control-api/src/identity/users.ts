/**
 * Users and their sign-ins, for administrators and for each user's own: `GET /users`, `GET /users/{id}/tokens` and
 * `DELETE /tokens/{id}`. A revoked sign-in's tokens fail at the very next request (every request looks its token up).
 * Someone else's sign-ins are answered 404 to a member, as sessions are: ids cannot be probed.
 */
import type { Token, TokenList } from '@blue-agent/contract/schema/generated/control-tokens.js';
import type { UserList } from '@blue-agent/contract/schema/generated/control-users.js';
import { forbidden, notFound, sendJson } from '../http.js';
import { caller, type Request, type RouteContext } from '../route-context.js';
import { userActor, type Grant } from '../store/index.js';

const iso = (at: number | null): string | null => (at === null ? null : new Date(at).toISOString());

export function isActive(grant: Grant, now: number): boolean {
  return grant.revoked_at === null && (grant.expires_at === null || grant.expires_at > now);
}

export function tokenView(grant: Grant, now: number): Token {
  return {
    id: grant.id,
    user_id: grant.user_id,
    kind: grant.kind,
    label: grant.label,
    scopes: grant.scopes,
    created_at: new Date(grant.created_at).toISOString(),
    last_used_at: iso(grant.last_used_at),
    expires_at: iso(grant.expires_at),
    revoked_at: iso(grant.revoked_at),
    active: isActive(grant, now),
  };
}

/** GET /users (administrators). */
export async function listUsers(rc: RouteContext, req: Request): Promise<void> {
  if (!caller(req).is_admin) throw forbidden('only administrators may list users');
  const now = rc.now();
  const [users, grants] = await Promise.all([rc.store.listUsers(), rc.store.identity.grants(undefined)]);
  const active = new Map<string, number>();
  for (const g of grants) if (isActive(g, now)) active.set(g.user_id, (active.get(g.user_id) ?? 0) + 1);
  const body: UserList = {
    items: users.map((u) => ({
      id: u.id,
      email: u.email,
      role: u.is_admin ? 'admin' : 'member',
      created_at: new Date(u.created_at).toISOString(),
      active_tokens: active.get(u.id) ?? 0,
    })),
  };
  sendJson(req.reply, 200, body);
}

/** GET /users/{id}/tokens: one's own sign-ins, or anyone's for an administrator. */
export async function listUserTokens(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const id = req.params[0]!;
  if (id !== user.id && !user.is_admin) throw notFound(`no user ${id}`);
  if (id !== user.id && (await rc.store.userById(id)) === undefined) throw notFound(`no user ${id}`);
  const now = rc.now();
  const body: TokenList = { items: (await rc.store.identity.grants(id)).map((g) => tokenView(g, now)) };
  sendJson(req.reply, 200, body);
}

/** DELETE /tokens/{id}: revokes one's own sign-in, or anyone's for an administrator; answers it. */
export async function revokeUserToken(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const id = req.params[0]!;
  const grant = await rc.store.identity.grant(id);
  if (grant === undefined || (grant.user_id !== user.id && !user.is_admin)) throw notFound(`no token ${id}`);
  const now = rc.now();
  const revoked = await rc.store.identity.revokeGrant(id, now, userActor(user));
  if (revoked === undefined) throw notFound(`no token ${id}`);
  sendJson(req.reply, 200, tokenView(revoked, now));
}
