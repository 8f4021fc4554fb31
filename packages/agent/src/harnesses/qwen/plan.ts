/**
 * Qwen Code's settings.json in the matcher-group hooks planner's terms (`harness-kit/matcher-hooks.ts`): the managed
 * hook is `{"name": "blue-agent-capture", "type": "command", "command": ..., "timeout": <milliseconds>}`. Qwen Code
 * reads `timeout` as milliseconds up to 0.23.3 and, from 0.23.4, a value of 1000 or more still as milliseconds
 * (`readCommandHookTimeout`): milliseconds of at least a second mean the same to every version. It runs the command
 * with `bash -c`. `disableAllHooks: true` turns every hook off, which status reports.
 */
import { parse, type ParseError } from 'jsonc-parser';
import { planMatcherHooks, type MatcherHooksDialect } from '../../harness-kit/matcher-hooks.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import { isManagedCommand } from '../../harness-kit/signature.js';
import type { HookPlan, HookPlanInput, ManagedHook } from '../types.js';

export const QWEN_HOOK_NAME = 'blue-agent-capture';

export const QWEN_SETTINGS: MatcherHooksDialect<ManagedHook> = {
  displayName: HARNESS_DISPLAY_NAMES.qwen,
  isManagedCommand: (command) => isManagedCommand(command, 'qwen'),
  entry: (desired) => ({
    name: QWEN_HOOK_NAME,
    type: 'command',
    command: desired.command,
    timeout: Math.max(1, desired.timeoutSeconds) * 1000,
  }),
};

export function planQwenHook(input: HookPlanInput): HookPlan {
  return planMatcherHooks(input, QWEN_SETTINGS);
}

/** The user's switch that turns every hook off (`disableAllHooks`), if set. */
export function qwenHooksDisabled(text: string): string | undefined {
  const errors: ParseError[] = [];
  const doc: unknown = parse(text, errors, { allowTrailingComma: false, disallowComments: false });
  if (errors.length > 0 || !isRecord(doc)) return undefined;
  return doc.disableAllHooks === true
    ? 'settings.json sets disableAllHooks to true, which turns every Qwen Code hook off (the capture hook among them)'
    : undefined;
}
