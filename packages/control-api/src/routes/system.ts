/** The server's own routes: discovery, health, readiness, metrics, and who the caller is. */
import { caller, type Request, type RouteContext } from '../route-context.js';
import { sendJson, sendText } from '../http.js';
import { API_SCOPES } from '../store/index.js';

/** The scopes discovery names: OpenID's (accepted, no right of their own) and the API's (store/types.ts). */
export const SCOPES = ['openid', 'profile', 'email', 'offline_access', ...API_SCOPES];

export async function discovery(rc: RouteContext, req: Request): Promise<void> {
  const base = rc.publicUrl();
  sendJson(
    req.reply,
    200,
    {
      version: 1,
      control_api_url: base,
      oauth: { issuer: `${base}/api/auth`, client_id: 'blue-agent', scopes: SCOPES },
    },
    { 'cache-control': 'no-cache' },
  );
}

export async function health(_rc: RouteContext, req: Request): Promise<void> {
  sendText(req.reply, 200, 'ok');
}

/** `GET /metrics`: Prometheus' text format, public as in Blue's contract (counts and latencies, nothing of a user's).
 * */
export async function metricsText(rc: RouteContext, req: Request): Promise<void> {
  req.reply
    .code(200)
    .header('cache-control', 'no-store')
    .type(rc.metrics.contentType)
    .send(await rc.metrics.render());
}

/** Ready: the database answers with a schema this server knows, and the blob store is usable. */
export async function ready(rc: RouteContext, req: Request): Promise<void> {
  try {
    await rc.store.check();
  } catch (error) {
    const newer = error instanceof Error && /schema version/.test(error.message);
    const why = newer ? 'the database schema is newer than this server' : 'the database is unavailable';
    sendText(req.reply, 503, `not ready: ${why}`);
    return;
  }
  try {
    await rc.blobs.check?.();
  } catch {
    sendText(req.reply, 503, 'not ready: the blob store is unavailable');
    return;
  }
  sendText(req.reply, 200, 'ready');
}

export async function authMe(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const policy = await rc.store.currentPolicy();
  sendJson(req.reply, 200, {
    id: user.id,
    sub: user.id,
    email: user.email,
    org_id: await rc.store.organizationId(),
    role: user.is_admin ? 'admin' : 'member',
    expires_at: null,
    current_revision: policy?.revision ?? null,
  });
}
