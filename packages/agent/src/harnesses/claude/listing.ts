/**
 * Claude Code's sessions on disk, for the idle sweep and backfill: every `<projects>/<project key>/<session id>.jsonl`
 * (legacy `agent-*.jsonl` subagent transcripts are companions, not sessions), and its cleanup setting:
 * `cleanupPeriodDays` in settings.json (default 30), after which Claude Code deletes a session's transcript at start.
 */
import path from 'node:path';
import type { Context } from '../../context.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import { findSessionFiles, headField, nativeSessions, sessionRootOf } from '../../harness-kit/session-files.js';
import type { SessionCleanup, SessionListing } from '../types.js';

/** Claude Code's default for cleanupPeriodDays. */
const DEFAULT_CLEANUP_DAYS = 30;
const SETTINGS_MAX_BYTES = 4 * 1024 * 1024;
/** The records that carry `version` come first; a few of them are enough. */
const VERSION_HEAD_BYTES = 64 * 1024;

export async function listClaudeSessions(
  configDir: string,
  interval: Interval,
  limit: number,
): Promise<SessionListing> {
  const root = sessionRootOf(configDir, interval);
  const { files, truncated } = await findSessionFiles(root, {
    depth: 1,
    limit,
    idOf: (name) =>
      name.endsWith('.jsonl') && !name.startsWith('agent-') ? name.slice(0, -'.jsonl'.length) : undefined,
  });
  return {
    watch: [{ dir: root, depth: 1 }],
    truncated,
    sessions: nativeSessions(files, (f) => headField(f.abs, VERSION_HEAD_BYTES, 'version')),
  };
}

export async function claudeCleanup(ctx: Context, configDir: string): Promise<SessionCleanup | undefined> {
  const file = path.join(configDir, 'settings.json');
  let value: unknown;
  try {
    const bytes = await readChecked(file, {
      code: 'NATIVE_CONFIG_PARSE',
      maxBytes: SETTINGS_MAX_BYTES,
      optional: true,
    });
    value =
      bytes === undefined
        ? undefined
        : (JSON.parse(bytes.toString('utf8')) as Record<string, unknown>)?.cleanupPeriodDays;
  } catch (error) {
    ctx.logger.debug('claude settings unreadable for cleanupPeriodDays', { file, error: (error as Error).message });
  }
  if (typeof value === 'number' && Number.isFinite(value) && value > 0)
    return { days: value, setting: 'cleanupPeriodDays', file };
  return { days: DEFAULT_CLEANUP_DAYS, setting: 'cleanupPeriodDays (default)', file };
}
