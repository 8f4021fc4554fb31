/**
 * A real Control API on 127.0.0.1 with a real database — SQLite in a temporary directory, or a fresh database of the
 * run's PostgreSQL cluster (`backend: 'postgres'`) — and the local blob store, plus a few users, for the control-plane
 * tests, and replicas of it (`startReplica`: another server on the same database, with module state of its own). Every
 * answer a test sees through `call` is checked against the server's schemas and Blue's contract.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { vi } from 'vitest';
import { createLocalBlobStore } from '../../packages/control-api/src/blobs/local.js';
import type { BlobStore } from '../../packages/control-api/src/blobs/types.js';
import { harnessMetadataDocument, knownProfiles } from '../../packages/control-api/src/harness-metadata.js';
import {
  createControlServer,
  type ControlServer,
  type ControlServerOptions,
} from '../../packages/control-api/src/server.js';
import { openStore, type StoreOptions } from '../../packages/control-api/src/store/index.js';
import { loadProfiles } from '../../packages/contract/src/profiles/index.js';
import { checkAnswerContract } from './contract.js';
import { agentRoot, controlApiRoot } from './context.js';
import { freshDatabase } from './postgres-db.js';

export const BUNDLE_TYPE = 'application/vnd.blue.session-bundle+tar+gzip';

export interface TestUser {
  id: string;
  email: string;
  token: string;
}

export interface TestServer {
  url: string;
  root: string;
  dataDir: string;
  blobDir: string;
  server: ControlServer;
  /** Where its database is, for the admin functions (`users add`, `gc`, ...). */
  storeOptions: StoreOptions;
  clock: { now(): number; advance(ms: number): void };
  admin: TestUser;
  alice: TestUser;
  bob: TestUser;
  carol: TestUser;
  /** One request; a successful answer is checked against its route's schema (test/support/contract.ts). */
  call(
    method: string,
    route: string,
    token: string | undefined,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** presign → PUT → complete; returns the complete answer, the artifact's id and the captured session's. */
  upload(
    user: TestUser,
    bytes: Buffer,
    fields?: Record<string, unknown>,
  ): Promise<{ status: number; body: any; uploadId: string; sessionId: string }>;
  close(): Promise<void>;
}

export function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export function presignBody(bytes: Buffer, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    harness: 'claude',
    session_id: 'sess-1',
    sha256: sha256(bytes),
    size_bytes: bytes.length,
    content_type: BUNDLE_TYPE,
    ...fields,
  };
}

export type Backend = 'sqlite' | 'postgres';
/** The two databases every Control API test runs against. */
export const BACKENDS: readonly Backend[] = ['sqlite', 'postgres'];

export interface TestServerOptions {
  backend?: Backend;
  /** The shipped profiles behind /harness-metadata and presign's profile check (default); false: none. */
  profiles?: boolean;
  retentionDays?: number;
  maxBodyBytes?: number;
  timeouts?: ControlServerOptions['timeouts'];
  log?: ControlServerOptions['log'];
  events?: ControlServerOptions['events'];
  /** Where the server's clock starts (default 2026-01-01): the real time for tests whose agents judge expiry by theirs.
   * */
  startAt?: number;
  /** Stands between the server and its local blob store (fault injection). */
  wrapBlobs?: (blobs: BlobStore) => BlobStore;
  /** Another blob store than the local one (an S3 bucket); `blobDir` is then unused. */
  blobs?: () => Promise<BlobStore>;
  /** Background garbage collection (off unless given: tests call gc themselves). */
  gc?: ControlServerOptions['gc'];
  indexer?: ControlServerOptions['indexer'];
  /** Token and device-code lifetimes (identity/oauth.ts). */
  identity?: ControlServerOptions['identity'];
  /** The server's clock runs with the real one (plus what `advance` adds): for agents that poll in real time. */
  liveClock?: boolean;
  /** Browser sign-in through an OpenID provider (test/support/oidc-provider.ts). */
  oidc?: ControlServerOptions['oidc'];
  /** Listen on this port (default: any free one): for a provider that must know the redirect URI first. */
  port?: number;
}

/** A free loopback port, for a server whose URL must be known before it starts. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * Another replica of `t`'s server, as another process would be: its modules loaded afresh (no module state shared with
 * `t`'s), a store of its own on the same database, the same blob directory and clock. Closed by the caller.
 */
export async function startReplica(t: TestServer): Promise<{ url: string; close(): Promise<void> }> {
  vi.resetModules();
  const fresh = (await import(
    '../../packages/control-api/src/server.js'
  )) as typeof import('../../packages/control-api/src/server.js');
  const stores = (await import(
    '../../packages/control-api/src/store/index.js'
  )) as typeof import('../../packages/control-api/src/store/index.js');
  const blobs = (await import(
    '../../packages/control-api/src/blobs/local.js'
  )) as typeof import('../../packages/control-api/src/blobs/local.js');
  const replica = fresh.createControlServer({
    store: await stores.openStore(t.storeOptions),
    blobs: (publicUrl) =>
      blobs.createLocalBlobStore({ dir: t.blobDir, publicUrl, secret: 'x'.repeat(32), clock: () => t.clock.now() }),
    clock: t.clock,
    gc: { intervalMs: 0 },
    assetsDir: path.join(controlApiRoot, 'dist', 'assets'),
  });
  const { url } = await replica.listen('127.0.0.1', 0);
  return { url, close: () => replica.close() };
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const root = await mkdtemp(path.join(tmpdir(), 'blue-control-'));
  const dataDir = path.join(root, 'data');
  const blobDir = path.join(dataDir, 'blobs');
  let now = options.startAt ?? Date.UTC(2026, 0, 1);
  let offset = 0;
  const clock =
    options.liveClock === true
      ? { now: () => Date.now() + offset, advance: (ms: number) => void (offset += ms) }
      : { now: () => now, advance: (ms: number) => void (now += ms) };
  const profiles = options.profiles === false ? undefined : await loadProfiles(path.join(agentRoot, 'profiles'));
  const storeOptions: StoreOptions = {
    dataDir,
    databaseUrl: options.backend === 'postgres' ? await freshDatabase() : undefined,
  };
  const store = await openStore(storeOptions);
  const server = createControlServer({
    store,
    ...(profiles === undefined
      ? {}
      : {
          harnessMetadata: harnessMetadataDocument(profiles),
          profiles: knownProfiles(profiles),
          bundleProfiles: profiles,
        }),
    blobs: async (publicUrl) => {
      if (options.blobs !== undefined) return options.blobs();
      const local = await createLocalBlobStore({
        dir: blobDir,
        publicUrl,
        secret: 'x'.repeat(32),
        clock: () => clock.now(),
      });
      return options.wrapBlobs?.(local) ?? local;
    },
    clock,
    retentionDays: options.retentionDays,
    maxBodyBytes: options.maxBodyBytes,
    timeouts: options.timeouts,
    log: options.log,
    events: options.events,
    gc: options.gc ?? { intervalMs: 0 },
    identity: options.identity,
    oidc: options.oidc,
    assetsDir: path.join(controlApiRoot, 'dist', 'assets'),
    indexer: options.indexer,
  });
  const { url } = await server.listen('127.0.0.1', options.port ?? 0);
  const add = async (email: string, admin: boolean): Promise<TestUser> => {
    const { user, token } = await server.store.addUser(email, admin, now);
    return { id: user.id, email, token };
  };
  const admin = await add('admin@example.com', true);
  const alice = await add('alice@example.com', false);
  const bob = await add('bob@example.com', false);
  const carol = await add('carol@example.com', false);

  const call: TestServer['call'] = async (method, route, token, body, headers = {}) => {
    const init: RequestInit = {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
    };
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    const response = await fetch(`${url}${route}`, init);
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      // Left as text: the assertion will show it.
    }
    // Every answer the API tests see is held to the contract its clients validate it with, and to Blue's.
    checkAnswerContract(method, route, response.status, parsed, response.headers.get('content-type'));
    return { status: response.status, body: parsed, headers: response.headers };
  };

  const upload: TestServer['upload'] = async (user, bytes, fields = {}) => {
    const presigned = await call('POST', '/session-uploads/presign', user.token, presignBody(bytes, fields));
    if (presigned.status !== 200) throw new Error(`presign failed: ${JSON.stringify(presigned.body)}`);
    const p = presigned.body;
    const put = await fetch(p.upload_url, { method: p.method, headers: p.headers, body: new Uint8Array(bytes) });
    if (put.status !== 200) throw new Error(`PUT failed: ${put.status} ${await put.text()}`);
    const done = await call('POST', new URL(p.complete_url).pathname, user.token);
    // What a session says is indexed after the answer: wait for it, so that tests search what they uploaded (unless the
    // test drives the indexer itself).
    if (options.indexer?.manual !== true) await server.searchIdle();
    return { status: done.status, body: done.body, uploadId: p.upload_id, sessionId: p.session_id };
  };

  return {
    url,
    root,
    dataDir,
    blobDir,
    server,
    storeOptions,
    clock,
    admin,
    alice,
    bob,
    carol,
    call,
    upload,
    close: async () => {
      await server.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
