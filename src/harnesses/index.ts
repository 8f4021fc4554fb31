import { BlueError } from '../errors.js';
import type { HarnessName } from '../schema/index.js';
import { claude } from './claude/index.js';
import { codex } from './codex/index.js';
import { kimi } from './kimi/index.js';
import { opencode } from './opencode/index.js';
import type { HarnessAdapter } from './types.js';

export type { HarnessAdapter, HookPlan, HookPlanInput, ManagedHook, OwnershipRecord } from './types.js';

export const ADAPTERS: Readonly<Record<HarnessName, HarnessAdapter>> = { claude, codex, kimi, opencode };

export function adapterFor(name: string): HarnessAdapter {
  const adapter = (ADAPTERS as Record<string, HarnessAdapter | undefined>)[name];
  if (adapter === undefined) {
    throw new BlueError('USAGE', `unknown harness "${name}"`, { hint: `Use one of: ${Object.keys(ADAPTERS).join(', ')}.` });
  }
  return adapter;
}
