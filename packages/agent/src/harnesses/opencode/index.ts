/**
 * OpenCode. There is no session-end hook to splice into: the managed hook is a whole plugin file the agent owns,
 * `<config>/opencode/plugin/blue-agent-session-upload.js`. A file at that path that the agent did not write is never
 * overwritten.
 */
import path from 'node:path';
import type { Context } from '../../context.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import type { HarnessAdapter } from '../types.js';
import { planOpencodeHook } from './plan.js';
import { opencodeTranscriptReader } from '@blue-agent/contract/harnesses/opencode/transcript.js';

const PLUGIN_FILE = 'blue-agent-session-upload.js';
/** Folders of the config dir OpenCode loads plugins from (`{plugin,plugins}/*.{ts,js}`; `plugin/` in every version). */
const PLUGIN_DIRS = ['plugin', 'plugins'] as const;
const DEFAULT_HOOK_FILE = `plugin/${PLUGIN_FILE}`;

// Session code (capture, listing, restore) loads when first used: reconcile plans hooks without it.
export const opencode: HarnessAdapter = {
  name: 'opencode',
  displayName: HARNESS_DISPLAY_NAMES.opencode,
  // Its homes follow the XDG variables, which the agent passes on for itself.
  environment: [],
  hookFormat: 'opencode-plugin',
  transcript: opencodeTranscriptReader,

  configRoot(ctx: Context): string {
    return path.join(ctx.paths.configHome, 'opencode');
  },

  async hookFile(ctx: Context, interval: Interval): Promise<string> {
    return path.join(opencode.configRoot(ctx), interval.capture?.hook.file ?? DEFAULT_HOOK_FILE);
  },

  knownHookFiles(ctx: Context): string[] {
    const root = opencode.configRoot(ctx);
    return PLUGIN_DIRS.map((dir) => path.join(root, dir, PLUGIN_FILE));
  },

  planHook: planOpencodeHook,

  async collectSession(ctx, input) {
    const { collectOpencodeSession } = await import('./session.js');
    return collectOpencodeSession(ctx, input);
  },

  async planRestore(ctx, input) {
    const { opencodeDataDir, planOpencodeRestore } = await import('./restore.js');
    return planOpencodeRestore(ctx, input, opencodeDataDir(ctx));
  },
};
