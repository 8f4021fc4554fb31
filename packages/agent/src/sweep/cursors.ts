/**
 * The sweep's cursors: per harness one file `<Paths.cursorsDir>/<harness>.json` holding, per native session, where
 * its file is, the size and modification time last seen, and what became of it (captured with which digest, or a
 * capture handed to the spool). Changed only under the harness's cursor lock (the agent's sweep and `backfill` may run
 * at once), written atomically; an unreadable file counts as none (the sweep then starts watching afresh).
 */
import path from 'node:path';
import type { Context } from '../context.js';
import { withLock } from '../lock/lock.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import { writeStateFile } from '@blue-agent/contract/util/startup/fs-light.js';
import type { Cursor } from './plan.js';

const FORMAT = 'blue-agent-session-cursors-v1';
/** A harness's cursor file holds at most this many sessions (what a listing returns). */
export const MAX_SESSIONS = 20_000;
const MAX_FILE_BYTES = 32 * 1024 * 1024;

export interface CursorFile {
  format: typeof FORMAT;
  harness: string;
  /** When the agent started watching this harness's sessions: older untouched ones are history (backfill's). */
  watching_since_unix_ms: number;
  /** Captures the sweep handed to the spool, over all time. */
  idle_captures: number;
  /** Captures backfill handed to the spool, over all time. */
  backfill_captures: number;
  sessions: Record<string, Cursor>;
}

function fileOf(ctx: Context, harness: string): string {
  return path.join(ctx.paths.cursorsDir, `${harness}.json`);
}

export async function readCursors(ctx: Context, harness: string): Promise<CursorFile | undefined> {
  try {
    const bytes = await readChecked(fileOf(ctx, harness), {
      code: 'SPOOL_UNSAFE',
      maxBytes: MAX_FILE_BYTES,
      optional: true,
    });
    if (bytes === undefined) return undefined;
    const doc = JSON.parse(bytes.toString('utf8')) as unknown;
    if (
      !isRecord(doc) ||
      doc.format !== FORMAT ||
      doc.harness !== harness ||
      typeof doc.watching_since_unix_ms !== 'number' ||
      !isRecord(doc.sessions)
    )
      return undefined;
    const sessions: Record<string, Cursor> = {};
    for (const [id, c] of Object.entries(doc.sessions)) {
      if (isRecord(c) && typeof c.path === 'string' && typeof c.size === 'number' && typeof c.mtime_ms === 'number')
        sessions[id] = c as unknown as Cursor;
    }
    return {
      format: FORMAT,
      harness,
      watching_since_unix_ms: doc.watching_since_unix_ms,
      idle_captures: typeof doc.idle_captures === 'number' ? doc.idle_captures : 0,
      backfill_captures: typeof doc.backfill_captures === 'number' ? doc.backfill_captures : 0,
      sessions,
    };
  } catch {
    return undefined;
  }
}

/** Reads the harness's cursors (a fresh file starting now when there are none), lets `change` edit them, writes them.
 * */
export async function updateCursors<T>(
  ctx: Context,
  harness: string,
  change: (file: CursorFile) => Promise<T>,
): Promise<T> {
  return withLock(ctx.paths.locksDir, `cursors:${harness}`, async () => {
    const file = (await readCursors(ctx, harness)) ?? {
      format: FORMAT,
      harness,
      watching_since_unix_ms: ctx.clock.now(),
      idle_captures: 0,
      backfill_captures: 0,
      sessions: {},
    };
    const result = await change(file);
    const ids = Object.keys(file.sessions);
    if (ids.length > MAX_SESSIONS) {
      // The oldest go first: a session untouched that long is not ended again.
      ids.sort((a, b) => file.sessions[a]!.mtime_ms - file.sessions[b]!.mtime_ms);
      for (const id of ids.slice(0, ids.length - MAX_SESSIONS)) delete file.sessions[id];
    }
    await writeStateFile(fileOf(ctx, harness), `${JSON.stringify(file)}\n`);
    return result;
  });
}
