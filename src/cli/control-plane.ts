/**
 * `blue-agent control-plane ...`: run the reference Control API and administer its data directory.
 */
import path from 'node:path';
import type { Context } from '../context.js';
import { usageError } from '../errors.js';

export interface DataOptions {
  data?: string;
  json?: boolean;
}

export interface BlobOptions {
  blobStore?: string;
  blobDir?: string;
  s3Endpoint?: string;
  s3Bucket?: string;
  s3Region?: string;
  s3PathStyle?: boolean;
}

export interface ServeOptions extends DataOptions, BlobOptions {
  listen?: string;
  publicUrl?: string;
  retentionDays?: string;
  uploadUrlTtl?: string;
}

/** --data, else BLUE_CONTROL_DATA, else `$XDG_DATA_HOME/blue-agent/control` (`~/.local/share/blue-agent/control`). */
export function dataDir(ctx: Context, opts: DataOptions): string {
  const given = opts.data ?? ctx.env.BLUE_CONTROL_DATA;
  if (given !== undefined && given !== '') return path.resolve(ctx.cwd, given);
  return ctx.paths.controlDataDir;
}

/** The data directory of a command that must not create one (`users list`, `policy publish`, `gc`): it must exist and hold control.db. */
async function existingDataDir(ctx: Context, opts: DataOptions): Promise<string> {
  const dir = dataDir(ctx, opts);
  const { requireDataDir } = await import('../control-plane/store.js');
  requireDataDir(dir);
  return dir;
}

function print(ctx: Context, opts: DataOptions, json: unknown, text: string): void {
  ctx.stdout.write(opts.json === true ? `${JSON.stringify(json, null, 2)}\n` : text);
}

export async function usersAddCommand(ctx: Context, email: string, opts: DataOptions & { admin?: boolean }): Promise<number> {
  const { addUser } = await import('../control-plane/admin.js');
  const { user, token } = addUser(dataDir(ctx, opts), email, opts.admin === true, ctx.clock.now());
  print(
    ctx,
    opts,
    { ok: true, user_id: user.id, email: user.email, is_admin: user.is_admin, token },
    `Added ${user.is_admin ? 'administrator' : 'user'} ${user.email} (${user.id}).\n` +
      `Bearer token (shown only now; the server keeps only its hash):\n${token}\n`,
  );
  return 0;
}

export async function usersListCommand(ctx: Context, opts: DataOptions): Promise<number> {
  const { listUsers } = await import('../control-plane/admin.js');
  const users = listUsers(await existingDataDir(ctx, opts));
  print(
    ctx,
    opts,
    { ok: true, users: users.map((u) => ({ user_id: u.id, email: u.email, is_admin: u.is_admin, created_at: new Date(u.created_at).toISOString() })) },
    users.length === 0 ? 'No users yet.\n' : users.map((u) => `${u.id}  ${u.email}${u.is_admin ? '  (admin)' : ''}\n`).join(''),
  );
  return 0;
}

export async function policyPublishCommand(ctx: Context, file: string, opts: DataOptions): Promise<number> {
  const { publishPolicy } = await import('../control-plane/admin.js');
  const { published, ignoredRevision, warnings } = await publishPolicy(await existingDataDir(ctx, opts), path.resolve(ctx.cwd, file), ctx.clock.now());
  if (opts.json !== true) for (const warning of warnings) ctx.stderr.write(`warning: ${warning}\n`);
  print(
    ctx,
    opts,
    { ok: true, revision: published.revision, etag: published.etag, ignored_revision: ignoredRevision ?? null, warnings },
    `Published policy revision ${published.revision}.\n` +
      (ignoredRevision === undefined ? '' : `(The file's revision ${JSON.stringify(ignoredRevision)} was replaced: the server numbers revisions.)\n`),
  );
  return 0;
}

async function openBlobs(ctx: Context, dir: string, opts: BlobOptions, publicUrl: string) {
  const blobs = await import('../control-plane/blobs/index.js');
  const kind = opts.blobStore ?? 'local';
  if (kind === 'local') {
    return blobs.createLocalBlobStore({ dir: path.resolve(ctx.cwd, opts.blobDir ?? path.join(dir, 'blobs')), publicUrl });
  }
  if (kind === 's3') {
    if (opts.s3Bucket === undefined) throw usageError('--blob-store s3 needs --s3-bucket', 'Name the bucket: --s3-bucket NAME (and --s3-endpoint URL for an S3-compatible server).');
    // Loaded only here: the AWS SDK. Credentials: its default chain (environment, profiles, web identity, container or
    // instance role).
    const s3 = await import('../control-plane/blobs/s3.js');
    return s3.createS3BlobStore(
      s3.s3Options(ctx.env, { endpoint: opts.s3Endpoint, bucket: opts.s3Bucket, region: opts.s3Region, forcePathStyle: opts.s3PathStyle }),
    );
  }
  throw usageError(`unknown blob store "${kind}"`, 'Use --blob-store local or --blob-store s3.');
}

export async function gcCommand(ctx: Context, opts: DataOptions & BlobOptions): Promise<number> {
  const { collectGarbage } = await import('../control-plane/admin.js');
  const dir = await existingDataDir(ctx, opts);
  // Only delete is used, so the URL the local store would sign with does not matter here.
  const blobs = await openBlobs(ctx, dir, opts, 'http://127.0.0.1');
  try {
    const result = await collectGarbage(dir, blobs, ctx.clock.now());
    print(
      ctx,
      opts,
      { ok: result.failed.length === 0, ...result },
      `Deleted ${result.deleted.length} expired object${result.deleted.length === 1 ? '' : 's'}.\n` +
        result.failed.map((f) => `  could not delete ${f.id}: ${f.error}\n`).join(''),
    );
    return result.failed.length === 0 ? 0 : 1;
  } finally {
    await blobs.close();
  }
}

function positiveNumber(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw usageError(`${name} must be a positive number, not "${value}"`, `Give ${name} a number greater than 0, e.g. ${name} 30.`);
  return n;
}

export function parseListen(value: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  const port = match === null ? Number.NaN : Number(match[3]);
  if (match === null || port > 65535) throw usageError(`--listen must be HOST:PORT (e.g. 127.0.0.1:8080), not "${value}"`, 'Use 127.0.0.1:PORT for this machine only, 0.0.0.0:PORT for every interface, [::1]:PORT for IPv6.');
  return { host: match[1] ?? match[2]!, port };
}

/** A socket that cannot be bound is a matter of the --listen given, not a bug. */
function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  if (code === 'EADDRINUSE') return usageError(`${where} is in use; choose another --listen`, 'Another process listens there (perhaps another `control-plane serve`); stop it or pick a free port.');
  if (code === 'EACCES') return usageError(`not allowed to listen on ${where}; choose another --listen`, 'Ports below 1024 need privileges: use a port of 1024 or more.');
  if (code === 'EADDRNOTAVAIL') return usageError(`${host} is not an address of this machine; choose another --listen`, 'Use 127.0.0.1, 0.0.0.0 or an address this machine has.');
  return error;
}

/** A path as one shell word. */
function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Serves until SIGINT or SIGTERM (or `stop`, for tests). */
export async function serveCommand(ctx: Context, opts: ServeOptions, stop?: Promise<void>): Promise<number> {
  const { createControlServer } = await import('../control-plane/server.js');
  const dir = dataDir(ctx, opts);
  const { host, port } = parseListen(opts.listen ?? '127.0.0.1:8080');
  if (opts.publicUrl !== undefined && !/^https?:\/\/[^/\s]+\/?$/.test(opts.publicUrl)) {
    throw usageError(`--public-url must be an http(s) origin such as https://control.example.com, not "${opts.publicUrl}"`, 'Give the scheme, host and port agents reach this server at, without a path.');
  }
  const { loadProfiles } = await import('../profiles/index.js');
  const { harnessMetadataDocument } = await import('../control-plane/harness-metadata.js');
  const server = createControlServer({
    dataDir: dir,
    harnessMetadata: harnessMetadataDocument(await loadProfiles(ctx.paths.profilesDir)),
    publicUrl: opts.publicUrl,
    blobs: (publicUrl) => openBlobs(ctx, dir, opts, publicUrl),
    clock: ctx.clock,
    retentionDays: positiveNumber('--retention-days', opts.retentionDays),
    uploadUrlTtlSeconds: positiveNumber('--upload-url-ttl', opts.uploadUrlTtl),
    log: (level, line) => (level === 'error' ? ctx.logger.error(line) : ctx.logger.info(line)),
  });
  let url: string;
  try {
    ({ url } = await server.listen(host, port));
  } catch (error) {
    await server.close();
    throw listenError(error, host, port);
  }
  const publicUrl = (opts.publicUrl ?? url).replace(/\/+$/, '');
  const { firstStart, recordPublicUrl } = await import('../control-plane/admin.js');
  let started;
  try {
    // Where agents reach this server: `policy publish` (run without the server) checks presign_url against it.
    recordPublicUrl(dir, publicUrl);
    started = firstStart(server.store, dir, publicUrl, ctx.clock.now());
  } catch (error) {
    await server.close();
    throw error;
  }
  ctx.stdout.write(`Control API listening on ${url} (data ${dir}, ${server.blobs.kind} blob store)\n`);
  if (started.admin !== undefined) {
    // The token itself is never printed: a terminal's output often ends up in a log (a service's journal).
    ctx.stdout.write(
      `Created the administrator ${started.admin.email}; its token is in ${started.admin.tokenFile} (readable only by you).\n` +
        `Log this machine in with:\n  blue-agent login --control-url ${publicUrl} --token-stdin < ${shellQuote(started.admin.tokenFile)}\n`,
    );
  }
  if (started.policy !== undefined) {
    ctx.stdout.write(
      `Published a default policy (revision ${started.policy.revision}): capture on for every harness, uploads presigned at ${publicUrl}/session-uploads/presign.\n` +
        `Publish your own with: blue-agent control-plane policy publish FILE${opts.data === undefined ? '' : ` --data ${shellQuote(dir)}`}\n`,
    );
  }
  await new Promise<void>((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
    void stop?.then(done);
  });
  await server.close();
  ctx.stdout.write('Control API stopped.\n');
  return 0;
}
