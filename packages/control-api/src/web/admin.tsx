/**
 * Administration, for administrators only: every machine's last status report, users (their role and their tokens,
 * revocable) and the audit log; the frame of every administration page (the policy's is policy.tsx).
 */
import type { ComponentChildren } from 'preact';
import { HttpError } from '../http.js';
import type { Request, RouteContext } from '../route-context.js';
import {
  actorName,
  AUDIT_ACTIONS,
  auditSummary,
  MAX_MACHINES_PER_USER,
  userActor,
  type AuditAction,
  type BrowserSession,
} from '../store/index.js';
import { browserSession, readPagePost, redirect, sendPage, toSignIn } from './http.js';
import { Page, when } from './layout.js';
import { TokenTable } from './tokens.js';

const AUDIT_PAGE = 50;
const MACHINES_PAGE = 50;

/** The signed-in administrator; anyone else is sent to sign in or refused. */
export async function administrator(rc: RouteContext, req: Request): Promise<BrowserSession | undefined> {
  const session = await browserSession(rc, req);
  if (session === undefined) {
    toSignIn(req);
    return undefined;
  }
  if (!session.user.is_admin) throw new HttpError(403, 'forbidden', 'only administrators may see this page');
  return session;
}

type Tab = 'clients' | 'users' | 'audit' | 'policy';

export function AdminPage({
  session,
  tab,
  title,
  children,
}: {
  session: BrowserSession;
  tab: Tab;
  title: string;
  children: ComponentChildren;
}) {
  const tabs: [Tab, string][] = [
    ['clients', 'Machines'],
    ['users', 'Users and tokens'],
    ['audit', 'Audit log'],
    ['policy', 'Policy'],
  ];
  return (
    <Page title={title} session={session} nav="admin">
      <h1>{title}</h1>
      <nav class="tabs" aria-label="Administration">
        {tabs.map(([t, label]) => (
          <a href={`/admin/${t}`} aria-current={t === tab ? 'page' : undefined} key={t}>
            {label}
          </a>
        ))}
      </nav>
      {children}
    </Page>
  );
}

/** GET /admin: the machines. */
export async function adminHome(rc: RouteContext, req: Request): Promise<void> {
  if ((await administrator(rc, req)) !== undefined) redirect(req.reply, '/admin/clients');
}

interface Report {
  hostname?: string | null;
  client_version?: string;
  platform?: string;
  config_revision?: string | null;
  applied?: boolean;
  files_ok?: boolean;
  error?: string | null;
  harnesses?: (string | InventoryEntry)[];
}

/** One harness of a report, as a machine sent it (blue-agent's extensions included; other clients' may lack them). */
interface InventoryEntry {
  name?: string;
  installed?: boolean;
  reconciled?: boolean;
  raw_version?: string;
  state?: string;
  state_code?: string;
  state_reason?: string;
  compatibility_error?: string;
  compatibility_warning?: string;
}

/** States in which the harness captures sessions as the policy asks. */
const CAPTURING_STATES = new Set(['active', 'unverified_version']);
/** States an administrator need not act on: capture is off here on purpose, or there is nothing to capture. */
const QUIET_STATES = new Set(['not_installed', 'not_allowed', 'capture_disabled']);

/**
 * A harness as the machine reported it: its real state when the machine says it (an agent that says only
 * installed/reconciled is shown as before), with an error's code and the reason in a line of its own.
 */
function HarnessLine({ h }: { h: InventoryEntry }) {
  const state = typeof h.state === 'string' ? h.state : undefined;
  const label =
    state === undefined
      ? h.installed === false
        ? 'not installed'
        : h.reconciled === true
          ? 'reconciled'
          : 'not reconciled'
      : state === 'error' && typeof h.state_code === 'string'
        ? `error [${h.state_code}]`
        : state.replace(/_/g, ' ');
  const tone =
    state === undefined
      ? h.reconciled === false
        ? 'danger'
        : undefined
      : CAPTURING_STATES.has(state)
        ? 'ok'
        : QUIET_STATES.has(state)
          ? 'muted'
          : 'danger';
  const reason = [h.compatibility_error, h.state_reason, h.compatibility_warning].find(
    (r) => typeof r === 'string' && r !== '',
  );
  return (
    <>
      {[h.name ?? '?', h.raw_version].filter((part) => typeof part === 'string' && part !== '').join(' ')}:{' '}
      <span class={tone}>{label}</span>
      {reason === undefined ? null : <div class="muted">{reason}</div>}
    </>
  );
}

/** A harness as a report names it: its name and, when known, its version, one space between (none left dangling). */
export function harnessLabel(name: string | undefined, version: string | undefined): string {
  return [name ?? '?', version].filter((part): part is string => part !== undefined && part.trim() !== '').join(' ');
}

/** GET /admin/clients: each machine's latest report, a page at a time (`page`), by person and machine. */
export async function adminClients(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  const pageText = req.url.searchParams.get('page') ?? '1';
  const page = /^[1-9]\d{0,5}$/.test(pageText) ? Number(pageText) : 1;
  const [found, policy] = await Promise.all([
    rc.store.clientStatuses({ limit: MACHINES_PAGE, offset: (page - 1) * MACHINES_PAGE }),
    rc.store.currentPolicy(),
  ]);
  const reports = found.items;
  const pages = Math.max(1, Math.ceil(found.total / MACHINES_PAGE));
  const href = (n: number) => (n === 1 ? '/admin/clients' : `/admin/clients?page=${n}`);
  sendPage(
    req.reply,
    200,
    <AdminPage session={session} tab="clients" title="Machines">
      <p class="muted">
        The latest report of each machine ({found.total} in all; each person’s {MAX_MACHINES_PER_USER} that reported
        last). The current policy revision is {policy === undefined ? 'none yet' : <code>{policy.revision}</code>}.
      </p>
      {reports.length === 0 ? (
        <p>
          {found.total === 0 ? (
            'No machine has reported yet.'
          ) : (
            <a href={href(1)}>No machines on this page: back to the first.</a>
          )}
        </p>
      ) : (
        <table class="responsive">
          <thead>
            <tr>
              <th scope="col">Machine</th>
              <th scope="col">User</th>
              <th scope="col">Agent</th>
              <th scope="col">Policy revision</th>
              <th scope="col">Harnesses</th>
              <th scope="col">Reported</th>
            </tr>
          </thead>
          <tbody>
            {reports.map((r) => {
              const report = (typeof r.report === 'object' && r.report !== null ? r.report : {}) as Report;
              const current = policy !== undefined && report.config_revision === policy.revision;
              return (
                <tr key={`${r.user_id}/${r.instance_id}`}>
                  <td>
                    {report.hostname ?? r.instance_id}
                    <div class="muted">{report.platform ?? ''}</div>
                  </td>
                  <td>{r.user_email}</td>
                  <td>{report.client_version ?? '—'}</td>
                  <td>
                    <code>{report.config_revision ?? '—'}</code>
                    <div class={report.applied === true && current ? 'ok' : 'danger'}>
                      {report.applied !== true
                        ? 'not applied'
                        : current
                          ? 'applied, current'
                          : 'applied, not the current revision'}
                      {report.files_ok === false ? '; managed files changed' : ''}
                    </div>
                    {report.error == null ? null : <div class="danger">{report.error}</div>}
                  </td>
                  <td>
                    <ul class="people">
                      {(report.harnesses ?? []).map((h, i) =>
                        typeof h === 'string' ? (
                          <li key={i}>{h}</li>
                        ) : (
                          <li key={i}>
                            <HarnessLine h={h} />
                          </li>
                        ),
                      )}
                    </ul>
                  </td>
                  <td>{when(r.received_at)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {pages <= 1 ? null : (
        <nav class="pager" aria-label="Pages">
          {page > 1 ? (
            <a href={href(Math.min(page - 1, pages))} rel="prev">
              ← Previous
            </a>
          ) : null}
          <span>
            Page {page} of {pages}
          </span>
          {page < pages ? (
            <a href={href(page + 1)} rel="next">
              Next →
            </a>
          ) : null}
        </nav>
      )}
    </AdminPage>,
  );
}

/** GET /admin/users: users, their role, their tokens. */
export async function adminUsers(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  const now = rc.now();
  const [users, grants] = await Promise.all([rc.store.listUsers(), rc.store.identity.grants(undefined)]);
  sendPage(
    req.reply,
    200,
    <AdminPage session={session} tab="users" title="Users and tokens">
      <p class="muted">
        People are made on their first sign-in, or with <code>blue-agent control-plane users add</code>. Revoking a
        token ends it at its next request.
      </p>
      {users.map((u) => {
        const own = grants.filter((g) => g.user_id === u.id);
        return (
          <section class="panel user" key={u.id} aria-label={u.email}>
            <h2>
              {u.email} <span class="muted">({u.is_admin ? 'administrator' : 'member'})</span>
            </h2>
            {u.id === session.user.id ? null : (
              <form method="post" action={`/admin/users/${u.id}/role`} class="inline">
                <input type="hidden" name="csrf" value={session.csrf} />
                <input type="hidden" name="role" value={u.is_admin ? 'member' : 'admin'} />
                <button type="submit">{u.is_admin ? 'Make a member' : 'Make an administrator'}</button>
              </form>
            )}
            <TokenTable
              grants={own}
              csrf={session.csrf}
              now={now}
              owner={u.email}
              revokeAction={(g) => `/admin/tokens/${g.id}/revoke`}
            />
          </section>
        );
      })}
    </AdminPage>,
  );
}

/** POST /admin/tokens/{id}/revoke. */
export async function adminRevokeToken(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  await readPagePost(rc, req, session);
  if ((await rc.store.identity.revokeGrant(req.params[0]!, rc.now(), userActor(session.user))) === undefined)
    throw new HttpError(404, 'not_found', 'no such token');
  redirect(req.reply, '/admin/users');
}

/** POST /admin/users/{id}/role: administrator or member (not oneself: an organisation keeps its last administrator). */
export async function adminSetRole(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  const form = await readPagePost(rc, req, session);
  const id = req.params[0]!;
  if (id === session.user.id) throw new HttpError(400, 'invalid_request', 'another administrator changes your role');
  if ((await rc.store.userById(id)) === undefined) throw new HttpError(404, 'not_found', 'no such user');
  const role = form.get('role');
  if (role !== 'admin' && role !== 'member')
    throw new HttpError(400, 'invalid_request', 'role must be admin or member');
  // Checked again as the role changes: an administrator demoted meanwhile (by one they were demoting) changes nothing.
  if (!(await rc.store.setAdmin(id, role === 'admin', { by: userActor(session.user), now: rc.now() })))
    throw new HttpError(403, 'forbidden', 'you are no longer an administrator');
  redirect(req.reply, '/admin/users');
}

/** GET /admin/audit: the audit log, newest page last (`after` pages on), filtered by action. */
export async function adminAudit(rc: RouteContext, req: Request): Promise<void> {
  const session = await administrator(rc, req);
  if (session === undefined) return;
  const afterText = req.url.searchParams.get('after') ?? '';
  const after = /^\d{1,15}$/.test(afterText) ? Number(afterText) : undefined;
  const actionText = req.url.searchParams.get('action') ?? '';
  const action = (AUDIT_ACTIONS as readonly string[]).includes(actionText) ? (actionText as AuditAction) : undefined;
  const events = await rc.store.auditEvents({ after, limit: AUDIT_PAGE + 1, action });
  const shown = events.slice(0, AUDIT_PAGE);
  sendPage(
    req.reply,
    200,
    <AdminPage session={session} tab="audit" title="Audit log">
      <form method="get" action="/admin/audit" class="filters">
        <div class="field">
          <label for="action">Action</label>
          <select id="action" name="action">
            <option value="">All</option>
            {AUDIT_ACTIONS.map((a) => (
              <option value={a} selected={a === action} key={a}>
                {a}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <button type="submit">Show</button>
        </div>
      </form>
      {shown.length === 0 ? (
        <p>Nothing recorded{after === undefined ? '' : ' after this point'}.</p>
      ) : (
        <table class="responsive">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Action</th>
              <th scope="col">Session</th>
              <th scope="col">What</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((e) => (
              <tr key={e.seq}>
                <td>{e.seq}</td>
                <td>{when(e.at)}</td>
                <td>{actorName(e)}</td>
                <td>{e.action}</td>
                <td>
                  {e.session_id === null ? (
                    '—'
                  ) : e.action === 'session.delete' ? (
                    <code>{e.session_id}</code>
                  ) : (
                    <a href={`/sessions/${e.session_id}`}>{e.session_id.slice(0, 8)}</a>
                  )}
                </td>
                <td>
                  {auditSummary(e)}
                  <div class="muted">
                    <code>{JSON.stringify(e.details)}</code>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {events.length > AUDIT_PAGE ? (
        <p>
          <a href={`/admin/audit?after=${shown.at(-1)!.seq}${action === undefined ? '' : `&action=${action}`}`}>
            Later entries →
          </a>
        </p>
      ) : null}
    </AdminPage>,
  );
}
