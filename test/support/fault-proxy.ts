/**
 * The upload path end to end, with faults: a real Control API on 127.0.0.1 reached only through a small HTTP proxy
 * that forwards to it and, per route, answers for it, delays, corrupts or cuts requests. The server's public URL is the
 * proxy's, so the agent's presign, signed PUT and complete all cross it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLocalBlobStore } from '../../packages/control-api/src/blobs/local.js';
import type { BlobStore } from '../../packages/control-api/src/blobs/types.js';
import { openStore } from '../../packages/control-api/src/store/index.js';
import { createControlServer, type ControlServer } from '../../packages/control-api/src/server.js';
import type { ProfileSet } from '../../packages/contract/src/profiles/index.js';

export type FaultAction =
  /** Answer for the upstream, without forwarding (the request body is read first). */
  | { kind: 'answer'; status: number; headers?: Record<string, string>; body?: string }
  /** Forward the first `afterBytes` of the body, then cut both connections. */
  | { kind: 'reset-mid-body'; afterBytes: number }
  /** Forward with the body byte at `at` flipped: same length, other digest. */
  | { kind: 'corrupt-body'; at: number }
  /** Wait before forwarding. */
  | { kind: 'delay'; ms: number }
  /** Forward, let the upstream answer in full, then cut the client's connection instead of relaying it. */
  | { kind: 'drop-response' }
  /** Forward, and run `hook` after the upstream answered but before the answer is relayed. */
  | { kind: 'before-relay'; hook: () => Promise<void> };

export interface FaultRule {
  method?: string;
  path: RegExp;
  /** How many matching requests this rule takes; then it is spent. */
  times: number;
  action: FaultAction;
}

export interface SeenRequest {
  method: string;
  path: string;
  /** The query string, where signatures and expiries live. */
  query: string;
  at: number;
  /** The fault applied, or 'pass'. */
  fault: string;
  /** The status the client got, when it got one. */
  status?: number;
}

export interface FaultProxy {
  url: string;
  port: number;
  target: string;
  rules: FaultRule[];
  seen: SeenRequest[];
  /** Requests seen for `method` on paths matching `pattern`. */
  count(method: string, pattern: RegExp): number;
  /** Stop listening and cut open connections: clients get connection refused until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultProxy(): Promise<FaultProxy> {
  const sockets = new Set<Socket>();
  const proxy: FaultProxy = {
    url: '',
    port: 0,
    target: '',
    rules: [],
    seen: [],
    count: (method, pattern) => proxy.seen.filter((s) => s.method === method && pattern.test(s.path)).length,
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
    start: () => listen(proxy.port),
    close: () => proxy.stop(),
  };

  const server = http.createServer((req, res) => {
    const pathname = (req.url ?? '/').split('?')[0]!;
    const seen: SeenRequest = {
      method: req.method ?? '?',
      path: pathname,
      query: (req.url ?? '').slice(pathname.length),
      at: Date.now(),
      fault: 'pass',
    };
    proxy.seen.push(seen);
    res.on('finish', () => (seen.status = res.statusCode));
    const rule = proxy.rules.find(
      (r) => r.times > 0 && (r.method === undefined || r.method === req.method) && r.path.test(pathname),
    );
    if (rule !== undefined) {
      rule.times--;
      seen.fault = rule.action.kind;
    }
    void handle(req, res, rule?.action).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    action: FaultAction | undefined,
  ): Promise<void> {
    if (action?.kind === 'answer') {
      req.resume();
      await new Promise((resolve) => req.once('end', resolve));
      const body =
        action.body ?? JSON.stringify({ error: { code: 'injected', message: `injected HTTP ${action.status}` } });
      res.writeHead(action.status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        ...action.headers,
      });
      res.end(body);
      return;
    }
    if (action?.kind === 'delay') await sleep(action.ms);
    const target = new URL(proxy.target);
    const upstream = http.request({
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent: false,
    });
    upstream.on('error', () => res.destroy());
    // A client gone (or cut off by stop()) takes its upstream request with it: long-lived streams included.
    res.on('close', () => upstream.destroy());
    upstream.on('response', (answer) => {
      void (async () => {
        if (action?.kind === 'drop-response') {
          answer.resume();
          await new Promise((resolve) => answer.once('end', resolve));
          req.socket.destroy();
          return;
        }
        if (action?.kind === 'before-relay') {
          // Buffered so the hook runs after the upstream has finished with the request.
          const chunks: Buffer[] = [];
          for await (const chunk of answer) chunks.push(chunk as Buffer);
          await action.hook();
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(Buffer.concat(chunks));
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      })().catch(() => res.destroy());
    });

    let offset = 0;
    req.on('data', (chunk: Buffer) => {
      if (offset === Infinity) return;
      if (action?.kind === 'reset-mid-body') {
        if (offset + chunk.length >= action.afterBytes) {
          upstream.write(chunk.subarray(0, action.afterBytes - offset));
          upstream.destroy();
          req.socket.destroy();
          offset = Infinity;
          return;
        }
      } else if (action?.kind === 'corrupt-body' && action.at >= offset && action.at < offset + chunk.length) {
        chunk = Buffer.from(chunk);
        chunk[action.at - offset] = chunk[action.at - offset]! ^ 0xff;
      }
      offset += chunk.length;
      upstream.write(chunk);
    });
    req.on('end', () => upstream.end());
    req.on('error', () => upstream.destroy());
  }

  async function listen(port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    proxy.port = (server.address() as AddressInfo).port;
    proxy.url = `http://127.0.0.1:${proxy.port}`;
  }
  await listen(0);
  return proxy;
}

export interface UploadStack {
  root: string;
  blobDir: string;
  proxy: FaultProxy;
  server: ControlServer;
  /** The server itself, bypassing the proxy: where the tests check what it holds. */
  directUrl: string;
  token: string;
  /** GET /session-uploads as the agent's user, straight from the server: the captured sessions. */
  listUploads(): Promise<any[]>;
  /** The stored bytes of a captured session's current artifact, through a signed download URL. */
  download(sessionId: string): Promise<Buffer>;
  close(): Promise<void>;
}

/**
 * A Control API with a real clock behind a fault proxy, with one user and a policy that uploads. `blobs` defaults to
 * the local store in `<root>/blobs`; with `profiles`, the server reads bundles by them and indexes them for search.
 */
export async function startUploadStack(
  options: {
    uploadUrlTtlSeconds?: number;
    blobs?: (publicUrl: string) => Promise<BlobStore>;
    profiles?: ProfileSet;
  } = {},
): Promise<UploadStack> {
  const root = await mkdtemp(path.join(tmpdir(), 'blue-e2e-upload-'));
  const blobDir = path.join(root, 'blobs');
  const proxy = await startFaultProxy();
  const server = createControlServer({
    store: await openStore({ dataDir: path.join(root, 'data') }),
    publicUrl: proxy.url,
    blobs: options.blobs ?? ((publicUrl) => createLocalBlobStore({ dir: blobDir, publicUrl, secret: 'x'.repeat(32) })),
    uploadUrlTtlSeconds: options.uploadUrlTtlSeconds,
    ...(options.profiles === undefined ? {} : { bundleProfiles: options.profiles }),
  });
  const { url: directUrl } = await server.listen('127.0.0.1', 0);
  proxy.target = directUrl;
  const { token } = await server.store.addUser('alice@example.com', false, Date.now());
  await server.store.publishPolicy(
    { session_upload: { presign_url: `${proxy.url}/session-uploads/presign` } },
    Date.now(),
  );

  const call = async (method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const response = await fetch(`${directUrl}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: await response.json() };
  };

  return {
    root,
    blobDir,
    proxy,
    server,
    directUrl,
    token,
    async listUploads() {
      const listed = await call('GET', '/session-uploads');
      if (listed.status !== 200) throw new Error(`GET /session-uploads answered ${listed.status}`);
      return listed.body.items as any[];
    },
    async download(sessionId) {
      const signed = await call('POST', `/session-uploads/${sessionId}/download`, {});
      if (signed.status !== 200) throw new Error(`download answered ${signed.status}`);
      const response = await fetch(signed.body.download_url, {
        method: signed.body.method,
        headers: signed.body.headers,
      });
      if (response.status !== 200) throw new Error(`signed download answered ${response.status}`);
      return Buffer.from(await response.arrayBuffer());
    },
    async close() {
      await proxy.close().catch(() => undefined);
      await server.close().catch(() => undefined);
      await rm(root, { recursive: true, force: true });
    },
  };
}
