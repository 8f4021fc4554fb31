/** The rules of a sign-in's tokens, as both databases apply them: a bearer token's worth, a device-code poll, a
 * refresh. */
import { describe, expect, it } from 'vitest';
import { judgeToken, planPoll, planRefresh } from '../../src/store/sign-ins.js';
import { hashToken, LAST_USED_GRANULARITY_MS } from '../../src/store/tokens.js';
import type { DeviceCode } from '../../src/store/types.js';

const hash = hashToken('blue_token');

describe('judgeToken', () => {
  const row = {
    hash,
    token_kind: 'access',
    token_expires_at: 2000,
    grant_id: 'g-1',
    scopes: 'session:read session:write',
    last_used_at: 1000,
    revoked_at: null,
  };

  it('takes an access token of a sign-in in force, writing its last use at most once a granularity', () => {
    expect(judgeToken(row, hash, 1001)).toEqual({
      grantId: 'g-1',
      scopes: ['session:read', 'session:write'],
      touch: false,
    });
    expect(judgeToken({ ...row, token_expires_at: null }, hash, 1000 + LAST_USED_GRANULARITY_MS)).toMatchObject({
      touch: true,
    });
    expect(judgeToken({ ...row, last_used_at: null }, hash, 1001)).toMatchObject({ touch: true });
  });

  it('refuses a refresh token, a revoked sign-in and another hash; an access token past its time is expired', () => {
    expect(judgeToken(undefined, hash, 1)).toBeUndefined();
    expect(judgeToken({ ...row, token_kind: 'refresh' }, hash, 1)).toBeUndefined();
    expect(judgeToken({ ...row, revoked_at: 5 }, hash, 1)).toBeUndefined();
    expect(judgeToken(row, hashToken('blue_other'), 1)).toBeUndefined();
    expect(judgeToken(row, hash, 2000)).toBe('expired');
  });
});

describe('planPoll', () => {
  const code: DeviceCode & { last_poll_at: number | null } = {
    user_code: 'ABCDEFGH',
    client_id: 'blue-agent',
    scopes: ['session:read', 'admin'],
    client_label: 'blue-agent on a laptop',
    created_at: 0,
    expires_at: 600_000,
    interval_ms: 5000,
    status: 'approved',
    user_id: 'u-ada',
    last_poll_at: 10_000,
  };

  it('answers an unknown code, another client and an expired code without changing it', () => {
    expect(planPoll(undefined, true, 'blue-agent', 20_000)).toEqual({ outcome: 'unknown' });
    expect(planPoll(code, true, 'other', 20_000)).toEqual({ outcome: 'unknown' });
    expect(planPoll(code, true, 'blue-agent', 600_000)).toEqual({ outcome: 'expired' });
  });

  it('slows down a poll sooner than the interval, before anything else is told', () => {
    expect(planPoll(code, true, 'blue-agent', 14_999)).toEqual({ outcome: 'slow_down' });
    expect(planPoll({ ...code, status: 'pending' }, true, 'blue-agent', 15_000)).toEqual({ outcome: 'pending' });
    expect(planPoll({ ...code, status: 'pending', last_poll_at: null }, true, 'blue-agent', 10_001)).toEqual({
      outcome: 'pending',
    });
  });

  it('grants admin only when the person who approved is an administrator; a denied code is denied', () => {
    expect(planPoll(code, true, 'blue-agent', 15_000)).toEqual({
      outcome: 'approved',
      userId: 'u-ada',
      scopes: ['session:read', 'admin'],
    });
    expect(planPoll(code, false, 'blue-agent', 15_000)).toEqual({
      outcome: 'approved',
      userId: 'u-ada',
      scopes: ['session:read'],
    });
    expect(planPoll({ ...code, status: 'denied' }, true, 'blue-agent', 15_000)).toEqual({ outcome: 'denied' });
    expect(planPoll({ ...code, user_id: null }, true, 'blue-agent', 15_000)).toEqual({ outcome: 'denied' });
  });
});

describe('planRefresh', () => {
  const row = {
    token_kind: 'refresh',
    token_expires_at: 2000,
    used_at: null,
    grant_id: 'g-1',
    client_id: 'blue-agent',
    scopes: 'session:read',
    revoked_at: null,
  };

  it('spends a refresh token in force for new tokens of its sign-in', () => {
    expect(planRefresh(row, 'blue-agent', 1999)).toEqual({
      action: 'rotate',
      grantId: 'g-1',
      scopes: ['session:read'],
    });
  });

  it('ends the whole sign-in when a spent refresh token is used again, even past its time', () => {
    expect(planRefresh({ ...row, used_at: 1000 }, 'blue-agent', 5000)).toEqual({ action: 'revoke', grantId: 'g-1' });
  });

  it('refuses an unknown or access token, a revoked sign-in, another client and a token past its time', () => {
    for (const refused of [undefined, { ...row, token_kind: 'access' }, { ...row, revoked_at: 1 }])
      expect(planRefresh(refused, 'blue-agent', 1)).toEqual({ action: 'refuse' });
    expect(planRefresh(row, 'other', 1)).toEqual({ action: 'refuse' });
    expect(planRefresh(row, 'blue-agent', 2000)).toEqual({ action: 'refuse' });
  });
});
