/**
 * The embedded database's connection: `<data>/control.db` (`node:sqlite`) opened in WAL, so the admin commands write
 * while `serve` runs, and migrated; statements prepared once per connection and compiled once (planOnce); writes that
 * read before they write take the database's write lock first (BEGIN IMMEDIATE), so concurrent writers (serve and the
 * admin commands) serialise cleanly.
 */
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { BlueError } from '@blue-agent/contract/errors.js';
import { runSync, type Transactions } from '../flow.js';
import { migrateSqlite } from './migrations.js';

export type Row = Record<string, unknown>;
export type Value = string | number | bigint | null;

export class SqliteDb {
  private readonly statements = new Map<string, StatementSync>();

  constructor(
    readonly file: string,
    readonly connection: DatabaseSync,
  ) {}

  /**
   * Opens `<dataDir>/control.db`. With `create` (the default; `serve` and `users add`) a missing directory (0700) and
   * database are made; without it, a directory that does not exist or holds no control.db is refused, so a mistyped
   * --data never starts a new, empty Control API. A new database and its -wal/-shm files are 0600 whatever the umask.
   */
  static open(dataDir: string, options: { create?: boolean | undefined } = {}): SqliteDb {
    const file = path.join(dataDir, 'control.db');
    if (options.create === false) {
      requireDataDir(dataDir);
    } else {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      createPrivate(file);
    }
    const db = new DatabaseSync(file);
    try {
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA busy_timeout = 5000');
      db.exec('PRAGMA foreign_keys = ON');
      db.exec('PRAGMA synchronous = NORMAL');
      migrateSqlite(db, file);
    } catch (error) {
      db.close();
      throw error;
    }
    // SQLite gives -wal and -shm the database file's mode; make sure anyway (they may predate this release).
    for (const extra of [`${file}-wal`, `${file}-shm`]) tightenIfLoose(extra);
    return new SqliteDb(file, db);
  }

  close(): void {
    if (this.connection.isOpen) this.connection.close();
  }

  private prepare(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.connection.prepare(planOnce(sql));
      this.statements.set(sql, statement);
    }
    return statement;
  }

  get(sql: string, ...args: Value[]): Row | undefined {
    return this.prepare(sql).get(...args) as Row | undefined;
  }

  all(sql: string, ...args: Value[]): Row[] {
    return this.prepare(sql).all(...args) as Row[];
  }

  /** Rows changed. */
  run(sql: string, ...args: Value[]): number {
    return Number(this.prepare(sql).run(...args).changes);
  }

  /** Runs `fn` in one IMMEDIATE transaction (the write lock taken before anything is read). */
  transaction<T>(fn: () => T): T {
    this.prepare('BEGIN IMMEDIATE').run();
    try {
      const result = fn();
      this.prepare('COMMIT').run();
      return result;
    } catch (error) {
      // SQLite has rolled some failures back itself (a full disk, for one): a ROLLBACK then would hide the error.
      if (this.connection.isTransaction) this.prepare('ROLLBACK').run();
      throw error;
    }
  }
}

/** Flows over `repo`, each run to the end in one IMMEDIATE transaction (see flow.ts: it must not wait). */
export function transactions<R>(db: SqliteDb, repo: R): Transactions<R> {
  return { run: async (flow) => db.transaction(() => runSync(flow(repo))) };
}

/** Creates `file` empty with mode 0600 (umask-independent) unless it exists. */
function createPrivate(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

function tightenIfLoose(file: string): void {
  try {
    const info = lstatSync(file);
    if (info.isFile() && (info.mode & 0o077) !== 0) chmodSync(file, info.mode & 0o600);
  } catch {
    // Absent (not created yet) or not ours to change: nothing to do.
  }
}

/** An existing Control API data directory: the folder and its control.db must be there. */
export function requireDataDir(dataDir: string): void {
  const hint =
    'Check --data (or BLUE_CONTROL_DATA). `blue-agent control-plane users add EMAIL --admin` or `serve` creates a ' +
    'new data directory.';
  let info;
  try {
    info = statSync(dataDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BlueError(
      'USAGE',
      `the Control API data directory ${dataDir} does not exist` +
        `${code === 'ENOENT' ? '' : ` (${code ?? 'unreadable'})`}`,
      { hint, file: dataDir },
    );
  }
  if (!info.isDirectory())
    throw new BlueError('USAGE', `the Control API data directory ${dataDir} is not a directory`, {
      hint,
      file: dataDir,
    });
  const file = path.join(dataDir, 'control.db');
  if (!existsSync(file)) {
    throw new BlueError('USAGE', `${dataDir} is not a Control API data directory: it holds no control.db`, {
      hint,
      file,
    });
  }
}

/**
 * `sql` with each bound value written `+?` (outside quoted text): the same value to SQLite (a unary plus changes
 * neither it, its affinity nor its collation), but one its planner leaves alone. SQLite 3.54 lets the value of a bare
 * `?` steer the plan of many statements (a join, an ORDER BY: 25 of this store's) and compiles such a statement again
 * whenever that binding changes, which node:sqlite does on every call: a parse and a plan each time (the token lookup
 * behind every request took several times as long). No plan here depends on a value. SQL here has no comments and no
 * quoted identifiers, so single quotes are the only quoting to skip.
 */
export function planOnce(sql: string): string {
  let out = '';
  let quoted = false;
  for (const char of sql) {
    if (char === "'") quoted = !quoted;
    out += char === '?' && !quoted ? '+?' : char;
  }
  return out;
}
