/**
 * Errors that mean "the database cannot be used right now" rather than "this request is wrong" or "a bug": the
 * PostgreSQL server restarting or unreachable, a connection cut, too many connections, SQLite busy past its timeout.
 * The server answers them 503 with a Retry-After, so clients retry instead of giving up on a 500.
 */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
/** SQLSTATE classes 08 (connection exception) and 57P0x (operator intervention: shutdown, restart), and 53300. */
const SQLSTATE = /^(08\d{3}|57P0[1-3]|53300)$/;

export function storeUnavailable(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SQLSTATE.test(code)))
    return `the database is unavailable (${code})`;
  // node-postgres says this without a code when the server goes away mid-query or before a connection is made.
  if (
    /^Connection terminated|^timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
      error.message,
    )
  ) {
    return 'the database is unavailable (connection lost)';
  }
  // node:sqlite, past busy_timeout.
  if (/database is locked|SQLITE_BUSY/i.test(error.message)) return 'the database is busy';
  return undefined;
}
