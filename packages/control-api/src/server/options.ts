/** What a Control API server is started with, and what starting one gives. */
import type { Server } from 'node:http';
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import type { BlobStore } from '../blobs/types.js';
import type { IdentitySettings } from '../identity/settings.js';
import type { OidcSettings } from '../identity/oidc.js';
import type { ServerLog } from '../log.js';
import type { RouteContext } from '../route-context.js';
import type { ControlStore } from '../store/index.js';

export interface ControlServerOptions {
  /** The opened database (store/index.ts `openStore`); the server closes it. */
  store: ControlStore;
  /** Base URL clients reach this server at (behind a proxy, say); default: the address it listens on. */
  publicUrl?: string | undefined;
  /**
   * Where bundles are kept. A factory is called at `listen` with the public URL, for stores whose URLs point back at
   * this server (the local store) when the port is only known once bound.
   */
  blobs: BlobStore | ((publicUrl: string) => Promise<BlobStore>);
  clock?: { now(): number } | undefined;
  uploadUrlTtlSeconds?: number | undefined;
  downloadUrlTtlSeconds?: number | undefined;
  retentionDays?: number | undefined;
  maxBodyBytes?: number | undefined;
  /** The document `GET /harness-metadata` answers (see harnessMetadataDocument); absent: that route answers 404. */
  harnessMetadata?: unknown;
  /** The profiles a presign may name (see knownProfiles); absent: any is accepted. */
  profiles?: RouteContext['profiles'];
  /** The profiles themselves, to verify a completed bundle and index what it says; absent: titles and summaries only.
   * */
  bundleProfiles?: ProfileSet | undefined;
  /** The search indexer's timings (search-indexer.ts). */
  indexer?: { pollMs?: number | undefined; leaseMs?: number | undefined; manual?: boolean | undefined } | undefined;
  /**
   * Slow clients: all headers must arrive within `headersMs` (default 30 s) and the whole request within `requestMs`
   * (300 s, room for a bundle PUT to the local store), else 408; a JSON body within `bodyMs` (30 s), else 408.
   */
  timeouts?:
    | { headersMs?: number | undefined; requestMs?: number | undefined; bodyMs?: number | undefined }
    | undefined;
  /** `GET /governance-config/events`: how often the database is asked for a new revision, and the streams' limits. */
  events?:
    | {
        pollMs?: number | undefined;
        keepaliveMs?: number | undefined;
        maxStreams?: number | undefined;
        maxLifetimeMs?: number | undefined;
      }
    | undefined;
  /** One line per request and per unexpected error, with its fields for structured logs (log.ts). Never given tokens.
   * */
  log?: ServerLog | undefined;
  /**
   * Garbage collection in the background (collectWith: objects past retention and of deleted sessions), first after
   * `firstMs` (default: a random time within the interval, so replicas spread), then every `intervalMs` (default an
   * hour); 0 turns it off.
   */
  gc?: { intervalMs?: number | undefined; firstMs?: number | undefined } | undefined;
  /** Token, device code, browser session and sign-in link lifetimes (identity/settings.ts: DEFAULT_IDENTITY). */
  identity?: Partial<IdentitySettings> | undefined;
  /** The dashboard's built assets (dist/assets). */
  assetsDir?: string | undefined;
  /** Browser sign-in through an OpenID provider; absent: one-time sign-in links only. */
  oidc?: OidcSettings | undefined;
  /** What `control-plane` commands add to reach this server's database (` --data DIR`), for the commands pages print.
   * */
  adminFlags?: string | undefined;
}

export interface ControlServer {
  /** Resolves once every completed session's text has been indexed (tests). */
  searchIdle(): Promise<void>;
  listen(host: string, port: number): Promise<{ url: string }>;
  close(): Promise<void>;
  readonly store: ControlStore;
  readonly server: Server;
  readonly blobs: BlobStore;
}
