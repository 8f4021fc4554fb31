/**
 * Restoring a Codex session, the mirror image of session.ts: the rollout goes to
 * `sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<id>.jsonl`, named as Codex names the rollouts it creates: by the
 * session's start (the `session_meta` payload's timestamp, never the clock) in this machine's local time at that
 * instant, so a restored session sorts where it happened and a session restored where it was recorded lands on its
 * own file. Its thread name is appended to `$CODEX_HOME/session_index.jsonl` (append-only, newest line wins; every
 * other line kept byte for byte). Codex rebuilds its SQLite state from the rollout, which is never written here.
 *
 * A rollout of the same id that already sits in another date folder (recorded in another time zone, or by a Codex
 * that named it otherwise) is the same session under another name: identical content means nothing to write.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Context } from '../../context.js';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import {
  checkDistinct,
  checkedSessionId,
  entriesOf,
  placement,
  restoreRoot,
  restoreUnsafe,
  safeSegments,
} from '../../harness-kit/restore-files.js';
import type { RestoreIndexMerge, RestoreInput, RestorePlan } from '../types.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { readRolloutHead, RolloutHeadError } from './rollout-head.js';
import { isRolloutName } from './session.js';

const SESSION_INDEX = 'session_index.jsonl';
const HEAD_BYTES = 2 * 1024 * 1024;
const MAX_DAY_DIRS = 20_000;

export async function planCodexRestore(ctx: Context, input: RestoreInput, codexHome: string): Promise<RestorePlan> {
  const id = checkedSessionId(input);
  const root = restoreRoot(codexHome, input.interval);
  const entries = entriesOf(input);
  if (entries.length !== 1 || entries[0]!.role !== 'rollout')
    throw restoreUnsafe('a Codex bundle holds exactly one rollout file');
  const entry = entries[0]!;
  if (entry.nativePath === undefined) throw restoreUnsafe(`${entry.label}: has no native_path`);
  const segments = safeSegments(entry.nativePath, entry.label);
  const name = segments.at(-1)!;
  if (
    segments.length !== 4 ||
    !/^\d{4}$/.test(segments[0]!) ||
    !/^\d{2}$/.test(segments[1]!) ||
    !/^\d{2}$/.test(segments[2]!) ||
    !isRolloutName(name, id)
  ) {
    throw restoreUnsafe(
      `${entry.label}: a rollout cannot live at ${entry.nativePath} ` +
        `(Codex keeps YYYY/MM/DD/rollout-<time>-${id}.jsonl)`,
    );
  }
  const compressed = name.endsWith('.zst');
  const head = await rolloutHead(entry.from);
  const started = sessionStart(head, id, entry.label);
  const rel = rolloutRel(started, ctx.clock.utcOffsetMinutes(started), id, compressed);
  if (rel === undefined) throw restoreUnsafe(`${entry.label}: the rollout's session_meta has no usable timestamp`);
  const target = placement(root, rel, entry);
  checkDistinct([target]);

  const aliases = (await findRollouts(root, id))
    .filter((file) => file !== target.to)
    .map((file) => ({ file, sameAs: target }));
  const merges: RestoreIndexMerge[] = [];
  const title = input.manifest.title;
  if (title !== undefined && title !== '') {
    const updatedAt = new Date(ctx.clock.now()).toISOString();
    merges.push({
      file: path.join(codexHome, SESSION_INDEX),
      what: `thread name of ${id}`,
      merge: (bytes) => mergeSessionIndexBytes(bytes, id, title, updatedAt),
    });
  }
  return {
    harness: 'codex',
    sessionId: id,
    home: codexHome,
    root,
    placements: [target],
    merges,
    aliases,
    resumeArgv: ['codex', 'resume', id],
  };
}

/**
 * session_index.jsonl with `{id, thread_name, updated_at}` appended, unless the newest line for the id already has
 * this name. Bytes in, bytes out: existing bytes are never decoded and re-encoded (a line that is not valid UTF-8
 * stays exactly as it is); a last line without its newline gets one first. Returns `current` itself when unchanged.
 */
export function mergeSessionIndexBytes(
  current: Buffer | null,
  id: string,
  threadName: string,
  updatedAt: string,
): Buffer {
  const bytes = current ?? Buffer.alloc(0);
  let end = bytes.length;
  while (end > 0) {
    const start = bytes.lastIndexOf(0x0a, end - 1) + 1;
    let entry: unknown;
    try {
      entry = JSON.parse(bytes.subarray(start, end).toString('utf8'));
    } catch {
      entry = undefined;
    }
    if (isRecord(entry) && entry.id === id) {
      if (entry.thread_name === threadName) return bytes;
      break;
    }
    end = start - 1;
  }
  const line = Buffer.from(`${JSON.stringify({ id, thread_name: threadName, updated_at: updatedAt })}\n`, 'utf8');
  const newline = bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a ? Buffer.from('\n') : Buffer.alloc(0);
  return Buffer.concat([bytes, newline, line]);
}

/** The same merge on text (every byte of `text` kept as the prefix of the result). */
export function mergeSessionIndex(text: string | null, id: string, threadName: string, updatedAt: string): string {
  const current = text ?? '';
  const before = Buffer.from(current, 'utf8');
  const after = mergeSessionIndexBytes(before, id, threadName, updatedAt);
  return after === before ? current : current + after.subarray(before.length).toString('utf8');
}

/**
 * The rollout's place under `sessions/` for a session that started at `startedMs`, in local time `offsetMinutes`
 * ahead of UTC: `YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl` (`.zst` when compressed), seconds truncated, as
 * Codex formats the local time it takes when it creates the rollout. Undefined when the local year has no four
 * digits.
 */
export function rolloutRel(
  startedMs: number,
  offsetMinutes: number,
  id: string,
  compressed: boolean,
): string | undefined {
  const local = new Date(startedMs + offsetMinutes * 60_000);
  const year = local.getUTCFullYear();
  if (Number.isNaN(year) || year < 1000 || year > 9999) return undefined;
  const pad = (n: number) => String(n).padStart(2, '0');
  const date = `${year}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}`;
  const stamp = `${date}T${pad(local.getUTCHours())}-${pad(local.getUTCMinutes())}-${pad(local.getUTCSeconds())}`;
  return `${date.replaceAll('-', '/')}/rollout-${stamp}-${id}.jsonl${compressed ? '.zst' : ''}`;
}

/**
 * When the session started (ms): the `session_meta` payload's timestamp, which Codex takes from the same instant it
 * names the file by; the line's own timestamp (when the line was written, which may be later) only when the payload
 * has no usable one.
 */
function sessionStart(head: Buffer, id: string, label: string): number {
  const text = head.toString('utf8');
  const end = text.indexOf('\n');
  let first: unknown;
  try {
    first = JSON.parse((end < 0 ? text : text.slice(0, end)).trim());
  } catch {
    first = undefined;
  }
  if (!isRecord(first) || first.type !== 'session_meta' || !isRecord(first.payload))
    throw restoreUnsafe(`${label}: the rollout does not start with a session_meta line`);
  if (first.payload.id !== id)
    throw restoreUnsafe(
      `${label}: the rollout belongs to session ${printable(String(first.payload.id)).slice(0, 80)}, not ${id}`,
    );
  for (const stamp of [first.payload.timestamp, first.timestamp]) {
    const date = typeof stamp === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(stamp) ? new Date(stamp) : undefined;
    if (
      date !== undefined &&
      !Number.isNaN(date.getTime()) &&
      date.getUTCFullYear() >= 2000 &&
      date.getUTCFullYear() <= 9999
    )
      return date.getTime();
  }
  throw restoreUnsafe(`${label}: the rollout's session_meta has no usable timestamp`);
}

async function rolloutHead(file: string): Promise<Buffer> {
  try {
    return await readRolloutHead(file, HEAD_BYTES, { code: 'RESTORE_UNSAFE', maxBytes: LIMITS.fileBytes });
  } catch (error) {
    if (!(error instanceof RolloutHeadError)) throw error;
    throw error.kind === 'no-zstd'
      ? restoreUnsafe(
          `${file}: a zstd-compressed rollout needs Node.js with zstd support`,
          'Run blue-agent on Node.js 22.15 or newer.',
        )
      : restoreUnsafe(`${file}: the compressed rollout cannot be read (${error.message})`);
  }
}

/** Rollouts of `id` anywhere under the dated folders (bounded, links not followed). */
async function findRollouts(root: string, id: string): Promise<string[]> {
  const found: string[] = [];
  const dirs = async (dir: string, pattern: RegExp) => {
    try {
      return (await readdir(dir, { withFileTypes: true }))
        .filter((e) => e.isDirectory() && pattern.test(e.name))
        .map((e) => e.name);
    } catch {
      return [];
    }
  };
  let days = 0;
  for (const year of await dirs(root, /^\d{4}$/)) {
    for (const month of await dirs(path.join(root, year), /^\d{2}$/)) {
      for (const day of await dirs(path.join(root, year, month), /^\d{2}$/)) {
        if (++days > MAX_DAY_DIRS) return found;
        const dir = path.join(root, year, month, day);
        let names: string[] = [];
        try {
          names = await readdir(dir);
        } catch {
          names = [];
        }
        for (const name of names) if (isRolloutName(name, id)) found.push(path.join(dir, name));
      }
    }
  }
  return found;
}
