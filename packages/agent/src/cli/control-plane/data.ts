/** Where the Control API's data is: the flags that say it, its data directory, database and blob store. */
import path from 'node:path';
import type { Context } from '../../context.js';
import { usageError } from '@blue-agent/contract/errors.js';
import type { AuditActor, StoreOptions } from '@blue-agent/control-api/store/index.js';

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
export function storeOptions(ctx: Context, opts: DataOptions, create: boolean): StoreOptions {
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

export function print(ctx: Context, opts: DataOptions, json: unknown, text: string): void {
  ctx.stdout.write(opts.json === true ? `${JSON.stringify(json, null, 2)}\n` : text);
}

export function checkBlobOptions(opts: BlobOptions): void {
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

export async function openBlobs(ctx: Context, dir: string, opts: BlobOptions, publicUrl: string) {
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
