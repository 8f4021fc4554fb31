import { configDefaults } from 'vitest/config';
import { packageConfig } from '../../vitest.shared.js';

// The certification suite runs the whole loop against every locked CLI version: `npm run certify`.
export default packageConfig('agent', { exclude: [...configDefaults.exclude, 'test/certify/**'] });
