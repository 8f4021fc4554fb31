/**
 * Clients that go away or stall, through a raw socket against the real server: one log line each, no stack trace,
 * 408 for a request that does not arrive in time, and the server keeps serving.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BACKENDS, startTestServer, type Backend, type TestServer } from '../../../test/support/control-server.js';

let t: TestServer | undefined;
let log: { level: string; line: string }[];
afterEach(async () => {
  await t?.close();
  t = undefined;
});

let backend: Backend = 'sqlite';
async function start(timeouts?: { headersMs?: number; bodyMs?: number }): Promise<TestServer> {
  log = [];
  t = await startTestServer({ backend, timeouts, log: (level, line) => log.push({ level, line }) });
  return t;
}

function open(server: TestServer): Promise<Socket> {
  const { hostname, port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the connection. */
function answer(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.once('close', () => resolve(text));
  });
}

const headers = (token: string, length: number) =>
  `POST /client-status HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${token}\r\nContent-Type: ` +
  `application/json\r\nContent-Length: ${length}\r\n\r\n`;
const HALF = '{"instance_id": "abc", "client_ver';

async function stillServes(server: TestServer): Promise<void> {
  await server.server.store.publishPolicy({ ttl_seconds: 60, allowed_harnesses: ['claude'] }, server.clock.now());
  const policy = await server.call('GET', '/governance-config', server.alice.token);
  expect(policy.status).toBe(200);
}

async function lineFor(match: RegExp): Promise<string[]> {
  for (let i = 0; i < 400; i++) {
    const found = log.filter((l) => match.test(l.line));
    if (found.length > 0) return found.map((l) => l.line);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no log line matching ${match}; got ${JSON.stringify(log)}`);
}

describe.each(BACKENDS)('clients that abort or stall (%s)', (which) => {
  beforeEach(() => {
    backend = which;
  });

  it('a client that goes away mid-body is one log line without a stack, and the server still serves', async () => {
    const server = await start();
    const socket = await open(server);
    // Gone as soon as the server has started on the request, with half of its body sent.
    server.server.server.once('request', () => setImmediate(() => socket.destroy()));
    socket.write(headers(server.alice.token, 100) + HALF);
    const lines = await lineFor(/^POST \/client-status /);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^POST \/client-status aborted: the client closed the connection after \d+ of 100 body bytes \d+ms$/,
    );
    expect(log.filter((l) => l.level === 'error')).toEqual([]);
    expect(log.some((l) => /\n\s+at /.test(l.line) || l.line.includes('Error: aborted'))).toBe(false);
    await stillServes(server);
  });

  it('a body that stops arriving is answered 408', async () => {
    const server = await start({ bodyMs: 200 });
    const socket = await open(server);
    const received = answer(socket);
    socket.write(headers(server.alice.token, 100) + HALF);
    const text = await received;
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toContain('"code":"request_timeout"');
    expect(await lineFor(/^POST \/client-status /)).toEqual([
      expect.stringMatching(/^POST \/client-status 408 request_timeout \d+ms$/),
    ]);
    expect(log.filter((l) => l.level === 'error')).toEqual([]);
    await stillServes(server);
  });

  it('headers that stop arriving are answered 408', async () => {
    const server = await start({ headersMs: 200 });
    const socket = await open(server);
    const received = answer(socket);
    socket.write('POST /client-status HTTP/1.1\r\nHost: test\r\n');
    const text = await received;
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(text).toContain('"code":"request_timeout"');
    expect(await lineFor(/^client error/)).toEqual(['client error: 408 request_timeout']);
    await stillServes(server);
  });
});
