/**
 * Gemini CLI's settings.json in the matcher-group hooks planner's terms (`harness-kit/matcher-hooks.ts`): the managed
 * hook is `{"name": "blue-agent-capture", "type": "command", "command": ..., "timeout": <milliseconds>}`. Gemini CLI
 * reads `timeout` in milliseconds (`hookRunner.ts`, `DEFAULT_HOOK_TIMEOUT = 60000`) and runs the command with
 * `/bin/sh -c` (`bash -c` from 0.24); the name lets a user turn this one hook off by name
 * (`hooksConfig.disabled`), which status then reports. Versions before 0.26 need an enabling switch, which their
 * profiles name (`capture.hook.requires`) and the planner adds with the hook.
 */
import { parse, type ParseError } from 'jsonc-parser';
import { planMatcherHooks, type MatcherHooksDialect } from '../../harness-kit/matcher-hooks.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import { isManagedCommand } from '../../harness-kit/signature.js';
import type { HookPlan, HookPlanInput, ManagedHook } from '../types.js';

export const GEMINI_HOOK_NAME = 'blue-agent-capture';

export const GEMINI_SETTINGS: MatcherHooksDialect<ManagedHook> = {
  displayName: HARNESS_DISPLAY_NAMES.gemini,
  isManagedCommand: (command) => isManagedCommand(command, 'gemini'),
  entry: (desired) => ({
    name: GEMINI_HOOK_NAME,
    type: 'command',
    command: desired.command,
    timeout: desired.timeoutSeconds * 1000,
  }),
};

export function planGeminiHook(input: HookPlanInput): HookPlan {
  return planMatcherHooks(input, GEMINI_SETTINGS);
}

/**
 * The user's switches that keep every hook, or this one, from running (Gemini CLI 0.26 and later):
 * `hooksConfig.enabled` false, or the managed hook's name in `hooksConfig.disabled`.
 */
export function geminiHooksDisabled(text: string): string | undefined {
  const errors: ParseError[] = [];
  const doc: unknown = parse(text, errors, { allowTrailingComma: false, disallowComments: false });
  if (errors.length > 0 || !isRecord(doc) || !isRecord(doc.hooksConfig)) return undefined;
  if (doc.hooksConfig.enabled === false)
    return (
      'settings.json sets hooksConfig.enabled to false, which turns every Gemini CLI hook off (the capture ' +
      'hook among them)'
    );
  if (Array.isArray(doc.hooksConfig.disabled) && doc.hooksConfig.disabled.includes(GEMINI_HOOK_NAME)) {
    return `settings.json lists ${GEMINI_HOOK_NAME} in hooksConfig.disabled, which turns the capture hook off`;
  }
  return undefined;
}
