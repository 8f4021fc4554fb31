/**
 * Restoring an OpenCode session: its database is never written directly, so the captured `opencode export` is fed
 * to `opencode import <file>` run in the destination (which binds the session to that project), and the id it
 * prints (`Imported session: <id>`) is the one resumed. OpenCode keeps an existing session of the same id as it is,
 * so whether one exists is asked first with `opencode export <id>`: the same messages are nothing to do, other
 * messages are a conflict. Rollback is `opencode session delete <id>`.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import type { Context } from '../../context.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { findExecutable } from '@blue-agent/contract/util/executable.js';
import { checkedSessionId, entriesOf, restoreUnsafe } from '../../harness-kit/restore-files.js';
import { MAX_FILE_BYTES } from '../../harness-kit/session-files.js';
import { readChecked } from '@blue-agent/contract/util/safe-read.js';
import { isSessionId } from '@blue-agent/contract/util/session-id.js';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import type { RestoreInput, RestorePlan } from '../types.js';
import { EXPORT_TIMEOUT_MS } from './session.js';

const IMPORTED = /Imported session: ([A-Za-z0-9._-]+)/;
/** What `opencode export <id>` prints on stderr (exit 1) for a session it does not hold. */
const NOT_FOUND = /Session not found/i;

/** How to ask OpenCode whether it holds `id` (the preflight's check, and rollback's confirmation). */
export function opencodeExistsCheck(id: string): { args: string[]; missing: RegExp } {
  return { args: ['export', id], missing: NOT_FOUND };
}

export function opencodeDataDir(ctx: Context): string {
  return path.join(ctx.paths.dataHome, 'opencode');
}

export async function planOpencodeRestore(_ctx: Context, input: RestoreInput, dataDir: string): Promise<RestorePlan> {
  const id = checkedSessionId(input);
  const entries = entriesOf(input);
  if (entries.length !== 1 || entries[0]!.role !== 'portable_export' || entries[0]!.nativePath !== undefined) {
    throw restoreUnsafe('an OpenCode bundle holds exactly one portable_export file, without a native path');
  }
  const file = entries[0]!.from;
  const doc = parseExport(
    (await readChecked(file, { code: 'RESTORE_UNSAFE', maxBytes: LIMITS.fileBytes }))!.toString('utf8'),
    entries[0]!.label,
  );
  if (doc.info.id !== id)
    throw restoreUnsafe(
      `${entries[0]!.label}: the export holds session ${printable(String(doc.info.id)).slice(0, 80)}, not ${id}`,
    );
  const messages = canonicalJson(doc.messages);
  return {
    harness: 'opencode',
    sessionId: id,
    home: dataDir,
    root: dataDir,
    placements: [],
    merges: [],
    import: {
      binary: 'opencode',
      args: ['import', file],
      cwd: input.destination,
      // The id becomes an argument of the rollback (`opencode session delete <id>`): the same rule as every id.
      parseId: (stdout, stderr) => {
        const found = IMPORTED.exec(`${stdout}\n${stderr}`)?.[1];
        return isSessionId(found) ? found : undefined;
      },
      existing: (ctx) => existingSession(ctx, id, input.destination, dataDir, messages),
      removeArgs: (sessionId) => ['session', 'delete', sessionId],
      existsCheck: opencodeExistsCheck,
    },
    resumeArgv: ['opencode', '--session', id],
  };
}

/** JSON with object keys sorted: OpenCode's export orders keys by how it stored them, which import may change. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isRecord(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function unknownState(id: string, why: string): BlueError {
  return new BlueError('RESTORE_FAILED', `cannot tell whether OpenCode already holds session ${id}: ${why}`, {
    hint: 'Check that `opencode` runs on this machine (try `opencode session list`), then restore again.',
  });
}

function parseExport(text: string, label: string): { info: Record<string, unknown>; messages: unknown[] } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    // V8 quotes the input in its message: bounded and made printable, it cannot carry escapes to a terminal.
    throw restoreUnsafe(`${label}: the export is not JSON (${printable((error as Error).message).slice(0, 200)})`);
  }
  if (!isRecord(doc) || !isRecord(doc.info) || !Array.isArray(doc.messages))
    throw restoreUnsafe(`${label}: the export is not {info, messages}`);
  return { info: doc.info, messages: doc.messages };
}

/** Asks OpenCode whether it holds `id`; never opens its database. No database yet means no session. */
async function existingSession(
  ctx: Context,
  id: string,
  cwd: string,
  dataDir: string,
  messages: string,
): Promise<'none' | 'identical' | 'different'> {
  try {
    await access(path.join(dataDir, 'opencode.db'));
  } catch {
    return 'none';
  }
  const bin = await findExecutable('opencode', ctx.env.PATH);
  if (bin === undefined) throw unknownState(id, 'the opencode binary is not on PATH');
  const check = opencodeExistsCheck(id);
  const result = await ctx.run(bin, check.args, {
    timeoutMs: EXPORT_TIMEOUT_MS,
    cwd,
    env: ctx.env,
    maxOutputBytes: MAX_FILE_BYTES + 1,
  });
  if (result.exitCode !== 0) {
    if (check.missing.test(result.stderr)) return 'none';
    // Not knowing is not "none": a rollback would then delete a session that was already here.
    throw unknownState(
      id,
      result.timedOut
        ? 'opencode export timed out'
        : `opencode export exited with ${String(result.exitCode)}: ${printable(result.stderr.trim().slice(-300))}`,
    );
  }
  let doc: unknown;
  try {
    doc = JSON.parse(result.stdout);
  } catch {
    throw unknownState(id, 'opencode export did not print JSON');
  }
  if (!isRecord(doc) || !isRecord(doc.info) || doc.info.id !== id)
    throw unknownState(id, 'opencode export printed another session');
  return Array.isArray(doc.messages) && canonicalJson(doc.messages) === messages ? 'identical' : 'different';
}
