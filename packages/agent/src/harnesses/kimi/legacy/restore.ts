/**
 * Restoring a kimi-cli session (profile kimi-v1_28_0), the mirror image of session.ts: the session folder goes to
 * `sessions/<md5(destination)>/<id>/` (the work dir's hash is the destination's, not the one captured), the plan file
 * to `plans/<slug>.md`, and the destination is entered in `kimi.json`'s `work_dirs` (`{path, kaos: "local",
 * last_session_id}`): without that entry `kimi --session <id>` starts a fresh session and truncates context.jsonl.
 * The merge edits kimi.json in place, keeping every other entry, key and byte.
 */
import {
  applyEdits,
  modify,
  parse as parseJsonc,
  parseTree,
  type FormattingOptions,
  type Node,
  type ParseError,
} from 'jsonc-parser';
import path from 'node:path';
import type { Context } from '../../../context.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import {
  checkDistinct,
  checkedSessionId,
  entriesOf,
  placement,
  restoreRoot,
  restoreUnsafe,
  safeSegments,
} from '../../../harness-kit/restore-files.js';
import type { RestoreInput, RestorePlacement, RestorePlan } from '../../types.js';
import { kimiCanonicalPath, kimiWorkDirHash } from './session.js';

const METADATA_FILE = 'kimi.json';
const WORK_DIR_HASH = /^[0-9a-f]{32}$/;
const PLAN_FILE = /^[a-z0-9]+(?:-[A-Za-z0-9]+)*\.md$/;

export function planKimiRestore(_ctx: Context, input: RestoreInput, shareDir: string): RestorePlan {
  const id = checkedSessionId(input);
  const root = restoreRoot(shareDir, input.interval);
  const workDir = kimiCanonicalPath(input.destination);
  const hash = kimiWorkDirHash(input.destination);
  const placements: RestorePlacement[] = [];
  let capturedHash: string | undefined;
  for (const entry of entriesOf(input)) {
    if (entry.nativePath === undefined)
      throw restoreUnsafe(`${entry.label}: has no native_path; Kimi CLI files are restored to their native place`);
    const segments = safeSegments(entry.nativePath, entry.label);
    const refuse = () =>
      restoreUnsafe(
        `${entry.label}: a ${entry.role} file cannot live at ${entry.nativePath} (Kimi CLI keeps sessions/<work ` +
          `dir>/${id}/... and plans/<slug>.md)`,
      );
    if (segments[0] === 'plans') {
      if (entry.role !== 'session_state' || segments.length !== 2 || !PLAN_FILE.test(segments[1]!)) throw refuse();
      placements.push(placement(root, entry.nativePath, entry));
      continue;
    }
    const [top, workDirHash, sessionId, ...rest] = segments;
    if (top !== 'sessions' || !WORK_DIR_HASH.test(workDirHash ?? '') || sessionId !== id || rest.length === 0)
      throw refuse();
    if (capturedHash !== undefined && workDirHash !== capturedHash)
      throw restoreUnsafe(
        `${entry.label}: native_path ${entry.nativePath} is in another work dir folder than the rest of the session`,
      );
    capturedHash = workDirHash;
    const inside = rest.join('/');
    const allowed =
      entry.role === 'agent_wire_history'
        ? inside === 'wire.jsonl'
        : entry.role === 'kimi_state'
          ? inside === 'state.json'
          : inside !== 'wire.jsonl' && inside !== 'state.json' && rest[0] !== 'tasks';
    // tasks/ holds another machine's process ids and is never captured; a bundle that carries it is not ours.
    if (!allowed) throw refuse();
    placements.push(placement(root, ['sessions', hash, id, ...rest].join('/'), entry));
  }
  checkDistinct(placements);
  if (!placements.some((p) => p.rel === `sessions/${hash}/${id}/context.jsonl`)) {
    throw restoreUnsafe(
      'the bundle has no context.jsonl, which Kimi CLI needs to resume the session',
      'Capture the session again; this bundle cannot be resumed.',
    );
  }
  const file = path.join(shareDir, METADATA_FILE);
  return {
    harness: 'kimi',
    sessionId: id,
    home: shareDir,
    root,
    placements,
    merges: [
      {
        file,
        what: `work_dirs entry for ${workDir}`,
        merge: (bytes) => mergeKimiWorkDirsBytes(bytes, workDir, id, file),
      },
    ],
    resumeArgv: ['kimi', '--session', id],
  };
}

/**
 * The merge on the file's bytes: a kimi.json that is not valid UTF-8 is refused rather than re-encoded (decoding would
 * turn its invalid bytes into U+FFFD). Returns `current` itself when there is nothing to change.
 */
export function mergeKimiWorkDirsBytes(
  current: Buffer | null,
  workDir: string,
  sessionId: string,
  file = METADATA_FILE,
): Buffer {
  if (current === null) return Buffer.from(mergeKimiWorkDirs(null, workDir, sessionId, file), 'utf8');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(current);
  } catch {
    throw new BlueError(
      'RESTORE_CONFLICT',
      `${file}: is not valid UTF-8, so the session's work dir cannot be added without changing other bytes`,
      {
        file,
        hint: 'blue-agent never rewrites it; let Kimi CLI rewrite it (or fix it by hand), then restore again.',
      },
    );
  }
  const merged = mergeKimiWorkDirs(text, workDir, sessionId, file);
  return merged === text ? current : Buffer.from(merged, 'utf8');
}

function refuse(file: string, why: string): BlueError {
  return new BlueError('NATIVE_CONFIG_CONFLICT', `${file}: ${why}; the session's work dir cannot be added safely`, {
    file,
    hint:
      'Kimi CLI rewrites this file itself; fix it (or let Kimi CLI rewrite it), then restore again. blue-agent ' +
      'never overwrites it.',
  });
}

/** The first key that appears twice in an object node, if any. */
function duplicateKey(node: Node | undefined): string | undefined {
  if (node?.type !== 'object') return undefined;
  const seen = new Set<string>();
  for (const property of node.children ?? []) {
    const key = property.children?.[0]?.value as string | undefined;
    if (key === undefined) continue;
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return undefined;
}

/** Where this merge edits (the top level, and every work_dirs entry), a key given twice is refused. */
function checkDuplicates(text: string, file: string): void {
  const root = parseTree(text, [], { allowTrailingComma: false, disallowComments: true });
  const top = duplicateKey(root);
  if (top !== undefined) throw refuse(file, `the key ${JSON.stringify(top)} appears twice at the top level`);
  const list = root?.children?.find((p) => p.children?.[0]?.value === 'work_dirs')?.children?.[1];
  if (list?.type !== 'array') return;
  for (const [i, entry] of (list.children ?? []).entries()) {
    const key = duplicateKey(entry);
    if (key !== undefined) throw refuse(file, `work_dirs[${i}] has the key ${JSON.stringify(key)} twice`);
  }
}

/** Edits formatted like the file: its indentation and line ends; a one-line (compact) file stays on one line. */
function formattingOf(text: string): FormattingOptions | undefined {
  if (!/[\r\n]/.test(text.trim())) return undefined;
  const eol = text.includes('\r\n') ? '\r\n' : '\n';
  const indent = /\n([ \t]+)\S/.exec(text)?.[1];
  if (indent?.startsWith('\t') === true) return { insertSpaces: false, tabSize: 4, eol };
  return { insertSpaces: true, tabSize: indent === undefined ? 2 : indent.length, eol };
}

/**
 * kimi.json with a local work_dirs entry for `workDir` naming `sessionId` as its last session: an existing entry for
 * the path is updated in place (its other keys kept), else one is appended; other entries and keys are untouched.
 * The result is parsed again and must be exactly the original document with that one change.
 */
export function mergeKimiWorkDirs(
  text: string | null,
  workDir: string,
  sessionId: string,
  file = METADATA_FILE,
): string {
  const entry = { path: workDir, kaos: 'local', last_session_id: sessionId };
  if (text === null || text.trim() === '') return `${JSON.stringify({ work_dirs: [entry] }, null, 2)}\n`;
  const doc = parseDocument(text, file);
  checkDuplicates(text, file);
  const formattingOptions = formattingOf(text);
  const options = formattingOptions === undefined ? {} : { formattingOptions };
  const expected = structuredClone(doc);
  let merged: string;
  if (doc.work_dirs === undefined) {
    merged = applyEdits(text, modify(text, ['work_dirs'], [entry], options));
    expected.work_dirs = [entry];
  } else {
    if (!Array.isArray(doc.work_dirs)) {
      throw new BlueError('NATIVE_CONFIG_CONFLICT', `${file}: work_dirs is not a list`, {
        file,
        hint: 'Kimi CLI keeps a list here; fix the file, then restore again.',
      });
    }
    const index = doc.work_dirs.findIndex(
      (d) => isRecord(d) && d.path === workDir && (d.kaos === undefined || d.kaos === 'local'),
    );
    if (index < 0) {
      merged = applyEdits(
        text,
        modify(text, ['work_dirs', doc.work_dirs.length], entry, { ...options, isArrayInsertion: true }),
      );
      (expected.work_dirs as unknown[]).push(entry);
    } else {
      const existing = doc.work_dirs[index] as Record<string, unknown>;
      if (existing.last_session_id === sessionId) return text;
      merged = applyEdits(text, modify(text, ['work_dirs', index, 'last_session_id'], sessionId, options));
      ((expected.work_dirs as unknown[])[index] as Record<string, unknown>).last_session_id = sessionId;
    }
  }
  // What is written must be what was meant: the same document with exactly this entry changed.
  let again: Record<string, unknown>;
  try {
    again = parseDocument(merged, file);
    checkDuplicates(merged, file);
  } catch {
    throw refuse(file, 'merging the entry would not give a valid document');
  }
  if (JSON.stringify(again) !== JSON.stringify(expected))
    throw refuse(file, 'merging the entry would change more than that entry');
  return merged;
}

function parseDocument(text: string, file: string): Record<string, unknown> {
  const errors: ParseError[] = [];
  const doc: unknown = parseJsonc(text, errors, { allowTrailingComma: false, disallowComments: true });
  if (errors.length > 0 || !isRecord(doc)) {
    throw new BlueError(
      'NATIVE_CONFIG_PARSE',
      `${file}: is not a JSON object; the session's work dir cannot be added`,
      {
        file,
        hint: 'Kimi CLI rewrites this file itself; fix or move it, then restore again. blue-agent never overwrites it.',
      },
    );
  }
  return doc;
}
