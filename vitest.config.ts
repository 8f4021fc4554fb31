import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The certification suite runs the whole loop against every locked CLI version: `npm run certify`.
    exclude: [...configDefaults.exclude, 'test/certify/**'],
    // The build and harness CLIs; one throwaway PostgreSQL cluster for the Control API's tests (freshDatabase()).
    globalSetup: ['test/global-setup.ts', 'test/support/postgres-global-setup.ts'],
    // A bound on a hung test, not a measure of speed: on one loaded core a test takes several times as long.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
