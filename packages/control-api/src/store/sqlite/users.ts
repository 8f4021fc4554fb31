/** People on SQLite: the repository of the user flows (users.ts), and the reads of users. */
import { likePattern, toUser } from '../rows.js';
import type { Grant, NewAuditEvent, User } from '../types.js';
import type { UserRepository } from '../users.js';
import { insertAudit } from './audit.js';
import type { SqliteDb } from './db.js';
import type { SqliteIdentity } from './identity.js';

/** In one IMMEDIATE transaction: the write lock, taken first, is every lock the flows ask for. */
export class SqliteUsers implements UserRepository {
  constructor(
    private readonly db: SqliteDb,
    private readonly identity: SqliteIdentity,
  ) {}

  lockUsers(): void {}

  anyUser(): boolean {
    return this.db.get('SELECT 1 FROM users LIMIT 1') !== undefined;
  }

  insertUser(user: User, ifAbsent: boolean): boolean {
    // token_hash is unread since version 7; it holds no token (see migrations.ts).
    return (
      this.db.run(
        `INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES (?, ?, ?, ?, ?)` +
          (ifAbsent ? ' ON CONFLICT DO NOTHING' : ''),
        user.id,
        user.email,
        user.is_admin ? 1 : 0,
        `none:${user.id}`,
        user.created_at,
      ) > 0
    );
  }

  userByEmail(email: string): User | undefined {
    const row = this.db.get('SELECT * FROM users WHERE email = ?', email);
    return row === undefined ? undefined : toUser(row);
  }

  userById(id: string): User | undefined {
    const row = this.db.get('SELECT * FROM users WHERE id = ?', id);
    return row === undefined ? undefined : toUser(row);
  }

  lockUsersById(ids: readonly string[]): User[] {
    return ids.map((id) => this.userById(id)).filter((user) => user !== undefined);
  }

  setAdmin(userId: string, isAdmin: boolean): void {
    this.db.run('UPDATE users SET is_admin = ? WHERE id = ?', isAdmin ? 1 : 0, userId);
  }

  insertPersonalToken(
    userId: string,
    scopes: readonly string[],
    label: string,
    now: number,
  ): { token: string; grant: Grant } {
    return this.identity.insertPersonalToken(userId, scopes, label, now);
  }

  audit(event: NewAuditEvent, now: number): void {
    insertAudit(this.db, event, now);
  }

  listUsers(): User[] {
    return this.db.all('SELECT * FROM users ORDER BY created_at, email').map(toUser);
  }

  searchUsers(q: string | undefined, excludeId: string | undefined, limit: number): User[] {
    return this.db
      .all(
        `SELECT * FROM users WHERE (? IS NULL OR id <> ?) AND (? IS NULL OR lower(email) LIKE ? ESCAPE '\\') ORDER ` +
          `BY lower(email), id LIMIT ?`,
        excludeId ?? null,
        excludeId ?? null,
        q ?? null,
        q === undefined ? null : likePattern(q),
        limit,
      )
      .map(toUser);
  }
}
