/** The managed Codex hook planned in the file that holds it: hooks.json (./plan-json.ts) or config.toml
 * (./plan-toml.ts). */
import path from 'node:path';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { HookPlan, HookPlanInput } from '../types.js';
import { planJson } from './plan-json.js';
import { planToml } from './plan-toml.js';

export function planCodexHook(input: HookPlanInput): HookPlan {
  try {
    return path.extname(input.file).toLowerCase() === '.json' ? planJson(input) : planToml(input);
  } catch (error) {
    if (error instanceof BlueError) throw error;
    throw new BlueError('NATIVE_CONFIG_CONFLICT', `${input.file}: cannot plan the managed Codex hook in this file`, {
      file: input.file,
      hint:
        'The file has a shape blue-agent does not handle; add or remove the blue-agent hook by hand, and ' +
        'please report the file layout.',
      cause: error,
    });
  }
}
