/** The embedded database's connection: values bound so that SQLite plans a statement once, and its transactions. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { planOnce, SqliteDb } from '../../../src/store/sqlite/db.js';

describe('SQLite connection', () => {
  let dir: string;
  let db: SqliteDb;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blue-control-sqlite-db-'));
    db = SqliteDb.open(dir);
  });

  afterEach(async () => {
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('binds every value outside quoted text as +?', () => {
    expect(planOnce("SELECT '?', ? FROM t WHERE a = ? AND b = 'it''s ?' LIMIT ?")).toBe(
      "SELECT '?', +? FROM t WHERE a = +? AND b = 'it''s ?' LIMIT +?",
    );
  });

  it('keeps the error of a transaction that SQLite rolled back itself', () => {
    // As after a full disk: the transaction is gone when the error reaches the store.
    expect(() =>
      db.transaction(() => {
        db.connection.exec('ROLLBACK');
        throw new Error('the disk is full');
      }),
    ).toThrow('the disk is full');
    expect(db.connection.isTransaction).toBe(false);
  });
});
