import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { parseRetryAfter, readSome, routeUrl, serverError, statusKind } from '../../src/control-api/http.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('base URL', () => {
  it('keeps the base URL path prefix and drops its query and fragment', () => {
    expect(routeUrl('https://control.example/blue/?x=1#f', '/session-uploads').href).toBe(
      'https://control.example/blue/session-uploads',
    );
    expect(routeUrl('https://control.example', 'governance-config').href).toBe(
      'https://control.example/governance-config',
    );
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

  it("reads the three error shapes: ours (message and code), Blue's (message) and the older nested one", () => {
    expect(serverError('{"error":"no such session","code":"not_found"}')).toEqual({
      code: 'not_found',
      message: 'no such session',
    });
    expect(serverError('{"error":"session access denied"}')).toEqual({
      code: undefined,
      message: 'session access denied',
    });
    expect(serverError('{"error":{"code":"not_found","message":"no such session"}}')).toEqual({
      code: 'not_found',
      message: 'no such session',
    });
    expect(serverError('{"error":"","code":"no_policy"}')).toEqual({ code: 'no_policy', message: '(no message)' });
    expect(serverError('{"error":"x","code":42}')).toEqual({ code: undefined, message: 'x' });
    expect(serverError('{"message":"x"}')).toBeUndefined();
  });

  it("reads the server's error, bounded and without control characters", () => {
    expect(serverError('{"error":{"code":"bad\\n","message":"no\\u0000way"}}')).toEqual({
      code: 'bad',
      message: 'no way',
    });
    expect(serverError('{"error":"plain"}')).toEqual({ code: undefined, message: 'plain' });
    expect(serverError('{"error":"a\\u001b[2Jb","code":"c\\nd"}')).toEqual({ code: 'c d', message: 'a [2Jb' });
    expect(serverError('<html>')).toBeUndefined();
    expect(serverError(JSON.stringify({ error: { message: 'x'.repeat(1000) } }))?.message).toHaveLength(300);
  });
});

describe('readSome', () => {
  it('stops at its byte bound, and at its deadline however steadily the body trickles in', async () => {
    let sent = 0;
    const server = createServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      // One byte every 20 ms: no silence is long enough for an idle timeout. Bounded: at most 10 s of it.
      const timer = setInterval(() => {
        if (++sent > 500) {
          clearInterval(timer);
          res.end();
        } else res.write('e');
      }, 20);
      res.on('close', () => clearInterval(timer));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

    const slow = await request(url);
    const text = await readSome(slow, 4096, 300);
    expect(text).toMatch(/^e*$/);
    expect(sent).toBeLessThan(500);

    const bounded = await request(url);
    expect(await readSome(bounded, 3, 10_000)).toBe('eee');
  });
});
