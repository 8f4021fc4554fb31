/**
 * The restore journal: `<Paths.restoresDir>/<id>.json`, written atomically before the first placement. It lists
 * everything the restore may create (folders, files, index temp files) and the hard-link backup of every index it
 * replaces, so that whoever finds it after a crash can undo exactly that and nothing else. Its `state` is the commit
 * point: `placing` means roll back, `placed` means every placement and merge is done and only cleanup remains.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { systemLockWorld, type LockWorld } from '../lock/liveness.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import { fsyncDir } from '@blue-agent/contract/util/fs.js';
import type { RestoreIO } from './io.js';

export const JOURNAL_FORMAT = 'blue-agent-restore-journal-v1';
const JOURNAL_NAME = /^([0-9a-f]{16})\.json$/;

export interface JournalTarget {
  /** The placed file. */
  path: string;
  /** The staged file it is a hard link of (same inode) until cleanup. */
  staged: string;
  sha256: string;
  size: number;
  /** A temp copy in the target's folder, used only when the staging folder is on another filesystem. */
  temp: string;
  /** A file rewritten for this destination: the bundle's digest of it (`sha256` is of the bytes written) and what
   * changed. */
  captured_sha256?: string;
  rewritten?: string;
}

export interface JournalIndex {
  file: string;
  /** Whether the index existed before; if so `backup` is a hard link of the original, made before it is replaced. */
  existed: boolean;
  backup: string;
  temp: string;
  sha256_before: string | null;
  sha256_after: string;
}

export interface JournalImport {
  /** Absolute path of the harness binary that imported, for its rollback command. */
  binary: string;
  cwd: string;
  /** The id to remove on rollback: the bundle's until the import reports its own, then that one. */
  session_id: string;
  remove_args: string[];
  /** Asks the harness whether `session_id` exists (see RestoreImport.existsCheck); absent in older journals. */
  check_args?: string[];
  /** Source of the RegExp that, on the check's stderr with a non-zero exit, means the session is gone. */
  missing_pattern?: string;
}

export interface RestoreJournal {
  format: typeof JOURNAL_FORMAT;
  id: string;
  pid: number;
  host: string;
  /** When the owner process started (wall clock), where it can be known: tells a reused pid apart. */
  pid_started_at_unix_ms?: number;
  started_at_unix_ms: number;
  harness: HarnessName;
  session_id: string;
  state: 'placing' | 'placed';
  /** The staging folder (removed at the end either way). */
  staging: string;
  root: string;
  /** Folders this restore creates, parents first. */
  dirs: string[];
  targets: JournalTarget[];
  indexes: JournalIndex[];
  import?: JournalImport;
}

export function newJournalId(): string {
  return randomBytes(8).toString('hex');
}

/** The journal `id` in the journal folder `dir` (`Paths.restoresDir`). */
export function journalFile(dir: string, id: string): string {
  return path.join(dir, `${id}.json`);
}

/** This process as the owner of a journal or staging folder. */
export function ownerFields(world: LockWorld = systemLockWorld()): {
  pid: number;
  host: string;
  pid_started_at_unix_ms: number;
} {
  return {
    pid: world.pid,
    host: world.host,
    pid_started_at_unix_ms: world.startedAt(world.pid) ?? Math.round(Date.now() - process.uptime() * 1000),
  };
}

/** Temp file in the same folder, written and fsynced, renamed over the journal, folder fsynced. */
export async function writeJournal(io: RestoreIO, dir: string, journal: RestoreJournal): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = journalFile(dir, journal.id);
  const temp = path.join(dir, `.${journal.id}.${randomBytes(4).toString('hex')}.tmp`);
  const handle = await open(
    temp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    0o600,
  );
  try {
    try {
      await io.write(handle, Buffer.from(`${JSON.stringify(journal, null, 2)}\n`));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await io.rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  await fsyncDir(dir);
}

export async function removeJournal(dir: string, id: string): Promise<void> {
  await unlink(journalFile(dir, id)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  await fsyncDir(dir);
}

/** Every journal in the journal folder `dir`; an unreadable one is reported by id with the reason. */
export async function listJournals(dir: string): Promise<{ id: string; journal?: RestoreJournal; damaged?: string }[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: { id: string; journal?: RestoreJournal; damaged?: string }[] = [];
  for (const name of names.sort()) {
    const id = JOURNAL_NAME.exec(name)?.[1];
    if (id === undefined) {
      // A temp file of a journal write that never finished: the journal it was to become is the old one, or none.
      if (/^\.[0-9a-f]{16}\.[0-9a-f]{8}\.tmp$/.test(name)) await removeStaleTemp(path.join(dir, name));
      continue;
    }
    try {
      const journal = JSON.parse(await readFile(path.join(dir, name), 'utf8')) as RestoreJournal;
      if (journal.format !== JOURNAL_FORMAT || journal.id !== id)
        out.push({ id, damaged: 'not a restore journal of this blue-agent' });
      else out.push({ id, journal });
    } catch (error) {
      out.push({ id, damaged: (error as Error).message });
    }
  }
  return out;
}

async function removeStaleTemp(file: string): Promise<void> {
  const info = await stat(file).catch(() => undefined);
  // Another live restore may be writing it right now; only old ones are leftovers.
  if (info !== undefined && Date.now() - info.mtimeMs > 60_000) await unlink(file).catch(() => undefined);
}
