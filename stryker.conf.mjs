// Mutation testing of the pure planners, validators and decision modules: `npm run mutation` (slow, not part of CI).
// One module: `npm run mutation -- --mutate src/bundle/verify.ts`. Scores and equivalent mutants: mutation.md.
// No type-checker plugin: TypeScript 7 has no compiler API. Vitest strips types, so a mutant tsc would reject still
// runs as JavaScript; mutation.md lists the few that survive that way.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner', './stryker.ignorers.mjs'],
  ignorers: ['self-checks'],
  vitest: { configFile: 'vitest.mutation.config.ts', related: true },
  coverageAnalysis: 'perTest',
  // Stryker rewrites tsconfig.json's relative paths in its sandbox through the TypeScript API, which TypeScript 7
  // no longer has; this tsconfig has none to rewrite, so point the option at a file that does not exist.
  tsconfigFile: 'tsconfig.none.json',
  mutate: [
    'packages/agent/src/harness-kit/matcher-hooks.ts',
    'packages/agent/src/harness-kit/matcher-hooks-ownership.ts',
    'packages/contract/src/bundle/manifest.ts',
    'packages/contract/src/bundle/verify.ts',
    'packages/contract/src/policy/validate.ts',
    'packages/agent/src/reconcile/decide.ts',
    'packages/agent/src/daemon/backoff.ts',
    'packages/agent/src/daemon/schedule.ts',
    'packages/agent/src/harness-kit/signature.ts',
    'packages/agent/src/harness-kit/restore-files.ts',
    // The capture-side rules only (the folder walk between them reads the disk).
    'packages/agent/src/harness-kit/session-files.ts:35-37',
    'packages/agent/src/harness-kit/session-files.ts:41-47',
    'packages/agent/src/harness-kit/session-files.ts:65-78',
    'packages/agent/src/harness-kit/session-files.ts:222-265',
    'packages/agent/src/harnesses/codex/plan-toml.ts',
    'packages/agent/src/harnesses/codex/plan-json.ts',
    'packages/agent/src/harnesses/kimi/plan.ts',
    'packages/agent/src/harness-kit/json-splice.ts',
    'packages/agent/src/harness-kit/toml-text.ts',
    'packages/agent/src/reconcile/plan.ts:58-87',
    'packages/contract/src/profiles/index.ts',
    'packages/agent/src/lock/liveness.ts:80-115',
    'packages/contract/src/util/session-id.ts',
    'packages/contract/src/util/lossless.ts',
    'packages/contract/src/harness-kit/injected.ts',
    'packages/agent/src/harness-kit/title.ts',
    // The hook payload's rules (above them, the reader works on a stream against a deadline).
    'packages/agent/src/capture/payload.ts:160-202',
    // OpenCode's planner and the recognition of its plugin file (the rest of plugin.ts is the plugin's source text).
    'packages/agent/src/harnesses/opencode/plan.ts',
    'packages/agent/src/harnesses/opencode/plugin.ts:228-245',
  ],
  // Vitest only strips types, so there are no type checks to disable; and the preprocessor that disables them would
  // put a comment at the top of every .js fixture (fixtures/opencode), which changes what those tests read.
  disableTypeChecks: false,
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  incremental: false,
};
