/**
 * Restoring a Gemini CLI session, the mirror image of session.ts: the chat goes to
 * `tmp/<folder of the destination>/chats/<its name>`, its companions to the same places under that folder. The
 * folder is the one the Gemini CLI that resumes it reads (projects.ts): the destination's hash before 0.29, its
 * registry folder from 0.29 (found, or claimed as Gemini CLI would, and marked with `.project_root` so that the
 * registry finds it again). When the resuming version is not known, the captured layout is kept. Gemini CLI checks
 * nothing else (`projectHash` in the chat is never compared), so no byte of the chat changes.
 *
 * Another chat of the same session already in that folder (a copy Gemini CLI resumed and converted, or one restored
 * before) is a conflict: Gemini CLI would pick one of them by its last update.
 */
import path from 'node:path';
import semver from 'semver';
import type { Context } from '../../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import {
  checkDistinct,
  checkedSessionId,
  entriesOf,
  placement,
  restoreRoot,
  restoreUnsafe,
  safeSegments,
} from '../../harness-kit/restore-files.js';
import type { RestoreDuplicate, RestoreIndexMerge, RestoreInput, RestorePlacement, RestorePlan } from '../types.js';
import { chatSessionId, isChatFileOf } from '@blue-agent/contract/harnesses/gemini/chat.js';
import { HASH_FOLDER, PROJECT_ROOT_FILE, projectHash, projectSlug, SLUG_FOLDER } from './projects.js';
import { readdir } from 'node:fs/promises';

/** The first version that keeps sessions in registry folders instead of hash folders. */
const SLUG_LAYOUT_FROM = '0.29.0';
const ID_HEAD_BYTES = 64 * 1024;
const MAX_CHATS = 20_000;

export async function planGeminiRestore(_ctx: Context, input: RestoreInput, geminiDir: string): Promise<RestorePlan> {
  const id = checkedSessionId(input);
  const root = restoreRoot(geminiDir, input.interval);
  const entries = entriesOf(input);
  let captured: string | undefined;
  const shapes: { rest: string[]; entry: (typeof entries)[number] }[] = [];
  for (const entry of entries) {
    if (entry.nativePath === undefined)
      throw restoreUnsafe(`${entry.label}: has no native_path; Gemini CLI files are restored to their native place`);
    const [folder, ...rest] = safeSegments(entry.nativePath, entry.label);
    if (folder === undefined || !(HASH_FOLDER.test(folder) || SLUG_FOLDER.test(folder)))
      throw restoreUnsafe(`${entry.label}: native_path ${entry.nativePath} is not in a Gemini CLI project folder`);
    if (captured !== undefined && folder !== captured)
      throw restoreUnsafe(
        `${entry.label}: native_path ${entry.nativePath} is in another project folder than the rest of the session ` +
          `(${captured})`,
      );
    captured = folder;
    const allowed =
      entry.role === 'primary_transcript'
        ? rest.length === 2 && rest[0] === 'chats' && isChatFileOf(rest[1]!, id)
        : entry.role === 'session_companion' &&
          ((rest[0] === 'chats' && rest[1] === id && rest.length >= 3) ||
            (rest[0] === 'tool-outputs' && rest[1] === `session-${id}` && rest.length >= 3) ||
            (rest[0] === id && rest.length >= 2));
    if (!allowed) {
      throw restoreUnsafe(
        `${entry.label}: a ${entry.role} file cannot live at ${entry.nativePath} (Gemini CLI keeps ` +
          `<project>/chats/session-<time>-${id.slice(0, 8)}.json[l] and the session's own folders)`,
      );
    }
    shapes.push({ rest, entry });
  }

  const slugLayout =
    input.installedVersion !== undefined
      ? semver.gte(input.installedVersion, SLUG_LAYOUT_FROM)
      : captured !== undefined && !HASH_FOLDER.test(captured);
  const destination = path.resolve(input.destination);
  const project = slugLayout ? await projectSlug(geminiDir, destination) : undefined;
  const folder = project?.slug ?? projectHash(destination);
  const placements: RestorePlacement[] = shapes.map(({ rest, entry }) =>
    placement(root, [folder, ...rest].join('/'), entry),
  );
  checkDistinct(placements);
  const chat = placements.find((p) => p.role === 'primary_transcript')!;

  const merges: RestoreIndexMerge[] = [];
  if (project !== undefined && !project.marked) {
    const file = path.join(root, folder, PROJECT_ROOT_FILE);
    merges.push({
      file,
      what: `${PROJECT_ROOT_FILE} marking ${folder} as the folder of ${destination}`,
      merge: (current) => markerFor(current, destination, file),
    });
  }
  return {
    harness: 'gemini',
    sessionId: id,
    home: geminiDir,
    root,
    placements,
    merges,
    duplicates: () => otherChats(path.join(root, folder, 'chats'), id, chat.to),
    resumeArgv: ['gemini', '--resume', id],
  };
}

/** The ownership marker: written when absent, left when it names the destination; another owner is a conflict. */
export function markerFor(current: Buffer | null, destination: string, file: string): Buffer {
  if (current === null) return Buffer.from(destination, 'utf8');
  if (path.resolve(current.toString('utf8').trim()) === destination) return current;
  throw new BlueError(
    'RESTORE_CONFLICT',
    `${file}: names ${current.toString('utf8').trim().slice(0, 200)}, so Gemini CLI keeps that folder for another ` +
      `directory`,
    {
      file,
      hint: 'Something changed the folder while restoring; run resume again.',
    },
  );
}

/** Chats of the same session under another name in the folder (a converted `.jsonl`, a placeholder, an older copy). */
async function otherChats(chats: string, id: string, own: string): Promise<RestoreDuplicate[]> {
  const names = (await readdir(chats).catch(() => [] as string[]))
    .filter((n) => isChatFileOf(n, id))
    .sort()
    .slice(0, MAX_CHATS);
  const found: RestoreDuplicate[] = [];
  for (const name of names) {
    const file = path.join(chats, name);
    if (file === own) continue;
    const head = await readChecked(file, {
      code: 'RESTORE_UNSAFE',
      maxBytes: Number.MAX_SAFE_INTEGER,
      head: ID_HEAD_BYTES,
      optional: true,
    }).catch(() => undefined);
    if (head === undefined || chatSessionId(head.toString('utf8')) !== id) continue;
    found.push({
      file,
      why: `Gemini CLI already holds session ${id} in this folder; it would resume whichever copy was updated last`,
      hint:
        `Resume that copy (\`gemini --resume ${id}\` in the destination), or move ${file} away, then restore ` +
        `again.`,
    });
  }
  return found;
}
