/**
 * The PostgreSQL connection pool and its statements: a bounded pool per process whose bigint columns (times, sizes)
 * are read as numbers; named prepared statements (`Db`), numbered placeholders (`Params`), and transactions at READ
 * COMMITTED on one client, retried once on a deadlock or serialization failure.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { runAsync, type Transactions } from '../flow.js';

export type Row = Record<string, unknown>;
export type Value = string | number | boolean | null | readonly string[];

/** serialization_failure, deadlock_detected: the transaction may simply be run again. */
const RETRYABLE = new Set(['40001', '40P01']);
/**
 * feature_not_supported, as "cached plan must not change result type": a statement this connection prepared no longer
 * fits a table a newer release migrated. The connection is dropped (its prepared statements with it) and the work run
 * once more on another.
 */
const STALE_STATEMENT = '0A000';

/** int8 (bigint, COUNT(*)) as a number rather than pg's default string; every such value here is a safe integer. */
const INT8_OID = 20;
function parseInt8(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value))
    throw new Error(`a bigint column holds ${text}, beyond what a number represents exactly`);
  return value;
}
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** The pool's settings but its URL. */
export const POOL_OPTIONS: pg.PoolConfig = {
  max: 20,
  connectionTimeoutMillis: 10_000,
  idleTimeoutMillis: 30_000,
  application_name: 'blue-control',
  keepAlive: true,
  types: TYPES,
};

/**
 * Rows of parameterised statements, on a pooled connection or in a transaction. Every statement is a named prepared
 * one (its name from its text): each connection parses and plans it once, which halves the database's work per
 * upload.
 */
export class Db {
  constructor(private readonly target: pg.Pool | pg.PoolClient) {}

  async all(sql: string, ...args: Value[]): Promise<Row[]> {
    return (await this.query(sql, args)).rows;
  }

  async get(sql: string, ...args: Value[]): Promise<Row | undefined> {
    return (await this.all(sql, ...args))[0];
  }

  async run(sql: string, ...args: Value[]): Promise<number> {
    return (await this.query(sql, args)).rowCount ?? 0;
  }

  private async query(sql: string, values: Value[]): Promise<pg.QueryResult<Row>> {
    const statement = { name: statementName(sql), text: sql, values };
    if (!(this.target instanceof pg.Pool)) return this.target.query<Row>(statement);
    for (let attempt = 1; ; attempt++) {
      const client = await this.target.connect();
      // The pool listens for errors of idle connections only: a connection cut while this statement runs fails the
      // statement, and must not end the process.
      client.on('error', ignore);
      let discard: Error | undefined;
      try {
        return await client.query<Row>(statement);
      } catch (error) {
        // A statement that failed on a broken or stale connection: the connection goes, not back to the pool.
        if (sqlState(error) === STALE_STATEMENT || !(error instanceof pg.DatabaseError))
          discard = error instanceof Error ? error : new Error(String(error));
        if (attempt === 1 && sqlState(error) === STALE_STATEMENT) continue;
        throw error;
      } finally {
        client.off('error', ignore);
        client.release(discard);
      }
    }
  }
}

/** Statement names by text: a hash, so the same text has the same name in every process. */
const statementNames = new Map<string, string>();
function statementName(sql: string): string {
  let name = statementNames.get(sql);
  if (name === undefined) {
    name = `blue_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
    statementNames.set(sql, name);
  }
  return name;
}

/** Numbered placeholders for a statement built from optional parts: `add(v)` is `$n` for the n-th value. */
export class Params {
  readonly values: Value[] = [];

  add(value: Value): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * Runs `fn` in one transaction on one pooled connection: committed, or rolled back on any error; run once more after
 * a deadlock or serialization failure. The connection always goes back (discarded when it broke).
 */
export async function transaction<T>(pool: pg.Pool, fn: (db: Db) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    let broken: Error | undefined;
    // The pool listens for errors of idle connections only: a connection cut between two statements of this
    // transaction fails the next statement, and must not end the process.
    client.on('error', ignore);
    try {
      await client.query('BEGIN');
      const result = await fn(new Db(client));
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      if (sqlState(error) === STALE_STATEMENT) broken = error as Error;
      if (attempt === 1 && (RETRYABLE.has(sqlState(error) ?? '') || sqlState(error) === STALE_STATEMENT)) continue;
      throw error;
    } finally {
      client.off('error', ignore);
      client.release(broken);
    }
  }
}

/**
 * Whether PostgreSQL can hold `text`: its text type refuses NUL. No stored value contains one, so a lookup by such a
 * value finds nothing here rather than failing the request (as SQLite, which has no such value either, answers).
 */
export function storable(text: string): boolean {
  return !text.includes('\u0000');
}

export function ignore(): void {
  // An error event whose consequence (a failed query) is reported where the query was made.
}

export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Statements on the pool, and transactions on one of its clients. */
export interface Pg {
  db: Db;
  transaction<T>(fn: (db: Db) => Promise<T>): Promise<T>;
}

/** Flows over the repository `make` gives a transaction's client, each in one transaction (`Pg.transaction`). */
export function transactions<R>(pg: Pg, make: (db: Db) => R): Transactions<R> {
  return { run: (flow) => pg.transaction((db) => runAsync(flow(make(db)))) };
}
