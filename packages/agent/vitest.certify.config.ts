import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run certify` (scripts/certify.mjs): the whole loop against every locked harness version, one target after the
// other (each runs real CLIs; about a minute in all once installed). Not part of `npm test`.
export default defineConfig({
  test: {
    ...base.test,
    include: ['test/certify/**/*.test.ts'],
    exclude: [],
    testTimeout: 420_000,
  },
});
