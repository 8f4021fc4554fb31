import { packageConfig } from '../../vitest.shared.js';

// No global setup: no suite here runs a built CLI or a database.
export default packageConfig('contract', { globalSetup: [] });
