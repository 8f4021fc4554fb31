/**
 * Restoring a Kimi Code session, the mirror image of session.ts: the session folder goes to
 * `sessions/<work-dir key of the destination>/<id>/` (the key is the destination's, not the one captured). Kimi Code
 * resumes a session only in the directory it recorded, so a restore into another folder rewrites (the profile's
 * restore_rewrite) the directory and the agents' homes in state.json, and the workspace of every
 * `runtime.set_binding` line of the agents' wire logs (0.37 and later write them). Kimi Code before 0.33 finds a
 * session through `session_index.jsonl` in its home: the session's line is merged there (every version keeps it).
 */
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
import type { RestoreIndexMerge, RestoreInput, RestorePlacement, RestorePlan } from '../types.js';
import { AGENT_PARTS, SESSION_PARTS } from './session.js';
import { AGENT_ID, encodeState, relocatedState } from './state.js';
import { withWorkspace } from './wire.js';
import { kimiCodeWorkDirKey, WORK_DIR_KEY } from './workdir.js';

const SESSION_INDEX = 'session_index.jsonl';

export function planKimiCodeRestore(_ctx: Context, input: RestoreInput, home: string): RestorePlan {
  const id = checkedSessionId(input);
  const root = restoreRoot(home, input.interval);
  const key = kimiCodeWorkDirKey(input.destination);
  const sessionDir = path.join(root, key, id);
  const placements: RestorePlacement[] = [];
  let capturedKey: string | undefined;
  for (const entry of entriesOf(input)) {
    if (entry.nativePath === undefined)
      throw restoreUnsafe(`${entry.label}: has no native_path; Kimi Code files are restored to their native place`);
    const [folder, sessionId, ...rest] = safeSegments(entry.nativePath, entry.label);
    const refuse = () =>
      restoreUnsafe(
        `${entry.label}: a ${entry.role} file cannot live at ${entry.nativePath} ` +
          `(Kimi Code keeps <work dir>/${id}/state.json, agents/<agent>/wire.jsonl, plans, blobs and attachments)`,
      );
    if (folder === undefined || !WORK_DIR_KEY.test(folder) || sessionId !== id || rest.length === 0) throw refuse();
    if (capturedKey !== undefined && folder !== capturedKey)
      throw restoreUnsafe(
        `${entry.label}: native_path ${entry.nativePath} is in another work dir folder than the rest of the ` +
          `session (${capturedKey})`,
      );
    capturedKey = folder;
    const inside = rest.join('/');
    const agentWire = rest.length === 3 && rest[0] === 'agents' && AGENT_ID.test(rest[1]!) && rest[2] === 'wire.jsonl';
    const allowed =
      entry.role === 'kimi_state'
        ? inside === 'state.json'
        : entry.role === 'agent_wire_history'
          ? inside === 'agents/main/wire.jsonl'
          : entry.role === 'session_state' &&
            ((agentWire && rest[1] !== 'main') ||
              (rest.length >= 4 && rest[0] === 'agents' && AGENT_ID.test(rest[1]!) && AGENT_PARTS.has(rest[2]!)) ||
              (rest.length >= 2 && SESSION_PARTS.has(rest[0]!)));
    if (!allowed) throw refuse();
    const at = placement(root, [key, id, ...rest].join('/'), entry);
    if (entry.role === 'kimi_state') {
      placements.push({
        ...at,
        rewrite: {
          what: `the session's directory (to ${input.destination}) and its agents' homes`,
          apply: (bytes) => relocate(bytes, input.destination, sessionDir),
        },
      });
    } else if (agentWire) {
      placements.push({
        ...at,
        rewrite: {
          what: `the workspace of its runtime bindings, to ${key}`,
          apply: (bytes) => withWorkspace(bytes, key),
        },
      });
    } else {
      placements.push(at);
    }
  }
  checkDistinct(placements);
  for (const needed of [`${key}/${id}/state.json`, `${key}/${id}/agents/main/wire.jsonl`]) {
    if (!placements.some((p) => p.rel === needed))
      throw restoreUnsafe(
        `the bundle has no ${needed.split('/').slice(2).join('/')}, which Kimi Code needs to resume the session`,
        'Capture the session again; this bundle cannot be resumed.',
      );
  }
  // Kimi Code before 0.33 finds a session only through its line here; later versions keep the file as well.
  const file = path.join(home, SESSION_INDEX);
  const line = `${JSON.stringify({ sessionId: id, sessionDir, workDir: input.destination })}\n`;
  const merges: RestoreIndexMerge[] = [
    {
      file,
      what: `the session's line in ${SESSION_INDEX}`,
      merge: (current) => withIndexLine(current, line, id, sessionDir),
    },
  ];
  return { harness: 'kimi', sessionId: id, home, root, placements, merges, resumeArgv: ['kimi', '--session', id] };
}

function relocate(bytes: Buffer, destination: string, sessionDir: string): Buffer {
  let state: unknown;
  try {
    state = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw restoreUnsafe(
      "the bundle's state.json is not JSON",
      'Capture the session again; this bundle cannot be resumed.',
    );
  }
  if (state === null || typeof state !== 'object' || Array.isArray(state))
    throw restoreUnsafe(
      "the bundle's state.json is not an object",
      'Capture the session again; this bundle cannot be resumed.',
    );
  return encodeState(relocatedState(state as Record<string, unknown>, destination, sessionDir));
}

/**
 * session_index.jsonl with the session's line appended, every other byte kept; unchanged when the index already
 * leads to this folder. Kimi Code reads it line by line, a later line for a session replacing an earlier one and
 * `{"sessionId", "deleted": true}` dropping it.
 */
export function withIndexLine(current: Buffer | null, line: string, id: string, sessionDir: string): Buffer {
  if (current === null) return Buffer.from(line, 'utf8');
  let last: unknown;
  for (const text of current.toString('utf8').split('\n')) {
    if (!text.includes(id)) continue;
    try {
      const record = JSON.parse(text) as { sessionId?: unknown; sessionDir?: unknown; deleted?: unknown };
      if (record.sessionId === id) last = record.deleted === true ? undefined : record.sessionDir;
    } catch {
      // A line Kimi Code skips too.
    }
  }
  if (last === sessionDir) return current;
  const separator = current.length > 0 && current[current.length - 1] !== 0x0a ? '\n' : '';
  return Buffer.concat([current, Buffer.from(separator + line, 'utf8')]);
}
