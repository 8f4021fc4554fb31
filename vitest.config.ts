import { defineConfig } from 'vitest/config';
import { packageConfig } from './vitest.shared.js';

// `npm test` at the root: every package's tests, and the rules over the whole repository (test/architecture,
// test/scripts). `npx vitest run packages/agent/test/drain` runs one folder of one package.
export default defineConfig({
  test: {
    projects: [
      'packages/*/vitest.config.ts',
      {
        ...packageConfig('repository', { include: ['test/architecture/**/*.test.ts', 'test/scripts/**/*.test.ts'] }),
        extends: false,
      },
    ],
    maxWorkers: 2,
  },
});
