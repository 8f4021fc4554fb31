/**
 * Restoring a Claude Code session, the mirror image of session.ts: the transcript goes to
 * `projects/<key of the destination>/<id>.jsonl`, the companion folder to `<key>/<id>/...`, legacy subagent
 * transcripts (`agent-<x>.jsonl`, before 2.1.2) beside the transcript. The key is the destination's, not the one the
 * session was captured under: `claude --resume <id>` looks in the folder of the directory it runs in. No native index
 * needs the session (Claude Code lists the project folder).
 */
import type { Context } from '../../context.js';
import { checkDistinct, checkedSessionId, entriesOf, placement, restoreRoot, restoreUnsafe, safeSegments } from '../restore-files.js';
import type { RestoreInput, RestorePlacement, RestorePlan } from '../types.js';
import { claudeProjectKey } from './session.js';

const LEGACY_SIDECHAIN = /^agent-[A-Za-z0-9_-]+\.jsonl$/;

export function planClaudeRestore(_ctx: Context, input: RestoreInput, configDir: string): RestorePlan {
  const id = checkedSessionId(input);
  const root = restoreRoot(configDir, input.interval);
  const key = claudeProjectKey(input.destination);
  const placements: RestorePlacement[] = [];
  let capturedKey: string | undefined;
  for (const entry of entriesOf(input)) {
    if (entry.nativePath === undefined) throw restoreUnsafe(`${entry.label}: has no native_path; Claude Code files are restored to their native place`);
    const segments = safeSegments(entry.nativePath, entry.label);
    const [from, ...rest] = segments;
    // Every file of one session sits under one project key.
    if (capturedKey !== undefined && from !== capturedKey) throw restoreUnsafe(`${entry.label}: native_path ${entry.nativePath} is in another project folder than the rest of the session (${capturedKey})`);
    capturedKey = from;
    const allowed =
      entry.role === 'primary_transcript'
        ? rest.length === 1 && rest[0] === `${id}.jsonl`
        : entry.role === 'session_companion' && ((rest.length >= 2 && rest[0] === id) || (rest.length === 1 && LEGACY_SIDECHAIN.test(rest[0]!)));
    if (!allowed) {
      throw restoreUnsafe(`${entry.label}: a ${entry.role} file cannot live at ${entry.nativePath} (Claude Code keeps <project>/${id}.jsonl and <project>/${id}/...)`);
    }
    placements.push(placement(root, [key, ...rest].join('/'), entry));
  }
  checkDistinct(placements);
  return { harness: 'claude', sessionId: id, home: configDir, root, placements, merges: [], resumeArgv: ['claude', '--resume', id] };
}
