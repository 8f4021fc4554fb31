/**
 * Qwen Code's sessions on disk, for the idle sweep and backfill: every `<projects>/<key>/chats/<session id>.jsonl`
 * (the `.runtime.json` beside it is not a session), and the Qwen Code version its records carry.
 */
import path from 'node:path';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { findSessionFiles, headField, nativeSessions, sessionRootOf } from '../../harness-kit/session-files.js';
import type { SessionListing } from '../types.js';

const VERSION_HEAD_BYTES = 64 * 1024;

export async function listQwenSessions(runtimeDir: string, interval: Interval, limit: number): Promise<SessionListing> {
  const root = sessionRootOf(runtimeDir, interval);
  const { files, truncated } = await findSessionFiles(root, {
    depth: 2,
    limit,
    idOf: (name) => (name.endsWith('.jsonl') ? name.slice(0, -'.jsonl'.length) : undefined),
  });
  // Only `<key>/chats/<id>.jsonl`: other folders at that depth hold no sessions.
  const chats = files.filter((f) => path.basename(path.dirname(f.abs)) === 'chats');
  return {
    watch: [{ dir: root, depth: 2 }],
    truncated,
    sessions: nativeSessions(chats, (f) => headField(f.abs, VERSION_HEAD_BYTES, 'version')),
  };
}
