/**
 * The one Control API client against a loopback server: where the token goes (only to the Control API's origin),
 * what a refused token's hint says, and that no failure names a secret.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ControlClient } from '../../src/control-api/client.js';
import { UploadError } from '../../src/control-api/errors.js';

const TOKEN = 'tok_SECRET_abcdef0123456789';

interface Api {
  origin: string;
  seen: { url: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

const servers: Api[] = [];
const clients: ControlClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const server of servers.splice(0)) await server.close();
});

async function startApi(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Api> {
  const seen: Api['seen'] = [];
  const server: Server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const api: Api = {
    origin: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(api);
  return api;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function client(
  controlUrl: string,
  ...auth: [token: string | undefined, tokenSource: string] | []
): Promise<ControlClient> {
  const [token, tokenSource] = auth.length === 0 ? [TOKEN, 'BLUE_AGENT_TOKEN'] : auth;
  const created = await ControlClient.create({
    controlUrl,
    token,
    tokenSource,
    env: {},
    userAgent: 'blue-agent/test',
    timeoutMs: 5_000,
  });
  clients.push(created);
  return created;
}

async function failure(promise: Promise<unknown>): Promise<UploadError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UploadError);
  expect(JSON.stringify({ ...(error as UploadError).toJSON(), stack: (error as UploadError).stack })).not.toContain(
    TOKEN,
  );
  return error as UploadError;
}

describe('ControlClient', () => {
  it('sends the bearer token and user agent to the Control API, and answers parsed JSON', async () => {
    const api = await startApi((_req, res) => json(res, 200, { ok: true }));
    const c = await client(`${api.origin}/api/`);
    expect(await c.requestJson('GET', c.routeUrl('/session-uploads'))).toEqual({ ok: true });
    expect(api.seen).toHaveLength(1);
    expect(api.seen[0]).toMatchObject({
      url: '/api/session-uploads',
      headers: { authorization: `Bearer ${TOKEN}`, 'user-agent': 'blue-agent/test' },
    });
  });

  it('never sends the token to another origin', async () => {
    const api = await startApi((_req, res) => json(res, 200, {}));
    const other = await startApi((_req, res) => json(res, 200, {}));
    const c = await client(api.origin);
    const error = await failure(c.requestJson('POST', new URL(`${other.origin}/steal`), {}));
    expect(error).toMatchObject({ kind: 'service', code: 'UPLOAD_FAILED' });
    expect(error.message).toContain('refusing to send the token');
    await expect(c.send('GET', new URL(`${other.origin}/steal`))).rejects.toBeInstanceOf(UploadError);
    expect(other.seen).toHaveLength(0);
  });

  it(
    'a refused token says where it came from: BLUE_AGENT_TOKEN overrides the token file, the token file needs a ' +
      'login',
    async () => {
      const api = await startApi((_req, res) =>
        json(res, 401, { error: { code: 'invalid_token', message: 'unknown token' } }),
      );
      const refused = async (tokenSource: string, token: string | undefined): Promise<UploadError> => {
        const c = await client(api.origin, token, tokenSource);
        const error = await failure(c.requestJson('GET', c.routeUrl('session-uploads')));
        expect(error.code).toBe('AUTH_FAILED');
        return error;
      };
      const fromEnv = await refused('BLUE_AGENT_TOKEN', TOKEN);
      expect(fromEnv.hint).toContain(
        'BLUE_AGENT_TOKEN (from the environment) overrides the token file: correct or unset it',
      );
      expect(fromEnv.hint).not.toMatch(/login/);
      const fromFile = await refused('/home/ada/.local/state/blue-agent/token', TOKEN);
      expect(fromFile.hint).toContain('/home/ada/.local/state/blue-agent/token');
      expect(fromFile.hint).toContain('run `blue-agent login --control-url URL` again');
      expect(fromFile.hint).not.toContain('set BLUE_AGENT_TOKEN');
      const none = await refused('/home/ada/.local/state/blue-agent/token', undefined);
      expect(none.hint).toContain('No token is configured');
    },
  );

  it('keeps the token and signed queries out of a server error it repeats', async () => {
    const api = await startApi((_req, res) =>
      json(res, 422, {
        error: { code: 'bad', message: `token ${TOKEN} at https://u:pw@s3.example/b?X-Amz-Signature=SIG123` },
      }),
    );
    const c = await client(api.origin);
    const error = await failure(c.requestJson('GET', new URL(`${api.origin}/session-uploads?q=${TOKEN}`)));
    expect(error).toMatchObject({ kind: 'record', code: 'UPLOAD_REJECTED', status: 422, serverCode: 'bad' });
    expect(error.message).toContain('https://s3.example/b?[redacted]');
    expect(error.message).not.toMatch(/SIG123|u:pw/);
  });

  it('accepts 204 No Content (POST /client-status) without reading a body', async () => {
    const api = await startApi((_req, res) => res.writeHead(204).end());
    const c = await client(api.origin);
    expect(await c.requestJson('POST', c.routeUrl('client-status'), { instance_id: 'i' })).toBeUndefined();
  });

  it("reads every error body shape: ours with a code, Blue's message alone, and the older nested one", async () => {
    let body: unknown;
    const api = await startApi((_req, res) => json(res, 400, body));
    const c = await client(api.origin);
    body = { error: 'all recipients must be active workspace members', code: 'unknown_user' };
    expect(await failure(c.requestJson('PUT', c.routeUrl('session-uploads/x/sharing'), {}))).toMatchObject({
      status: 400,
      serverCode: 'unknown_user',
      message: expect.stringContaining(
        'answered HTTP 400: [unknown_user] all recipients must be active workspace members',
      ),
    });
    body = { error: 'sharing mode must be private, workspace, or selected' };
    const blue = await failure(c.requestJson('PUT', c.routeUrl('session-uploads/x/sharing'), {}));
    expect(blue.serverCode).toBeUndefined();
    expect(blue.message).toContain('answered HTTP 400: sharing mode must be private, workspace, or selected');
    body = { error: { code: 'bad_request', message: 'older shape' } };
    expect(await failure(c.requestJson('GET', c.routeUrl('x')))).toMatchObject({
      serverCode: 'bad_request',
      message: expect.stringContaining('[bad_request] older shape'),
    });
  });

  it('refuses an answer larger than its bound, and one that is not JSON', async () => {
    let answer = 'x'.repeat(2048);
    const api = await startApi((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(answer));
    const c = await ControlClient.create({
      controlUrl: api.origin,
      token: TOKEN,
      tokenSource: 't',
      env: {},
      userAgent: 'x',
      maxResponseBytes: 1024,
    });
    clients.push(c);
    expect(await failure(c.requestJson('GET', c.routeUrl('x')))).toMatchObject({
      kind: 'service',
      message: expect.stringContaining('larger than 1024 bytes'),
    });
    answer = '<html>login</html>';
    expect(await failure(c.requestJson('GET', c.routeUrl('x')))).toMatchObject({
      kind: 'transient',
      message: expect.stringContaining('not JSON'),
    });
  });

  it('refuses an answer nested deeper than the bound, from a JSON route and from a form POST', async () => {
    const deep = `{"items":[],"x":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const api = await startApi((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(deep));
    const c = await client(api.origin);
    expect(await failure(c.requestJson('GET', c.routeUrl('x')))).toMatchObject({
      kind: 'service',
      message: expect.stringContaining('nests deeper than 64 levels'),
    });
    await expect(c.postForm(c.routeUrl('oauth2/token'), { grant_type: 'x' })).rejects.toMatchObject({
      message: expect.stringContaining('nests deeper than 64 levels'),
    });
    // Nesting inside strings is text, not depth.
    const shallow = JSON.stringify({ items: [], x: '['.repeat(10_000) });
    const ok = await startApi((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(shallow));
    const other = await client(ok.origin);
    expect(await other.requestJson('GET', other.routeUrl('x'))).toEqual(JSON.parse(shallow));
  });

  it('bounds a whole answer in time, however steadily it trickles in', async () => {
    let sent = 0;
    const api = await startApi((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"x":"');
      // One byte every 20 ms keeps every silence far below the timeout; bounded: at most 10 s of it.
      const timer = setInterval(() => {
        if (++sent > 500) {
          clearInterval(timer);
          res.end('"}');
        } else res.write('a');
      }, 20);
      res.on('close', () => clearInterval(timer));
    });
    const c = await ControlClient.create({
      controlUrl: api.origin,
      token: TOKEN,
      tokenSource: 't',
      env: {},
      userAgent: 'x',
      timeoutMs: 400,
    });
    clients.push(c);
    expect(await failure(c.requestJson('GET', c.routeUrl('x')))).toMatchObject({
      kind: 'transient',
      message: expect.stringMatching(/timed out|aborted/),
    });
    expect(sent).toBeLessThan(500);
  });
});
