/**
 * How people name a captured session (the Control API's id, a UUID): its full id, or its first 8 or more characters,
 * as `sessions list` shows them. The one rule for the CLI (`sessions`, `resume`) and the dashboard's addresses.
 */

/** A captured session's id. */
export const FULL_SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The start of one: at least MIN_SESSION_PREFIX hexadecimal digits, then digits and dashes. */
export const SESSION_ID_PREFIX = /^[0-9a-f]{8}[0-9a-f-]{0,28}$/;
export const MIN_SESSION_PREFIX = 8;

export type SessionRef = { kind: 'id'; id: string } | { kind: 'prefix'; prefix: string };

/** What `text` names, case and surrounding white space aside; undefined when it is neither an id nor a prefix of one.
 * */
export function sessionRef(text: string): SessionRef | undefined {
  const value = text.trim().toLowerCase();
  if (FULL_SESSION_ID.test(value)) return { kind: 'id', id: value };
  if (SESSION_ID_PREFIX.test(value)) return { kind: 'prefix', prefix: value };
  return undefined;
}
