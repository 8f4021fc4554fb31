/**
 * A new, empty database for a test, in the run's throwaway PostgreSQL cluster (started once per run by
 * test/support/postgres-global-setup.ts): every test gets its own, so no two tests share state.
 */
import { inject } from 'vitest';
import { createDatabaseAt } from './postgres.js';
// The names the global setup provides (its declaration of vitest's ProvidedContext), for every package's type-check.
import type {} from './postgres-global-setup.js';

/** The URL (`postgres://postgres:…@127.0.0.1:<port>/<name>`) of a database created for the caller. */
export async function freshDatabase(): Promise<string> {
  const url = inject('postgresUrl');
  if (!url) {
    const problem =
      inject('postgresProblem') || 'the vitest config does not run test/support/postgres-global-setup.ts (globalSetup)';
    throw new Error(`no PostgreSQL cluster for this run: ${problem}`);
  }
  return createDatabaseAt(url);
}
