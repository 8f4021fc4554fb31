/**
 * Every harness blue-agent knows, in report order, without loading any adapter (the capture hook starts on this).
 * Generated from profiles/*.yaml by `npm run gen`; test/harnesses/registry.test.ts checks it against the registry.
 */
export { HARNESS_DISPLAY_NAMES, HARNESSES } from '@blue-agent/contract/schema/generated/harness-names.js';
