import path from 'node:path';
import { packageConfig } from '../../vitest.shared.js';

// `npm run certify` (scripts/certify.mjs): the whole loop against every locked harness version, one target after the
// other (each runs real CLIs). Not part of `npm test`. Its Control API runs on SQLite: no PostgreSQL cluster.
export default packageConfig('agent', {
  include: ['test/certify/**/*.test.ts'],
  exclude: [],
  globalSetup: [path.join(import.meta.dirname, '..', '..', 'test', 'global-setup.ts')],
  testTimeout: 420_000,
});
