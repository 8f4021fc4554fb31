/** People on PostgreSQL: users, their first personal token, and changes of role. */
import { randomUUID } from 'node:crypto';
import { roleChanged, tokenCreated, userAdded } from '../audit.js';
import { likePattern, toUser } from '../rows.js';
import { planRoleChange } from '../roles.js';
import {
  API_SCOPES,
  type AuditActor,
  FIRST_ADMIN_TOKEN_LABEL,
  MEMBER_SCOPES,
  type RoleChange,
  type User,
  USERS_ADD_TOKEN_LABEL,
} from '../types.js';
import { insertAudit } from './audit.js';
import { type Db, type Pg, storable } from './db.js';
import { insertPersonalToken } from './identity.js';
import { LOCK_NAMESPACE, LOCKS } from './migrations.js';

export async function addUser(
  pg: Pg,
  email: string,
  isAdmin: boolean,
  now: number,
  { by, tokenLabel = USERS_ADD_TOKEN_LABEL }: { by?: AuditActor | undefined; tokenLabel?: string } = {},
): Promise<{ user: User; token: string }> {
  return pg.transaction(async (db) => {
    // Shared: any number of additions at once, but never while a first start is deciding whether there are users.
    await db.run('SELECT pg_advisory_xact_lock_shared($1, $2)', LOCK_NAMESPACE, LOCKS.users);
    return insertUser(db, email, isAdmin, now, tokenLabel, by);
  });
}

export async function addFirstAdmin(
  pg: Pg,
  email: string,
  now: number,
  by?: AuditActor,
): Promise<{ user: User; token: string } | undefined> {
  return pg.transaction(async (db) => {
    await db.run('SELECT pg_advisory_xact_lock($1, $2)', LOCK_NAMESPACE, LOCKS.users);
    return (await db.get('SELECT 1 FROM users LIMIT 1')) === undefined
      ? insertUser(db, email, true, now, FIRST_ADMIN_TOKEN_LABEL, by)
      : undefined;
  });
}

export async function provisionUser(pg: Pg, email: string, now: number, by?: AuditActor): Promise<User> {
  return pg.transaction(async (db) => {
    await db.run('SELECT pg_advisory_xact_lock_shared($1, $2)', LOCK_NAMESPACE, LOCKS.users);
    // Two first sign-ins at once: one inserts, the other finds it.
    const user: User = { id: randomUUID(), email, is_admin: false, created_at: now };
    const made = await db.run(
      'INSERT INTO users (id, email, is_admin, created_at) VALUES ($1, $2, false, $3) ON CONFLICT ' +
        '((lower(email))) DO NOTHING',
      user.id,
      email,
      now,
    );
    if (made > 0 && by !== undefined) await insertAudit(db, userAdded(by, user), now);
    return toUser((await db.get('SELECT * FROM users WHERE lower(email) = lower($1)', email))!);
  });
}

export async function setAdmin(pg: Pg, userId: string, isAdmin: boolean, change?: RoleChange): Promise<boolean> {
  const by = change?.by.kind === 'user' ? change.by.id : undefined;
  if (!storable(userId) || (by !== undefined && !storable(by))) return false;
  return pg.transaction(async (db) => {
    // Both people's rows locked, in one order: two administrators who change each other's role at once, on any
    // replicas, run one after the other, and the second is no longer an administrator.
    const rows = (
      await db.all('SELECT * FROM users WHERE id IN ($1, $2) ORDER BY id FOR UPDATE', userId, by ?? userId)
    ).map(toUser);
    const target = rows.find((u) => u.id === userId);
    const plan = planRoleChange(
      change,
      rows.find((u) => u.id === by),
      target,
      isAdmin,
    );
    if (plan !== 'change') return plan === 'unchanged';
    await db.run('UPDATE users SET is_admin = $1 WHERE id = $2', isAdmin, userId);
    if (change !== undefined) await insertAudit(db, roleChanged(change, target!, isAdmin), change.now);
    return true;
  });
}

export async function userById(pg: Pg, id: string): Promise<User | undefined> {
  if (!storable(id)) return undefined;
  const row = await pg.db.get('SELECT * FROM users WHERE id = $1', id);
  return row === undefined ? undefined : toUser(row);
}

export async function userByEmail(pg: Pg, email: string): Promise<User | undefined> {
  if (!storable(email)) return undefined;
  // Case-insensitive, as SQLite's NOCASE column; lower(email) is the unique index.
  const row = await pg.db.get('SELECT * FROM users WHERE lower(email) = lower($1)', email);
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

/** A user and a personal token (and, with `by`, both in the audit log), in `db` (the caller's transaction). */
async function insertUser(
  db: Db,
  email: string,
  isAdmin: boolean,
  now: number,
  tokenLabel: string,
  by: AuditActor | undefined,
): Promise<{ user: User; token: string }> {
  const user: User = { id: randomUUID(), email, is_admin: isAdmin, created_at: now };
  await db.run(
    'INSERT INTO users (id, email, is_admin, created_at) VALUES ($1, $2, $3, $4)',
    user.id,
    email,
    isAdmin,
    now,
  );
  if (by !== undefined) await insertAudit(db, userAdded(by, user), now);
  const { token, grant } = await insertPersonalToken(
    db,
    user.id,
    isAdmin ? API_SCOPES : MEMBER_SCOPES,
    tokenLabel,
    now,
  );
  if (by !== undefined) await insertAudit(db, tokenCreated(by, grant), now);
  return { user, token };
}
