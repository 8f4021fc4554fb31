/**
 * A tiny Control API on loopback for policy tests: serves one policy with an ETag, answers 304 to a matching
 * If-None-Match, and records every request it sees.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export interface PolicyServer {
  origin: string;
  requests: SeenRequest[];
  /** Replaces what GET /governance-config returns; the ETag changes with the body. */
  setPolicy(policy: unknown): void;
  /** Takes over every request (for error statuses, redirects, slow or huge answers). */
  setHandler(handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined): void;
  close(): Promise<void>;
}

export async function startPolicyServer(initial: unknown, options: { prefix?: string } = {}): Promise<PolicyServer> {
  let body = JSON.stringify(initial);
  let version = 1;
  let etag = `"v${version}"`;
  let custom: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const requests: SeenRequest[] = [];
  const route = `${options.prefix ?? ''}/governance-config`;

  const server: Server = createServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    if (custom !== undefined) return custom(req, res);
    if (req.method !== 'GET' || req.url !== route) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', etag }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    setPolicy(policy) {
      body = JSON.stringify(policy);
      version++;
      etag = `"v${version}"`;
    },
    setHandler(handler) {
      custom = handler;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An origin on which nothing listens: a port that was just released. */
export async function closedOrigin(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
