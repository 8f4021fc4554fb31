/**
 * Versioned schema migrations for the Control API's SQLite database. Each step runs once, in its own transaction, and
 * records its number in `schema_version`; a database written by a newer release is refused rather than guessed at.
 */
import type { DatabaseSync } from 'node:sqlite';
import { BlueError } from '../errors.js';

export const MIGRATIONS: readonly string[] = [
  // 1: users, policy revisions, uploads, sharing, client status.
  `
  CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE COLLATE NOCASE,
    is_admin INTEGER NOT NULL DEFAULT 0,
    token_hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE policy_revisions (
    revision INTEGER PRIMARY KEY,
    body TEXT NOT NULL,
    etag TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE uploads (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users(id),
    harness TEXT NOT NULL,
    session_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'complete', 'superseded', 'failed')),
    size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    content_type TEXT NOT NULL,
    compatibility_profile TEXT,
    cwd TEXT,
    artifact_format TEXT,
    resumable INTEGER NOT NULL DEFAULT 0,
    title TEXT,
    summary TEXT,
    captured_at_unix_ms INTEGER,
    repository_root TEXT,
    repository_remote TEXT,
    blob_key TEXT NOT NULL,
    failure TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    completed_at INTEGER,
    retention_deadline INTEGER NOT NULL,
    blob_deleted INTEGER NOT NULL DEFAULT 0,
    UNIQUE (owner_id, harness, session_id, revision)
  );
  CREATE INDEX uploads_updated ON uploads (updated_at, id);
  CREATE INDEX uploads_session ON uploads (owner_id, harness, session_id);
  CREATE TABLE sharing (
    upload_id TEXT PRIMARY KEY REFERENCES uploads(id),
    mode TEXT NOT NULL CHECK (mode IN ('private', 'workspace', 'selected'))
  );
  CREATE TABLE sharing_recipients (
    upload_id TEXT NOT NULL REFERENCES uploads(id),
    user_id TEXT NOT NULL REFERENCES users(id),
    PRIMARY KEY (upload_id, user_id)
  );
  CREATE TABLE client_status (
    user_id TEXT NOT NULL REFERENCES users(id),
    instance_id TEXT NOT NULL,
    report TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, instance_id)
  );
  `,
];

export const CODE_SCHEMA_VERSION = MIGRATIONS.length;

/** Brings `db` up to the newest schema this code knows; refuses a database from a newer release. */
export function migrate(db: DatabaseSync, file: string, migrations: readonly string[] = MIGRATIONS): number {
  db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at INTEGER NOT NULL)');
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_version').get() as { v: number | null } | undefined;
  const current = row?.v ?? 0;
  if (current > migrations.length) {
    throw new BlueError(
      'CONFIG_INVALID',
      `the Control API database ${file} has schema version ${current}, newer than this blue-agent understands (${migrations.length})`,
      { file, hint: 'Run the blue-agent release that created this database (or a newer one); do not downgrade a data directory.' },
    );
  }
  for (let version = current + 1; version <= migrations.length; version++) {
    db.exec('BEGIN IMMEDIATE');
    try {
      db.exec(migrations[version - 1]!);
      db.prepare('INSERT INTO schema_version (version, applied_at) VALUES (?, ?)').run(version, Date.now());
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
  return migrations.length;
}
