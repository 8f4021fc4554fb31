/**
 * The policy event stream's client: the text/event-stream parser (whatever the chunking, the same events), the
 * revision an event names, and one stream read from loopback servers that answer well, badly or not at all.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/control-api/client.js';
import { EventStreamParser, MAX_LINE_BYTES, readPolicyEvents, revisionOf, type ServerSentEvent } from '../../src/control-api/policy-events.js';

const parseAll = (chunks: Uint8Array[]): ServerSentEvent[] => {
  const parser = new EventStreamParser();
  return chunks.flatMap((c) => parser.push(c));
};

describe('EventStreamParser', () => {
  it('reads events, comments, ids and multi-line data, with LF, CRLF or CR line ends', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const text = [': keepalive', '', 'event: revision', 'id: 7', 'data: {"revision":"7"}', '', 'data:a', 'data: b', 'id', '', 'event: x', ''].join(eol) + eol;
      expect(parseAll([Buffer.from(text)])).toEqual([
        { event: 'revision', data: '{"revision":"7"}', id: '7' },
        { event: 'message', data: 'a\nb', id: '' },
      ]);
    }
  });

  it('gives the same events however the bytes are split (property)', () => {
    const line = fc.oneof(
      fc.constantFrom('event: revision', ': keepalive', 'retry: 5', 'id: r-1', ''),
      fc.string({ maxLength: 20 }).map((s) => `data: ${s.replace(/[\r\n]/g, ' ')}`),
      fc.constantFrom('data: é€😀', 'data:ünïcode'),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.constantFrom('\n', '\r\n', '\r'), fc.array(fc.nat(), { maxLength: 10 }), (lines, eol, cuts) => {
        const bytes = Buffer.from(lines.join(eol) + eol);
        const whole = parseAll([bytes]);
        const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
        const pieces: Uint8Array[] = [];
        let from = 0;
        for (const cut of at) {
          pieces.push(bytes.subarray(from, cut));
          from = cut;
        }
        pieces.push(bytes.subarray(from));
        expect(parseAll(pieces)).toEqual(whole);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a line longer than the limit, even one that never ends', () => {
    const parser = new EventStreamParser();
    expect(() => parser.push(Buffer.from(`data: ${'x'.repeat(MAX_LINE_BYTES)}`))).toThrow(/longer than/);
  });
});

describe('revisionOf', () => {
  const ev = (data: string, event = 'revision', id?: string): ServerSentEvent => ({ event, data, id });
  it('takes the revision from the data, else the id, and nothing from other events or hostile values', () => {
    expect(revisionOf(ev('{"revision":"2f1c"}'))).toBe('2f1c');
    expect(revisionOf(ev('{"revision":12}'))).toBe('12');
    expect(revisionOf(ev('not json', 'revision', 'r9'))).toBe('r9');
    expect(revisionOf(ev('{"revision":"x"}', 'message'))).toBeUndefined();
    expect(revisionOf(ev('{"revision":"a\\u001b[2Jb"}'))).toBeUndefined();
    expect(revisionOf(ev(JSON.stringify({ revision: 'r'.repeat(201) })))).toBeUndefined();
    expect(revisionOf(ev('{"revision":""}'))).toBeUndefined();
    expect(revisionOf(ev('null'))).toBeUndefined();
  });
});

describe('readPolicyEvents', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
  });

  async function serve(handler: http.RequestListener): Promise<string> {
    const server = http.createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/prefix`;
  }

  const client = (url: string, timeoutMs = 5_000) =>
    ControlClient.create({ controlUrl: url, token: 'blue_secret_token_value', tokenSource: 'test', env: {}, userAgent: 'test', timeoutMs });

  it('asks with the token and the event-stream type, hands on each revision, and reports how the stream ended', async () => {
    let seen: http.IncomingHttpHeaders | undefined;
    let path: string | undefined;
    const url = await serve((req, res) => {
      seen = req.headers;
      path = req.url;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.write('event: revision\nid: a\ndata: {"revision":"a"}\n\n: keepalive\n\n');
      setTimeout(() => res.end('event: revision\ndata: {"revision":"b"}\n\nevent: other\ndata: {}\n\n'), 50);
    });
    const c = await client(url);
    const revisions: string[] = [];
    let opened = false;
    const end = await readPolicyEvents(c, { onRevision: (r) => revisions.push(r), onOpen: () => (opened = true), signal: new AbortController().signal });
    await c.close();
    expect(path).toBe('/prefix/governance-config/events');
    expect(seen).toMatchObject({ authorization: 'Bearer blue_secret_token_value', accept: 'text/event-stream' });
    expect(opened).toBe(true);
    expect(revisions).toEqual(['a', 'b']);
    expect(end).toMatchObject({ kind: 'ended', events: 2 });
  });

  it('tells a server without the stream (404, 405, 501) from one that refuses or fails, and never shows the token', async () => {
    for (const status of [404, 405, 501]) {
      const url = await serve((_req, res) => res.writeHead(status).end());
      const c = await client(url);
      expect(await readPolicyEvents(c, { onRevision: () => undefined, signal: new AbortController().signal })).toEqual({ kind: 'unsupported', status });
      await c.close();
    }
    const busy = await serve((_req, res) =>
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '30' }).end(JSON.stringify({ error: { code: 'too_many_streams', message: 'blue_secret_token_value is busy' } })),
    );
    const c1 = await client(busy);
    const end = await readPolicyEvents(c1, { onRevision: () => undefined, signal: new AbortController().signal });
    await c1.close();
    expect(end).toMatchObject({ kind: 'failed', status: 503, retryAfterMs: 30_000 });
    expect(JSON.stringify(end)).toContain('too_many_streams');
    expect(JSON.stringify(end)).not.toContain('blue_secret_token_value');

    const portal = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>log in</html>'));
    const c2 = await client(portal);
    expect(await readPolicyEvents(c2, { onRevision: () => undefined, signal: new AbortController().signal })).toMatchObject({
      kind: 'failed',
      status: 200,
      reason: expect.stringContaining('not an event stream'),
    });
    await c2.close();
  });

  it('gives up on a silent connection after the idle timeout, on an endless line, and stops when aborted', async () => {
    const silent = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders());
    const c1 = await client(silent, 300);
    expect(await readPolicyEvents(c1, { onRevision: () => undefined, signal: new AbortController().signal })).toMatchObject({
      kind: 'ended',
      events: 0,
      reason: expect.stringContaining('timed out after 0.3 s'),
    });
    await c1.close();

    const endless = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = 'x'.repeat(4096);
      const timer = setInterval(() => res.write(chunk), 1);
      res.on('close', () => clearInterval(timer));
      res.write('data: ');
    });
    const c2 = await client(endless);
    expect(await readPolicyEvents(c2, { onRevision: () => undefined, signal: new AbortController().signal })).toMatchObject({
      kind: 'ended',
      reason: expect.stringContaining(`longer than ${MAX_LINE_BYTES} bytes`),
    });
    await c2.close();

    const open = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).write('event: revision\ndata: {"revision":"1"}\n\n'));
    const c3 = await client(open);
    const controller = new AbortController();
    const got: string[] = [];
    const reading = readPolicyEvents(c3, {
      onRevision: (r) => {
        got.push(r);
        controller.abort();
      },
      signal: controller.signal,
    });
    expect(await reading).toEqual({ kind: 'aborted' });
    expect(got).toEqual(['1']);
    await c3.close();
  });

  it('goes through the proxy the environment names, and straight to a host no_proxy names', async () => {
    const url = await serve((_req, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }).end('event: revision\ndata: {"revision":"p"}\n\n'));
    // A forward proxy: absolute-form requests, passed on to their origin.
    const proxied: string[] = [];
    const proxy = http.createServer((req, res) => {
      proxied.push(req.url ?? '');
      const target = new URL(req.url ?? '');
      const onward = http.request(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      onward.on('error', () => res.writeHead(502).end());
      req.pipe(onward);
    });
    servers.push(proxy);
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const read = async (env: Record<string, string>) => {
      const c = await ControlClient.create({ controlUrl: url, token: 't0ken', tokenSource: 'test', env, userAgent: 'test', timeoutMs: 5_000 });
      const revisions: string[] = [];
      await readPolicyEvents(c, { onRevision: (r) => revisions.push(r), signal: new AbortController().signal });
      await c.close();
      return revisions;
    };
    expect(await read({ http_proxy: proxyUrl })).toEqual(['p']);
    expect(proxied).toEqual([`${url}/governance-config/events`]);
    expect(await read({ HTTP_PROXY: proxyUrl, NO_PROXY: '127.0.0.1' })).toEqual(['p']);
    expect(proxied).toHaveLength(1);

    // https through the http proxy when no https proxy is named, as the pool does: a CONNECT tunnel (refused here).
    const tunnels: string[] = [];
    proxy.on('connect', (req: http.IncomingMessage, socket: import('node:net').Socket) => {
      tunnels.push(req.url ?? '');
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    });
    const secure = await ControlClient.create({ controlUrl: 'https://127.0.0.1:9/prefix', token: 't0ken', tokenSource: 'test', env: { http_proxy: proxyUrl }, userAgent: 'test', timeoutMs: 5_000 });
    expect(await readPolicyEvents(secure, { onRevision: () => undefined, signal: new AbortController().signal })).toMatchObject({ kind: 'failed' });
    await secure.close();
    expect(tunnels).toEqual(['127.0.0.1:9']);
  });

  it('gives up on a server that never answers after the timeout', async () => {
    const mute = await serve(() => undefined);
    const c = await client(mute, 300);
    expect(await readPolicyEvents(c, { onRevision: () => undefined, signal: new AbortController().signal })).toMatchObject({
      kind: 'failed',
      reason: expect.stringContaining('timed out after 0.3 s'),
    });
    await c.close();
  });
});
