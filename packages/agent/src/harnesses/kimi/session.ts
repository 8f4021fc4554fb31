/**
 * Kimi Code's session files: `<home>/sessions/<work-dir key>/<session id>/` (workdir.ts), holding
 *   - `state.json`, sanitised by an allow-list (state.ts) -> kimi_state (bytes made here);
 *   - `agents/main/wire.jsonl`, the main agent's wire log -> agent_wire_history;
 *   - subagents' wire logs `agents/<agent>/wire.jsonl`, plans `agents/<agent>/plans/`, offloaded message parts
 *     `agents/<agent>/blobs/` (the wire refers to them), and pasted or attached files `attachments/`,
 *     `media-originals/` -> session_state.
 * Left out, as the seed of Blue's Kimi support says: background tasks with this machine's process ids
 * (`agents/<agent>/tasks/`), cron jobs (`agents/<agent>/cron/`), snapshots of edited files for undo
 * (`agents/<agent>/file-history/`), logs (`logs/`), notification state (`notify/`), and everything outside the
 * session folder (the config with its API key, prompt history, indexes, trust records). No payload names the folder:
 * it is found from the working directory, or by the session id among the work-dir folders.
 *
 * Title: state.json's `title` (the first interactive prompt, or the one the user set); else the first prompt the user
 * typed in the wire log.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../../context.js';
import { firstUserTurn, HEAD_MAX_BYTES, parseTranscript, titleAndSummary } from '../../harness-kit/title.js';
import type { CollectedSession, CollectInput, SessionFile } from '../types.js';
import {
  artifactInvalid,
  assertSessionId,
  checkRoleCounts,
  entryName,
  fileOf,
  MAX_SESSION_FILES,
  readHead,
  sessionRootOf,
  SessionRoot,
} from '../../harness-kit/session-files.js';
import { AGENT_ID, encodeState, sanitizeKimiCodeState, stateDirectory } from './state.js';
import { kimiCodeUserTurn } from '@blue-agent/contract/harnesses/kimi/transcript.js';
import { kimiCodeWorkDirKey, WORK_DIR_KEY } from './workdir.js';

const STATE_FILE = 'state.json';
const MAX_STATE_BYTES = 4 * 1024 * 1024;
const MAX_WORK_DIR_FOLDERS = 10_000;
/** What is captured of an agent's folder besides its wire log. */
export const AGENT_PARTS: ReadonlySet<string> = new Set(['plans', 'blobs']);
/** What is captured at the top of the session folder besides state.json and the agents. */
export const SESSION_PARTS: ReadonlySet<string> = new Set(['attachments', 'media-originals']);

export async function collectKimiCodeSession(
  ctx: Context,
  input: CollectInput,
  home: string,
): Promise<CollectedSession> {
  const { payload, interval } = input;
  const id = payload.session_id;
  assertSessionId(id, home);
  const root = await SessionRoot.open(sessionRootOf(home, interval));
  const sessionRel = await findSessionFolder(root, id, payload.cwd);

  const stateRel = `${sessionRel}/${STATE_FILE}`;
  const stateFile = await root.file(stateRel);
  if (stateFile.size > MAX_STATE_BYTES)
    throw artifactInvalid(
      stateFile.abs,
      `is ${stateFile.size} bytes; Kimi Code's state.json is a few kilobytes`,
      "This is not Kimi Code's session state; leave this session uncaptured.",
    );
  let raw: unknown;
  try {
    raw = JSON.parse((await readHead(stateFile, MAX_STATE_BYTES)).toString('utf8'));
  } catch {
    throw artifactInvalid(
      stateFile.abs,
      'is not JSON',
      'Kimi Code cannot resume this session either; leave it uncaptured.',
    );
  }
  const state = sanitizeKimiCodeState(raw);
  if (state.version === 2 && state.id !== id)
    throw artifactInvalid(
      stateFile.abs,
      `names session ${JSON.stringify(String(state.id).slice(0, 80))}, not ${id}`,
      'The session folder holds another session; check what calls `blue-agent capture`.',
    );

  const wire = await root.file(`${sessionRel}/agents/main/wire.jsonl`);
  const files: SessionFile[] = [
    fileOf('agent_wire_history', 'wire.jsonl', wire),
    { role: 'kimi_state', name: STATE_FILE, nativePath: stateRel, content: encodeState(state) },
  ];
  const add = async (rel: string) => {
    for (const found of await root.walk(rel, { limit: MAX_SESSION_FILES - files.length }))
      files.push(fileOf('session_state', entryName(found.rel.slice(sessionRel.length + 1)), found));
  };
  for (const agent of await subfolders(root, `${sessionRel}/agents`)) {
    const agentRel = `${sessionRel}/agents/${agent}`;
    if (agent !== 'main' && (await root.lstat(`${agentRel}/wire.jsonl`)) !== undefined)
      files.push(
        fileOf('session_state', entryName(`agents/${agent}/wire.jsonl`), await root.file(`${agentRel}/wire.jsonl`)),
      );
    for (const part of AGENT_PARTS) await add(`${agentRel}/${part}`);
  }
  for (const part of SESSION_PARTS) await add(`${sessionRel}/${part}`);
  checkRoleCounts(interval, files, root.abs(sessionRel));

  const title = typeof state.title === 'string' && state.title.trim() !== '' ? state.title : undefined;
  const turn = firstUserTurn(
    parseTranscript((await readHead(wire, HEAD_MAX_BYTES)).toString('utf8')),
    kimiCodeUserTurn,
  );
  const cwd = payload.cwd ?? stateDirectory(state);
  ctx.logger.debug('kimi code session collected', { session: id, files: files.length, root: root.path });
  return {
    sessionId: id,
    ...(cwd === undefined ? {} : { cwd }),
    root: root.path,
    files,
    ...titleAndSummary({ native: title === undefined ? undefined : { title }, firstUserTurn: turn }),
  };
}

/** Agent folders that are well named (anything else is not Kimi Code's and is left out); a linked one is refused. */
async function subfolders(root: SessionRoot, rel: string): Promise<string[]> {
  if (!(await root.isDirectory(rel))) return [];
  const entries = (await readdir(root.abs(rel), { withFileTypes: true })).filter((e) => AGENT_ID.test(e.name));
  for (const e of entries) if (e.isSymbolicLink()) await root.lstat(`${rel}/${e.name}`);
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
}

/** `sessions/<key of cwd>/<id>`; else the one work-dir folder that holds this session id. */
async function findSessionFolder(root: SessionRoot, id: string, cwd: string | undefined): Promise<string> {
  const candidates = cwd !== undefined && path.isAbsolute(cwd) ? [kimiCodeWorkDirKey(cwd)] : [];
  for (const key of candidates) if (await root.isDirectory(`${key}/${id}`)) return `${key}/${id}`;
  const found: string[] = [];
  const keys = (await readdir(root.path).catch(() => [] as string[]))
    .filter((n) => WORK_DIR_KEY.test(n))
    .sort()
    .slice(0, MAX_WORK_DIR_FOLDERS);
  for (const key of keys) if (await root.isDirectory(`${key}/${id}`).catch(() => false)) found.push(`${key}/${id}`);
  if (found.length === 1) return found[0]!;
  const where = root.abs(candidates[0] === undefined ? id : `${candidates[0]}/${id}`);
  if (found.length === 0)
    throw artifactInvalid(
      where,
      `no Kimi Code session folder for session ${id}`,
      'Check that Kimi Code saved the session and that KIMI_CODE_HOME matches for the hook and for blue-agent.',
    );
  throw artifactInvalid(
    where,
    `session ${id} has folders under ${found.length} work dirs: ${found.join(', ')}`,
    'Capture it from the work dir it belongs to.',
  );
}
