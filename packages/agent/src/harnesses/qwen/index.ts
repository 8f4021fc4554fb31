/**
 * Qwen Code. The managed SessionEnd hook lives in `<home>/settings.json`, the home being `$QWEN_HOME` (0.15.10 and
 * later) or `~/.qwen`; sessions live under `<runtime dir>/projects/`, the runtime dir being `$QWEN_RUNTIME_DIR`, else
 * the home. Qwen Code fires SessionEnd when an interactive session closes (`/quit`, `/exit`, Ctrl+C or Ctrl+D twice,
 * `/clear`), never in headless `-p` runs: those are not captured by this hook.
 */
import path from 'node:path';
import type { Context } from '../../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import type { HarnessAdapter } from '../types.js';
import { planQwenHook, qwenHooksDisabled } from './plan.js';
import { qwenTranscriptReader } from '@blue-agent/contract/harnesses/qwen/transcript.js';

const SETTINGS_FILE = 'settings.json';

function absolute(value: string | undefined): string | undefined {
  // A relative override would depend on the directory the agent happens to run from.
  return value !== undefined && value !== '' && path.isAbsolute(value) ? path.resolve(value) : undefined;
}

function configRoot(ctx: Context): string {
  return absolute(ctx.env.QWEN_HOME) ?? path.join(ctx.paths.home, '.qwen');
}

/** Where Qwen Code writes `projects/` (its runtime dir). */
export function qwenRuntimeDir(ctx: Context): string {
  return absolute(ctx.env.QWEN_RUNTIME_DIR) ?? configRoot(ctx);
}

function hookFileName(interval: Interval): string {
  const name = interval.capture?.hook.file;
  if (name === undefined) {
    throw new BlueError('PROFILE_INVALID', `profile ${interval.profile} has no capture hook file`, {
      hint: 'Add capture.hook.file (settings.json) to this interval in profiles/qwen.yaml.',
    });
  }
  return name;
}

// Session code (capture, listing, restore) loads when first used: reconcile plans hooks without it.
export const qwen: HarnessAdapter = {
  name: 'qwen',
  displayName: HARNESS_DISPLAY_NAMES.qwen,
  environment: ['QWEN_HOME', 'QWEN_RUNTIME_DIR'],
  hookFormat: 'qwen-settings-json',
  transcript: qwenTranscriptReader,
  configRoot,
  hookFile(ctx, interval) {
    return Promise.resolve().then(() => path.join(configRoot(ctx), hookFileName(interval)));
  },
  knownHookFiles(ctx) {
    return [path.join(configRoot(ctx), SETTINGS_FILE)];
  },
  planHook: planQwenHook,
  pendingState(_ctx, text) {
    const reason = qwenHooksDisabled(text);
    return reason === undefined ? undefined : { state: 'hooks_disabled', reason };
  },
  async collectSession(ctx, input) {
    const { collectQwenSession } = await import('./session.js');
    return collectQwenSession(ctx, input, qwenRuntimeDir(ctx));
  },
  async listSessions(ctx, interval, limit) {
    const { listQwenSessions } = await import('./listing.js');
    return listQwenSessions(qwenRuntimeDir(ctx), interval, limit);
  },
  async planRestore(ctx, input) {
    const { planQwenRestore } = await import('./restore.js');
    return planQwenRestore(ctx, input, qwenRuntimeDir(ctx));
  },
};
