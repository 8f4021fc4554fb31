/**
 * The policy a client enforces (`GET /governance-config`, answered 304 while its ETag holds), the stream of its
 * new revisions, and the harness metadata the server was started with.
 */
import type { IncomingMessage } from 'node:http';
import {
  CLIENT_CAPABILITIES_HEADER,
  CONTRACT_VERSION_HEADER,
  REQUIRED_CLIENT_VERSION_HEADER,
  requiredClientVersion,
  unmetContract,
} from '../governance.js';
import { caller, type Request, type RouteContext } from '../route-context.js';
import { HttpError, sendEmpty, sendJson } from '../http.js';

export async function governanceConfig(rc: RouteContext, req: Request): Promise<void> {
  caller(req);
  const policy = await rc.store.currentPolicy();
  if (policy === undefined) throw new HttpError(404, 'no_policy', 'no governance policy has been published yet');
  const pin = requiredClientVersion(policy.body);
  const pinHeader: Record<string, string> = pin === undefined ? {} : { [REQUIRED_CLIENT_VERSION_HEADER]: pin };
  const unmet = unmetContract(
    policy.body,
    header(req.raw, CONTRACT_VERSION_HEADER),
    header(req.raw, CLIENT_CAPABILITIES_HEADER),
  );
  if (unmet !== undefined) throw new HttpError(426, 'client_upgrade_required', unmet, pinHeader);
  const headers = { etag: policy.etag, 'cache-control': 'no-cache', ...pinHeader };
  if (etagMatches(header(req.raw, 'if-none-match'), policy.etag)) {
    sendEmpty(req.reply, 304, headers);
    return;
  }
  sendJson(req.reply, 200, policy.body, headers);
}

/**
 * Server-sent events: the current revision at once, then each new one, as Blue's server sends them
 * (`event: revision`, `id: <revision>`, `data: {"revision":"<revision>"}`), with a keepalive comment between. Clients
 * fetch the document itself from `GET /governance-config`.
 */
export async function governanceEvents(rc: RouteContext, req: Request): Promise<void> {
  caller(req);
  const limits = rc.eventStreams;
  if (rc.revisions.listeners >= limits.maxStreams) {
    throw new HttpError(
      503,
      'too_many_streams',
      'this server holds as many event streams as it may; retry later or poll GET /governance-config',
      { 'retry-after': '30' },
    );
  }
  const response = req.reply.raw;
  req.reply.hijack();
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    // Proxies that buffer responses (nginx) must pass each event on as it is written.
    'x-accel-buffering': 'no',
  });
  response.flushHeaders();
  await new Promise<void>((resolve) => {
    const write = (text: string) => {
      if (!response.destroyed) response.write(text);
    };
    const unsubscribe = rc.revisions.subscribe((revision) =>
      write(`event: revision\nid: ${revision}\ndata: ${JSON.stringify({ revision })}\n\n`),
    );
    const keepalive = setInterval(() => write(': keepalive\n\n'), limits.keepaliveMs);
    const lifetime = setTimeout(() => response.end(), Math.round(limits.maxLifetimeMs * (0.9 + Math.random() * 0.2)));
    response.once('close', () => {
      unsubscribe();
      clearInterval(keepalive);
      clearTimeout(lifetime);
      resolve();
    });
  });
}

function header(raw: IncomingMessage, name: string): string | undefined {
  const value = raw.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function etagMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag === etag || tag === `W/${etag}`;
  });
}

export async function harnessMetadata(rc: RouteContext, req: Request): Promise<void> {
  caller(req);
  const metadata = rc.harnessMetadata;
  if (metadata === undefined)
    throw new HttpError(404, 'no_metadata', 'this server was started without compatibility profiles');
  const headers = { etag: metadata.etag, 'cache-control': 'no-cache' };
  if (etagMatches(header(req.raw, 'if-none-match'), metadata.etag)) {
    sendEmpty(req.reply, 304, headers);
    return;
  }
  sendJson(req.reply, 200, metadata.body, headers);
}
