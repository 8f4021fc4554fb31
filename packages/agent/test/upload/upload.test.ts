/**
 * The upload client against real loopback servers: a fake Control API (presign, complete) and a fake storage service
 * (the signed URL), with faults injected — down then up, 5xx, 429 with Retry-After, resets mid-body, 4xx with a JSON
 * error, an expired signature — and a check that no message ever carries the token or a signature.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE_CONTENT_TYPE } from '@blue-agent/contract/bundle/index.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { ControlClient } from '../../src/control-api/client.js';
import { UploadError } from '../../src/control-api/errors.js';
import {
  presignRequest,
  resolvePresignUrl,
  uploadBundle,
  type UploadItem,
  type UploadResult,
} from '../../src/upload/index.js';
import { storageChecksDigest, uploadFile } from '../../src/upload/put.js';
import { backoffDelay, withRetry, type RetryEnv, type RetryPolicy } from '../../src/upload/retry.js';

const TOKEN = 'tok_SECRET_abcdef0123456789';
const SIGNATURE = 'SIGNATUREabcdef0123456789';
const MiB = 1024 * 1024;

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

type RawHandler = (req: IncomingMessage, res: ServerResponse) => boolean;
type Handler = (req: IncomingMessage, res: ServerResponse, body: Buffer, seen: Seen) => void;

interface TestServer {
  origin: string;
  port: number;
  seen: Seen[];
  handle(handler: Handler | undefined): void;
  close(): Promise<void>;
}

/** A loopback server that reads each body whole (tests that need the socket mid-body use `raw`). */
async function startServer(options: { port?: number; raw?: RawHandler } = {}): Promise<TestServer> {
  const seen: Seen[] = [];
  let handler: Handler | undefined;
  const server: Server = createServer((req, res) => {
    if (options.raw?.(req, res) === true) return;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', () => undefined);
    req.on('end', () => {
      const entry = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      seen.push(entry);
      if (handler === undefined) res.writeHead(404).end();
      else handler(req, res, entry.body, entry);
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    seen,
    handle: (h) => {
      handler = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** A scripted Control API + storage on one server: presign hands out a signed URL on `storage`. */
function controlApi(
  api: TestServer,
  storage: TestServer,
  script: {
    presign?: (n: number, res: ServerResponse, body: unknown) => boolean;
    put?: (n: number, res: ServerResponse, body: Buffer, seen: Seen) => boolean;
    complete?: (n: number, res: ServerResponse) => boolean;
    /** The signed headers for a digest (default: S3's checksum header, as this project's Control API signs it). */
    signedHeaders?: (sha256: string) => Record<string, string>;
  } = {},
): { presigns: number; puts: number; completes: number; stored: Buffer | undefined } {
  const state = { presigns: 0, puts: 0, completes: 0, stored: undefined as Buffer | undefined };
  api.handle((req, res, body) => {
    if (req.method === 'POST' && req.url === '/api/session-uploads/presign') {
      state.presigns++;
      const parsed = JSON.parse(body.toString('utf8')) as { sha256: string };
      if (script.presign?.(state.presigns, res, parsed) === true) return;
      json(res, 200, {
        upload_id: 'up_1',
        status: 'pending',
        upload_url:
          `${storage.origin}/bucket/obj-${state.presigns}?X-Amz-Credential=AKIA%2Fx&X-Amz-Signature=` +
          `${SIGNATURE}-${state.presigns}`,
        method: 'PUT',
        headers: {
          'content-type': BUNDLE_CONTENT_TYPE,
          ...(script.signedHeaders?.(parsed.sha256) ?? {
            'x-amz-checksum-sha256': Buffer.from(parsed.sha256, 'hex').toString('base64'),
          }),
        },
        complete_url: `${api.origin}/api/session-uploads/up_1/complete`,
      });
      return;
    }
    if (req.method === 'POST' && req.url === '/api/session-uploads/up_1/complete') {
      state.completes++;
      if (script.complete?.(state.completes, res) === true) return;
      json(res, 200, { upload_id: 'up_1', status: 'complete' });
      return;
    }
    json(res, 404, { error: { code: 'not_found', message: 'no such route' } });
  });
  storage.handle((req, res, body, seen) => {
    state.puts++;
    if (script.put?.(state.puts, res, body, seen) === true) return;
    // As S3 does with a signed checksum header: a body with another digest is refused, never stored.
    const checksum = req.headers['x-amz-checksum-sha256'];
    if (checksum !== undefined && checksum !== createHash('sha256').update(body).digest('base64')) {
      res
        .writeHead(400, { 'content-type': 'application/xml' })
        .end(
          '<Error><Code>BadDigest</Code><Message>The SHA256 you specified did not match the calculated ' +
            'checksum.</Message></Error>',
        );
      return;
    }
    state.stored = body;
    res.writeHead(200, { etag: '"abc"' }).end();
  });
  return state;
}

const policy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000, maxInlineRetryAfterMs: 60_000 };

function fakeEnv(onSleep?: (ms: number) => Promise<void> | void): RetryEnv & { sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    sleeps,
    sleep: async (ms) => {
      sleeps.push(ms);
      await onSleep?.(ms);
    },
    random: () => 0.5,
    now: () => Date.parse('2026-01-01T00:00:00Z'),
  };
}

let dir: string;
let bundleFile: string;
let item: UploadItem;
const servers: TestServer[] = [];
const clients: ControlClient[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-upload-'));
  bundleFile = path.join(dir, 'a.bundle');
  const content = Buffer.alloc(3 * MiB + 17, 7);
  for (let i = 0; i < content.length; i += 4096) content[i] = i % 251;
  await writeFile(bundleFile, content);
  item = {
    bundleFile,
    size: content.length,
    sha256: createHash('sha256').update(content).digest('hex'),
    manifest: {
      harness: 'claude',
      native_session_id: 'sess-1',
      compatibility_profile: 'claude-v2_0_12',
      captured_at_unix_ms: 1_700_000_000_000,
      artifact_format: 'blue-session-bundle-v1',
      cwd: '/home/u/project',
      repository: { root: '/home/u/project', remote: 'git@example.com:o/r.git' },
      title: 'Fix the build',
      summary: 'make it green',
    },
    resumable: true,
  };
});
afterAll(async () => rm(dir, { recursive: true, force: true }));
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const server of servers.splice(0)) await server.close();
});

async function setup(options: { token?: string | undefined; apiRaw?: RawHandler; storageRaw?: RawHandler } = {}) {
  const api = await startServer({ ...(options.apiRaw === undefined ? {} : { raw: options.apiRaw }) });
  const storage = await startServer({ ...(options.storageRaw === undefined ? {} : { raw: options.storageRaw }) });
  servers.push(api, storage);
  const client = await ControlClient.create({
    controlUrl: `${api.origin}/api/`,
    token: 'token' in options ? options.token : TOKEN,
    tokenSource: 'BLUE_AGENT_TOKEN',
    env: {},
    userAgent: 'blue-agent/test',
    timeoutMs: 5_000,
    now: () => Date.parse('2026-01-01T00:00:00Z'),
  });
  clients.push(client);
  return { api, storage, client };
}

function expectClean(result: UploadResult): void {
  const text = JSON.stringify(result);
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain(SIGNATURE);
  expect(text).not.toContain('AKIA');
}

describe('uploadBundle', () => {
  it('presigns with the contract fields, uploads with exactly the signed method and headers, completes', async () => {
    const { api, storage, client } = await setup();
    const state = controlApi(api, storage);
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toEqual({ kind: 'uploaded', upload_id: 'up_1', already: false });

    const presign = api.seen[0]!;
    expect(presign.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(presign.headers['content-type']).toBe('application/json');
    expect(JSON.parse(presign.body.toString('utf8'))).toEqual({
      harness: 'claude',
      session_id: 'sess-1',
      sha256: item.sha256,
      size_bytes: item.size,
      content_type: BUNDLE_CONTENT_TYPE,
      compatibility_profile: 'claude-v2_0_12',
      artifact_format: 'blue-session-bundle-v1',
      captured_at_unix_ms: 1_700_000_000_000,
      cwd: '/home/u/project',
      resumable: true,
      title: 'Fix the build',
      summary: 'make it green',
      repository_root: '/home/u/project',
      repository_remote: 'git@example.com:o/r.git',
    });

    const put = storage.seen[0]!;
    expect(put.method).toBe('PUT');
    expect(put.url).toBe(`/bucket/obj-1?X-Amz-Credential=AKIA%2Fx&X-Amz-Signature=${SIGNATURE}-1`);
    expect(put.headers['content-length']).toBe(String(item.size));
    expect(put.headers['content-type']).toBe(BUNDLE_CONTENT_TYPE);
    expect(put.headers['x-amz-checksum-sha256']).toBe(Buffer.from(item.sha256, 'hex').toString('base64'));
    // The signed URL is its own credential; the bearer token stays with the Control API.
    expect(put.headers.authorization).toBeUndefined();
    expect(createHash('sha256').update(state.stored!).digest('hex')).toBe(item.sha256);

    expect(api.seen[1]!.url).toBe('/api/session-uploads/up_1/complete');
    expect(api.seen[1]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(JSON.parse(api.seen[1]!.body.toString('utf8'))).toEqual({ sha256: item.sha256, size_bytes: item.size });
  });

  it('stops after presign when the server already holds the bundle', async () => {
    const { api, storage, client } = await setup();
    const state = controlApi(api, storage, {
      presign: (_n, res) => (json(res, 200, { upload_id: 'up_9', status: 'complete' }), true),
    });
    expect(await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() })).toEqual({
      kind: 'uploaded',
      upload_id: 'up_9',
      already: true,
    });
    expect(state.puts).toBe(0);
    expect(state.completes).toBe(0);
  });

  it('retries while the Control API is down and succeeds once it is up', async () => {
    // Take a free port, release it, and start the API there only once the client has backed off.
    const probe = await startServer();
    const port = probe.port;
    await probe.close();
    const storage = await startServer();
    servers.push(storage);
    const client = await ControlClient.create({
      controlUrl: `http://127.0.0.1:${port}/api`,
      token: TOKEN,
      tokenSource: 't',
      env: {},
      userAgent: 'x',
      timeoutMs: 5_000,
    });
    clients.push(client);
    const env = fakeEnv(async () => {
      if (servers.length === 1) {
        const api = await startServer({ port });
        servers.push(api);
        controlApi(api, storage);
      }
    });
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: env });
    expect(result).toMatchObject({ kind: 'uploaded', upload_id: 'up_1' });
    expect(env.sleeps).toHaveLength(1);
  });

  it('retries HTTP 500 three times with capped, jittered backoff, then succeeds', async () => {
    const { api, storage, client } = await setup();
    const state = controlApi(api, storage, {
      presign: (n, res) => (n <= 3 ? (json(res, 500, { error: { code: 'internal', message: 'boom' } }), true) : false),
    });
    const env = fakeEnv();
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: env });
    expect(result).toMatchObject({ kind: 'uploaded' });
    expect(state.presigns).toBe(4);
    // random() = 0.5 of min(1000, 100·2^n)
    expect(env.sleeps).toEqual([50, 100, 200]);
  });

  it('gives a retry result with a delay when the 5xx outlasts the attempts', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      presign: (_n, res) => (json(res, 503, { error: { code: 'unavailable', message: 'maintenance' } }), true),
    });
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'retry', code: 'UPLOAD_FAILED', stop: false, delay_ms: 500 });
    expect((result as { reason: string }).reason).toContain('HTTP 503: [unavailable] maintenance');
  });

  it('honours Retry-After in seconds and as an HTTP-date', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      presign: (n, res) => {
        if (n === 1)
          return (
            json(res, 429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '7' }), true
          );
        if (n === 2) return (json(res, 503, {}, { 'retry-after': 'Thu, 01 Jan 2026 00:00:12 GMT' }), true);
        return false;
      },
    });
    const env = fakeEnv();
    expect(await uploadBundle(client, item, { retry: policy, retryEnv: env })).toMatchObject({ kind: 'uploaded' });
    expect(env.sleeps).toEqual([7_000, 12_000]);
  });

  it('does not sleep through a long Retry-After: the record is rescheduled instead', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, { presign: (_n, res) => (json(res, 429, {}, { 'retry-after': '3600' }), true) });
    const env = fakeEnv();
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: env });
    expect(result).toMatchObject({ kind: 'retry', delay_ms: 3_600_000, stop: false });
    expect(env.sleeps).toEqual([]);
  });

  it('retries an upload whose connection was reset mid-body', async () => {
    let resets = 0;
    const { api, storage, client } = await setup({
      storageRaw: (req) => {
        if (resets > 0) return false;
        let received = 0;
        req.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > MiB && resets === 0) {
            resets++;
            req.socket.destroy();
          }
        });
        return true;
      },
    });
    const state = controlApi(api, storage);
    const env = fakeEnv();
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: env });
    expect(result).toMatchObject({ kind: 'uploaded' });
    expect(resets).toBe(1);
    expect(env.sleeps).toHaveLength(1);
    expect(state.stored?.length).toBe(item.size);
  });

  it("fails the record with the server's reason on a 4xx with a JSON error", async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      presign: (_n, res) => (
        json(res, 400, {
          error: {
            code: 'invalid_request',
            message: `size_bytes exceeds the limit; token ${TOKEN} at ${storage.origin}/x?X-Amz-Signature=${SIGNATURE}`,
          },
        }),
        true
      ),
    });
    const env = fakeEnv();
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: env });
    expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_REJECTED', status: 400 });
    expect((result as { reason: string }).reason).toContain('[invalid_request] size_bytes exceeds the limit');
    expect(env.sleeps).toEqual([]);
    expectClean(result);
  });

  it('fails the record when complete finds a size or digest mismatch', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      complete: (_n, res) => (
        json(res, 400, { error: { code: 'checksum_mismatch', message: 'stored object does not match' } }), true
      ),
    });
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_REJECTED', upload_id: 'up_1' });
    expect((result as { reason: string }).reason).toContain('checksum_mismatch');
  });

  it('presigns afresh when the signed URL has expired (403)', async () => {
    const { api, storage, client } = await setup();
    const state = controlApi(api, storage, {
      put: (n, res) => {
        if (n > 1) return false;
        res
          .writeHead(403, { 'content-type': 'application/xml' })
          .end('<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>');
        return true;
      },
    });
    const env = fakeEnv();
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: env });
    expect(result).toMatchObject({ kind: 'uploaded' });
    expect(state.presigns).toBe(2);
    expect(storage.seen[1]!.url).toContain('obj-2');
    expect(env.sleeps).toEqual([]);
  });

  it('retries later (never fails the record) when fresh signed URLs keep being refused', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      put: (_n, res) => (
        res.writeHead(403).end('<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>'), true
      ),
    });
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'retry', code: 'UPLOAD_EXPIRED', stop: false });
    expect((result as { reason: string }).reason).toContain('[AccessDenied] Request has expired');
    expect((result as { reason: string }).reason).toContain('?[redacted]');
    expectClean(result);
  });

  it('stops the drain on a refused token and names no secret', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      presign: (_n, res) => (json(res, 401, { error: { code: 'unauthorized', message: `bad token ${TOKEN}` } }), true),
    });
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'retry', code: 'AUTH_FAILED', stop: true });
    expectClean(result);
  });

  it('keeps storage failures free of signatures and tokens', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      put: (_n, res) => (
        res
          .writeHead(500)
          .end(
            `<Error><Code>InternalError</Code><Message>see ${storage.origin}/b?X-Amz-Signature=${SIGNATURE}` +
              `&Authorization=Bearer%20${TOKEN}</Message></Error>`,
          ),
        true
      ),
    });
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'retry', code: 'UPLOAD_FAILED' });
    expectClean(result);
  });

  it('refuses a complete_url off the Control API origin (the token would go there)', async () => {
    const { api, storage, client } = await setup();
    api.handle((_req, res) =>
      json(res, 200, {
        upload_id: 'up_1',
        status: 'pending',
        upload_url: `${storage.origin}/b`,
        method: 'PUT',
        headers: {},
        complete_url: `${storage.origin}/steal`,
      }),
    );
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'retry', stop: true });
    expect((result as { reason: string }).reason).toContain('complete_url');
    expect(storage.seen).toHaveLength(0);
  });

  it('does not upload a bundle whose size is not the recorded one', async () => {
    const { api, storage, client } = await setup();
    const state = controlApi(api, storage);
    const result = await uploadBundle(client, { ...item, size: item.size + 1 }, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_FAILED' });
    expect(state.puts).toBe(0);
  });

  it.each([
    ['read whole', 10],
    ['streamed', 3 * MiB + 17],
  ])('neither uploads nor waits on a FIFO put where a bundle (%s) should be', async (_how, size) => {
    const { api, storage, client } = await setup();
    const state = controlApi(api, storage);
    const fifo = path.join(dir, `fifo-${size}.bundle`);
    execFileSync('mkfifo', [fifo]);
    // Nothing ever writes to it: an open to read would wait forever (on the event loop, for a bundle read whole).
    const result = await uploadBundle(
      client,
      { ...item, size, bundleFile: fifo },
      { retry: policy, retryEnv: fakeEnv() },
    );
    expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_FAILED' });
    expect(state.puts).toBe(0);
  });

  it(
    'does not complete a bundle whose content is not the recorded digest (the storage service only keeps the ' +
      'digest)',
    async () => {
      const { api, storage, client } = await setup();
      // Blue's server presigns the digest as object metadata, which S3 stores without checking it against the body.
      const state = controlApi(api, storage, { signedHeaders: (sha256) => ({ 'x-amz-meta-sha256': sha256 }) });
      const result = await uploadBundle(
        client,
        { ...item, sha256: '0'.repeat(64) },
        { retry: policy, retryEnv: fakeEnv() },
      );
      expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_FAILED' });
      expect((result as { reason: string }).reason).toContain('its SHA-256 is not the recorded one');
      expect(state.puts).toBe(1);
      expect(state.completes).toBe(0);
    },
  );

  it(
    'does not complete a bundle whose content is not the recorded digest (the storage service checks a signed ' +
      'checksum)',
    async () => {
      const { api, storage, client } = await setup();
      const state = controlApi(api, storage);
      const result = await uploadBundle(
        client,
        { ...item, sha256: '0'.repeat(64) },
        { retry: policy, retryEnv: fakeEnv() },
      );
      expect(result).toMatchObject({ kind: 'failed', code: 'UPLOAD_REJECTED', status: 400 });
      expect((result as { reason: string }).reason).toContain('[BadDigest]');
      expect(state.stored).toBeUndefined();
      expect(state.completes).toBe(0);
    },
  );
});

describe('uploadBundle edge cases', () => {
  it('treats a refused second complete as done when presign says the server holds the bundle', async () => {
    let completed = false;
    const { api, storage, client } = await setup({
      apiRaw: (req) => {
        // The first complete is applied but its answer is lost with the connection.
        if (req.url === '/api/session-uploads/up_1/complete' && !completed) {
          completed = true;
          req.resume();
          req.on('end', () => req.socket.destroy());
          return true;
        }
        return false;
      },
    });
    controlApi(api, storage, {
      complete: (_n, res) => (
        json(res, 409, { error: { code: 'already_complete', message: 'upload is complete' } }), true
      ),
      presign: (n, res) => (n > 1 ? (json(res, 200, { upload_id: 'up_1', status: 'complete' }), true) : false),
    });
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toEqual({ kind: 'uploaded', upload_id: 'up_1', already: true });
  });

  it("presigns at the policy's presign_url", async () => {
    const { api, client } = await setup();
    api.handle((req, res) =>
      req.url === '/custom/presign?v=2'
        ? json(res, 200, { upload_id: 'up_7', status: 'complete' })
        : json(res, 404, { error: { code: 'not_found', message: 'no' } }),
    );
    const result = await uploadBundle(client, item, {
      retry: policy,
      retryEnv: fakeEnv(),
      presignUrl: `${api.origin}/custom/presign?v=2`,
    });
    expect(result).toEqual({ kind: 'uploaded', upload_id: 'up_7', already: true });
    expect(api.seen.map((r) => r.url)).toEqual(['/custom/presign?v=2']);
  });

  it('treats a Control API that never answers as transient', async () => {
    const api = await startServer({ raw: () => true });
    servers.push(api);
    const client = await ControlClient.create({
      controlUrl: api.origin,
      token: TOKEN,
      tokenSource: 't',
      env: {},
      userAgent: 'x',
      timeoutMs: 300,
    });
    clients.push(client);
    const result = await uploadBundle(client, item, { retry: { ...policy, maxAttempts: 2 }, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'retry', code: 'UPLOAD_FAILED', stop: false });
    expect((result as { reason: string }).reason).toMatch(/timed out/);
  });

  it('refuses an oversize Control API answer', async () => {
    const { api, client } = await setup();
    api.handle((_req, res) =>
      json(res, 200, { upload_id: 'up_1', status: 'complete', padding: 'x'.repeat(300 * 1024) }),
    );
    const result = await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() });
    expect(result).toMatchObject({ kind: 'retry', stop: true });
    expect((result as { reason: string }).reason).toMatch(/larger than/);
  });
});

describe('presign URL from the policy', () => {
  it('accepts the Control API origin and refuses any other, even an allowed upload origin', async () => {
    const { client, api } = await setup();
    expect(
      resolvePresignUrl(
        client,
        { session_upload: { presign_url: `${api.origin}/api/session-uploads/presign` } } as never,
        { file: 'policy' },
      ),
    ).toBe(`${api.origin}/api/session-uploads/presign`);
    expect(resolvePresignUrl(client, {} as never, { file: 'policy' })).toBeUndefined();
    const foreign = { session_upload: { presign_url: 'https://evil.example/presign' } } as never;
    expect(() => resolvePresignUrl(client, foreign, { file: 'policy' })).toThrow(/neither the Control API's origin/);
    expect(() =>
      resolvePresignUrl(client, foreign, { file: 'policy', allowedOrigins: ['https://evil.example'] }),
    ).toThrow(/token is only sent to the Control API/);
  });
});

describe('storageChecksDigest', () => {
  const sha256 = createHash('sha256').update('bundle').digest('hex');
  const checksum = Buffer.from(sha256, 'hex').toString('base64');
  const sigv4 = (signed: string) =>
    `https://bucket.s3.example.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-SignedHeaders=` +
    `${encodeURIComponent(signed)}&X-Amz-Signature=abc`;

  it('trusts a checksum header the storage service was signed to check, carrying the recorded digest', () => {
    // This project's Control API: S3 URLs sign the header; its own store signs the digest into the URL and checks both.
    expect(
      storageChecksDigest(
        {
          method: 'PUT',
          url: sigv4('content-length;host;x-amz-checksum-sha256'),
          headers: { 'x-amz-checksum-sha256': checksum },
        },
        sha256,
      ),
    ).toBe(true);
    expect(
      storageChecksDigest(
        { method: 'PUT', url: 'http://127.0.0.1:9/blobs/k?sig=abc', headers: { 'X-Amz-Checksum-SHA256': checksum } },
        sha256.toUpperCase(),
        'http://127.0.0.1:9',
      ),
    ).toBe(true);
  });

  it('hashes on the way out when the storage service would not refuse other bytes', () => {
    const url = 'https://bucket.s3.example.com/k?X-Amz-Signature=abc';
    // Metadata (Blue's server), no digest at all, another digest, a malformed record digest.
    expect(storageChecksDigest({ method: 'PUT', url, headers: { 'x-amz-meta-sha256': sha256 } }, sha256)).toBe(false);
    expect(storageChecksDigest({ method: 'PUT', url, headers: {} }, sha256)).toBe(false);
    expect(
      storageChecksDigest(
        { method: 'PUT', url, headers: { 'x-amz-checksum-sha256': Buffer.alloc(32).toString('base64') } },
        sha256,
      ),
    ).toBe(false);
    expect(
      storageChecksDigest({ method: 'PUT', url, headers: { 'x-amz-checksum-sha256': checksum } }, 'not-a-digest'),
    ).toBe(false);
    // A URL signed some other way, not the Control API's own store's.
    expect(
      storageChecksDigest(
        { method: 'PUT', url: 'http://127.0.0.1:9/blobs/k?sig=abc', headers: { 'x-amz-checksum-sha256': checksum } },
        sha256,
      ),
    ).toBe(false);
    expect(
      storageChecksDigest(
        { method: 'PUT', url: 'http://127.0.0.1:9/blobs/k?sig=abc', headers: { 'x-amz-checksum-sha256': checksum } },
        sha256,
        'http://127.0.0.1:8',
      ),
    ).toBe(false);
    // A SigV4 URL that does not sign the header: S3 enforces no checksum it was not signed for.
    expect(
      storageChecksDigest(
        { method: 'PUT', url: sigv4('content-length;host'), headers: { 'x-amz-checksum-sha256': checksum } },
        sha256,
      ),
    ).toBe(false);
  });
});

describe('retry policy', () => {
  it('backs off exponentially with full jitter under a cap', () => {
    const p = { maxAttempts: 10, baseDelayMs: 1_000, maxDelayMs: 30_000, maxInlineRetryAfterMs: 0 };
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, p, () => 0.999999))).toEqual([
      999, 1999, 3999, 7999, 15999, 29999, 29999,
    ]);
    expect(backoffDelay(3, p, () => 0)).toBe(0);
  });

  it('retries only transient failures and gives up after maxAttempts', async () => {
    const env = fakeEnv();
    let calls = 0;
    const failing = withRetry(
      async () => {
        calls++;
        throw new UploadError('transient', 'UPLOAD_FAILED', 'x');
      },
      { policy, env },
    );
    await expect(failing).rejects.toBeInstanceOf(UploadError);
    expect(calls).toBe(4);
    calls = 0;
    await expect(
      withRetry(
        async () => {
          calls++;
          throw new UploadError('record', 'UPLOAD_REJECTED', 'x');
        },
        { policy, env },
      ),
    ).rejects.toBeInstanceOf(BlueError);
    expect(calls).toBe(1);
  });
});

describe('messages', () => {
  it('puts no signed URL in a network error', async () => {
    const probe = await startServer();
    const origin = probe.origin;
    await probe.close();
    const undici = await import('undici');
    const dispatcher = new undici.Agent();
    try {
      const error = await uploadFile(
        { method: 'PUT', url: `${origin}/b?X-Amz-Signature=${SIGNATURE}`, headers: {} },
        bundleFile,
        item,
        {
          dispatcher,
          timeoutMs: 2_000,
        },
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UploadError);
      expect((error as UploadError).kind).toBe('transient');
      expect((error as UploadError).message).toContain('connection refused');
      expect((error as UploadError).message).not.toContain(SIGNATURE);
    } finally {
      await dispatcher.destroy();
    }
  });

  it('builds the presign request without absent optional fields', () => {
    const request = presignRequest({
      ...item,
      manifest: { harness: 'codex', native_session_id: 's', compatibility_profile: 'p', captured_at_unix_ms: 1 },
    });
    delete (request as { resumable?: boolean }).resumable;
    expect(Object.keys(request).sort()).toEqual(
      [
        'artifact_format',
        'captured_at_unix_ms',
        'compatibility_profile',
        'content_type',
        'harness',
        'session_id',
        'sha256',
        'size_bytes',
      ].sort(),
    );
  });
});

describe('status mapping', () => {
  it('keeps records on a 404 (a wrong control_url), and fails them on other 4xx', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      presign: (_n, res) => (json(res, 404, { error: { code: 'not_found', message: 'no route' } }), true),
    });
    expect(await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() })).toMatchObject({
      kind: 'retry',
      stop: true,
    });
    controlApi(api, storage, {
      presign: (_n, res) => (
        json(res, 422, { error: { code: 'unsupported_profile', message: 'profile unknown' } }), true
      ),
    });
    expect(await uploadBundle(client, item, { retry: policy, retryEnv: fakeEnv() })).toMatchObject({
      kind: 'failed',
      code: 'UPLOAD_REJECTED',
      status: 422,
    });
  });

  it('retries a storage 503 with its Retry-After, then uploads', async () => {
    const { api, storage, client } = await setup();
    controlApi(api, storage, {
      put: (n, res) =>
        n === 1
          ? (res.writeHead(503, { 'retry-after': '2' }).end('<Error><Code>SlowDown</Code></Error>'), true)
          : false,
    });
    const env = fakeEnv();
    expect(await uploadBundle(client, item, { retry: policy, retryEnv: env })).toMatchObject({
      kind: 'uploaded',
      already: false,
    });
    expect(env.sleeps).toEqual([2_000]);
  });
});
