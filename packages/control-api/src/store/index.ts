/**
 * Opening the Control API's database: PostgreSQL when a database URL is given (`--database-url`,
 * BLUE_CONTROL_DATABASE_URL), for any number of stateless replicas; else the embedded SQLite file in the data
 * directory. Both run the same versioned migrations before anything is served.
 */
import { SqliteStore } from './sqlite.js';
import type { ControlStore } from './types.js';

export * from './types.js';
export { hashToken, newToken, TOKEN_PREFIX } from './tokens.js';
export { requireDataDir } from './sqlite.js';
export { actorName, auditSummary, userActor } from './audit.js';

export interface StoreOptions {
  dataDir: string;
  /** postgres://… ; absent: SQLite in dataDir. */
  databaseUrl?: string | undefined;
  /** Make the data directory and database when missing (default); false refuses a mistyped --data. */
  create?: boolean | undefined;
}

export async function openStore(options: StoreOptions): Promise<ControlStore> {
  if (options.databaseUrl !== undefined && options.databaseUrl !== '') {
    const { PostgresStore } = await import('./postgres.js');
    return PostgresStore.open(options.databaseUrl);
  }
  return SqliteStore.open(options.dataDir, { create: options.create });
}
