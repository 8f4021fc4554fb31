import { packageConfig } from '../../vitest.shared.js';

// `npm run certify` (scripts/certify.mjs): the whole loop against every locked harness version, one target after the
// other (each runs real CLIs). Not part of `npm test`.
export default packageConfig('agent', { include: ['test/certify/**/*.test.ts'], exclude: [], testTimeout: 420_000 });
