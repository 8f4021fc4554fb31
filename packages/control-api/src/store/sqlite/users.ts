/** People on SQLite: users, their first personal token, and changes of role. */
import { randomUUID } from 'node:crypto';
import { roleChanged, userAdded } from '../audit.js';
import { likePattern, toUser } from '../rows.js';
import { planRoleChange } from '../roles.js';
import { API_SCOPES, type AuditActor, MEMBER_SCOPES, type RoleChange, type User } from '../types.js';
import { insertAudit } from './audit.js';
import type { SqliteDb } from './db.js';
import type { SqliteIdentity } from './identity.js';

/** A user and a personal token (and, with `by`, both in the audit log); inside the caller's transaction. */
export function insertUser(
  db: SqliteDb,
  identity: SqliteIdentity,
  email: string,
  isAdmin: boolean,
  now: number,
  tokenLabel: string,
  by: AuditActor | undefined,
): { user: User; token: string } {
  const user = insertBareUser(db, email, isAdmin, now, by);
  const scopes = isAdmin ? API_SCOPES : MEMBER_SCOPES;
  const { token } = identity.insertPersonalToken(user.id, scopes, tokenLabel, now, by);
  return { user, token };
}

export function insertBareUser(
  db: SqliteDb,
  email: string,
  isAdmin: boolean,
  now: number,
  by: AuditActor | undefined,
): User {
  const user: User = { id: randomUUID(), email, is_admin: isAdmin, created_at: now };
  // token_hash is unread since version 7; it holds no token (see migrations.ts).
  db.run(
    'INSERT INTO users (id, email, is_admin, token_hash, created_at) VALUES (?, ?, ?, ?, ?)',
    user.id,
    email,
    isAdmin ? 1 : 0,
    `none:${user.id}`,
    now,
  );
  if (by !== undefined) insertAudit(db, userAdded(by, user), now);
  return user;
}

export function anyUser(db: SqliteDb): boolean {
  return db.get('SELECT 1 FROM users LIMIT 1') !== undefined;
}

export function provisionUser(db: SqliteDb, email: string, now: number, by?: AuditActor): User {
  return db.transaction(() => userByEmail(db, email) ?? insertBareUser(db, email, false, now, by));
}

export function setAdmin(db: SqliteDb, userId: string, isAdmin: boolean, change?: RoleChange): boolean {
  return db.transaction(() => {
    const changer = change?.by.kind === 'user' ? userById(db, change.by.id) : undefined;
    const target = userById(db, userId);
    const plan = planRoleChange(change, changer, target, isAdmin);
    if (plan !== 'change') return plan === 'unchanged';
    db.run('UPDATE users SET is_admin = ? WHERE id = ?', isAdmin ? 1 : 0, userId);
    if (change !== undefined) insertAudit(db, roleChanged(change, target!, isAdmin), change.now);
    return true;
  });
}

export function userById(db: SqliteDb, id: string): User | undefined {
  const row = db.get('SELECT * FROM users WHERE id = ?', id);
  return row === undefined ? undefined : toUser(row);
}

export function userByEmail(db: SqliteDb, email: string): User | undefined {
  const row = db.get('SELECT * FROM users WHERE email = ?', email);
  return row === undefined ? undefined : toUser(row);
}

export function listUsers(db: SqliteDb): User[] {
  return db.all('SELECT * FROM users ORDER BY created_at, email').map(toUser);
}

export function searchUsers(db: SqliteDb, q: string | undefined, excludeId: string | undefined, limit: number): User[] {
  return db
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
