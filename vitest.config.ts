import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The certification suite runs the whole loop against every locked CLI version: `npm run certify`.
    exclude: [...configDefaults.exclude, 'test/certify/**'],
    // The build and harness CLIs; one throwaway PostgreSQL cluster for the Control API's tests (freshDatabase()).
    globalSetup: ['test/global-setup.ts', 'test/support/postgres-global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
