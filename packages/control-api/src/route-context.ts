/**
 * What every route handler gets: the server's state and settings (`RouteContext`), and the request with its caller
 * (`Request`), which the server has authenticated before the handler runs. The routes themselves are in routes/,
 * the pages in web/, the sign-in endpoints in identity/.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { BlobStore } from './blobs/types.js';
import { HttpError } from './http.js';
import type { IdentitySettings } from './identity/settings.js';
import type { ServerLog } from './log.js';
import type { ServerMetrics } from './metrics.js';
import type { RevisionFeed } from './revision-feed.js';
import type { ControlStore, User } from './store/index.js';

export interface RouteContext {
  store: ControlStore;
  blobs: BlobStore;
  now(): number;
  publicUrl(): string;
  uploadUrlTtlMs: number;
  downloadUrlTtlMs: number;
  retentionMs: number;
  maxBodyBytes: number;
  /** How long a JSON body may take to arrive (then 408). */
  bodyTimeoutMs: number;
  /** `GET /harness-metadata`: the compatibility profiles this server vouches for, with their ETag. */
  harnessMetadata?: { body: unknown; etag: string } | undefined;
  /** The profiles a presign may name, per harness, and whether each resumes sessions; undefined: any is accepted. */
  profiles?: ReadonlyMap<string, ReadonlyMap<string, { resumes: boolean }>> | undefined;
  /** New governance revisions, for `GET /governance-config/events`. */
  revisions: RevisionFeed;
  eventStreams: EventStreamLimits;
  log: ServerLog;
  metrics: ServerMetrics;
  /** Reads what completed sessions say, for search; undefined: only titles and summaries are indexed. */
  indexer?: { kick(): void } | undefined;
  identitySettings: IdentitySettings;
  /** Where the dashboard's built stylesheet and scripts are (dist/assets); undefined: none are served. */
  assetsDir?: string | undefined;
  /** Browser sign-in through the organisation's identity provider; undefined: sign-in links only. */
  oidc?: ProviderSignIn | undefined;
  /** The profiles bundles are read with (the transcript viewer, search); undefined: transcripts are not shown. */
  bundleProfiles?: ProfileSet | undefined;
  /**
   * What `control-plane` commands on this server's machine add to reach its database (` --data DIR`; empty for the
   * default), for the commands pages print.
   */
  adminFlags: string;
}

export interface EventStreamLimits {
  /** A `: keepalive` comment this often, so proxies and clients know the stream is alive (Blue: 15 s). */
  keepaliveMs: number;
  /** Streams this server holds open at most; more are answered 503 with Retry-After. */
  maxStreams: number;
  /**
   * A stream is ended after this long (±10%), and the client reconnects: its token is checked again, and streams
   * spread over replicas that started since.
   */
  maxLifetimeMs: number;
}

/** Browser sign-in at an identity provider (identity/oidc.ts): its two pages, and its name for the sign-in button. */
export interface ProviderSignIn {
  readonly name: string;
  /** GET /auth/oidc/start: off to the provider. */
  start(rc: RouteContext, req: Request): Promise<void>;
  /** GET /auth/oidc/callback: the provider's answer; the person signed in. */
  callback(rc: RouteContext, req: Request): Promise<void>;
}

export interface Request {
  raw: IncomingMessage;
  reply: FastifyReply;
  url: URL;
  /**
   * The caller; public routes have none. An administrator whose token lacks the `admin` scope is a member here: every
   * administrator's right follows the token's scope as well as the person's role.
   */
  user: User | undefined;
  params: string[];
}

/** The caller of a route that is not public (the server authenticates before the handler runs). */
export function caller(req: Request): User {
  if (req.user === undefined)
    throw new HttpError(401, 'unauthenticated', 'send a bearer token: Authorization: Bearer <token>');
  return req.user;
}
