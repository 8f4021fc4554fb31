/**
 * Gemini CLI's session files, under `~/.gemini/tmp/<project folder>/` (projects.ts names the folder):
 *   - `chats/session-<time>-<id8>.json[l]` (chat.ts), the primary transcript;
 *   - companions that belong to the session alone: subagent chats `chats/<session id>/...` (0.39 and later), tool
 *     outputs kept aside `tool-outputs/session-<session id>/...`, and the session's own folder `<session id>/...`
 *     (plans). Everything else in the project folder is shared by all its sessions (`logs.json`, `shell_history`,
 *     `checkpoints/`, the `.project_root` marker) or is a log (`logs/`), and is left out.
 *
 * The hook names the transcript (`transcript_path`) from 0.22; 0.21 sends an empty one, and the transcript is found
 * in the working directory's hash folder (or its registry folder) by the short id in its name and the session id in
 * it. Either way the file must name this session: a payload cannot point capture at another session's file.
 *
 * Title: the chat's `summary` (Gemini CLI's own, written when it lists sessions); else the first prompt the user
 * typed, the injected `<session_context>` skipped.
 */
import { readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../../context.js';
import { firstUserTurn, HEAD_MAX_BYTES, titleAndSummary } from '../../harness-kit/title.js';
import type { CollectedSession, CollectInput, SessionFile } from '../types.js';
import {
  artifactInvalid,
  assertSessionId,
  type CheckedFile,
  checkRoleCounts,
  entryName,
  fileOf,
  MAX_SESSION_FILES,
  readHead,
  readTail,
  sessionRootOf,
  SessionRoot,
} from '../../harness-kit/session-files.js';
import { chatSessionId, isChatFileOf, readGeminiChat } from '@blue-agent/contract/harnesses/gemini/chat.js';
import { HASH_FOLDER, projectHash, projectSlug, SLUG_FOLDER } from './projects.js';
import { geminiUserTurn } from '@blue-agent/contract/harnesses/gemini/transcript.js';

/** A chat document (before 0.39) is read whole for its title up to this size. */
const MAX_DOCUMENT_TITLE_BYTES = 16 * 1024 * 1024;
const TAIL_BYTES = 1024 * 1024;
const ID_HEAD_BYTES = 64 * 1024;

export async function collectGeminiSession(
  ctx: Context,
  input: CollectInput,
  geminiDir: string,
): Promise<CollectedSession> {
  const { payload, interval } = input;
  const id = payload.session_id;
  assertSessionId(id, geminiDir);
  const root = await SessionRoot.open(sessionRootOf(geminiDir, interval));
  const transcript =
    payload.transcript_path !== undefined && payload.transcript_path !== ''
      ? await namedTranscript(root, id, payload.transcript_path)
      : await foundTranscript(root, geminiDir, id, payload.cwd);
  const folder = transcript.rel.split('/')[0]!;

  const files: SessionFile[] = [
    fileOf('primary_transcript', transcript.rel.endsWith('.json') ? 'transcript.json' : 'transcript.jsonl', transcript),
  ];
  for (const inside of [`chats/${id}`, `tool-outputs/session-${id}`, id]) {
    const rel = `${folder}/${inside}`;
    for (const companion of await root.walk(rel, { limit: MAX_SESSION_FILES - files.length })) {
      files.push(fileOf('session_companion', entryName(companion.rel.slice(folder.length + 1)), companion));
    }
  }
  checkRoleCounts(interval, files, root.abs(folder));

  const chat = await readForTitle(transcript);
  const turn = firstUserTurn(chat.messages, geminiUserTurn);
  ctx.logger.debug('gemini session collected', { session: id, files: files.length, root: root.path });
  return {
    sessionId: id,
    ...(payload.cwd === undefined ? {} : { cwd: payload.cwd }),
    root: root.path,
    files,
    ...titleAndSummary({
      native: chat.summary === undefined ? undefined : { title: chat.summary },
      firstUserTurn: turn,
    }),
  };
}

/** `<folder>/chats/session-...-<id8>.json[l]` under the session root, as the hook named it. */
async function namedTranscript(root: SessionRoot, id: string, transcriptPath: string): Promise<CheckedFile> {
  if (!path.isAbsolute(transcriptPath)) {
    throw artifactInvalid(
      transcriptPath,
      'the hook named a transcript by a relative path',
      'Gemini CLI passes an absolute transcript_path; check what calls `blue-agent capture`.',
    );
  }
  const rel = root.relativeOf(transcriptPath);
  if (rel === undefined) {
    throw artifactInvalid(
      transcriptPath,
      `the transcript is outside Gemini CLI's session folder ${root.path}`,
      'Only transcripts under ~/.gemini/tmp are captured; check GEMINI_CLI_HOME for the hook and for blue-agent.',
    );
  }
  const [folder, chats, name, ...rest] = rel.split('/');
  if (
    rest.length > 0 ||
    chats !== 'chats' ||
    folder === undefined ||
    !(HASH_FOLDER.test(folder) || SLUG_FOLDER.test(folder)) ||
    name === undefined ||
    !isChatFileOf(name, id)
  ) {
    throw artifactInvalid(
      transcriptPath,
      `is not <project>/chats/session-<time>-${id.slice(0, 8)}.json[l] under ${root.path}`,
      "The hook payload names a file that is not this session's transcript; check what calls `blue-agent capture`.",
    );
  }
  const file = await root.file(rel);
  await checkNames(file, id);
  return file;
}

/** Gemini CLI 0.21 names no transcript: the chat of this id in the working directory's folder. */
async function foundTranscript(
  root: SessionRoot,
  geminiDir: string,
  id: string,
  cwd: string | undefined,
): Promise<CheckedFile> {
  if (cwd === undefined || !path.isAbsolute(cwd)) {
    throw artifactInvalid(
      root.path,
      'the hook named neither the transcript nor an absolute working directory',
      'Gemini CLI sends cwd with every hook; check what calls `blue-agent capture`.',
    );
  }
  const dirs = [cwd];
  const resolved = await realpath(cwd).catch(() => undefined);
  if (resolved !== undefined && resolved !== cwd) dirs.push(resolved);
  const folders = new Set<string>();
  for (const dir of dirs) {
    folders.add(projectHash(dir));
    folders.add((await projectSlug(geminiDir, dir)).slug);
  }
  const found: CheckedFile[] = [];
  for (const folder of folders) {
    const chats = `${folder}/chats`;
    if (!(await root.isDirectory(chats).catch(() => false))) continue;
    const names = (await readdir(root.abs(chats)).catch(() => [] as string[]))
      .filter((n) => isChatFileOf(n, id))
      .sort();
    for (const name of names) {
      const file = await root.file(`${chats}/${name}`);
      if (chatSessionId((await readHead(file, ID_HEAD_BYTES)).toString('utf8')) === id) found.push(file);
    }
  }
  if (found.length === 1) return found[0]!;
  const where = root.abs(`${projectHash(cwd)}/chats`);
  if (found.length === 0) {
    throw artifactInvalid(
      where,
      `no chat of session ${id} was found for ${cwd}`,
      'Check that Gemini CLI saved the session and that GEMINI_CLI_HOME matches for the hook and for blue-agent.',
    );
  }
  throw artifactInvalid(
    where,
    `session ${id} has ${found.length} chat files: ${found.map((f) => f.rel).join(', ')}`,
    'Capture it with a Gemini CLI that names its transcript (0.22 and later), or remove the stale copies.',
  );
}

async function checkNames(file: CheckedFile, id: string): Promise<void> {
  const named = chatSessionId((await readHead(file, ID_HEAD_BYTES)).toString('utf8'));
  if (named !== id) {
    throw artifactInvalid(
      file.abs,
      `holds session ${named === undefined ? '(none)' : JSON.stringify(named.slice(0, 80))}, not ${id}`,
      "The hook payload names a file that is not this session's transcript; check what calls `blue-agent capture`.",
    );
  }
}

/** The chat as far as a title needs: a document whole (up to a bound), JSON lines by their head and tail. */
async function readForTitle(file: CheckedFile) {
  if (file.rel.endsWith('.json')) {
    return readGeminiChat(
      file.size <= MAX_DOCUMENT_TITLE_BYTES ? (await readHead(file, MAX_DOCUMENT_TITLE_BYTES)).toString('utf8') : '',
    );
  }
  const head = readGeminiChat((await readHead(file, HEAD_MAX_BYTES)).toString('utf8'));
  if (file.size <= HEAD_MAX_BYTES) return head;
  // A summary is appended late (`{"$set": {"summary": ...}}`); the first prompt is near the start.
  const tail = readGeminiChat((await readTail(file, TAIL_BYTES)).toString('utf8'));
  return { ...head, ...(tail.summary === undefined ? {} : { summary: tail.summary }) };
}
