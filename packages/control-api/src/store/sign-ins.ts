/**
 * The rules of a sign-in's tokens, once for both backends: what a bearer token is worth, what a poll of the device
 * flow's token endpoint answers, and what a refresh does. Each backend reads the row these take (the same columns on
 * both databases), asks, and writes what they decide.
 */
import { timingSafeEqual } from 'node:crypto';
import { LAST_USED_GRANULARITY_MS } from './tokens.js';
import type { DeviceCode } from './types.js';

type Row = Record<string, unknown>;

/**
 * A bearer token's row (the token and its sign-in) found by `hash`: undefined when it is no access token of a sign-in
 * still in force, `expired` past its time, else its sign-in, its scopes, and whether its last use is to be written (at
 * most once a granularity: a request is not a write).
 */
export function judgeToken(
  row: Row | undefined,
  hash: string,
  now: number,
): { grantId: string; scopes: string[]; touch: boolean } | 'expired' | undefined {
  if (row === undefined || row.token_kind !== 'access' || row.revoked_at !== null) return undefined;
  // The index lookup already matched; compare again in constant time so the answer never depends on a prefix.
  if (!timingSafeEqual(Buffer.from(String(row.hash), 'hex'), Buffer.from(hash, 'hex'))) return undefined;
  if (row.token_expires_at !== null && Number(row.token_expires_at) <= now) return 'expired';
  const touch = row.last_used_at === null || Number(row.last_used_at) <= now - LAST_USED_GRANULARITY_MS;
  return { grantId: String(row.grant_id), scopes: String(row.scopes).split(' '), touch };
}

/**
 * What a poll of a device code does: answer `unknown`/`expired` and change nothing; `slow_down` (the interval grows,
 * RFC 8628 §3.5, and the poll is recorded); `pending` (the poll recorded); `denied`, or `approved` with the scopes of
 * the device sign-in to make (`admin` only when the person who approved is an administrator): answered once, the code
 * goes with the answer.
 */
export type PollPlan =
  | { outcome: 'unknown' | 'expired' | 'slow_down' | 'pending' | 'denied' }
  | { outcome: 'approved'; userId: string; scopes: string[] };

export function planPoll(
  code: (DeviceCode & { last_poll_at: number | null }) | undefined,
  approverIsAdmin: boolean,
  clientId: string,
  now: number,
): PollPlan {
  if (code === undefined || code.client_id !== clientId) return { outcome: 'unknown' };
  if (code.expires_at <= now) return { outcome: 'expired' };
  if (code.last_poll_at !== null && now - code.last_poll_at < code.interval_ms) return { outcome: 'slow_down' };
  if (code.status === 'pending') return { outcome: 'pending' };
  if (code.status === 'denied' || code.user_id === null) return { outcome: 'denied' };
  return {
    outcome: 'approved',
    userId: code.user_id,
    scopes: approverIsAdmin ? code.scopes : code.scopes.filter((scope) => scope !== 'admin'),
  };
}

/**
 * What a refresh does with the row of the token given (the token and its sign-in): refuse it; revoke the whole sign-in
 * (a spent refresh token used again was copied, RFC 9700 §4.14.2); or spend it for new tokens of the sign-in's scopes.
 */
export function planRefresh(
  row: Row | undefined,
  clientId: string,
  now: number,
):
  | { action: 'refuse' }
  | { action: 'revoke'; grantId: string }
  | { action: 'rotate'; grantId: string; scopes: string[] } {
  if (row === undefined || row.token_kind !== 'refresh' || row.revoked_at !== null || row.client_id !== clientId)
    return { action: 'refuse' };
  const grantId = String(row.grant_id);
  if (row.used_at !== null) return { action: 'revoke', grantId };
  if (Number(row.token_expires_at) <= now) return { action: 'refuse' };
  return { action: 'rotate', grantId, scopes: String(row.scopes).split(' ') };
}
