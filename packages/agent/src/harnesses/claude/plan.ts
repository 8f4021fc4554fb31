/**
 * Claude Code's settings.json in the matcher-group hooks planner's terms (`harness-kit/matcher-hooks.ts`): the managed
 * hook is `{"type": "command", "command": ..., "timeout": <seconds>}`, with no other key.
 */
import { planMatcherHooks, type MatcherHooksDialect } from '../../harness-kit/matcher-hooks.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import { isManagedCommand } from '../../harness-kit/signature.js';
import type { HookPlan, HookPlanInput, ManagedHook } from '../types.js';

export const CLAUDE_SETTINGS: MatcherHooksDialect<ManagedHook> = {
  displayName: HARNESS_DISPLAY_NAMES.claude,
  isManagedCommand: (command) => isManagedCommand(command, 'claude'),
  entry: (desired) => ({ type: 'command', command: desired.command, timeout: desired.timeoutSeconds }),
};

export function planClaudeHook(input: HookPlanInput): HookPlan {
  return planMatcherHooks(input, CLAUDE_SETTINGS);
}
