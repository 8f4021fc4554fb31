import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// `npm run record-fixtures`: re-records fixtures/sessions/ from the real CLIs (not part of `npm test`).
export default defineConfig({ test: { ...base.test, include: ['test/harnesses/**/record-fixtures.record.ts'] } });
