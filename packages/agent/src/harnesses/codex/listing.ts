/**
 * Codex's sessions on disk, for the idle sweep and backfill: every rollout
 * `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl` (or `.jsonl.zst`), and the Codex version that
 * wrote it (the `session_meta` line's `cli_version`).
 */
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { findSessionFiles, headRecords, nativeSessions, sessionRootOf } from '../../harness-kit/session-files.js';
import type { SessionListing } from '../types.js';

const ROLLOUT =
  /^rollout-.+-([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})\.jsonl(?:\.zst)?$/;
const META_HEAD_BYTES = 64 * 1024;

export async function listCodexSessions(codexHome: string, interval: Interval, limit: number): Promise<SessionListing> {
  const root = sessionRootOf(codexHome, interval);
  const { files, truncated } = await findSessionFiles(root, {
    depth: 3,
    limit,
    idOf: (name) => ROLLOUT.exec(name)?.[1],
  });
  return {
    watch: [{ dir: root, depth: 3 }],
    truncated,
    sessions: nativeSessions(files, async (f) => {
      if (f.abs.endsWith('.zst')) return undefined;
      const meta = ((await headRecords(f.abs, META_HEAD_BYTES)) ?? []).find(
        (r) => isRecord(r) && r.type === 'session_meta',
      );
      const version = isRecord(meta) && isRecord(meta.payload) ? meta.payload.cli_version : undefined;
      return typeof version === 'string' ? version : undefined;
    }),
  };
}
