/**
 * Opening the PostgreSQL database: the pool connected and the schema migrated, or an error in a person's terms. The
 * URL's password never appears in `location`, a message or a hint.
 */
import pg from 'pg';
import { BlueError } from '@blue-agent/contract/errors.js';
import { ignore, POOL_OPTIONS, sqlState } from './db.js';
import { migratePostgres } from './migrations.js';

/** Connects (a bounded pool), brings the schema up to date, and refuses a database of a newer release. */
export async function openPool(url: string): Promise<{ pool: pg.Pool; location: string }> {
  const secrets = secretsOf(url);
  const location = withoutPassword(url);
  const pool = new pg.Pool({
    connectionString: url,
    ...POOL_OPTIONS,
  });
  // An idle connection the server closes (a restart, an administrator) is dropped by the pool; the next query
  // opens another. Without a listener the error would end the process.
  pool.on('error', ignore);
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw connectError(error, location, secrets);
  }
  client.on('error', ignore);
  try {
    await migratePostgres(client, location);
    client.off('error', ignore);
    client.release();
  } catch (error) {
    // The connection may be broken or hold a lock: discard it rather than return it to the pool.
    client.off('error', ignore);
    client.release(error instanceof Error ? error : true);
    await pool.end().catch(() => undefined);
    throw error instanceof BlueError ? error : connectError(error, location, secrets);
  }
  return { pool, location };
}

/** `url` without its password (in the authority or as a `password` parameter), for `location` and messages. */
function withoutPassword(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Not shown: it may hold a password where a URL parser does not expect one.
    return 'postgres://(an unparsable database URL)';
  }
  parsed.password = '';
  for (const key of ['password', 'sslpassword']) parsed.searchParams.delete(key);
  return parsed.toString();
}

/** Every form of the password the URL carries, to be kept out of any text shown. */
function secretsOf(url: string): string[] {
  const found: string[] = [];
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') found.push(parsed.password);
    for (const key of ['password', 'sslpassword'])
      for (const value of parsed.searchParams.getAll(key)) found.push(encodeURIComponent(value));
  } catch {
    // Unparsable: nothing of it is shown.
  }
  const forms = found.flatMap((s) => {
    let decoded = s;
    try {
      decoded = decodeURIComponent(s);
    } catch {
      // Not percent-encoded validly: as it is.
    }
    return [s, decoded];
  });
  return [...new Set(forms.filter((s) => s !== ''))];
}

function redact(text: string, secrets: readonly string[]): string {
  return secrets.reduce((t, secret) => t.split(secret).join('***'), text);
}

/** Why the database could not be opened, in a person's terms, with what to check; never the password. */
function connectError(error: unknown, location: string, secrets: readonly string[]): BlueError {
  const code = sqlState(error);
  const said = redact(error instanceof Error ? error.message : String(error), secrets);
  const urlHint = 'the database URL (--database-url or BLUE_CONTROL_DATABASE_URL)';
  const fail = (errorCode: 'CONFIG_INVALID' | 'IO_ERROR', message: string, hint: string) =>
    new BlueError(errorCode, redact(message, secrets), { hint: redact(hint, secrets) });
  if (code === '28P01' || code === '28000' || /SASL|password/i.test(said)) {
    return fail(
      'CONFIG_INVALID',
      `PostgreSQL refused the sign-in to ${location}: ${said}`,
      `Check the user name and password in ${urlHint}; percent-encode special characters in the password (@ : / ? ` +
        `# %).`,
    );
  }
  if (code === '3D000') {
    return fail(
      'CONFIG_INVALID',
      `the PostgreSQL database of ${location} does not exist: ${said}`,
      `Create it (createdb, or CREATE DATABASE), or fix its name in ${urlHint}.`,
    );
  }
  if (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === '57P03'
  ) {
    return fail(
      'IO_ERROR',
      `cannot reach the PostgreSQL server of ${location}: ${said}`,
      `Check that the server runs and accepts connections there, and the host and port in ${urlHint}.`,
    );
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return fail(
      'IO_ERROR',
      `cannot resolve the host of the PostgreSQL server of ${location}: ${said}`,
      `Check the host name in ${urlHint}, and this machine's DNS.`,
    );
  }
  if (/timeout|timed out/i.test(said)) {
    return fail(
      'IO_ERROR',
      `timed out connecting to the PostgreSQL server of ${location}: ${said}`,
      `Check that the server runs and is reachable from here (firewall, network), and the host and port in ${urlHint}.`,
    );
  }
  return fail(
    'IO_ERROR',
    `cannot open the PostgreSQL database ${location}: ${said}`,
    `Check ${urlHint}, that the server runs, and that its user may connect and create tables in the database.`,
  );
}
