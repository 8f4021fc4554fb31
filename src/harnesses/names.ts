import type { HarnessName } from '../schema/generated/policy.js';

/** Every harness blue-agent knows, in report order. Kept free of imports so the CLI can start without loading more. */
export const HARNESSES: readonly HarnessName[] = ['claude', 'codex', 'kimi', 'opencode'];
