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

/** One cluster per process: every project of a run names this setup, and vitest runs them all in its main process. */
const SHARED = Symbol.for('blue-agent.test.postgres');
interface Shared {
  cluster: Promise<PgCluster>;
  /** Projects whose teardown has not run yet; the last one stops the cluster. */
  users: number;
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const holder = globalThis as { [SHARED]?: Shared };
  const shared = (holder[SHARED] ??= { cluster: startPostgres(), users: 0 });
  shared.users += 1;
  try {
    project.provide('postgresUrl', (await shared.cluster).url);
    project.provide('postgresProblem', '');
  } catch (error) {
    const problem = (error as Error).message;
    project.provide('postgresUrl', '');
    project.provide('postgresProblem', problem);
    process.stderr.write(`[postgres] no cluster for this run; tests that need PostgreSQL will fail: ${problem}\n`);
  }
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete holder[SHARED];
    await (await shared.cluster.catch(() => undefined))?.stop();
  };
}
