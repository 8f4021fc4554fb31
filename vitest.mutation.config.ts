import { configDefaults, defineConfig } from 'vitest/config';

// The unit suites that cover the pure planners, validators and decision modules, for mutation testing
// (`npm run mutation`, see stryker.conf.mjs). No global setup: none of these suites runs `dist/` or a harness CLI,
// so each mutant run stays fast. Suites that start processes, real harnesses or servers are left out.
export default defineConfig({
  test: {
    include: [
      'test/bundle/**/*.test.ts',
      'test/policy/**/*.test.ts',
      'test/reconcile/**/*.test.ts',
      'test/harnesses/**/*.test.ts',
      'test/harness-kit/**/*.test.ts',
      'test/profiles/**/*.test.ts',
      'test/daemon/schedule*.test.ts',
      'test/daemon/backoff*.test.ts',
      'test/lock/liveness*.test.ts',
      'test/util/session-id*.test.ts',
      'test/util/lossless*.test.ts',
      'test/harness-kit/**/*.test.ts',
    ],
    exclude: [
      ...configDefaults.exclude,
      'test/certify/**',
      'test/e2e/**',
      'test/**/*real-harness*.test.ts',
      // Each ends with a real offline session of its harness CLI, which the empty cache below cannot skip.
      'test/harnesses/*/session.test.ts',
      'test/bundle/cli.test.ts',
      'test/bundle/memory.test.ts',
      'test/reconcile/control-api.test.ts',
      'test/reconcile/reconcile.test.ts',
    ],
    // An empty harness cache: the real-CLI blocks inside unit suites (`describe.runIf(hasHarness(...))`) skip, as the
    // real-harness suites above do; otherwise every mutant they cover would start a harness CLI.
    env: { BLUE_AGENT_HARNESS_CACHE: `${import.meta.dirname}/.mutation-no-harnesses` },
    testTimeout: 30_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
