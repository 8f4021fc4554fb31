/**
 * The policy event stream's client: the text/event-stream parser (whatever the chunking, the same events), the
 * revision an event names, and one stream read from loopback servers that answer well, badly or not at all.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/control-api/client.js';
import {
  EventStreamParser,
  MAX_LINE_BYTES,
  readPolicyEvents,
  revisionOf,
  STREAM_LIMITS,
  StreamBoundError,
  type ServerSentEvent,
} from '../../src/control-api/policy-events.js';

const parseAll = (chunks: Uint8Array[]): ServerSentEvent[] => {
  const parser = new EventStreamParser();
  return chunks.flatMap((c) => parser.push(c));
};

describe('EventStreamParser', () => {
  it('reads events, comments, ids and multi-line data, with LF, CRLF or CR line ends', () => {
    for (const eol of ['\n', '\r\n', '\r']) {
      const text =
        [
          ': keepalive',
          '',
          'event: revision',
          'id: 7',
          'data: {"revision":"7"}',
          '',
          'data:a',
          'data: b',
          'id',
          '',
          'event: x',
          '',
        ].join(eol) + eol;
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
      fc.property(
        fc.array(line, { maxLength: 30 }),
        fc.constantFrom('\n', '\r\n', '\r'),
        fc.array(fc.nat(), { maxLength: 10 }),
        (lines, eol, cuts) => {
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
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses a line longer than the limit, even one that never ends', () => {
    const parser = new EventStreamParser();
    expect(() => parser.push(Buffer.from(`data: ${'x'.repeat(MAX_LINE_BYTES)}`))).toThrow(/longer than/);
  });

  it('strips a byte-order mark at the start of the stream only, even split across chunks', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    expect(parseAll([bom.subarray(0, 2), Buffer.concat([bom.subarray(2), Buffer.from('data: a\n\n')])])).toEqual([
      { event: 'message', data: 'a', id: undefined },
    ]);
    expect(parseAll([Buffer.from('data: a\n\n'), bom, Buffer.from('data: b\n\n')])).toEqual([
      { event: 'message', data: 'a', id: undefined },
    ]);
  });

  // What a hostile or broken server may send forever, each with the bound that stops it. Fed in chunks of every size
  // up to a socket read's, the parser stops within the bound and never holds more than one line and one event.
  const line = (text: string) => `${text}\n`;
  const big = 'x'.repeat(1000);
  const hostile: [string, (i: number) => string, RegExp][] = [
    [
      'data lines, never a blank line',
      () => line(`data: ${big}`),
      new RegExp(`event of the stream is longer than ${STREAM_LIMITS.eventBytes} bytes`),
    ],
    [
      'short data lines, never a blank line',
      () => line('data: x'),
      new RegExp(`more than ${STREAM_LIMITS.eventLines} lines`),
    ],
    ['unknown fields, never a blank line', () => line(`retry-later: ${big}`), /event of the stream is longer than/],
    [
      'comments only',
      () => line(`: ${big}`),
      new RegExp(`more than ${STREAM_LIMITS.bytesWithoutEvent} bytes without an event`),
    ],
    ['keepalives and blank lines only', () => ': keepalive\n\n', /without an event/],
    ['blank lines only', () => '\r\n', /without an event/],
    ['events that name no revision', (i) => `event: other\nid: ${i}\ndata: {"n":${i}}\n\n`, /without an event/],
    [
      'revision events without a usable revision',
      () => `event: revision\ndata: {"revision":""}\n\n`,
      /without an event/,
    ],
  ];
  it.each(hostile)('stops a stream of %s, holding only what one line and one event need', (_name, next, reason) => {
    const parser = new EventStreamParser(STREAM_LIMITS, (event) => revisionOf(event) !== undefined);
    const most = 3 * STREAM_LIMITS.lineBytes + STREAM_LIMITS.eventBytes;
    let sent = 0;
    let error: unknown;
    for (let i = 0; error === undefined && sent < 8 * STREAM_LIMITS.bytesWithoutEvent; i++) {
      const chunk = Buffer.from(next(i).repeat(1 + (i % 50)));
      sent += chunk.length;
      try {
        parser.push(chunk);
      } catch (caught) {
        error = caught;
      }
      expect(parser.retainedBytes).toBeLessThanOrEqual(most);
    }
    expect(error).toBeInstanceOf(StreamBoundError);
    expect((error as Error).message).toMatch(reason);
    expect(sent).toBeLessThanOrEqual(STREAM_LIMITS.bytesWithoutEvent + 64 * 1024);
  });

  it('counts every byte since the last wanted event, and starts again at each', () => {
    const limits = { ...STREAM_LIMITS, bytesWithoutEvent: 200 };
    const parser = new EventStreamParser(limits, (event) => event.event === 'revision');
    const keepalive = ': k\n\n';
    const revision = 'event: revision\ndata: {"revision":"r"}\n\n';
    expect(keepalive.length * 32 + revision.length).toBe(200);
    // Up to the bound with the event's own bytes, then again after it, within one chunk and across chunks.
    expect(parser.push(Buffer.from(keepalive.repeat(32) + revision + keepalive.repeat(32)))).toHaveLength(1);
    expect(parser.push(Buffer.from(revision))).toHaveLength(1);
    expect(() => parser.push(Buffer.from(keepalive.repeat(41)))).toThrow(StreamBoundError);
    // The events a chunk completed before it broke a bound are handed over with the error.
    const fresh = new EventStreamParser(limits, (event) => event.event === 'revision');
    const error = (() => {
      try {
        fresh.push(Buffer.from(revision + keepalive.repeat(41)));
      } catch (caught) {
        return caught as StreamBoundError;
      }
    })();
    expect(error?.events).toEqual([{ event: 'revision', data: '{"revision":"r"}', id: undefined }]);
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
  const sockets: net.Server[] = [];
  const connections: net.Socket[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((resolve) => s.close(resolve));
    }
    for (const s of sockets.splice(0)) {
      for (const socket of connections.splice(0)) socket.destroy();
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
    ControlClient.create({
      controlUrl: url,
      token: 'blue_secret_token_value',
      tokenSource: 'test',
      env: {},
      userAgent: 'test',
      timeoutMs,
    });

  it('asks with the token and the event-stream type, hands on each revision, says how the stream ended', async () => {
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
    const end = await readPolicyEvents(c, {
      onRevision: (r) => revisions.push(r),
      onOpen: () => (opened = true),
      signal: new AbortController().signal,
    });
    await c.close();
    expect(path).toBe('/prefix/governance-config/events');
    expect(seen).toMatchObject({ authorization: 'Bearer blue_secret_token_value', accept: 'text/event-stream' });
    expect(opened).toBe(true);
    expect(revisions).toEqual(['a', 'b']);
    expect(end).toMatchObject({ kind: 'ended', events: 2 });
  });

  it('tells a server without the stream (404, 405, 501) from one that refuses or fails; hides the token', async () => {
    for (const status of [404, 405, 501]) {
      const url = await serve((_req, res) => res.writeHead(status).end());
      const c = await client(url);
      expect(await readPolicyEvents(c, { onRevision: () => undefined, signal: new AbortController().signal })).toEqual({
        kind: 'unsupported',
        status,
      });
      await c.close();
    }
    const busy = await serve((_req, res) =>
      res
        .writeHead(503, { 'content-type': 'application/json', 'retry-after': '30' })
        .end(JSON.stringify({ error: { code: 'too_many_streams', message: 'blue_secret_token_value is busy' } })),
    );
    const c1 = await client(busy);
    const end = await readPolicyEvents(c1, { onRevision: () => undefined, signal: new AbortController().signal });
    await c1.close();
    expect(end).toMatchObject({ kind: 'failed', status: 503, retryAfterMs: 30_000 });
    expect(JSON.stringify(end)).toContain('too_many_streams');
    expect(JSON.stringify(end)).not.toContain('blue_secret_token_value');

    const portal = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>log in</html>'),
    );
    const c2 = await client(portal);
    expect(
      await readPolicyEvents(c2, { onRevision: () => undefined, signal: new AbortController().signal }),
    ).toMatchObject({
      kind: 'failed',
      status: 200,
      reason: expect.stringContaining('not an event stream'),
    });
    await c2.close();
  });

  it('gives up on a silent connection after the idle timeout, on an endless line, and stops when aborted', async () => {
    const silent = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).flushHeaders(),
    );
    const c1 = await client(silent, 300);
    expect(
      await readPolicyEvents(c1, { onRevision: () => undefined, signal: new AbortController().signal }),
    ).toMatchObject({
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
    expect(
      await readPolicyEvents(c2, { onRevision: () => undefined, signal: new AbortController().signal }),
    ).toMatchObject({
      kind: 'refused',
      reason: expect.stringContaining(`longer than ${MAX_LINE_BYTES} bytes`),
    });
    await c2.close();

    const open = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write('event: revision\ndata: {"revision":"1"}\n\n'),
    );
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

  it('drops a stream that sends data lines, comments or other events forever, naming the bound it broke', async () => {
    const cases: [string, RegExp][] = [
      [
        `data: ${'x'.repeat(1000)}\n`,
        new RegExp(`an event of the stream is longer than ${STREAM_LIMITS.eventBytes} bytes; dropped it`),
      ],
      [
        `: ${'x'.repeat(1000)}\n`,
        new RegExp(`more than ${STREAM_LIMITS.bytesWithoutEvent} bytes without an event; dropped it`),
      ],
      ['event: other\ndata: {}\n\n', /without an event; dropped it/],
    ];
    for (const [unit, reason] of cases) {
      let written = 0;
      const url = await serve((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: revision\ndata: {"revision":"r1"}\n\n');
        const chunk = unit.repeat(Math.ceil(16_384 / unit.length));
        // Far past every bound, then the stream ends: a reader without bounds would see it end, not drop it.
        const pump = () => {
          while (written < 32 * 1024 * 1024 && !res.destroyed) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      });
      const c = await client(url);
      const revisions: string[] = [];
      const end = await readPolicyEvents(c, {
        onRevision: (r) => revisions.push(r),
        signal: new AbortController().signal,
      });
      await c.close();
      expect(end).toMatchObject({ kind: 'refused', events: 1, reason: expect.stringMatching(reason) });
      expect(revisions).toEqual(['r1']);
      expect(written).toBeLessThan(32 * 1024 * 1024);
    }
  });

  it('gives up on an answer whose headers trickle in, however short each silence', async () => {
    let lines = 0;
    const server = net.createServer((socket) => {
      connections.push(socket);
      socket.on('error', () => undefined);
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n');
      // A header line every 20 ms; bounded: after 10 s the answer completes with an event.
      const timer = setInterval(() => {
        if (++lines < 500) return void socket.write(`x-wait-${lines}: 1\r\n`);
        clearInterval(timer);
        socket.end('\r\nevent: revision\ndata: {"revision":"late"}\n\n');
      }, 20);
      socket.on('close', () => clearInterval(timer));
    });
    sockets.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const c = await client(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 400);
    expect(
      await readPolicyEvents(c, { onRevision: () => undefined, signal: new AbortController().signal }),
    ).toMatchObject({
      kind: 'failed',
      reason: expect.stringContaining('timed out after 0.4 s'),
    });
    await c.close();
    expect(lines).toBeLessThan(500);
  });

  it('goes through the proxy the environment names, and straight to a host no_proxy names', async () => {
    const url = await serve((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end('event: revision\ndata: {"revision":"p"}\n\n'),
    );
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
      const c = await ControlClient.create({
        controlUrl: url,
        token: 't0ken',
        tokenSource: 'test',
        env,
        userAgent: 'test',
        timeoutMs: 5_000,
      });
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
    const secure = await ControlClient.create({
      controlUrl: 'https://127.0.0.1:9/prefix',
      token: 't0ken',
      tokenSource: 'test',
      env: { http_proxy: proxyUrl },
      userAgent: 'test',
      timeoutMs: 5_000,
    });
    expect(
      await readPolicyEvents(secure, { onRevision: () => undefined, signal: new AbortController().signal }),
    ).toMatchObject({ kind: 'failed' });
    await secure.close();
    expect(tunnels).toEqual(['127.0.0.1:9']);
  });

  it('gives up on a server that never answers after the timeout', async () => {
    const mute = await serve(() => undefined);
    const c = await client(mute, 300);
    expect(
      await readPolicyEvents(c, { onRevision: () => undefined, signal: new AbortController().signal }),
    ).toMatchObject({
      kind: 'failed',
      reason: expect.stringContaining('timed out after 0.3 s'),
    });
    await c.close();
  });
});
