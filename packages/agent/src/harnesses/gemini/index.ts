/**
 * Gemini CLI. The managed SessionEnd hook lives in `~/.gemini/settings.json` (the home moves with GEMINI_CLI_HOME,
 * which replaces the user's home directory); sessions are under `~/.gemini/tmp/<project folder>/chats/`.
 */
import path from 'node:path';
import type { Context } from '../../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import type { HarnessAdapter } from '../types.js';
import { geminiHooksDisabled, planGeminiHook } from './plan.js';
import { geminiTranscriptReader } from '@blue-agent/contract/harnesses/gemini/transcript.js';

const SETTINGS_FILE = 'settings.json';

function configRoot(ctx: Context): string {
  const home = ctx.env.GEMINI_CLI_HOME;
  // A relative override would depend on the directory the agent happens to run from.
  return path.join(
    home !== undefined && home !== '' && path.isAbsolute(home) ? path.resolve(home) : ctx.paths.home,
    '.gemini',
  );
}

function hookFileName(interval: Interval): string {
  const name = interval.capture?.hook.file;
  if (name === undefined) {
    throw new BlueError('PROFILE_INVALID', `profile ${interval.profile} has no capture hook file`, {
      hint: 'Add capture.hook.file (settings.json) to this interval in profiles/gemini.yaml.',
    });
  }
  return name;
}

// Session code (capture, listing, restore) loads when first used: reconcile plans hooks without it.
export const gemini: HarnessAdapter = {
  name: 'gemini',
  displayName: HARNESS_DISPLAY_NAMES.gemini,
  environment: ['GEMINI_CLI_HOME'],
  hookFormat: 'gemini-settings-json',
  transcript: geminiTranscriptReader,
  configRoot,
  hookFile(ctx, interval) {
    return Promise.resolve().then(() => path.join(configRoot(ctx), hookFileName(interval)));
  },
  knownHookFiles(ctx) {
    return [path.join(configRoot(ctx), SETTINGS_FILE)];
  },
  planHook: planGeminiHook,
  pendingState(_ctx, text) {
    const reason = geminiHooksDisabled(text);
    return reason === undefined ? undefined : { state: 'hooks_disabled', reason };
  },
  async collectSession(ctx, input) {
    const { collectGeminiSession } = await import('./session.js');
    return collectGeminiSession(ctx, input, configRoot(ctx));
  },
  async planRestore(ctx, input) {
    const { planGeminiRestore } = await import('./restore.js');
    return planGeminiRestore(ctx, input, configRoot(ctx));
  },
};
