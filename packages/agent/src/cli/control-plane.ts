/**
 * `blue-agent control-plane ...`: run the reference Control API and administer it: its data directory, and its
 * database (SQLite in the data directory, or PostgreSQL with --database-url / BLUE_CONTROL_DATABASE_URL).
 */
import path from 'node:path';
import type { Context } from '../context.js';
import { BlueError, usageError } from '@blue-agent/contract/errors.js';
import type { OidcSettings } from '@blue-agent/control-api/identity/oidc.js';
import type { AuditActor, Grant, StoreOptions } from '@blue-agent/control-api/store/index.js';

export interface DataOptions {
  data?: string;
  databaseUrl?: string;
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
  gcInterval?: string;
  logFormat?: string;
  oidcIssuer?: string;
  oidcClientId?: string;
  oidcClientSecretFile?: string;
  oidcAdminGroup?: string;
  oidcScope?: string;
  oidcName?: string;
  oidcAllowUnverifiedEmail?: boolean;
}

/** --data, else BLUE_CONTROL_DATA, else `$XDG_DATA_HOME/blue-agent/control` (`~/.local/share/blue-agent/control`). */
export function dataDir(ctx: Context, opts: DataOptions): string {
  const given = opts.data ?? ctx.env.BLUE_CONTROL_DATA;
  if (given !== undefined && given !== '') return path.resolve(ctx.cwd, given);
  return ctx.paths.controlDataDir;
}

/** --database-url, else BLUE_CONTROL_DATABASE_URL; undefined: SQLite in the data directory. */
export function databaseUrl(ctx: Context, opts: DataOptions): string | undefined {
  const given = opts.databaseUrl ?? ctx.env.BLUE_CONTROL_DATABASE_URL;
  if (given === undefined || given === '') return undefined;
  if (!/^postgres(?:ql)?:\/\//.test(given)) {
    throw usageError(
      '--database-url must be a PostgreSQL URL such as postgres://user:password@host:5432/blue',
      'Or leave it out to keep the data in SQLite in the data directory.',
    );
  }
  return given;
}

/** Where a command's database is; `create: false` refuses a data directory that does not exist (no database URL). */
function storeOptions(ctx: Context, opts: DataOptions, create: boolean): StoreOptions {
  return { dataDir: dataDir(ctx, opts), databaseUrl: databaseUrl(ctx, opts), create };
}

/**
 * Who the audit log says ran an administration command: the local operator, by their OS user (a person with the
 * database at hand is the server's operator, whatever account they sign in with elsewhere).
 */
export function operator(ctx: Context): AuditActor {
  const name = ctx.env.USER ?? ctx.env.LOGNAME ?? '';
  const uid = process.getuid?.();
  return {
    kind: 'cli',
    name: (name.trim() === '' ? (uid === undefined ? 'unknown' : `uid ${uid}`) : name.trim()).slice(0, 256),
  };
}

function print(ctx: Context, opts: DataOptions, json: unknown, text: string): void {
  ctx.stdout.write(opts.json === true ? `${JSON.stringify(json, null, 2)}\n` : text);
}

export async function usersAddCommand(
  ctx: Context,
  email: string,
  opts: DataOptions & { admin?: boolean },
): Promise<number> {
  const { addUser } = await import('@blue-agent/control-api/admin.js');
  const { user, token } = await addUser(
    storeOptions(ctx, opts, true),
    email,
    opts.admin === true,
    ctx.clock.now(),
    operator(ctx),
  );
  print(
    ctx,
    opts,
    { ok: true, user_id: user.id, email: user.email, is_admin: user.is_admin, token },
    `Added ${user.is_admin ? 'administrator' : 'user'} ${user.email} (${user.id}).\n` +
      `Bearer token (shown only now; the server keeps only its hash):\n${token}\n`,
  );
  return 0;
}

export async function usersLinkCommand(ctx: Context, email: string, opts: DataOptions): Promise<number> {
  const { makeSignInLink } = await import('@blue-agent/control-api/admin.js');
  const {
    user,
    url,
    expires_at: expires,
  } = await makeSignInLink(storeOptions(ctx, opts, false), email, ctx.clock.now(), operator(ctx));
  print(
    ctx,
    opts,
    { ok: true, email: user.email, url, expires_at: new Date(expires).toISOString() },
    `One-time sign-in link for ${user.email} (works once, until ${new Date(expires).toISOString()}; send it ` +
      `privately):\n${url}\n`,
  );
  return 0;
}

export async function usersListCommand(ctx: Context, opts: DataOptions): Promise<number> {
  const { listUsers } = await import('@blue-agent/control-api/admin.js');
  const users = await listUsers(storeOptions(ctx, opts, false));
  print(
    ctx,
    opts,
    {
      ok: true,
      users: users.map((u) => ({
        user_id: u.id,
        email: u.email,
        is_admin: u.is_admin,
        created_at: new Date(u.created_at).toISOString(),
      })),
    },
    users.length === 0
      ? 'No users yet.\n'
      : users.map((u) => `${u.id}  ${u.email}${u.is_admin ? '  (admin)' : ''}\n`).join(''),
  );
  return 0;
}

/** A sign-in as `tokens list` shows it: id, whose, what, and whether it works. */
function tokenLine(grant: Grant, now: number): string {
  const state =
    grant.revoked_at !== null ? 'revoked' : grant.expires_at !== null && grant.expires_at <= now ? 'lapsed' : 'active';
  const used = grant.last_used_at === null ? 'never used' : `last used ${new Date(grant.last_used_at).toISOString()}`;
  return `${grant.id}  ${grant.user_email}  ${grant.kind}  ${state}  ${used}  ${grant.label}\n`;
}

function tokenJson(grant: Grant, now: number): Record<string, unknown> {
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    id: grant.id,
    user_id: grant.user_id,
    email: grant.user_email,
    kind: grant.kind,
    label: grant.label,
    scopes: grant.scopes,
    created_at: iso(grant.created_at),
    last_used_at: iso(grant.last_used_at),
    expires_at: iso(grant.expires_at),
    revoked_at: iso(grant.revoked_at),
    active: grant.revoked_at === null && (grant.expires_at === null || grant.expires_at > now),
  };
}

export async function tokensAddCommand(
  ctx: Context,
  email: string,
  opts: DataOptions & { label?: string },
): Promise<number> {
  const { addToken } = await import('@blue-agent/control-api/admin.js');
  const { user, token, grant } = await addToken(
    storeOptions(ctx, opts, false),
    email,
    opts.label,
    ctx.clock.now(),
    operator(ctx),
  );
  print(
    ctx,
    opts,
    { ok: true, ...tokenJson(grant, ctx.clock.now()), token },
    `Added a token for ${user.email} (${grant.id}).\nBearer token (shown only now; the server keeps only its ` +
      `hash):\n${token}\n`,
  );
  return 0;
}

export async function tokensListCommand(ctx: Context, email: string | undefined, opts: DataOptions): Promise<number> {
  const { listTokens } = await import('@blue-agent/control-api/admin.js');
  const grants = await listTokens(storeOptions(ctx, opts, false), email);
  const now = ctx.clock.now();
  print(
    ctx,
    opts,
    { ok: true, tokens: grants.map((g) => tokenJson(g, now)) },
    grants.length === 0 ? 'No tokens.\n' : grants.map((g) => tokenLine(g, now)).join(''),
  );
  return 0;
}

export async function tokensRevokeCommand(ctx: Context, id: string, opts: DataOptions): Promise<number> {
  const { revokeToken } = await import('@blue-agent/control-api/admin.js');
  const grant = await revokeToken(storeOptions(ctx, opts, false), id.trim(), ctx.clock.now(), operator(ctx));
  print(
    ctx,
    opts,
    { ok: true, ...tokenJson(grant, ctx.clock.now()) },
    `Revoked ${grant.id} (${grant.user_email}, ${grant.label}): its tokens no longer work.\n`,
  );
  return 0;
}

export async function policyPublishCommand(
  ctx: Context,
  file: string,
  opts: DataOptions & { confirm?: boolean },
): Promise<number> {
  const { publishPolicy } = await import('@blue-agent/control-api/admin.js');
  const { published, ignoredRevision, warnings, captureStop } = await publishPolicy(
    storeOptions(ctx, opts, false),
    path.resolve(ctx.cwd, file),
    ctx.clock.now(),
    {
      confirm: opts.confirm === true,
      by: operator(ctx),
    },
  );
  if (opts.json !== true) for (const warning of warnings) ctx.stderr.write(`warning: ${warning}\n`);
  print(
    ctx,
    opts,
    {
      ok: true,
      revision: published.revision,
      etag: published.etag,
      ignored_revision: ignoredRevision ?? null,
      warnings,
      stops_capture: captureStop !== undefined,
    },
    `Published policy revision ${published.revision}.\n` +
      (ignoredRevision === undefined
        ? ''
        : `(The file's revision ${JSON.stringify(ignoredRevision)} was replaced: the server makes revision ids.)\n`) +
      (captureStop === undefined ? '' : `Session capture stops: ${captureStop.effect}.\n`),
  );
  return 0;
}

/** `control-plane policy show`: a revision exactly as it was published (the document served, with --json). */
export async function policyShowCommand(ctx: Context, opts: DataOptions & { revision?: string }): Promise<number> {
  const { publishedText, showPolicy } = await import('@blue-agent/control-api/admin.js');
  const shown = await showPolicy(storeOptions(ctx, opts, false), opts.revision?.trim());
  const text = publishedText(shown);
  if (opts.json === true) {
    const answer = {
      ok: true,
      revision: shown.revision,
      published_at: new Date(shown.created_at).toISOString(),
      etag: shown.etag,
      text: shown.text,
      document: shown.body,
    };
    ctx.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return 0;
  }
  if (shown.text === null)
    ctx.stderr.write(
      `(revision ${shown.revision} was published before texts were kept: this is its document, as YAML)\n`,
    );
  ctx.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
  return 0;
}

function checkBlobOptions(opts: BlobOptions): void {
  const kind = opts.blobStore ?? 'local';
  if (kind !== 'local' && kind !== 's3')
    throw usageError(`unknown blob store "${kind}"`, 'Use --blob-store local or --blob-store s3.');
  if (kind === 's3' && opts.s3Bucket === undefined) {
    throw usageError(
      '--blob-store s3 needs --s3-bucket',
      'Name the bucket: --s3-bucket NAME (and --s3-endpoint URL for an S3-compatible server).',
    );
  }
}

async function openBlobs(ctx: Context, dir: string, opts: BlobOptions, publicUrl: string) {
  checkBlobOptions(opts);
  if ((opts.blobStore ?? 'local') === 'local') {
    const { createLocalBlobStore } = await import('@blue-agent/control-api/blobs/local.js');
    return createLocalBlobStore({ dir: path.resolve(ctx.cwd, opts.blobDir ?? path.join(dir, 'blobs')), publicUrl });
  }
  // s3, loaded only here: the AWS SDK. Credentials: its default chain (environment, profiles, web identity, container
  // or instance role).
  const s3 = await import('@blue-agent/control-api/blobs/s3.js');
  return s3.createS3BlobStore(
    s3.s3Options(ctx.env, {
      endpoint: opts.s3Endpoint,
      bucket: opts.s3Bucket!,
      region: opts.s3Region,
      forcePathStyle: opts.s3PathStyle,
    }),
  );
}

export async function gcCommand(ctx: Context, opts: DataOptions & BlobOptions): Promise<number> {
  const { collectGarbage } = await import('@blue-agent/control-api/admin.js');
  const where = storeOptions(ctx, opts, false);
  // Checked before the blob store is opened (the local one makes its folder): a mistyped --data creates nothing.
  if (where.databaseUrl === undefined) {
    const { requireDataDir } = await import('@blue-agent/control-api/store/index.js');
    requireDataDir(where.dataDir);
  }
  // Only delete is used, so the URL the local store would sign with does not matter here.
  const blobs = await openBlobs(ctx, where.dataDir, opts, 'http://127.0.0.1');
  try {
    const result = await collectGarbage(where, blobs, ctx.clock.now());
    print(
      ctx,
      opts,
      { ok: result.failed.length === 0, ...result },
      `Deleted ${result.deleted.length} expired object${result.deleted.length === 1 ? '' : 's'}` +
        (result.deleted_objects.length === 0 ? '' : ` and ${result.deleted_objects.length} of deleted sessions`) +
        (result.expired_search_entries === 0
          ? ''
          : `; removed the search entries of ${result.expired_search_entries} expired session` +
            `${result.expired_search_entries === 1 ? '' : 's'}`) +
        '.\n' +
        result.failed.map((f) => `  could not delete ${f.id}: ${f.error}\n`).join(''),
    );
    return result.failed.length === 0 ? 0 : 1;
  } finally {
    await blobs.close();
  }
}

/** `control-plane reindex`: rebuilds the search index from the stored bundles, with progress on stderr; resumable. */
export async function reindexCommand(
  ctx: Context,
  opts: DataOptions & BlobOptions & { restart?: boolean },
): Promise<number> {
  const { reindex } = await import('@blue-agent/control-api/admin.js');
  const { loadProfiles } = await import('@blue-agent/contract/profiles/index.js');
  const where = storeOptions(ctx, opts, false);
  if (where.databaseUrl === undefined) {
    const { requireDataDir } = await import('@blue-agent/control-api/store/index.js');
    requireDataDir(where.dataDir);
  }
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  const blobs = await openBlobs(ctx, where.dataDir, opts, 'http://127.0.0.1');
  const tty = ctx.stderr.isTTY === true;
  let said = 0;
  const progress = (done: number, total: number): void => {
    // A line on a terminal, rewritten; otherwise one line every 1,000 sessions and at the end.
    if (tty) ctx.stderr.write(`\rreindexing: ${done}/${total} sessions`);
    else if (done - said >= 1000 || done === total) {
      ctx.stderr.write(`reindexing: ${done}/${total} sessions\n`);
      said = done;
    }
  };
  try {
    const result = await reindex(where, blobs, profiles, () => ctx.clock.now(), {
      restart: opts.restart === true,
      onProgress: progress,
    });
    if (tty && result.total > 0) ctx.stderr.write('\n');
    print(
      ctx,
      opts,
      { ok: true, ...result },
      `Reindexed ${result.indexed + result.without_text} session` +
        `${result.indexed + result.without_text === 1 ? '' : 's'}` +
        (`${result.resumed_after === null ? '' : ` (went on after ${result.resumed_after})`}: ${result.indexed} ` +
          `with what they say, `) +
        `${result.without_text} by title and summary only (no readable bundle)` +
        `${result.expired === 0 ? '' : `; ${result.expired} expired and left out of search`}` +
        `${result.skipped === 0 ? '' : `; ${result.skipped} changed meanwhile and were indexed by their new upload`}.\n`,
    );
    return 0;
  } finally {
    await blobs.close();
  }
}

function positiveNumber(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0)
    throw usageError(
      `${name} must be a positive number, not "${value}"`,
      `Give ${name} a number greater than 0, e.g. ${name} 30.`,
    );
  return n;
}

export function parseListen(value: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value);
  const port = match === null ? Number.NaN : Number(match[3]);
  if (match === null || port > 65535)
    throw usageError(
      `--listen must be HOST:PORT (e.g. 127.0.0.1:8080), not "${value}"`,
      'Use 127.0.0.1:PORT for this machine only, 0.0.0.0:PORT for every interface, [::1]:PORT for IPv6.',
    );
  return { host: match[1] ?? match[2]!, port };
}

/**
 * A socket that cannot be bound: the port taken or not allowed is this machine's state (exit 1, its own code); an
 * address the machine does not have is a wrong --listen (a usage error). Never a bug.
 */
function listenError(error: unknown, host: string, port: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  if (code === 'EADDRINUSE') {
    return new BlueError('ADDRESS_IN_USE', `cannot listen on ${where}: port ${port} is in use by another process`, {
      hint:
        `Stop the process that listens on port ${port} (perhaps another \`control-plane serve\`: \`ss -ltnp\` ` +
        `names it), or give --listen another port.`,
    });
  }
  if (code === 'EACCES') {
    return new BlueError('PERMISSION_DENIED', `cannot listen on ${where}: not allowed to use port ${port}`, {
      hint: 'Ports below 1024 need privileges: use a port of 1024 or more (--listen HOST:8080).',
    });
  }
  if (code === 'EADDRNOTAVAIL')
    return usageError(
      `${host} is not an address of this machine; choose another --listen`,
      'Use 127.0.0.1, 0.0.0.0 or an address this machine has.',
    );
  return error;
}

/**
 * What the other control-plane commands need to reach the database `serve` uses, as flags to print after them: the
 * data directory unless it is the default, and a PostgreSQL URL by its variable (its password is never printed).
 */
function adminFlags(ctx: Context, where: StoreOptions): string {
  if (where.databaseUrl !== undefined) return ' --database-url "$BLUE_CONTROL_DATABASE_URL"';
  return where.dataDir === ctx.paths.controlDataDir ? '' : ` --data ${shellQuote(where.dataDir)}`;
}

/** A path as one shell word. */
function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** --log-format, else BLUE_CONTROL_LOG_FORMAT, else text. */
function logFormat(ctx: Context, opts: ServeOptions): 'text' | 'json' {
  const given = opts.logFormat ?? ctx.env.BLUE_CONTROL_LOG_FORMAT;
  if (given === undefined || given === '' || given === 'text') return 'text';
  if (given === 'json') return 'json';
  throw usageError(
    `BLUE_CONTROL_LOG_FORMAT must be text or json, not "${given}"`,
    'Unset it, or set it to json for one JSON object per line.',
  );
}

/**
 * The identity provider from --oidc-* (or BLUE_CONTROL_OIDC_*): the issuer (https, or http on this machine), the
 * client id and its secret, from a 0600 file or the environment, never from argv. Undefined: sign-in links only.
 */
async function oidcSettings(ctx: Context, opts: ServeOptions): Promise<OidcSettings | undefined> {
  const env = (name: string) => (ctx.env[name] === '' ? undefined : ctx.env[name]);
  const issuer = opts.oidcIssuer ?? env('BLUE_CONTROL_OIDC_ISSUER');
  const clientId = opts.oidcClientId ?? env('BLUE_CONTROL_OIDC_CLIENT_ID');
  const related = [
    opts.oidcClientSecretFile,
    opts.oidcAdminGroup,
    opts.oidcScope,
    opts.oidcName,
    opts.oidcAllowUnverifiedEmail,
    clientId,
  ];
  if (issuer === undefined) {
    if (related.some((v) => v !== undefined))
      throw usageError(
        'the --oidc-* options need --oidc-issuer',
        "Give the identity provider's issuer URL, e.g. --oidc-issuer https://login.example.com.",
      );
    return undefined;
  }
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw usageError(
      `--oidc-issuer is not a URL: "${issuer}"`,
      'Give the issuer URL, e.g. https://login.example.com or https://accounts.google.com.',
    );
  }
  const { loopbackIssuer } = await import('@blue-agent/control-api/identity/oidc.js');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopbackIssuer(url))) {
    throw usageError(
      `--oidc-issuer must be https (http only on this machine), not ${url.protocol}//${url.host}`,
      'Sign-in tokens must not cross a network in clear text.',
    );
  }
  if (clientId === undefined)
    throw usageError(
      '--oidc-issuer needs --oidc-client-id',
      'The client id this server is registered with at the identity provider.',
    );
  let secret = env('BLUE_CONTROL_OIDC_CLIENT_SECRET');
  if (opts.oidcClientSecretFile !== undefined) {
    const { readFile, stat } = await import('node:fs/promises');
    const file = path.resolve(ctx.cwd, opts.oidcClientSecretFile);
    const info = await stat(file).catch(() => undefined);
    if (info === undefined || !info.isFile())
      throw usageError(
        `--oidc-client-secret-file: ${file} is not a readable file`,
        'Give the file holding only the client secret.',
      );
    if ((info.mode & 0o077) !== 0)
      throw usageError(
        `--oidc-client-secret-file: ${file} is readable by group or others`,
        `Run \`chmod 600 ${file}\`.`,
      );
    secret = (await readFile(file, 'utf8')).trim();
  }
  if (secret === undefined || secret === '') {
    throw usageError(
      '--oidc-issuer needs the client secret',
      'Give it in a 0600 file with --oidc-client-secret-file, or in BLUE_CONTROL_OIDC_CLIENT_SECRET (never on the ' +
        'command line).',
    );
  }
  return {
    issuer: url.href.replace(/\/$/, ''),
    clientId,
    clientSecret: secret,
    adminGroup: opts.oidcAdminGroup ?? env('BLUE_CONTROL_OIDC_ADMIN_GROUP'),
    scope: opts.oidcScope ?? env('BLUE_CONTROL_OIDC_SCOPE'),
    name: opts.oidcName ?? env('BLUE_CONTROL_OIDC_NAME'),
    allowUnverifiedEmail:
      opts.oidcAllowUnverifiedEmail === true || env('BLUE_CONTROL_OIDC_ALLOW_UNVERIFIED_EMAIL') === '1',
  };
}

/** Serves until SIGINT or SIGTERM (or `stop`, for tests). */
export async function serveCommand(ctx: Context, opts: ServeOptions, stop?: Promise<void>): Promise<number> {
  const { createControlServer } = await import('@blue-agent/control-api/server.js');
  const dir = dataDir(ctx, opts);
  const { host, port } = parseListen(opts.listen ?? '127.0.0.1:8080');
  if (opts.publicUrl !== undefined && !/^https?:\/\/[^/\s]+\/?$/.test(opts.publicUrl)) {
    throw usageError(
      `--public-url must be an http(s) origin such as https://control.example.com, not "${opts.publicUrl}"`,
      'Give the scheme, host and port agents reach this server at, without a path.',
    );
  }
  const { createServerLog } = await import('@blue-agent/control-api/log.js');
  const { loadProfiles } = await import('@blue-agent/contract/profiles/index.js');
  const { harnessMetadataDocument, knownProfiles } = await import('@blue-agent/control-api/harness-metadata.js');
  const { openStore } = await import('@blue-agent/control-api/store/index.js');
  const { webAssetsDir } = await import('@blue-agent/control-api/web/assets-dir.js');
  const profiles = await loadProfiles(ctx.paths.profilesDir);
  // Every option is checked before the database is opened: a refused command creates no data directory.
  const retentionDays = positiveNumber('--retention-days', opts.retentionDays);
  const oidc = await oidcSettings(ctx, opts);
  const uploadUrlTtlSeconds = positiveNumber('--upload-url-ttl', opts.uploadUrlTtl);
  const gcMinutes =
    opts.gcInterval === undefined
      ? 60
      : opts.gcInterval === '0'
        ? 0
        : positiveNumber('--gc-interval', opts.gcInterval)!;
  const format = logFormat(ctx, opts);
  checkBlobOptions(opts);
  const where = storeOptions(ctx, opts, true);
  const flags = adminFlags(ctx, where);
  const store = await openStore(where);
  const server = createControlServer({
    store,
    harnessMetadata: harnessMetadataDocument(profiles),
    profiles: knownProfiles(profiles),
    bundleProfiles: profiles,
    publicUrl: opts.publicUrl,
    assetsDir: webAssetsDir(),
    oidc,
    adminFlags: flags,
    blobs: (publicUrl) => openBlobs(ctx, dir, opts, publicUrl),
    clock: ctx.clock,
    retentionDays,
    uploadUrlTtlSeconds,
    gc: { intervalMs: gcMinutes * 60_000 },
    log: createServerLog({
      format,
      out: ctx.stderr,
      level: /^(warn|error)$/i.test(ctx.env.BLUE_AGENT_LOG_LEVEL ?? '') ? 'error' : 'info',
      now: () => ctx.clock.now(),
    }),
  });
  let url: string;
  try {
    ({ url } = await server.listen(host, port));
  } catch (error) {
    await server.close();
    throw listenError(error, host, port);
  }
  const publicUrl = (opts.publicUrl ?? url).replace(/\/+$/, '');
  const { firstStart } = await import('@blue-agent/control-api/admin.js');
  let started;
  try {
    // Where agents reach this server: `policy publish` (run without the server) checks presign_url against it.
    await store.setPublicUrl(publicUrl);
    started = await firstStart(store, dir, publicUrl, ctx.clock.now(), operator(ctx));
  } catch (error) {
    await server.close();
    throw error;
  }
  ctx.stdout.write(
    `Control API listening on ${url} (` +
      `${store.backend === 'postgres' ? `database ${store.location}` : `data ${dir}`}, ${server.blobs.kind} blob ` +
      `store)\n`,
  );
  if (started.admin !== undefined) {
    // The token itself is never printed: a terminal's output often ends up in a log (a service's journal).
    // The sign-in link is printed: it works once, within 15 minutes, and only in a browser.
    ctx.stdout.write(
      `Created the administrator ${started.admin.email}; its token is in ${started.admin.tokenFile} (readable only ` +
        `by you).\n` +
        (`Log this machine in with:\n  blue-agent login --control-url ${publicUrl} --token-stdin < ` +
          `${shellQuote(started.admin.tokenFile)}\n`) +
        (`Sign in to the dashboard with this one-time link (it works once, within 15 minutes):\n  ` +
          `${started.admin.signInUrl}\n`) +
        (`Make another, at any time, with:\n  blue-agent control-plane users link ${shellQuote(started.admin.email)}` +
          `${flags}\n`),
    );
  }
  if (started.policy !== undefined) {
    ctx.stdout.write(
      `Published a default policy (revision ${started.policy.revision}): capture on for every harness, uploads ` +
        `presigned at ${publicUrl}/session-uploads/presign.\n` +
        `Publish your own with: blue-agent control-plane policy publish FILE${flags}\n`,
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
