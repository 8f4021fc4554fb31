/** `control-plane serve`: the reference Control API on this machine, configured from flags and the environment. */
import path from 'node:path';
import type { Context } from '../../context.js';
import { BlueError, usageError } from '@blue-agent/contract/errors.js';
import type { OidcSettings } from '@blue-agent/control-api/identity/oidc.js';
import type { StoreOptions } from '@blue-agent/control-api/store/index.js';
import { type ServeOptions, dataDir, storeOptions, operator, checkBlobOptions, openBlobs } from './data.js';

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
export function adminFlags(ctx: Context, where: StoreOptions): string {
  if (where.databaseUrl !== undefined) return ' --database-url "$BLUE_CONTROL_DATABASE_URL"';
  return where.dataDir === ctx.paths.controlDataDir ? '' : ` --data ${shellQuote(where.dataDir)}`;
}

/** A path as one shell word. */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** --log-format, else BLUE_CONTROL_LOG_FORMAT, else text. */
export function logFormat(ctx: Context, opts: ServeOptions): 'text' | 'json' {
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
