/**
 * Versioned schema migrations of the PostgreSQL database. The same model as SQLite's newest schema (there is no older
 * PostgreSQL data to carry over: PostgreSQL starts at this model), in PostgreSQL's types: times and sizes as bigint
 * milliseconds and bytes (the same numbers as SQLite's), flags as boolean, JSON documents as text (read back byte for
 * byte, so an ETag stays the hash of what is served). Ids, e-mails, harness and session names are COLLATE "C": they
 * sort and compare by bytes, as SQLite's do, whatever the database's locale.
 *
 * Any number of replicas may start at once: a session-level advisory lock is held around the whole run, and the
 * version is read again once it is held. Each step runs once, in its own transaction, and records its number in
 * `schema_version`; a database written by a newer release is refused rather than guessed at.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { schemaTooNew } from '../sqlite/migrations.js';

type Step = string | ((client: pg.ClientBase) => Promise<void>);

/** The first key of every advisory lock this code takes ('blue' in ASCII); the second says which. */
export const LOCK_NAMESPACE = 0x626c7565;
export const LOCKS = { migrations: 1, users: 2, policy: 3 } as const;

const SCHEMA_1 = `
  CREATE TABLE users (
    id text COLLATE "C" PRIMARY KEY,
    email text COLLATE "C" NOT NULL,
    is_admin boolean NOT NULL DEFAULT false,
    token_hash text COLLATE "C" NOT NULL UNIQUE,
    created_at bigint NOT NULL
  );
  -- One user per e-mail address, whatever its case (SQLite: COLLATE NOCASE).
  CREATE UNIQUE INDEX users_email ON users (lower(email));
  CREATE TABLE settings (key text PRIMARY KEY, value text NOT NULL);
  CREATE TABLE policy_revisions (
    seq bigserial PRIMARY KEY,
    revision text NOT NULL UNIQUE,
    body text NOT NULL,
    etag text NOT NULL,
    created_at bigint NOT NULL
  );
  CREATE TABLE sessions (
    id text COLLATE "C" PRIMARY KEY,
    owner_id text COLLATE "C" NOT NULL REFERENCES users(id),
    harness text COLLATE "C" NOT NULL,
    native_session_id text COLLATE "C" NOT NULL,
    sharing_mode text NOT NULL DEFAULT 'private' CHECK (sharing_mode IN ('private', 'workspace', 'selected')),
    current_artifact_id text COLLATE "C",
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    UNIQUE (owner_id, harness, native_session_id)
  );
  CREATE INDEX sessions_updated ON sessions (updated_at, id);
  CREATE TABLE artifacts (
    id text COLLATE "C" PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL REFERENCES sessions(id),
    revision integer NOT NULL,
    status text NOT NULL CHECK (status IN ('pending', 'complete', 'superseded', 'failed')),
    size_bytes bigint NOT NULL,
    sha256 text NOT NULL,
    content_type text NOT NULL,
    compatibility_profile text NOT NULL,
    artifact_format text NOT NULL,
    resumable boolean NOT NULL DEFAULT false,
    cwd text,
    title text,
    summary text,
    captured_at_unix_ms bigint,
    repository_root text,
    repository_remote text,
    blob_key text NOT NULL UNIQUE,
    failure text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    completed_at bigint,
    retention_deadline bigint NOT NULL,
    blob_deleted boolean NOT NULL DEFAULT false,
    -- Also the index of a session's artifacts.
    UNIQUE (session_id, revision)
  );
  -- What gc looks for: artifacts whose object is still stored, by deadline.
  CREATE INDEX artifacts_retention ON artifacts (retention_deadline) WHERE NOT blob_deleted;
  ALTER TABLE sessions ADD CONSTRAINT sessions_current_artifact
    FOREIGN KEY (current_artifact_id) REFERENCES artifacts(id);
  CREATE TABLE session_grants (
    session_id text COLLATE "C" NOT NULL REFERENCES sessions(id),
    user_id text COLLATE "C" NOT NULL REFERENCES users(id),
    PRIMARY KEY (session_id, user_id)
  );
  CREATE TABLE client_status (
    user_id text COLLATE "C" NOT NULL REFERENCES users(id),
    instance_id text NOT NULL,
    report text NOT NULL,
    received_at bigint NOT NULL,
    PRIMARY KEY (user_id, instance_id)
  );
`;

/**
 * The search document of session `s` whose current artifact is `a`, with `body` (an SQL expression) as its text:
 * title A, summary B, text C, place D (the words of the folder, the native id and the repository's root and remote).
 */
export function searchDocument(body: string): string {
  const place =
    `COALESCE(a.cwd, '') || ' ' || s.native_session_id || ' ' || COALESCE(a.repository_root, '') || ' ' ||` +
    ` COALESCE(a.repository_remote, '')`;
  return `setweight(to_tsvector('simple', COALESCE(a.title, '')), 'A')
    || setweight(to_tsvector('simple', COALESCE(a.summary, '')), 'B')
    || setweight(to_tsvector('simple', ${body}), 'C')
    || setweight(to_tsvector('simple', regexp_replace(${place}, '[[:punct:]]+', ' ', 'g')), 'D')`;
}

export const POSTGRES_MIGRATIONS: readonly Step[] = [
  // 1: users, settings and the organisation's id, policy revisions, captured sessions with their artifacts and
  //    sharing, client status (SQLite's version 3).
  async (client) => {
    await client.query(SCHEMA_1);
    await client.query('INSERT INTO settings (key, value) VALUES ($1, $2)', ['organization_id', randomUUID()]);
  },
  // 2: deleting sessions (objects queued for deletion) and the audit log, append-only (SQLite's version 4).
  `
  CREATE TABLE blob_deletions (blob_key text COLLATE "C" PRIMARY KEY, not_before bigint NOT NULL);
  CREATE TABLE audit_events (
    seq bigserial PRIMARY KEY,
    at bigint NOT NULL,
    actor_id text COLLATE "C" NOT NULL,
    actor_email text NOT NULL,
    action text NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    owner_id text COLLATE "C" NOT NULL,
    details text NOT NULL
  );
  CREATE INDEX audit_events_session ON audit_events (session_id, seq);
  CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'audit_events is append-only'; END $$;
  CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
  CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only();
  `,
  // 3: full-text search: each session's current title (weight A), summary (B), text (C) and place (D: folder and
  //    native id) as a tsvector, GIN-indexed (SQLite's version 5).
  `
  CREATE TABLE session_search (
    session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions(id),
    body text NOT NULL,
    document tsvector NOT NULL
  );
  CREATE INDEX session_search_document ON session_search USING GIN (document);
  INSERT INTO session_search (session_id, body, document)
    SELECT s.id, '', ${searchDocument("''")}
    FROM sessions s JOIN artifacts a ON a.id = s.current_artifact_id;
  `,
  // 4: sessions whose current bundle is still to be read for search (SQLite's version 6).
  `
  CREATE TABLE search_queue (
    session_id text COLLATE "C" PRIMARY KEY,
    artifact_id text COLLATE "C" NOT NULL,
    queued_at bigint NOT NULL,
    claimed_until bigint NOT NULL DEFAULT 0
  );
  `,
  // 5: sign-ins and their tokens (each user's token becomes a personal sign-in with every scope), device codes,
  //    browser sessions, one-time sign-in links and browser sign-ins under way at the identity provider.
  `
  CREATE TABLE grants (
    id text COLLATE "C" PRIMARY KEY,
    user_id text COLLATE "C" NOT NULL REFERENCES users(id),
    kind text NOT NULL CHECK (kind IN ('personal', 'device')),
    client_id text,
    scopes text NOT NULL,
    label text NOT NULL,
    created_at bigint NOT NULL,
    last_used_at bigint,
    expires_at bigint,
    revoked_at bigint
  );
  CREATE INDEX grants_user ON grants (user_id, created_at);
  CREATE TABLE tokens (
    hash text COLLATE "C" PRIMARY KEY,
    grant_id text COLLATE "C" NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
    expires_at bigint,
    used_at bigint
  );
  CREATE INDEX tokens_grant ON tokens (grant_id);
  CREATE TABLE device_codes (
    device_hash text COLLATE "C" PRIMARY KEY,
    user_code text COLLATE "C" NOT NULL UNIQUE,
    client_id text NOT NULL,
    scopes text NOT NULL,
    client_label text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    interval_ms bigint NOT NULL,
    last_poll_at bigint,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
    user_id text COLLATE "C" REFERENCES users(id)
  );
  CREATE TABLE browser_sessions (
    hash text COLLATE "C" PRIMARY KEY,
    user_id text COLLATE "C" NOT NULL REFERENCES users(id),
    csrf text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE TABLE sign_in_links (
    hash text COLLATE "C" PRIMARY KEY,
    user_id text COLLATE "C" NOT NULL REFERENCES users(id),
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE TABLE oidc_logins (
    state_hash text COLLATE "C" PRIMARY KEY,
    code_verifier text NOT NULL,
    nonce text NOT NULL,
    next text NOT NULL,
    expires_at bigint NOT NULL
  );
  CREATE TABLE oidc_subjects (
    issuer text COLLATE "C" NOT NULL,
    subject text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL REFERENCES users(id),
    PRIMARY KEY (issuer, subject),
    UNIQUE (issuer, user_id)
  );
  INSERT INTO grants (id, user_id, kind, scopes, label, created_at)
    SELECT gen_random_uuid()::text, id, 'personal',
      CASE WHEN is_admin THEN 'governance:read session:read session:write client-status:write admin'
        ELSE 'governance:read session:read session:write client-status:write' END,
      'token from users add', created_at
    FROM users;
  INSERT INTO tokens (hash, grant_id, kind)
    SELECT u.token_hash, g.id, 'access' FROM users u JOIN grants g ON g.user_id = u.id;
  ALTER TABLE users DROP COLUMN token_hash;
  `,
  // 6: a session's tags (a JSON array of strings), as SQLite's version 8.
  `ALTER TABLE sessions ADD COLUMN tags text NOT NULL DEFAULT '[]';`,
  // 7: rate windows, as SQLite's version 9.
  `CREATE TABLE rate_windows (key text COLLATE "C" PRIMARY KEY, used integer NOT NULL, ends_at bigint NOT NULL);`,
  // 8: when a deleted session's object is deleted for the last time (SQLite's version 10).
  `ALTER TABLE blob_deletions ADD COLUMN keep_until bigint NOT NULL DEFAULT 0;`,
  // 9: who acted in an audit entry: a person, the local operator or the identity provider (SQLite's version 11).
  `ALTER TABLE audit_events ADD COLUMN actor_kind text NOT NULL DEFAULT 'user';`,
  // 10: a policy revision's text as it was published (SQLite's version 12).
  `ALTER TABLE policy_revisions ADD COLUMN published_text text;`,
];

/**
 * Brings the database up to the newest schema this code knows; refuses a database from a newer release. `client` is
 * a connection of its own (the lock belongs to the connection); `where` names the database in messages.
 */
export async function migratePostgres(
  client: pg.ClientBase,
  where: string,
  migrations: readonly Step[] = POSTGRES_MIGRATIONS,
): Promise<number> {
  // Every replica but the first finds the schema current: no lock needed.
  const seen = await postgresSchemaVersion(client);
  if (seen > migrations.length) throw schemaTooNew(where, seen, migrations.length);
  if (seen === migrations.length) return migrations.length;
  await client.query('SELECT pg_advisory_lock($1, $2)', [LOCK_NAMESPACE, LOCKS.migrations]);
  const unlock = () => client.query('SELECT pg_advisory_unlock($1, $2)', [LOCK_NAMESPACE, LOCKS.migrations]);
  try {
    await migrateLocked(client, where, migrations);
  } catch (error) {
    // A connection that broke has dropped the lock with it; the caller discards the connection.
    await unlock().catch(() => undefined);
    throw error;
  }
  await unlock();
  return migrations.length;
}

async function migrateLocked(client: pg.ClientBase, where: string, migrations: readonly Step[]): Promise<void> {
  await client.query(
    'CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY, applied_at bigint NOT NULL)',
  );
  // Another replica may have migrated meanwhile: the lock is held now.
  const current = await postgresSchemaVersion(client);
  if (current > migrations.length) throw schemaTooNew(where, current, migrations.length);
  for (let version = current + 1; version <= migrations.length; version++) {
    await client.query('BEGIN');
    try {
      const step = migrations[version - 1]!;
      if (typeof step === 'string') await client.query(step);
      else await step(client);
      await client.query('INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)', [version, Date.now()]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }
}

/** The newest step recorded (0 for a new database). */
export async function postgresSchemaVersion(client: Pick<pg.ClientBase, 'query'>): Promise<number> {
  const table = await client.query<{ t: string | null }>(`SELECT to_regclass('schema_version')::text AS t`);
  if (table.rows[0]?.t == null) return 0;
  const row = await client.query<{ v: number | string | null }>('SELECT MAX(version) AS v FROM schema_version');
  return Number(row.rows[0]?.v ?? 0);
}
