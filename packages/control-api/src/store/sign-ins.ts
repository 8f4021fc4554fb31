/**
 * A sign-in's tokens, once for both backends: the rules (what a bearer token is worth, what a poll of the device flow's
 * token endpoint answers, what a refresh does) and the flows that apply them, each in one transaction with the row it
 * decides on locked (two polls of one code, or two uses of one refresh token, on any replicas, never both win). Each
 * backend's SignInRepository holds the SQL; the rows have the same columns on both databases.
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { type Flow, step, type Step } from './flow.js';
import { hashToken, LAST_USED_GRANULARITY_MS, newToken } from './tokens.js';
import type { DeviceCode, DevicePoll, IssuedTokens, TokenLifetimes } from './types.js';

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

export interface SignInRepository {
  /** The device code of `deviceHash` and whether the person who approved it is an administrator, locked. */
  lockDeviceCode(
    deviceHash: string,
  ): Step<{ code: DeviceCode & { last_poll_at: number | null }; admin: boolean } | undefined>;
  /** The poll recorded at `now`, and with `slowDownMs` the interval grown by it. */
  recordPoll(deviceHash: string, now: number, slowDownMs: number): Step<void>;
  deleteDeviceCode(deviceHash: string): Step<void>;
  insertDeviceGrant(
    grantId: string,
    userId: string,
    clientId: string,
    scopes: readonly string[],
    label: string,
    now: number,
  ): Step<void>;
  /** The row of the token of `hash` (the token and its sign-in: planRefresh's columns), locked. */
  lockToken(hash: string): Step<Row | undefined>;
  revokeGrant(grantId: string, now: number): Step<void>;
  /** The refresh token of `hash` spent at `now`, and the sign-in's expired access tokens dropped. */
  spendRefreshToken(hash: string, grantId: string, now: number): Step<void>;
  insertToken(hash: string, grantId: string, kind: 'access' | 'refresh', expiresAt: number): Step<void>;
  /** The sign-in lapses at `expiresAt` unless refreshed; it was last used `now`. */
  extendGrant(grantId: string, expiresAt: number, now: number): Step<void>;
}

/** A poll of the device flow's token endpoint: planPoll's answer, and the sign-in it makes when approved. */
export function* pollDeviceCode(
  repo: SignInRepository,
  deviceHash: string,
  clientId: string,
  now: number,
  lifetimes: TokenLifetimes,
  slowDownMs: number,
): Flow<DevicePoll> {
  const found = yield* step(repo.lockDeviceCode(deviceHash));
  const plan = planPoll(found?.code, found?.admin === true, clientId, now);
  if (plan.outcome === 'slow_down') yield* step(repo.recordPoll(deviceHash, now, slowDownMs));
  if (plan.outcome === 'pending') yield* step(repo.recordPoll(deviceHash, now, 0));
  if (plan.outcome === 'denied' || plan.outcome === 'approved') yield* step(repo.deleteDeviceCode(deviceHash));
  if (plan.outcome !== 'approved') return { outcome: plan.outcome };
  const grantId = randomUUID();
  yield* step(repo.insertDeviceGrant(grantId, plan.userId, clientId, plan.scopes, found!.code.client_label, now));
  return { outcome: 'approved', tokens: yield* issue(repo, grantId, plan.scopes, now, lifetimes) };
}

/** A refresh: planRefresh's decision on the token's row, and new tokens when it rotates. */
export function* refresh(
  repo: SignInRepository,
  refreshToken: string,
  clientId: string,
  now: number,
  lifetimes: TokenLifetimes,
): Flow<IssuedTokens | undefined> {
  const hash = hashToken(refreshToken);
  const plan = planRefresh(yield* step(repo.lockToken(hash)), clientId, now);
  if (plan.action === 'refuse') return undefined;
  if (plan.action === 'revoke') {
    yield* step(repo.revokeGrant(plan.grantId, now));
    return undefined;
  }
  yield* step(repo.spendRefreshToken(hash, plan.grantId, now));
  return yield* issue(repo, plan.grantId, plan.scopes, now, lifetimes);
}

/** An access token and a refresh token for the sign-in, which lapses `refreshMs` from now unless refreshed. */
function* issue(
  repo: SignInRepository,
  grantId: string,
  scopes: string[],
  now: number,
  lifetimes: TokenLifetimes,
): Flow<IssuedTokens> {
  const access = newToken();
  const refreshed = newToken();
  const accessExpires = now + lifetimes.accessMs;
  yield* step(repo.insertToken(hashToken(access), grantId, 'access', accessExpires));
  yield* step(repo.insertToken(hashToken(refreshed), grantId, 'refresh', now + lifetimes.refreshMs));
  yield* step(repo.extendGrant(grantId, now + lifetimes.refreshMs, now));
  return {
    access_token: access,
    refresh_token: refreshed,
    access_expires_at: accessExpires,
    scopes,
    grant_id: grantId,
  };
}
