/**
 * What the audit log records of administering the server — policies published, users added, roles changed, tokens
 * made and revoked, sign-in links made — by both stores, in the transaction of the change itself; how any entry is
 * kept in a row; and how an entry reads to a person (the dashboard's audit page and the API's `summary`).
 */
import type { AuditActor, AuditEvent, Grant, NewAuditEvent, PolicyRevision, RoleChange, User } from './types.js';

/** The actor of a signed-in person. */
export function userActor(user: Pick<User, 'id' | 'email'>): AuditActor {
  return { kind: 'user', id: user.id, email: user.email };
}

/** An entry's columns: actor kind, id and e-mail ('' for none), action, session and owner ('' for none), details. */
export function auditRow(event: NewAuditEvent): [string, string, string, string, string, string, string] {
  const a = event.actor;
  const [id, email] = a.kind === 'user' ? [a.id, a.email] : a.kind === 'cli' ? [a.name, ''] : [a.issuer, ''];
  return [a.kind, id, email, event.action, event.session_id ?? '', event.owner_id ?? '', JSON.stringify(event.details)];
}

/** An entry as a store reads it back (`auditRow`'s inverse). */
export function auditEventOf(row: Record<string, unknown>): AuditEvent {
  const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
  const kind = String(row.actor_kind ?? 'user');
  return {
    seq: Number(row.seq),
    at: Number(row.at),
    actor_kind: kind === 'cli' || kind === 'identity_provider' ? kind : 'user',
    actor_id: String(row.actor_id),
    actor_email: text(row.actor_email),
    action: String(row.action) as AuditEvent['action'],
    session_id: text(row.session_id),
    owner_id: text(row.owner_id),
    details: JSON.parse(String(row.details)) as Record<string, unknown>,
  };
}

const role = (isAdmin: boolean): string => (isAdmin ? 'admin' : 'member');

export function userAdded(by: AuditActor, user: User): NewAuditEvent {
  return { actor: by, action: 'user.add', details: { user_id: user.id, email: user.email, role: role(user.is_admin) } };
}

export function roleChanged(change: RoleChange, user: User, isAdmin: boolean): NewAuditEvent {
  const group = change.group === undefined ? {} : { group: change.group.slice(0, 256) };
  return {
    actor: change.by,
    action: 'user.role',
    details: { user_id: user.id, email: user.email, from: role(user.is_admin), to: role(isAdmin), ...group },
  };
}

export function tokenCreated(by: AuditActor, grant: Grant): NewAuditEvent {
  return {
    actor: by,
    action: 'token.create',
    details: {
      token_id: grant.id,
      user_id: grant.user_id,
      email: grant.user_email,
      label: grant.label,
      scopes: grant.scopes,
    },
  };
}

export function tokenRevoked(by: AuditActor, grant: Grant): NewAuditEvent {
  return {
    actor: by,
    action: 'token.revoke',
    details: {
      token_id: grant.id,
      user_id: grant.user_id,
      email: grant.user_email,
      kind: grant.kind,
      label: grant.label,
    },
  };
}

export function signInLinkMade(by: AuditActor, user: Pick<User, 'id' | 'email'>, expiresAt: number): NewAuditEvent {
  return {
    actor: by,
    action: 'sign_in_link.create',
    details: { user_id: user.id, email: user.email, expires_at: new Date(expiresAt).toISOString() },
  };
}

/** At most this many names in each list of a policy change (a policy may hold many keys of its own). */
const MAX_NAMES = 32;

/**
 * A published revision and what changed since `previous` (undefined: the first): the top-level keys added, removed
 * and changed, the harnesses now allowed or no longer allowed, and those whose own settings changed.
 */
export function policyPublished(
  by: AuditActor,
  previous: PolicyRevision | undefined,
  published: PolicyRevision,
): NewAuditEvent {
  const before = withoutRevision(previous?.body ?? {});
  const after = withoutRevision(published.body);
  const names = (list: Iterable<string>) =>
    [...list]
      .sort()
      .slice(0, MAX_NAMES)
      .map((n) => n.slice(0, 64));
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  const allowed = (body: Record<string, unknown>) =>
    Array.isArray(body.allowed_harnesses) ? new Set(body.allowed_harnesses.map(String)) : undefined;
  const [was, now] = [allowed(before), allowed(after)];
  const settings = (body: Record<string, unknown>) =>
    typeof body.harnesses === 'object' && body.harnesses !== null ? (body.harnesses as Record<string, unknown>) : {};
  const [oldSettings, newSettings] = [settings(before), settings(after)];
  const configured = new Set([...Object.keys(oldSettings), ...Object.keys(newSettings)]);
  return {
    actor: by,
    action: 'policy.publish',
    details: {
      revision: published.revision,
      previous_revision: previous?.revision ?? null,
      keys_added: names([...keys].filter((k) => !(k in before))),
      keys_removed: names([...keys].filter((k) => !(k in after))),
      keys_changed: names(
        [...keys].filter((k) => k in before && k in after && canonical(before[k]) !== canonical(after[k])),
      ),
      harnesses_allowed: was === undefined || now === undefined ? [] : names([...now].filter((h) => !was.has(h))),
      harnesses_disallowed: was === undefined || now === undefined ? [] : names([...was].filter((h) => !now.has(h))),
      harnesses_configured: names(
        [...configured].filter((h) => canonical(oldSettings[h]) !== canonical(newSettings[h])),
      ),
    },
  };
}

function withoutRevision(body: Record<string, unknown>): Record<string, unknown> {
  const { revision: _revision, ...rest } = body;
  return rest;
}

/** JSON with every object's keys in order: two values that differ only in key order compare equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'undefined';
}

/** Who did it, as a person reads it. */
export function actorName(e: Pick<AuditEvent, 'actor_kind' | 'actor_id' | 'actor_email'>): string {
  if (e.actor_kind === 'cli') return `cli (OS user ${e.actor_id})`;
  if (e.actor_kind === 'identity_provider') return `identity provider ${e.actor_id}`;
  return e.actor_email ?? e.actor_id;
}

/** A summary is at most this long (a policy change names at most a few hundred keys and harnesses). */
export const MAX_SUMMARY_CHARS = 4096;

/** What an entry says happened, in a sentence. */
export function auditSummary(e: Pick<AuditEvent, 'action' | 'details'>): string {
  return sentence(e).slice(0, MAX_SUMMARY_CHARS);
}

function sentence(e: Pick<AuditEvent, 'action' | 'details'>): string {
  const d = e.details;
  const str = (v: unknown): string =>
    typeof v === 'string' ? v : v === undefined || v === null ? '?' : JSON.stringify(v);
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.map(str) : []);
  const roleName = (r: unknown) => (r === 'admin' ? 'an administrator' : 'a member');
  switch (e.action) {
    case 'session.read':
      return `read another person's session (${str(d.what)})`;
    case 'session.download':
      return `got a download URL of upload ${str(d.artifact_id)}`;
    case 'session.share':
      return (
        `changed the sharing from ${str(d.from)} to ${str(d.mode)}` +
        `${list(d.user_ids).length > 0 ? ` (${list(d.user_ids).length} people)` : ''}`
      );
    case 'session.delete':
      return (
        `deleted the ${str(d.harness)} session ${str(d.native_session_id)}` +
        `${typeof d.title === 'string' ? ` "${d.title}"` : ''}`
      );
    case 'policy.publish': {
      const changes: [string, string[]][] = [
        ['keys added', list(d.keys_added)],
        ['keys removed', list(d.keys_removed)],
        ['keys changed', list(d.keys_changed)],
        ['harnesses now allowed', list(d.harnesses_allowed)],
        ['harnesses no longer allowed', list(d.harnesses_disallowed)],
        ['harness settings changed', list(d.harnesses_configured)],
      ];
      const parts = changes
        .filter(([, names]) => names.length > 0)
        .map(([what, names]) => `${what}: ${names.join(', ')}`);
      const after =
        d.previous_revision === null || d.previous_revision === undefined
          ? ' (the first)'
          : ` (after ${str(d.previous_revision)})`;
      return (
        `published policy revision ${str(d.revision)}${after}` +
        `${parts.length === 0 ? ': nothing changed' : `: ${parts.join('; ')}`}`
      );
    }
    case 'user.add':
      return `added ${d.role === 'admin' ? 'administrator' : 'member'} ${str(d.email)}`;
    case 'user.role':
      return (
        `made ${str(d.email)} ${roleName(d.to)} (was ${roleName(d.from)})` +
        `${typeof d.group === 'string' ? `, as a member of the group ${d.group}` : ''}`
      );
    case 'token.create':
      return `created the token "${str(d.label)}" (${str(d.token_id)}) for ${str(d.email)}`;
    case 'token.revoke':
      return (
        `revoked the ${d.kind === 'device' ? 'device sign-in' : 'token'} "${str(d.label)}" (${str(d.token_id)}) ` +
        `of ${str(d.email)}`
      );
    case 'sign_in_link.create':
      return `made a one-time sign-in link for ${str(d.email)}, good until ${str(d.expires_at)}`;
  }
}
