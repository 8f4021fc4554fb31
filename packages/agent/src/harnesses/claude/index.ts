/**
 * Claude Code: the managed SessionEnd hook lives in `<config dir>/settings.json`. `~/.claude.json` is Claude Code's
 * own application state and is never touched.
 */
import path from 'node:path';
import type { Context } from '../../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import type { HarnessAdapter } from '../types.js';
import { claudeDemo } from './demo.js';
import { planClaudeHook } from './plan.js';
import { claudeTranscriptReader } from '@blue-agent/contract/harnesses/claude/transcript.js';

const SETTINGS_FILE = 'settings.json';

function configRoot(ctx: Context): string {
  const override = ctx.env.CLAUDE_CONFIG_DIR;
  // A relative override would depend on the directory the agent happens to run from.
  if (override !== undefined && override !== '' && path.isAbsolute(override)) return path.resolve(override);
  return path.join(ctx.paths.home, '.claude');
}

function hookFileName(interval: Interval): string {
  const name = interval.capture?.hook.file;
  if (name === undefined) {
    throw new BlueError('PROFILE_INVALID', `profile ${interval.profile} has no capture hook file`, {
      hint: 'Add capture.hook.file (settings.json) to this interval in profiles/claude.yaml.',
    });
  }
  const normal = path.normalize(name);
  if (path.isAbsolute(normal) || normal === '..' || normal.startsWith(`..${path.sep}`)) {
    throw new BlueError(
      'UNSAFE_PATH',
      `profile ${interval.profile} names a hook file outside the Claude config dir: ${name}`,
      {
        hint: 'capture.hook.file must be a path relative to the Claude config dir, such as settings.json.',
      },
    );
  }
  return normal;
}

// Session code (capture, listing, restore) loads when first used: reconcile plans hooks without it.
export const claude: HarnessAdapter = {
  name: 'claude',
  displayName: HARNESS_DISPLAY_NAMES.claude,
  environment: ['CLAUDE_CONFIG_DIR'],
  hookFormat: 'claude-settings-json',
  transcript: claudeTranscriptReader,
  demo: claudeDemo,
  configRoot,
  hookFile(ctx, interval) {
    return Promise.resolve().then(() => path.join(configRoot(ctx), hookFileName(interval)));
  },
  knownHookFiles(ctx) {
    return [path.join(configRoot(ctx), SETTINGS_FILE)];
  },
  planHook: planClaudeHook,
  async collectSession(ctx, input) {
    const { collectClaudeSession } = await import('./session.js');
    return collectClaudeSession(ctx, input, configRoot(ctx));
  },
  async listSessions(ctx, interval, limit) {
    const { listClaudeSessions } = await import('./listing.js');
    return listClaudeSessions(configRoot(ctx), interval, limit);
  },
  async sessionCleanup(ctx) {
    const { claudeCleanup } = await import('./listing.js');
    return claudeCleanup(ctx, configRoot(ctx));
  },
  async planRestore(ctx, input) {
    const { planClaudeRestore } = await import('./restore.js');
    return planClaudeRestore(ctx, input, configRoot(ctx));
  },
};
