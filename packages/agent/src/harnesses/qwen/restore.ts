/**
 * Restoring a Qwen Code session, the mirror image of session.ts: the transcript goes to
 * `projects/<key of the destination>/chats/<id>.jsonl`. Qwen Code resumes a session only when the first record's
 * `cwd` is the directory it runs in (`loadSession` compares their hashes; "No saved session found" otherwise), so a
 * restore into another folder rewrites that one value, the profile's `restore_rewrite`: every other byte of the
 * transcript is kept, and the records Qwen Code appends on resume carry the new directory themselves.
 */
import { parseTree, type Node } from 'jsonc-parser';
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
import type { RestoreInput, RestorePlacement, RestorePlan } from '../types.js';
import { qwenProjectKey } from './session.js';

/** A file name longer than this many bytes cannot be created (NAME_MAX): Qwen Code cannot keep sessions there. */
const NAME_MAX = 255;

export function planQwenRestore(_ctx: Context, input: RestoreInput, runtimeDir: string): RestorePlan {
  const id = checkedSessionId(input);
  const root = restoreRoot(runtimeDir, input.interval);
  const key = qwenProjectKey(input.destination);
  if (Buffer.byteLength(key) > NAME_MAX) {
    throw restoreUnsafe(
      `Qwen Code keeps the sessions of ${input.destination} in a folder whose name would be ` +
        `${Buffer.byteLength(key)} bytes long, more than a file name may be`,
      'Qwen Code cannot save sessions in a directory this deep either; restore into a directory with a shorter path.',
    );
  }
  const placements: RestorePlacement[] = [];
  for (const entry of entriesOf(input)) {
    if (entry.nativePath === undefined)
      throw restoreUnsafe(`${entry.label}: has no native_path; Qwen Code files are restored to their native place`);
    const [captured, chats, name, ...rest] = safeSegments(entry.nativePath, entry.label);
    if (
      entry.role !== 'primary_transcript' ||
      captured === undefined ||
      chats !== 'chats' ||
      name !== `${id}.jsonl` ||
      rest.length > 0
    ) {
      throw restoreUnsafe(
        `${entry.label}: a ${entry.role} file cannot live at ${entry.nativePath} (Qwen Code keeps <project>/chats/` +
          `${id}.jsonl)`,
      );
    }
    const destination = input.destination;
    placements.push({
      ...placement(root, `${key}/chats/${id}.jsonl`, entry),
      rewrite: {
        what: `the first record's cwd, to ${destination}`,
        apply: (bytes) => withFirstCwd(bytes, destination),
      },
    });
  }
  checkDistinct(placements);
  return {
    harness: 'qwen',
    sessionId: id,
    home: runtimeDir,
    root,
    placements,
    merges: [],
    resumeArgv: ['qwen', '--resume', id],
  };
}

/**
 * The transcript with the first record's `cwd` set to `cwd`: only that string's bytes change. Refused (RESTORE_UNSAFE)
 * when the first line is not a record with a `cwd` string.
 */
export function withFirstCwd(bytes: Buffer, cwd: string): Buffer {
  let end = bytes.indexOf(0x0a);
  if (end < 0) end = bytes.length;
  const line = bytes.subarray(0, end).toString('utf8');
  const root = parseTree(line, [], { allowTrailingComma: false, disallowComments: true });
  const props = root?.type === 'object' ? (root.children ?? []) : [];
  const cwdProps = props.filter((p) => p.children?.[0]?.value === 'cwd');
  const value: Node | undefined = cwdProps.at(-1)?.children?.[1];
  if (value?.type !== 'string' || cwdProps.length !== 1) {
    throw restoreUnsafe(
      "the transcript's first record has no single cwd string, which Qwen Code needs to resume it",
      'This is not a transcript Qwen Code wrote; do not restore it.',
    );
  }
  if (value.value === cwd) return bytes;
  const before = Buffer.from(line.slice(0, value.offset), 'utf8');
  const after = Buffer.from(line.slice(value.offset + value.length), 'utf8');
  return Buffer.concat([before, Buffer.from(JSON.stringify(cwd), 'utf8'), after, bytes.subarray(end)]);
}
