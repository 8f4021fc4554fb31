/** The machines' status reports: each machine's latest, and the list administrators read. */
import * as validators from '@blue-agent/contract/schema/generated/validators.js';
import type { ClientStatusReport } from '@blue-agent/contract/schema/generated/control-client-status.js';
import type { ClientStatusList } from '@blue-agent/contract/schema/generated/control-client-statuses.js';
import { MAX_CLIENT_STATUS_BYTES } from '@blue-agent/contract/schema/limits.js';
import { caller, type Request, type RouteContext } from '../route-context.js';
import { badRequest, forbidden, readJsonBody, sendEmpty, sendJson, validateBody, type Validate } from '../http.js';
import { intParam, MAX_PAGE, queryParams } from './params.js';
import { UUID } from './route.js';
import { iso } from './sessions.js';

/**
 * `GET /client-status` (an extension): the latest report of every machine, for administrators (optionally one user's),
 * a page at a time: `page` and `per_page`, in an order new reports do not change.
 */
export async function listClientStatus(rc: RouteContext, req: Request): Promise<void> {
  if (!caller(req).is_admin) throw forbidden('only administrators may read client status reports');
  const params = queryParams(req, ['user_id', 'page', 'per_page']);
  const userId = params.one('user_id');
  if (userId !== undefined && !new RegExp(`^${UUID}$`).test(userId))
    throw badRequest('user_id must be a user id (a UUID)');
  const perPage = intParam('per_page', params.one('per_page'), 1, MAX_PAGE) ?? MAX_PAGE;
  const page = intParam('page', params.one('page'), 1, Number.MAX_SAFE_INTEGER) ?? 1;
  const found = await rc.store.clientStatuses({ user_id: userId, limit: perPage, offset: (page - 1) * perPage });
  const body: ClientStatusList = {
    items: found.items.map((r) => ({
      user_id: r.user_id,
      user_email: r.user_email,
      instance_id: r.instance_id,
      received_at: iso(r.received_at),
      report: r.report as object,
    })),
    page,
    per_page: perPage,
    total: found.total,
    total_pages: Math.ceil(found.total / perPage),
  };
  sendJson(req.reply, 200, body);
}

/** `POST /client-status`: a machine's report, kept as its latest (store: at most MAX_MACHINES_PER_USER per person). */
export async function clientStatus(rc: RouteContext, req: Request): Promise<void> {
  const user = caller(req);
  const raw = await readJsonBody(req.raw, Math.min(rc.maxBodyBytes, MAX_CLIENT_STATUS_BYTES), false, rc.bodyTimeoutMs);
  const body = validateBody<ClientStatusReport>(
    validators.validateClientStatusReport as Validate,
    raw,
    'client status',
  );
  if (body.instance_id.trim() === '' || body.client_version.trim() === '')
    throw badRequest('instance_id and client_version must not be blank');
  await rc.store.recordClientStatus(user.id, body.instance_id, body, rc.now());
  sendEmpty(req.reply, 204);
}
