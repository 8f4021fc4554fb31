/**
 * Claude Code's session files: `<config dir>/projects/<project key>/<session id>.jsonl` (the primary transcript) and
 * everything below the companion folder `<project key>/<session id>/` (subagent transcripts and their `.meta.json`,
 * persisted large tool results, nested folders).
 *
 * The project key is Claude Code's `sanitizePath` of the working directory (read from the 2.1.332 CLI bundle,
 * `sessionStoragePortable`): every UTF-16 unit outside [A-Za-z0-9] becomes `-`; a key longer than 200 units is cut
 * to 200 and gets `-` plus the base-36 absolute value of a 32-bit string hash (`h = (h << 5) - h + unit | 0`) of the
 * unsanitised path. Claude may also pin a worktree session to its main checkout's key, which is why the hook's
 * `transcript_path` is preferred and a last-resort search looks one level deep for `<session id>.jsonl`.
 *
 * Before 2.1.2 subagent transcripts were `<project key>/agent-<id>.jsonl` beside the session's transcript; those whose
 * records name this session are captured as companions too.
 *
 * Title: a `custom-title` record (`/rename`) wins, then an `ai-title`, then the project's `sessions-index.json`
 * entry, then a legacy `summary` record; else the first prompt, by Claude Code's own rule (`type: user`, no
 * `isMeta` / `isCompactSummary`, no tool results, no text that opens with a tag, a slash command only as a
 * fallback).
 */
import { readdir, realpath } from 'node:fs/promises';
import type { Dirent } from 'node:fs';
import path from 'node:path';
import type { Context } from '../../context.js';
import {
  firstUserTurn,
  HEAD_MAX_BYTES,
  newestNativeMetadata,
  parseTranscript,
  titleAndSummary,
  type NativeMetadata,
} from '../../harness-kit/title.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import type { CollectedSession, CollectInput, SessionFile } from '../types.js';
import {
  artifactInvalid,
  assertSessionId,
  type CheckedFile,
  checkRoleCounts,
  entryName,
  fileOf,
  MAX_FILE_BYTES,
  MAX_SESSION_FILES,
  readHead,
  readTail,
  sessionRootOf,
  SessionRoot,
} from '../../harness-kit/session-files.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import { claudeUserTurn } from '@blue-agent/contract/harnesses/claude/transcript.js';

/** Claude Code keeps project keys at most this long before the hash suffix. */
const MAX_KEY_LENGTH = 200;
/** Title records are appended as the session goes; Claude Code itself reads the head and the tail for them. */
const TAIL_BYTES = 1024 * 1024;
/** Bound on the last-resort search for a transcript in another project folder. */
const MAX_PROJECT_DIRS = 10_000;
const LEGACY_SIDECHAIN = /^agent-[A-Za-z0-9_-]+\.jsonl$/;
const MAX_LEGACY_SIDECHAINS = 10_000;
const LEGACY_HEAD_BYTES = 256 * 1024;
/** Per-project index some 2.1.x releases kept: `{version, entries: [{sessionId, summary, firstPrompt, ...}]}`. */
const SESSIONS_INDEX = 'sessions-index.json';
const MAX_INDEX_BYTES = 16 * 1024 * 1024;

function stringHash(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = ((hash << 5) - hash + text.charCodeAt(i)) | 0;
  return hash;
}

/** Claude Code's project folder name for a working directory. */
export function claudeProjectKey(cwd: string): string {
  const key = cwd.replace(/[^a-zA-Z0-9]/g, '-');
  if (key.length <= MAX_KEY_LENGTH) return key;
  return `${key.slice(0, MAX_KEY_LENGTH)}-${Math.abs(stringHash(cwd)).toString(36)}`;
}

export async function collectClaudeSession(
  ctx: Context,
  input: CollectInput,
  configDir: string,
): Promise<CollectedSession> {
  const { payload, interval } = input;
  const id = payload.session_id;
  assertSessionId(id, configDir);
  const root = await SessionRoot.open(sessionRootOf(configDir, interval));
  const transcriptRel = await findTranscript(root, payload.session_id, payload.transcript_path, payload.cwd);
  const transcript = await root.file(transcriptRel);
  const key = transcriptRel.split('/')[0]!;

  const files: SessionFile[] = [fileOf('primary_transcript', 'transcript.jsonl', transcript)];
  const companionRel = `${key}/${id}`;
  const companions = await root.walk(companionRel, { limit: MAX_SESSION_FILES - 1 });
  for (const companion of companions) {
    files.push(fileOf('session_companion', entryName(companion.rel.slice(companionRel.length + 1)), companion));
  }
  for (const legacy of await legacySidechains(root, key, id))
    files.push(fileOf('session_companion', entryName(legacy.rel.slice(key.length + 1)), legacy));
  checkRoleCounts(interval, files, root.abs(companionRel));

  const head = parseTranscript((await readHead(transcript, HEAD_MAX_BYTES)).toString('utf8'));
  const tail =
    transcript.size > HEAD_MAX_BYTES ? parseTranscript((await readTail(transcript, TAIL_BYTES)).toString('utf8')) : [];
  const native = await nativeTitle(root, key, [...head, ...tail], id);
  const cwd = payload.cwd ?? recordedCwd(head);
  ctx.logger.debug('claude session collected', { session: id, files: files.length, root: root.path });
  return {
    sessionId: id,
    ...(cwd === undefined ? {} : { cwd }),
    root: root.path,
    files,
    ...titleAndSummary({ native, firstUserTurn: firstUserTurn(head, claudeUserTurn) }),
  };
}

/** The transcript's native path: `<project key>/<session id>.jsonl`. */
async function findTranscript(
  root: SessionRoot,
  id: string,
  transcriptPath: string | undefined,
  cwd: string | undefined,
): Promise<string> {
  const fileName = `${id}.jsonl`;
  if (transcriptPath !== undefined) {
    if (!path.isAbsolute(transcriptPath)) {
      throw artifactInvalid(
        transcriptPath,
        'the hook named a transcript by a relative path',
        'Claude Code passes an absolute transcript_path; check what calls `blue-agent capture`.',
      );
    }
    const rel = root.relativeOf(transcriptPath);
    if (rel === undefined) {
      throw artifactInvalid(
        transcriptPath,
        `the transcript is outside Claude Code's projects folder ${root.path}`,
        'Only transcripts under <Claude config dir>/projects are captured; check CLAUDE_CONFIG_DIR for the hook ' +
          'and for blue-agent.',
      );
    }
    const segments = rel.split('/');
    if (segments.length !== 2 || segments[1] !== fileName) {
      throw artifactInvalid(
        transcriptPath,
        `is not <project>/${fileName} under ${root.path}`,
        "The hook payload names a file that is not this session's transcript; check what calls `blue-agent capture`.",
      );
    }
    return rel;
  }

  const candidates: string[] = [];
  if (cwd !== undefined && path.isAbsolute(cwd)) {
    candidates.push(`${claudeProjectKey(cwd)}/${fileName}`);
    try {
      const resolved = await realpath(cwd);
      if (resolved !== cwd) candidates.push(`${claudeProjectKey(resolved)}/${fileName}`);
    } catch {
      // The directory is gone; the recorded key is all there is.
    }
  }
  for (const rel of candidates) {
    if ((await root.lstat(rel)) !== undefined) return rel;
  }

  // Last resort: a transcript of this id in any project folder (a worktree session pinned to another key).
  const found: string[] = [];
  const entries = await readdir(root.path, { withFileTypes: true });
  for (const entry of entries.slice(0, MAX_PROJECT_DIRS)) {
    if (!entry.isDirectory()) continue;
    const rel = `${entry.name}/${fileName}`;
    if ((await root.lstat(rel).catch(() => undefined)) !== undefined) found.push(rel);
  }
  if (found.length === 1) return found[0]!;
  const where = candidates[0] === undefined ? path.join(root.path, '*', fileName) : root.abs(candidates[0]);
  if (found.length === 0) {
    throw artifactInvalid(
      where,
      `no transcript of session ${id} was found`,
      'Check that Claude Code saved the session (it does not for --no-session-persistence) and that ' +
        'CLAUDE_CONFIG_DIR matches.',
    );
  }
  throw artifactInvalid(
    where,
    `session ${id} has transcripts in ${found.length} project folders: ${found.join(', ')}`,
    'Capture it with a hook payload that names transcript_path.',
  );
}

/**
 * Subagent transcripts of Claude Code before 2.1.2: `agent-<id>.jsonl` beside the session transcripts, tied to their
 * parent by the `sessionId` of their records. Only regular files are read; the first line decides.
 */
async function legacySidechains(root: SessionRoot, key: string, id: string): Promise<CheckedFile[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(root.abs(key), { withFileTypes: true });
  } catch {
    return [];
  }
  const found: CheckedFile[] = [];
  for (const entry of entries
    .filter((e) => e.isFile() && LEGACY_SIDECHAIN.test(e.name))
    .slice(0, MAX_LEGACY_SIDECHAINS)) {
    const rel = `${key}/${entry.name}`;
    // Read by the capture rule (one link, no link followed); one that cannot be is not shown to be this session's.
    const head = await readChecked(root.abs(rel), {
      code: 'ARTIFACT_INVALID',
      maxBytes: MAX_FILE_BYTES,
      head: LEGACY_HEAD_BYTES,
    }).catch(() => undefined);
    const first = head === undefined ? undefined : parseTranscript(head.toString('utf8'), 1)[0];
    if (isRecord(first) && first.sessionId === id) found.push(await root.file(rel));
  }
  return found;
}

/**
 * Claude Code's own titles, newest source first: a `custom-title` record (`/rename`), an `ai-title` record, the
 * project's `sessions-index.json` entry (2.1.x before it was dropped: `summary` and `firstPrompt`), a legacy
 * `summary` line.
 */
async function nativeTitle(
  root: SessionRoot,
  key: string,
  records: readonly unknown[],
  id: string,
): Promise<NativeMetadata | undefined> {
  const pick = (type: string, field: string) =>
    newestNativeMetadata(
      records
        .filter((r) => isRecord(r) && r.type === type && typeof r[field] === 'string')
        .map((r) => ({ ...(r as Record<string, unknown>), title: (r as Record<string, unknown>)[field] })),
      id,
      { idOptional: true },
    )?.title;
  const index = await sessionsIndex(root, key, id);
  const title =
    pick('custom-title', 'customTitle') ?? pick('ai-title', 'aiTitle') ?? index?.title ?? pick('summary', 'summary');
  const preview = index?.preview;
  if (title === undefined && preview === undefined) return undefined;
  return { ...(title === undefined ? {} : { title }), ...(preview === undefined ? {} : { preview }) };
}

async function sessionsIndex(root: SessionRoot, key: string, id: string): Promise<NativeMetadata | undefined> {
  const rel = `${key}/${SESSIONS_INDEX}`;
  const info = await root.lstat(rel).catch(() => undefined);
  if (info === undefined) return undefined;
  let doc: unknown;
  try {
    // A title from an index that is not a plain one-link file is not taken (it could be any file of the machine).
    const bytes = await readChecked(root.abs(rel), {
      code: 'ARTIFACT_INVALID',
      maxBytes: MAX_INDEX_BYTES,
      expect: { dev: info.dev, ino: info.ino },
    });
    doc = JSON.parse(bytes!.toString('utf8'));
  } catch {
    return undefined;
  }
  return isRecord(doc) && Array.isArray(doc.entries) ? newestNativeMetadata(doc.entries, id) : undefined;
}

function recordedCwd(records: readonly unknown[]): string | undefined {
  for (const record of records) {
    if (isRecord(record) && typeof record.cwd === 'string' && record.cwd !== '') return record.cwd;
  }
  return undefined;
}
