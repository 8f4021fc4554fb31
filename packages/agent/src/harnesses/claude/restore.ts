/**
 * Restoring a Claude Code session, the mirror image of session.ts: the transcript goes to
 * `projects/<key of the destination>/<id>.jsonl`, the companion folder to `<key>/<id>/...`, legacy subagent
 * transcripts (`agent-<x>.jsonl`, before 2.1.2) beside the transcript. The key is the destination's, not the one the
 * session was captured under: `claude --resume <id>` looks in the folder of the directory it runs in. No native index
 * needs the session (Claude Code lists the project folder).
 *
 * Claude Code also finds a session by its id in the other project folders, so a transcript of the same id already in
 * another one is a conflict, whatever its bytes: a second copy under the destination's folder would make the id mean
 * two files.
 */
import type { Stats } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../../context.js';
import {
  checkDistinct,
  checkedSessionId,
  entriesOf,
  placement,
  restoreRoot,
  restoreUnsafe,
  safeSegments,
} from '../../harness-kit/restore-files.js';
import type { RestoreDuplicate, RestoreInput, RestorePlacement, RestorePlan } from '../types.js';
import { claudeProjectKey } from './session.js';

const LEGACY_SIDECHAIN = /^agent-[A-Za-z0-9_-]+\.jsonl$/;
/** Project folders looked through for another copy of the session (bounded). */
const MAX_PROJECT_DIRS = 20_000;

export function planClaudeRestore(_ctx: Context, input: RestoreInput, configDir: string): RestorePlan {
  const id = checkedSessionId(input);
  const root = restoreRoot(configDir, input.interval);
  const key = claudeProjectKey(input.destination);
  const placements: RestorePlacement[] = [];
  let capturedKey: string | undefined;
  for (const entry of entriesOf(input)) {
    if (entry.nativePath === undefined)
      throw restoreUnsafe(`${entry.label}: has no native_path; Claude Code files are restored to their native place`);
    const segments = safeSegments(entry.nativePath, entry.label);
    const [from, ...rest] = segments;
    // Every file of one session sits under one project key.
    if (capturedKey !== undefined && from !== capturedKey)
      throw restoreUnsafe(
        `${entry.label}: native_path ${entry.nativePath} is in another project folder than the rest of the session ` +
          `(${capturedKey})`,
      );
    capturedKey = from;
    const allowed =
      entry.role === 'primary_transcript'
        ? rest.length === 1 && rest[0] === `${id}.jsonl`
        : entry.role === 'session_companion' &&
          ((rest.length >= 2 && rest[0] === id) || (rest.length === 1 && LEGACY_SIDECHAIN.test(rest[0]!)));
    if (!allowed) {
      throw restoreUnsafe(
        `${entry.label}: a ${entry.role} file cannot live at ${entry.nativePath} ` +
          `(Claude Code keeps <project>/${id}.jsonl and <project>/${id}/...)`,
      );
    }
    placements.push(placement(root, [key, ...rest].join('/'), entry));
  }
  checkDistinct(placements);
  const transcript = path.join(root, key, `${id}.jsonl`);
  return {
    harness: 'claude',
    sessionId: id,
    home: configDir,
    root,
    placements,
    merges: [],
    duplicates: () => otherCopies(root, key, id, transcript),
    resumeArgv: ['claude', '--resume', id],
  };
}

async function lstatOrUndefined(file: string): Promise<Stats | undefined> {
  try {
    return await lstat(file);
  } catch {
    return undefined;
  }
}

/**
 * Transcripts `<root>/<other key>/<id>.jsonl` of another project folder, as Claude Code would find them by id. The
 * destination's own transcript is not one, also under another spelling of its folder (a file system that ignores
 * case): the same file is recognised by its identity.
 */
async function otherCopies(root: string, key: string, id: string, transcript: string): Promise<RestoreDuplicate[]> {
  let folders: string[];
  try {
    folders = (await readdir(root, { withFileTypes: true }))
      .filter((e) => e.name !== key && (e.isDirectory() || e.isSymbolicLink()))
      .map((e) => e.name);
  } catch {
    return [];
  }
  const own = await lstatOrUndefined(transcript);
  const found: RestoreDuplicate[] = [];
  for (const folder of folders.sort().slice(0, MAX_PROJECT_DIRS)) {
    const file = path.join(root, folder, `${id}.jsonl`);
    const info = await lstatOrUndefined(file);
    if (info === undefined || (own !== undefined && info.dev === own.dev && info.ino === own.ino)) continue;
    found.push({
      file,
      why:
        `a copy in another project folder; Claude Code finds a session by its id in every project folder, so a ` +
        `second copy would make \`claude --resume ${id}\` ambiguous`,
      hint:
        `Resume that copy from the directory it belongs to (\`claude --resume ${id}\` there), or move or ` +
        `delete ${file} (and the folder ${id}${path.sep} beside it, if any), then restore again.`,
    });
  }
  return found;
}
