/**
 * Qwen Code's session file: `<runtime dir>/projects/<key of the working directory>/chats/<session id>.jsonl`, the key
 * being the directory with every UTF-16 unit outside [A-Za-z0-9] turned into `-` (`sanitizeCwd`; no hash, no cut).
 * Records `{uuid, parentUuid, sessionId, timestamp, type, cwd, version, message: {role, parts}}`, one per line. The
 * `<id>.runtime.json` beside it (the process id and host name of the CLI that ran it) is this machine's, and large
 * tool outputs live in a project-wide temporary folder Qwen Code cleans by age: neither is captured.
 *
 * Title: the newest `custom_title` record (`/rename`, or Qwen Code's own); else the first prompt the user typed.
 */
import path from 'node:path';
import type { Context } from '../../context.js';
import { firstUserTurn, HEAD_MAX_BYTES, parseTranscript, titleAndSummary } from '../../harness-kit/title.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import type { CollectedSession, CollectInput } from '../types.js';
import {
  artifactInvalid,
  assertSessionId,
  checkRoleCounts,
  fileOf,
  readHead,
  readTail,
  sessionRootOf,
  SessionRoot,
  type CheckedFile,
} from '../../harness-kit/session-files.js';
import { qwenUserTurn } from '@blue-agent/contract/harnesses/qwen/transcript.js';

const TAIL_BYTES = 1024 * 1024;

/** Qwen Code's folder name for a working directory. */
export function qwenProjectKey(cwd: string): string {
  return cwd.replace(/[^a-zA-Z0-9]/g, '-');
}

export async function collectQwenSession(
  ctx: Context,
  input: CollectInput,
  runtimeDir: string,
): Promise<CollectedSession> {
  const { payload, interval } = input;
  const id = payload.session_id;
  assertSessionId(id, runtimeDir);
  const root = await SessionRoot.open(sessionRootOf(runtimeDir, interval));
  const transcript = await root.file(await transcriptRel(root, id, payload.transcript_path, payload.cwd));
  const head = parseTranscript((await readHead(transcript, HEAD_MAX_BYTES)).toString('utf8'));
  const first = head.find(isRecord);
  if (first?.sessionId !== id) {
    throw artifactInvalid(
      transcript.abs,
      `its first record is not of session ${id}`,
      "The hook payload names a file that is not this session's transcript; check what calls `blue-agent capture`.",
    );
  }
  const files = [fileOf('primary_transcript', 'transcript.jsonl', transcript)];
  checkRoleCounts(interval, files, transcript.abs);

  const records =
    transcript.size > HEAD_MAX_BYTES
      ? [...head, ...parseTranscript((await readTail(transcript, TAIL_BYTES)).toString('utf8'))]
      : head;
  const title = newestTitle(records);
  ctx.logger.debug('qwen session collected', { session: id, root: root.path });
  return {
    sessionId: id,
    ...(payload.cwd === undefined ? (typeof first.cwd === 'string' ? { cwd: first.cwd } : {}) : { cwd: payload.cwd }),
    root: root.path,
    files,
    ...titleAndSummary({
      native: title === undefined ? undefined : { title },
      firstUserTurn: firstUserTurn(head, qwenUserTurn),
    }),
  };
}

/** `<key>/chats/<id>.jsonl` under the projects folder: named by the hook, else found from the working directory. */
async function transcriptRel(
  root: SessionRoot,
  id: string,
  transcriptPath: string | undefined,
  cwd: string | undefined,
): Promise<string> {
  const expected = (key: string) => `${key}/chats/${id}.jsonl`;
  if (transcriptPath !== undefined) {
    if (!path.isAbsolute(transcriptPath)) {
      throw artifactInvalid(
        transcriptPath,
        'the hook named a transcript by a relative path',
        'Qwen Code passes an absolute transcript_path; check what calls `blue-agent capture`.',
      );
    }
    const rel = root.relativeOf(transcriptPath);
    if (rel === undefined) {
      throw artifactInvalid(
        transcriptPath,
        `the transcript is outside Qwen Code's projects folder ${root.path}`,
        'Only transcripts under <Qwen Code runtime dir>/projects are captured; check QWEN_HOME and ' +
          'QWEN_RUNTIME_DIR for the hook and for blue-agent.',
      );
    }
    const [key, chats, name, ...rest] = rel.split('/');
    if (key === undefined || chats !== 'chats' || name !== `${id}.jsonl` || rest.length > 0) {
      throw artifactInvalid(
        transcriptPath,
        `is not <project>/chats/${id}.jsonl under ${root.path}`,
        "The hook payload names a file that is not this session's transcript; check what calls `blue-agent capture`.",
      );
    }
    return rel;
  }
  if (cwd === undefined || !path.isAbsolute(cwd)) {
    throw artifactInvalid(
      root.path,
      'the hook named neither the transcript nor an absolute working directory',
      'Qwen Code sends both with every hook; check what calls `blue-agent capture`.',
    );
  }
  const rel = expected(qwenProjectKey(cwd));
  if ((await root.lstat(rel)) === undefined) {
    throw artifactInvalid(
      root.abs(rel),
      `no transcript of session ${id} was found`,
      'Check that Qwen Code saved the session and that QWEN_HOME and QWEN_RUNTIME_DIR match for the hook and for ' +
        'blue-agent.',
    );
  }
  return rel;
}

/** The newest `custom_title` record's title (Qwen Code appends it again at shutdown). */
function newestTitle(records: readonly unknown[]): string | undefined {
  let title: string | undefined;
  for (const record of records) {
    if (
      !isRecord(record) ||
      record.type !== 'system' ||
      record.subtype !== 'custom_title' ||
      !isRecord(record.systemPayload)
    )
      continue;
    const value = record.systemPayload.customTitle;
    if (typeof value === 'string' && value.trim() !== '') title = value;
  }
  return title;
}

export type { CheckedFile };
