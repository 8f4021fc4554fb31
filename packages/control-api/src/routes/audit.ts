/** The audit log, for administrators. */
import type { AuditEventPage } from '@blue-agent/contract/schema/generated/control-audit-events.js';
import { caller, type Request, type RouteContext } from '../route-context.js';
import { badRequest, forbidden, sendJson } from '../http.js';
import { AUDIT_ACTIONS, auditSummary, type AuditAction } from '../store/index.js';
import { boundedText, intParam, MAX_PAGE, queryParams } from './params.js';
import { iso } from './sessions.js';

export const DEFAULT_AUDIT_PAGE = 100;

/** `GET /audit-events` (an extension, administrators): the audit log, oldest first, `after` a `seq` for the next page.
 * */
export async function auditEvents(rc: RouteContext, req: Request): Promise<void> {
  if (!caller(req).is_admin) throw forbidden('only administrators may read the audit log');
  const params = queryParams(req, ['after', 'limit', 'action', 'actor_id', 'session_id']);
  const after = intParam('after', params.one('after'), 0, Number.MAX_SAFE_INTEGER);
  const limit = intParam('limit', params.one('limit'), 1, MAX_PAGE) ?? DEFAULT_AUDIT_PAGE;
  const action = params.one('action');
  if (action !== undefined && !(AUDIT_ACTIONS as readonly string[]).includes(action))
    throw badRequest(`action must be one of ${AUDIT_ACTIONS.join(', ')}`);
  const page = await rc.store.auditEvents({
    after,
    limit: limit + 1,
    action: action as AuditAction | undefined,
    // An entry of no session keeps '' as its session: an empty filter is none, not "entries of no session".
    actor_id: boundedText(params.one('actor_id'), 'actor_id') || undefined,
    session_id: boundedText(params.one('session_id'), 'session_id') || undefined,
  });
  const items = page.slice(0, limit);
  const body: AuditEventPage = {
    items: items.map((e) => ({
      seq: e.seq,
      at: iso(e.at),
      actor: { kind: e.actor_kind, id: e.actor_id, email: e.actor_email },
      action: e.action,
      session_id: e.session_id,
      owner_id: e.owner_id,
      details: e.details,
      summary: auditSummary(e),
    })),
    next_after: page.length > limit ? items.at(-1)!.seq : null,
  };
  sendJson(req.reply, 200, body);
}
