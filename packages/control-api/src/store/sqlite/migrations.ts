/**
 * Versioned schema migrations of the embedded database (SQLite). Each step runs once, in its own transaction, and
 * records its number in `schema_version`; a database written by a newer release is refused rather than guessed at.
 * A step is SQL, or a function for what SQL cannot say (ids made for rows that did not have one).
 */
import { randomUUID } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import { BlueError } from '@blue-agent/contract/errors.js';

type Step = string | ((db: DatabaseSync) => void);

export const SQLITE_MIGRATIONS: readonly Step[] = [
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
  // 2: Blue's model: captured sessions with their artifacts (the uploads of version 1) and the session's sharing;
  //    string revision ids; the organisation's id.
  `
  CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users(id),
    harness TEXT NOT NULL,
    native_session_id TEXT NOT NULL,
    sharing_mode TEXT NOT NULL DEFAULT 'private' CHECK (sharing_mode IN ('private', 'workspace', 'selected')),
    current_artifact_id TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (owner_id, harness, native_session_id)
  );
  CREATE INDEX sessions_updated ON sessions (updated_at, id);
  CREATE TABLE artifacts (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    revision INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'complete', 'superseded', 'failed')),
    size_bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    content_type TEXT NOT NULL,
    compatibility_profile TEXT NOT NULL,
    artifact_format TEXT NOT NULL,
    resumable INTEGER NOT NULL DEFAULT 0,
    cwd TEXT,
    title TEXT,
    summary TEXT,
    captured_at_unix_ms INTEGER,
    repository_root TEXT,
    repository_remote TEXT,
    blob_key TEXT NOT NULL UNIQUE,
    failure TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    completed_at INTEGER,
    retention_deadline INTEGER NOT NULL,
    blob_deleted INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, revision)
  );
  CREATE INDEX artifacts_retention ON artifacts (retention_deadline) WHERE blob_deleted = 0;
  CREATE TABLE session_grants (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    user_id TEXT NOT NULL REFERENCES users(id),
    PRIMARY KEY (session_id, user_id)
  );
  CREATE TABLE policy_revisions_v2 (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    revision TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    etag TEXT NOT NULL,
    created_at INTEGER NOT NULL
  );
  INSERT INTO policy_revisions_v2 (seq, revision, body, etag, created_at)
    SELECT revision, CAST(revision AS TEXT), body, etag, created_at FROM policy_revisions ORDER BY revision;
  DROP TABLE policy_revisions;
  ALTER TABLE policy_revisions_v2 RENAME TO policy_revisions;
  `,
  (db) => {
    db.prepare('INSERT INTO settings (key, value) VALUES (?, ?)').run('organization_id', randomUUID());
    // Each (owner, harness, session id) of version 1 becomes a captured session; its uploads, its artifacts. A
    // session's sharing was copied onto every upload: its current upload's (else its newest's) is the session's.
    const sessions = db
      .prepare(
        `SELECT owner_id, harness, session_id, MIN(created_at) AS created_at, MAX(updated_at) AS updated_at
         FROM uploads GROUP BY owner_id, harness, session_id`,
      )
      .all() as { owner_id: string; harness: string; session_id: string; created_at: number; updated_at: number }[];
    const revisions = db.prepare(
      'SELECT * FROM uploads WHERE owner_id = ? AND harness = ? AND session_id = ? ORDER BY revision DESC',
    );
    const insertSession = db.prepare(
      `INSERT INTO sessions (id, owner_id, harness, native_session_id, sharing_mode, current_artifact_id, created_at,
         updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const insertArtifact = db.prepare(
      `INSERT INTO artifacts (id, session_id, revision, status, size_bytes, sha256, content_type, compatibility_profile,
         artifact_format, resumable, cwd, title, summary, captured_at_unix_ms, repository_root, repository_remote,
         blob_key, failure, created_at, updated_at, completed_at, retention_deadline, blob_deleted)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const sharingOf = db.prepare('SELECT mode FROM sharing WHERE upload_id = ?');
    const recipientsOf = db.prepare('SELECT user_id FROM sharing_recipients WHERE upload_id = ?');
    const grant = db.prepare('INSERT OR IGNORE INTO session_grants (session_id, user_id) VALUES (?, ?)');
    for (const s of sessions) {
      const uploads = revisions.all(s.owner_id, s.harness, s.session_id) as Record<string, string | number | null>[];
      const v = (u: Record<string, string | number | null>, key: string): string | number | null => u[key] ?? null;
      const current = uploads.find((u) => u.status === 'complete');
      const sharingSource = [current, ...uploads].find(
        (u) => u !== undefined && sharingOf.get(String(u.id)) !== undefined,
      );
      const mode =
        sharingSource === undefined
          ? 'private'
          : String((sharingOf.get(String(sharingSource.id)) as { mode: string }).mode);
      const id = randomUUID();
      insertSession.run(
        id,
        s.owner_id,
        s.harness,
        s.session_id,
        mode,
        current === undefined ? null : String(current.id),
        s.created_at,
        s.updated_at,
      );
      if (mode === 'selected' && sharingSource !== undefined) {
        for (const r of recipientsOf.all(String(sharingSource.id)) as { user_id: string }[]) grant.run(id, r.user_id);
      }
      for (const u of uploads) {
        const columns = ['revision', 'status', 'size_bytes', 'sha256', 'content_type'].map((k) => v(u, k));
        const described = [
          'resumable',
          'cwd',
          'title',
          'summary',
          'captured_at_unix_ms',
          'repository_root',
          'repository_remote',
          'blob_key',
          'failure',
        ];
        const times = ['created_at', 'updated_at', 'completed_at', 'retention_deadline', 'blob_deleted'];
        insertArtifact.run(
          v(u, 'id'),
          id,
          ...columns,
          v(u, 'compatibility_profile') ?? 'legacy',
          v(u, 'artifact_format') ?? 'legacy-raw',
          ...described.map((k) => v(u, k)),
          ...times.map((k) => v(u, k)),
        );
      }
    }
    db.exec('DROP TABLE sharing_recipients; DROP TABLE sharing; DROP TABLE uploads;');
  },
  // 4: deleting sessions (objects queued for deletion) and the audit log, append-only.
  `
  CREATE TABLE blob_deletions (blob_key TEXT PRIMARY KEY, not_before INTEGER NOT NULL);
  CREATE TABLE audit_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    actor_id TEXT NOT NULL,
    actor_email TEXT NOT NULL,
    action TEXT NOT NULL,
    session_id TEXT NOT NULL,
    owner_id TEXT NOT NULL,
    details TEXT NOT NULL
  );
  CREATE INDEX audit_events_session ON audit_events (session_id, seq);
  CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
    BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;
  CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
    BEGIN SELECT RAISE(ABORT, 'audit_events is append-only'); END;
  `,
  // 5: full-text search (FTS5): each session's current title, summary, text and place (folder and native id); the
  //    rowid of its entry is kept in session_search_ids, as a session's own id is text.
  `
  CREATE TABLE session_search_ids (rowid INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL UNIQUE);
  CREATE VIRTUAL TABLE session_search USING fts5(
    title, summary, body, place, tokenize = 'unicode61 remove_diacritics 2'
  );
  INSERT INTO session_search_ids (session_id) SELECT id FROM sessions WHERE current_artifact_id IS NOT NULL;
  INSERT INTO session_search (rowid, title, summary, body, place)
    SELECT i.rowid, COALESCE(a.title, ''), COALESCE(a.summary, ''), '',
      COALESCE(a.cwd, '') || ' ' || s.native_session_id
    FROM session_search_ids i JOIN sessions s ON s.id = i.session_id JOIN artifacts a ON a.id = s.current_artifact_id;
  `,
  // 6: sessions whose current bundle is still to be read for search (the server's indexer works through them, each
  //    claimed for a while so that a server that dies leaves it to another).
  `
  CREATE TABLE search_queue (
    session_id TEXT PRIMARY KEY, artifact_id TEXT NOT NULL, queued_at INTEGER NOT NULL,
    claimed_until INTEGER NOT NULL DEFAULT 0
  );
  `,
  // 7: sign-ins and their tokens (each user's token becomes a personal sign-in with every scope), device codes,
  //    browser sessions, one-time sign-in links and browser sign-ins under way at the identity provider.
  //    users.token_hash stays, unread, holding no token: SQLite drops a UNIQUE column only by rebuilding the table
  //    every other table refers to.
  (db) => {
    db.exec(`
      CREATE TABLE grants (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users(id),
        kind TEXT NOT NULL CHECK (kind IN ('personal', 'device')),
        client_id TEXT,
        scopes TEXT NOT NULL,
        label TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        expires_at INTEGER,
        revoked_at INTEGER
      );
      CREATE INDEX grants_user ON grants (user_id, created_at);
      CREATE TABLE tokens (
        hash TEXT PRIMARY KEY,
        grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
        kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
        expires_at INTEGER,
        used_at INTEGER
      );
      CREATE INDEX tokens_grant ON tokens (grant_id);
      CREATE TABLE device_codes (
        device_hash TEXT PRIMARY KEY,
        user_code TEXT NOT NULL UNIQUE,
        client_id TEXT NOT NULL,
        scopes TEXT NOT NULL,
        client_label TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        interval_ms INTEGER NOT NULL,
        last_poll_at INTEGER,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
        user_id TEXT REFERENCES users(id)
      );
      CREATE TABLE browser_sessions (
        hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users(id),
        csrf TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE sign_in_links (
        hash TEXT PRIMARY KEY,
        user_id TEXT NOT NULL REFERENCES users(id),
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE oidc_logins (
        state_hash TEXT PRIMARY KEY,
        code_verifier TEXT NOT NULL,
        nonce TEXT NOT NULL,
        next TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE oidc_subjects (
        issuer TEXT NOT NULL,
        subject TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES users(id),
        PRIMARY KEY (issuer, subject),
        UNIQUE (issuer, user_id)
      );
    `);
    const users = db.prepare('SELECT id, is_admin, token_hash, created_at FROM users').all() as {
      id: string;
      is_admin: number;
      token_hash: string;
      created_at: number;
    }[];
    const grant = db.prepare(
      `INSERT INTO grants (id, user_id, kind, scopes, label, created_at)
       VALUES (?, ?, 'personal', ?, 'token from users add', ?)`,
    );
    const token = db.prepare(`INSERT INTO tokens (hash, grant_id, kind) VALUES (?, ?, 'access')`);
    for (const u of users) {
      const id = randomUUID();
      grant.run(id, u.id, (u.is_admin === 1 ? ALL_SCOPES : MEMBER_SCOPE_LIST).join(' '), u.created_at);
      token.run(u.token_hash, id);
    }
    db.exec(`UPDATE users SET token_hash = 'moved:' || id`);
  },
  // 8: a session's tags (a JSON array of strings): records people store and import carry them, for search and filters.
  `ALTER TABLE sessions ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';`,
  // 9: rate windows: the attempts a key (a person's wrong device codes) used in its window, counted in the database
  //    so that one statement takes one and the limit holds however many requests and replicas ask at once.
  `CREATE TABLE rate_windows (key TEXT PRIMARY KEY, used INTEGER NOT NULL, ends_at INTEGER NOT NULL);`,
  // 10: a deleted session's object is deleted at once and again once no upload URL signed for it can deliver bytes
  //    (keep_until); a row queued before keeps its one time.
  `ALTER TABLE blob_deletions ADD COLUMN keep_until INTEGER NOT NULL DEFAULT 0;`,
  // 11: the audit log records administration too: who acted is a person (user), the local operator (cli: actor_id is
  //     the OS user) or the identity provider (actor_id is its issuer); an entry of no session keeps '' as its session.
  `ALTER TABLE audit_events ADD COLUMN actor_kind TEXT NOT NULL DEFAULT 'user';`,
  // 12: a policy revision's text as it was published (comments and layout kept), which `policy show` and the dashboard
  //    show; revisions published before have none.
  `ALTER TABLE policy_revisions ADD COLUMN published_text TEXT;`,
];

/** The scopes of the personal tokens version 7 carries over (store/types.ts: API_SCOPES, MEMBER_SCOPES then). */
const ALL_SCOPES = ['governance:read', 'session:read', 'session:write', 'client-status:write', 'admin'];
const MEMBER_SCOPE_LIST = ALL_SCOPES.filter((s) => s !== 'admin');

/** Brings `db` up to the newest schema this code knows; refuses a database from a newer release. */
export function migrateSqlite(db: DatabaseSync, file: string, migrations: readonly Step[] = SQLITE_MIGRATIONS): number {
  db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at INTEGER NOT NULL)');
  const current = sqliteSchemaVersion(db);
  if (current > migrations.length) throw schemaTooNew(file, current, migrations.length);
  for (let version = current + 1; version <= migrations.length; version++) {
    db.exec('BEGIN IMMEDIATE');
    try {
      // Another process may have migrated meanwhile: the lock is held now.
      if (sqliteSchemaVersion(db) >= version) {
        db.exec('COMMIT');
        continue;
      }
      const step = migrations[version - 1]!;
      if (typeof step === 'string') db.exec(step);
      else step(db);
      db.prepare('INSERT INTO schema_version (version, applied_at) VALUES (?, ?)').run(version, Date.now());
      db.exec('COMMIT');
    } catch (error) {
      db.exec('ROLLBACK');
      throw error;
    }
  }
  return migrations.length;
}

export function sqliteSchemaVersion(db: DatabaseSync): number {
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_version').get() as { v: number | null } | undefined;
  return row?.v ?? 0;
}

export function schemaTooNew(where: string, found: number, known: number): BlueError {
  return new BlueError(
    'CONFIG_INVALID',
    `the Control API database ${where} has schema version ${found}, newer than this blue-agent understands (${known})`,
    {
      file: where,
      hint:
        'Run the blue-agent release that created this database (or a newer one); ' +
        'do not downgrade a data directory.',
    },
  );
}
