/** People on PostgreSQL: the repository of the user flows (users.ts), and the reads of users. */
import { likePattern, toUser } from '../rows.js';
import type { Grant, NewAuditEvent, User } from '../types.js';
import type { UserRepository } from '../users.js';
import { insertAudit } from './audit.js';
import { type Db, type Pg, storable } from './db.js';
import { insertPersonalToken } from './identity.js';
import { LOCK_NAMESPACE, LOCKS } from './migrations.js';

/** On one transaction's client. */
export class PgUsers implements UserRepository {
  constructor(private readonly db: Db) {}

  async lockUsers(mode: 'shared' | 'exclusive'): Promise<void> {
    await this.db.run(
      mode === 'shared' ? 'SELECT pg_advisory_xact_lock_shared($1, $2)' : 'SELECT pg_advisory_xact_lock($1, $2)',
      LOCK_NAMESPACE,
      LOCKS.users,
    );
  }

  async anyUser(): Promise<boolean> {
    return (await this.db.get('SELECT 1 FROM users LIMIT 1')) !== undefined;
  }

  async insertUser(user: User, ifAbsent: boolean): Promise<boolean> {
    const made = await this.db.run(
      'INSERT INTO users (id, email, is_admin, created_at) VALUES ($1, $2, $3, $4)' +
        (ifAbsent ? ' ON CONFLICT ((lower(email))) DO NOTHING' : ''),
      user.id,
      user.email,
      user.is_admin,
      user.created_at,
    );
    return made > 0;
  }

  async userByEmail(email: string): Promise<User | undefined> {
    return userByEmail(this.db, email);
  }

  async lockUsersById(ids: readonly string[]): Promise<User[]> {
    // In one order: two transactions that lock the same people never wait for each other.
    const rows = await this.db.all(
      'SELECT * FROM users WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE',
      ids.filter(storable),
    );
    return rows.map(toUser);
  }

  async setAdmin(userId: string, isAdmin: boolean): Promise<void> {
    await this.db.run('UPDATE users SET is_admin = $1 WHERE id = $2', isAdmin, userId);
  }

  async insertPersonalToken(
    userId: string,
    scopes: readonly string[],
    label: string,
    now: number,
  ): Promise<{ token: string; grant: Grant }> {
    return insertPersonalToken(this.db, userId, scopes, label, now);
  }

  async audit(event: NewAuditEvent, now: number): Promise<void> {
    await insertAudit(this.db, event, now);
  }
}

export async function userById(pg: Pg, id: string): Promise<User | undefined> {
  if (!storable(id)) return undefined;
  const row = await pg.db.get('SELECT * FROM users WHERE id = $1', id);
  return row === undefined ? undefined : toUser(row);
}

export async function userByEmail(db: Db, email: string): Promise<User | undefined> {
  if (!storable(email)) return undefined;
  // Case-insensitive, as SQLite's NOCASE column; lower(email) is the unique index.
  const row = await db.get('SELECT * FROM users WHERE lower(email) = lower($1)', email);
  return row === undefined ? undefined : toUser(row);
}

export async function listUsers(pg: Pg): Promise<User[]> {
  return (await pg.db.all('SELECT * FROM users ORDER BY created_at, lower(email)')).map(toUser);
}

export async function searchUsers(
  pg: Pg,
  q: string | undefined,
  excludeId: string | undefined,
  limit: number,
): Promise<User[]> {
  if (q !== undefined && !storable(q)) return [];
  const rows = await pg.db.all(
    `SELECT * FROM users WHERE ($1::text IS NULL OR id <> $1) AND ($2::text IS NULL OR lower(email) LIKE $2 ESCAPE '\\')
     ORDER BY lower(email), id LIMIT $3`,
    excludeId ?? null,
    q === undefined ? null : likePattern(q),
    limit,
  );
  return rows.map(toUser);
}
