/**
 * Every route of the Control API, as Blue's service contract names them (docs/contract.md), with the scope a
 * token needs for each method; the browser's pages sign in by their own session cookie. Each handler gets the caller
 * (public routes: none) and answers JSON described by schemas/control-*.schema.json. Access rules: owners do
 * everything with their sessions, administrators see and download everything, people a session is shared with may
 * view, download and resume it but never change its sharing. A session the caller may not see is answered 404, not
 * 403, so ids of other people's sessions cannot be probed.
 */
import { deviceAuthorization, revocationEndpoint, tokenEndpoint } from '../identity/oauth.js';
import { listUsers, listUserTokens, revokeUserToken } from '../identity/users.js';
import { accountPage, revokeOwnToken } from '../web/account.js';
import { adminAudit, adminClients, adminHome, adminRevokeToken, adminSetRole, adminUsers } from '../web/admin.js';
import { adminPolicy, adminPolicyPreview, adminPolicyPublish } from '../web/policy.js';
import { serveAsset } from '../web/assets.js';
import { sessionDelete, sessionDownload, sessionPage, sessionSharing, sessionsPage } from '../web/sessions/index.js';
import { redirect as redirectPage } from '../web/http.js';
import { deviceDecision, devicePage, signInLinkPage, signInPage, signInWithLink, signOut } from '../web/sign-in.js';
import type { ProviderSignIn, Request, RouteContext } from '../route-context.js';
import { HttpError } from '../http.js';
import { auditEvents } from './audit.js';
import { clientStatus, listClientStatus } from './fleet.js';
import { governanceConfig, governanceEvents, harnessMetadata } from './governance.js';
import { ID, type Route, route, SESSION_REF } from './route.js';
import { facets, listSessions, members } from './search.js';
import { deleteSession, download, getSession, getSharing, putSharing } from './sessions.js';
import { authMe, discovery, health, metricsText, ready } from './system.js';
import { complete, presign } from './uploads.js';

export const ROUTES: readonly Route[] = [
  route('/.well-known/metaharness', { GET: discovery }, { public: true }),
  route('/health', { GET: health }, { public: true }),
  route('/ready', { GET: ready }, { public: true }),
  route('/metrics', { GET: metricsText }, { public: true }),
  route('/api/auth/device/code', { POST: deviceAuthorization }, { public: true }),
  route('/api/auth/oauth2/token', { POST: tokenEndpoint }, { public: true }),
  route('/api/auth/oauth2/revoke', { POST: revocationEndpoint }, { public: true }),
  route('/users', { GET: [listUsers, 'admin'] }),
  // A token that may only report status or read the policy cannot see or end its person's other sign-ins.
  route(`/users/${ID}/tokens`, { GET: [listUserTokens, 'session:read'] }),
  route(`/tokens/${ID}`, { DELETE: [revokeUserToken, 'session:write'] }),
  route('/auth/me', { GET: [authMe, 'any'] }),
  route('/governance-config', { GET: [governanceConfig, 'governance:read'] }),
  route('/governance-config/events', { GET: [governanceEvents, 'governance:read'] }),
  route('/harness-metadata', { GET: [harnessMetadata, 'governance:read'] }),
  route('/client-status', { POST: [clientStatus, 'client-status:write'], GET: [listClientStatus, 'admin'] }),
  route('/session-uploads/presign', { POST: [presign, 'session:write'] }),
  route('/session-uploads/facets', { GET: [facets, 'session:read'] }),
  route('/session-uploads/members', { GET: [members, 'session:read'] }),
  route('/session-uploads', { GET: [listSessions, 'session:read'] }),
  route(`/session-uploads/${ID}`, { GET: [getSession, 'session:read'], DELETE: [deleteSession, 'session:write'] }),
  route(`/session-uploads/${ID}/complete`, { POST: [complete, 'session:write'] }),
  route(`/session-uploads/${ID}/download`, { POST: [download, 'session:read'] }),
  route(`/session-uploads/${ID}/sharing`, { GET: [getSharing, 'session:read'], PUT: [putSharing, 'session:write'] }),
  route('/audit-events', { GET: [auditEvents, 'admin'] }),
  // Browser pages: signed in by their own session cookie (web/http.ts), never by a bearer token.
  route('/', { GET: home }, { page: true }),
  route('/assets/:name', { GET: serveAsset }, { page: true }),
  route('/sign-in', { GET: signInPage }, { page: true }),
  route('/sign-out', { POST: signOut }, { page: true }),
  route('/auth/link', { GET: signInLinkPage, POST: signInWithLink }, { page: true }),
  route('/auth/oidc/start', { GET: (rc, req) => withOidc(rc).start(rc, req) }, { page: true }),
  route('/auth/oidc/callback', { GET: (rc, req) => withOidc(rc).callback(rc, req) }, { page: true }),
  route('/device', { GET: devicePage, POST: deviceDecision }, { page: true }),
  route('/account', { GET: accountPage }, { page: true }),
  route('/sessions', { GET: sessionsPage }, { page: true }),
  route(`/sessions/${SESSION_REF}`, { GET: sessionPage }, { page: true }),
  route(`/sessions/${ID}/sharing`, { POST: sessionSharing }, { page: true }),
  route(`/sessions/${ID}/delete`, { POST: sessionDelete }, { page: true }),
  route(`/sessions/${ID}/download`, { GET: sessionDownload }, { page: true }),
  route('/admin', { GET: adminHome }, { page: true }),
  route('/admin/clients', { GET: adminClients }, { page: true }),
  route('/admin/users', { GET: adminUsers }, { page: true }),
  route(`/admin/users/${ID}/role`, { POST: adminSetRole }, { page: true }),
  route(`/admin/tokens/${ID}/revoke`, { POST: adminRevokeToken }, { page: true }),
  route('/admin/audit', { GET: adminAudit }, { page: true }),
  route('/admin/policy', { GET: adminPolicy }, { page: true }),
  route('/admin/policy/preview', { POST: adminPolicyPreview }, { page: true }),
  route('/admin/policy/publish', { POST: adminPolicyPublish }, { page: true }),
  route(`/account/tokens/${ID}/revoke`, { POST: revokeOwnToken }, { page: true }),
];

function withOidc(rc: RouteContext): ProviderSignIn {
  if (rc.oidc === undefined)
    throw new HttpError(
      404,
      'not_found',
      'this server signs people in with sign-in links only: it has no identity provider configured',
    );
  return rc.oidc;
}

/** GET /: the sessions. */
async function home(_rc: RouteContext, req: Request): Promise<void> {
  redirectPage(req.reply, '/sessions');
}
