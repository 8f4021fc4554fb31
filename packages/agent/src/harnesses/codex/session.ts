/**
 * Codex's session file: exactly one rollout, `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<timestamp>-<id>.jsonl`, or its
 * compressed form `.jsonl.zst` (codex-rs/rollout/src/compression.rs: the plain file wins when both exist). The hook's
 * `transcript_path` is used when given (it may be null); otherwise the dated folders are searched newest first, the
 * way codex-rs/rollout/src/list.rs walks them, with a bound on the folders and names looked at.
 *
 * The rollout must open with a `session_meta` line whose `payload.id` is the session id (Codex checks the same in
 * `find_thread_path_by_id_str` before trusting a path), read from at most the first 2 MiB (decompressed for `.zst`).
 *
 * Title: the newest `session_index.jsonl` entry `{id, thread_name, updated_at}` for the id (the file is append-only;
 * codex-rs/rollout/src/session_index.rs scans it from the end). Preview and fallback title: the first user message,
 * skipping the environment context, AGENTS.md instructions and other injected items.
 */
import { readdir } from 'node:fs/promises';
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
import type { CollectedSession, CollectInput } from '../types.js';
import { readRolloutHead, RolloutHeadError } from './rollout-head.js';
import {
  artifactInvalid,
  assertSessionId,
  captureRead,
  type CheckedFile,
  checkRoleCounts,
  fileOf,
  readHead,
  readTailOf,
  sessionRootOf,
  SessionRoot,
} from '../../harness-kit/session-files.js';
import { codexUserTurn } from '@blue-agent/contract/harnesses/codex/transcript.js';

const SESSION_INDEX = 'session_index.jsonl';
/** The index is append-only and newest last: its tail holds the current names. */
const INDEX_TAIL_BYTES = 16 * 1024 * 1024;
/** Bounds on the search for a rollout by id. */
const MAX_DAY_DIRS = 20_000;
const MAX_NAMES_SCANNED = 200_000;

export function isRolloutName(name: string, id: string): boolean {
  return name.startsWith('rollout-') && (name.endsWith(`-${id}.jsonl`) || name.endsWith(`-${id}.jsonl.zst`));
}

export async function collectCodexSession(
  ctx: Context,
  input: CollectInput,
  codexHome: string,
): Promise<CollectedSession> {
  const { payload, interval } = input;
  const id = payload.session_id;
  assertSessionId(id, codexHome);
  const root = await SessionRoot.open(sessionRootOf(codexHome, interval));
  const rel =
    typeof payload.transcript_path === 'string' && payload.transcript_path !== ''
      ? fromPayload(root, payload.transcript_path, id)
      : await search(root, id);
  const rollout = await root.file(rel);
  const files = [
    fileOf('rollout', path.posix.basename(rel).endsWith('.zst') ? 'rollout.jsonl.zst' : 'rollout.jsonl', rollout),
  ];
  checkRoleCounts(interval, files, rollout.abs);

  const head = rel.endsWith('.zst') ? await zstdHead(rollout, HEAD_MAX_BYTES) : await readHead(rollout, HEAD_MAX_BYTES);
  const meta = sessionMeta(head, rollout.abs);
  if (meta.id !== id) {
    throw artifactInvalid(
      rollout.abs,
      `belongs to session ${String(meta.id)}, not ${id} (its session_meta says so)`,
      'The rollout file name and its content disagree; leave this file alone and capture the session Codex reports.',
    );
  }
  const records = parseTranscript(head.toString('utf8'));
  const cwd = payload.cwd ?? (typeof meta.cwd === 'string' ? meta.cwd : undefined);
  ctx.logger.debug('codex session collected', { session: id, rollout: rollout.abs });
  return {
    sessionId: id,
    ...(cwd === undefined ? {} : { cwd }),
    root: root.path,
    files,
    ...titleAndSummary({
      native: await indexTitle(codexHome, id),
      firstUserTurn: firstUserTurn(records, codexUserTurn),
    }),
  };
}

function fromPayload(root: SessionRoot, transcriptPath: string, id: string): string {
  if (!path.isAbsolute(transcriptPath)) {
    throw artifactInvalid(
      transcriptPath,
      'the hook named a rollout by a relative path',
      'Codex passes an absolute transcript_path; check what calls `blue-agent capture`.',
    );
  }
  const rel = root.relativeOf(transcriptPath);
  if (rel === undefined) {
    throw artifactInvalid(
      transcriptPath,
      `the rollout is outside Codex's sessions folder ${root.path}`,
      'Only rollouts under $CODEX_HOME/sessions are captured; check CODEX_HOME for the hook and for blue-agent.',
    );
  }
  if (!isRolloutName(path.posix.basename(rel), id)) {
    throw artifactInvalid(
      transcriptPath,
      `is not a rollout of session ${id} (rollout-<time>-${id}.jsonl)`,
      "The hook payload names a file that is not this session's rollout; check what calls `blue-agent capture`.",
    );
  }
  return rel;
}

async function dirs(dir: string, pattern: RegExp): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isDirectory() && pattern.test(e.name))
    .map((e) => e.name)
    .sort()
    .reverse();
}

/** Newest dated folder first; in a folder, the plain rollout before its `.zst` sibling. */
async function search(root: SessionRoot, id: string): Promise<string> {
  let days = 0;
  let names = 0;
  for (const year of await dirs(root.path, /^\d{4}$/)) {
    for (const month of await dirs(path.join(root.path, year), /^\d{2}$/)) {
      for (const day of await dirs(path.join(root.path, year, month), /^\d{2}$/)) {
        if (++days > MAX_DAY_DIRS) return notFound(root, id, 'the search gave up after too many dated folders');
        let entries: string[];
        try {
          entries = await readdir(path.join(root.path, year, month, day));
        } catch {
          continue;
        }
        names += entries.length;
        const matches = entries.filter((name) => isRolloutName(name, id)).sort(newestPlainFirst);
        if (matches.length > 0) return `${year}/${month}/${day}/${matches[0]!}`;
        if (names > MAX_NAMES_SCANNED) return notFound(root, id, 'the search gave up after too many files');
      }
    }
  }
  return notFound(root, id, 'no rollout file has this id');
}

/** Newer rollout names (their timestamps) first; a plain `.jsonl` before its `.jsonl.zst` sibling. */
function newestPlainFirst(a: string, b: string): number {
  const plainA = a.replace(/\.zst$/, '');
  const plainB = b.replace(/\.zst$/, '');
  if (plainA !== plainB) return plainA < plainB ? 1 : -1;
  return Number(a.endsWith('.zst')) - Number(b.endsWith('.zst'));
}

function notFound(root: SessionRoot, id: string, why: string): never {
  throw artifactInvalid(
    path.join(root.path, 'YYYY', 'MM', 'DD', `rollout-*-${id}.jsonl`),
    `${why} (session ${id})`,
    'Check that Codex saved the session and that CODEX_HOME matches; pass transcript_path in the hook payload to ' +
      'skip the search.',
  );
}

/** At most `maxBytes` of the decompressed start of a `.jsonl.zst` rollout. */
async function zstdHead(rollout: CheckedFile, maxBytes: number): Promise<Buffer> {
  const abs = rollout.abs;
  try {
    return await readRolloutHead(abs, maxBytes, captureRead(rollout));
  } catch (error) {
    if (!(error instanceof RolloutHeadError)) throw error;
    throw error.kind === 'no-zstd'
      ? artifactInvalid(
          abs,
          'is zstd-compressed and this Node.js has no zstd support to check it',
          'Run blue-agent on Node.js 22.15 or newer, or open the session in Codex once so it writes a plain rollout.',
        )
      : artifactInvalid(abs, `is ${error.message}`, 'The compressed rollout is damaged; Codex cannot read it either.');
  }
}

function sessionMeta(head: Buffer, abs: string): Record<string, unknown> {
  const text = head.toString('utf8');
  const end = text.indexOf('\n');
  const first = (end < 0 ? text : text.slice(0, end)).trim();
  let line: unknown;
  try {
    line = JSON.parse(first);
  } catch {
    line = undefined;
  }
  if (!isRecord(line) || line.type !== 'session_meta' || !isRecord(line.payload)) {
    throw artifactInvalid(
      abs,
      'does not start with a session_meta line',
      'This is not a Codex rollout (or it is damaged); Codex cannot resume it either.',
    );
  }
  return line.payload;
}

async function indexTitle(codexHome: string, id: string): Promise<NativeMetadata | undefined> {
  let tail: Buffer;
  try {
    // Only its tail is read, so the whole file may be any size; a title from a linked index is not taken.
    tail = await readTailOf(path.join(codexHome, SESSION_INDEX), INDEX_TAIL_BYTES, {
      code: 'ARTIFACT_INVALID',
      maxBytes: Number.MAX_SAFE_INTEGER,
    });
  } catch {
    return undefined;
  }
  const entries = tail
    .toString('utf8')
    .split('\n')
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as unknown];
      } catch {
        return [];
      }
    })
    // Only `thread_name` is a title here; the index has no preview.
    .map((entry) =>
      isRecord(entry) && typeof entry.id === 'string' && typeof entry.thread_name === 'string'
        ? { id: entry.id, thread_name: entry.thread_name }
        : undefined,
    );
  const found = newestNativeMetadata(entries, id);
  return found?.title === undefined ? undefined : { title: found.title };
}
