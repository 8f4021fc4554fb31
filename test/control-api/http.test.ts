import { describe, expect, it } from 'vitest';
import { parseRetryAfter, routeUrl, serverError, statusKind } from '../../src/control-api/http.js';

describe('base URL', () => {
  it('keeps the base URL path prefix and drops its query and fragment', () => {
    expect(routeUrl('https://control.example/blue/?x=1#f', '/session-uploads').href).toBe('https://control.example/blue/session-uploads');
    expect(routeUrl('https://control.example', 'governance-config').href).toBe('https://control.example/governance-config');
  });
});

describe('answers', () => {
  it('reads Retry-After as seconds or an HTTP-date, and ignores anything else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('tells transient statuses from permanent ones', () => {
    expect([500, 503, 408, 429].map(statusKind)).toEqual(['transient', 'transient', 'transient', 'transient']);
    expect([400, 401, 404, 422].map(statusKind)).toEqual(['permanent', 'permanent', 'permanent', 'permanent']);
  });

  it('reads the three error shapes: ours (message and code), Blue\'s (message) and the older nested one', () => {
    expect(serverError('{"error":"no such session","code":"not_found"}')).toEqual({ code: 'not_found', message: 'no such session' });
    expect(serverError('{"error":"session access denied"}')).toEqual({ code: undefined, message: 'session access denied' });
    expect(serverError('{"error":{"code":"not_found","message":"no such session"}}')).toEqual({ code: 'not_found', message: 'no such session' });
    expect(serverError('{"error":"","code":"no_policy"}')).toEqual({ code: 'no_policy', message: '(no message)' });
    expect(serverError('{"error":"x","code":42}')).toEqual({ code: undefined, message: 'x' });
    expect(serverError('{"message":"x"}')).toBeUndefined();
  });

  it("reads the server's error, bounded and without control characters", () => {
    expect(serverError('{"error":{"code":"bad\\n","message":"no\\u0000way"}}')).toEqual({ code: 'bad', message: 'no way' });
    expect(serverError('{"error":"plain"}')).toEqual({ code: undefined, message: 'plain' });
    expect(serverError('{"error":"a\\u001b[2Jb","code":"c\\nd"}')).toEqual({ code: 'c d', message: 'a [2Jb' });
    expect(serverError('<html>')).toBeUndefined();
    expect(serverError(JSON.stringify({ error: { message: 'x'.repeat(1000) } }))?.message).toHaveLength(300);
  });
});
