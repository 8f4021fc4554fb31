/**
 * The registry: every harness blue-agent drives, one line each. Everything about a harness is on its adapter
 * (./types.ts); everything else (names, route validation, report types, doctor checks, export readers) derives from
 * this table. Its keys are the generated HarnessName (profiles/*.yaml via `npm run gen`), so a profile without an
 * adapter, or an adapter without a profile, does not compile.
 */
import { BlueError } from '@blue-agent/contract/errors.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import type { HarnessAdapter } from './types.js';
import { claude } from './claude/index.js';
import { codex } from './codex/index.js';
import { gemini } from './gemini/index.js';
import { kimi } from './kimi/index.js';
import { opencode } from './opencode/index.js';
import { qwen } from './qwen/index.js';

export const ADAPTERS: Readonly<Record<HarnessName, HarnessAdapter>> = {
  claude,
  codex,
  gemini,
  kimi,
  opencode,
  qwen,
};

export type { HarnessAdapter, HookPlan, HookPlanInput, ManagedHook, OwnershipRecord } from './types.js';

/** The adapter whose planner writes the native hook format a profile declares (capture.hook.format), if any. */
export function adapterForHookFormat(format: string): HarnessAdapter | undefined {
  return Object.values(ADAPTERS).find((adapter) => adapter.hookFormat === format);
}

/** The harness `blue-agent demo` plays: the first adapter with a recorded session. */
export function demoHarness(): HarnessAdapter & { demo: NonNullable<HarnessAdapter['demo']> } {
  const adapter = Object.values(ADAPTERS).find((a) => a.demo !== undefined);
  if (adapter?.demo === undefined) throw new BlueError('INTERNAL', 'no harness ships a recorded session for the demo');
  return adapter as HarnessAdapter & { demo: NonNullable<HarnessAdapter['demo']> };
}
