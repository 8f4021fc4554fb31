/**
 * Vitest global setup (vitest.config.ts): one throwaway PostgreSQL cluster for the whole run (test/support/postgres.ts,
 * about half a second to start), its URL provided to the test workers as `postgresUrl`; stopped at the end.
 * Tests take a database of their own from it with `freshDatabase()` (test/support/postgres-db.ts).
 * When no cluster can start (no server binaries here), the run goes on: every other suite still runs, and
 * `freshDatabase()` fails with the reason (`postgresProblem`), so a test that needs PostgreSQL fails, never skips.
 */
import type { TestProject } from 'vitest/node';
import { startPostgres, type PgCluster } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The superuser URL of the run's cluster; '' when it could not start. */
    postgresUrl: string;
    /** Why there is no cluster; '' when there is one. */
    postgresProblem: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let cluster: PgCluster | undefined;
  try {
    cluster = await startPostgres();
    project.provide('postgresUrl', cluster.url);
    project.provide('postgresProblem', '');
  } catch (error) {
    const problem = (error as Error).message;
    project.provide('postgresUrl', '');
    project.provide('postgresProblem', problem);
    process.stderr.write(`[postgres] no cluster for this run; tests that need PostgreSQL will fail: ${problem}\n`);
  }
  return async () => {
    await cluster?.stop();
  };
}
