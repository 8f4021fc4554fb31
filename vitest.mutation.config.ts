import { configDefaults } from 'vitest/config';
import { packageConfig } from './vitest.shared.js';

// The unit suites that cover the pure planners, validators and decision modules, for mutation testing
// (`npm run mutation`, see stryker.conf.mjs). No global setup: none of these suites runs `dist/` or a harness CLI,
// so each mutant run stays fast. Suites that start processes, real harnesses or servers are left out.
export default packageConfig('mutation', {
  include: [
    'packages/*/test/bundle/**/*.test.ts',
    'packages/*/test/policy/**/*.test.ts',
    'packages/*/test/reconcile/**/*.test.ts',
    'packages/*/test/harnesses/**/*.test.ts',
    'packages/*/test/harness-kit/**/*.test.ts',
    'packages/*/test/profiles/**/*.test.ts',
    'packages/*/test/daemon/schedule*.test.ts',
    'packages/*/test/daemon/backoff*.test.ts',
    'packages/*/test/lock/liveness*.test.ts',
    'packages/*/test/util/session-id*.test.ts',
    'packages/*/test/util/lossless*.test.ts',
    'packages/*/test/harness-kit/**/*.test.ts',
    'packages/*/test/capture/payload-rules.test.ts',
  ],
  exclude: [
    ...configDefaults.exclude,
    'packages/*/test/certify/**',
    'packages/*/test/e2e/**',
    'packages/*/test/**/*real-harness*.test.ts',
    // The session suites: they read recorded sessions from disk and run the real CLIs (none is a planner's suite).
    'packages/*/test/harnesses/*/session.test.ts',
    // Each harness's real-CLI suites and its round trip through the Control API (test/support/real-cli*.ts).
    'packages/*/test/harnesses/*/real-cli.test.ts',
    'packages/*/test/harnesses/*/round-trip.test.ts',
    'packages/*/test/bundle/cli.test.ts',
    'packages/*/test/bundle/memory.test.ts',
    'packages/*/test/reconcile/control-api.test.ts',
    'packages/*/test/reconcile/reconcile.test.ts',
  ],
  // An empty harness cache: the real-CLI blocks inside unit suites (`describe.runIf(hasHarness(...))`) skip, as the
  // real-harness suites above do; otherwise every mutant they cover would start a harness CLI.
  env: { BLUE_AGENT_HARNESS_CACHE: `${import.meta.dirname}/.mutation-no-harnesses` },
  testTimeout: 30_000,
  pool: 'forks',
  maxWorkers: 1,
  globalSetup: [],
});
