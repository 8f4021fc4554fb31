/**
 * People, once for both databases: a user added with a first personal token, the first administrator (only while
 * there is no user), the user a first sign-in makes, and a change of role (the rule in roles.ts). Each runs in one
 * transaction over the backend's UserRepository, which holds the SQL.
 */
import { type AuditActor, API_SCOPES, MEMBER_SCOPES, type NewAuditEvent, type RoleChange, type User } from './types.js';
import { randomUUID } from 'node:crypto';
import { roleChanged, tokenCreated, userAdded } from './audit.js';
import { type Flow, step, type Step, type Transactions } from './flow.js';
import { planRoleChange } from './roles.js';
import type { Grant } from './types.js';

export interface UserRepository {
  /**
   * Taken before users are counted or added: `exclusive` while deciding whether there are any, `shared` for an
   * ordinary addition (PostgreSQL: an advisory lock across replicas; SQLite's write lock is taken already).
   */
  lockUsers(mode: 'shared' | 'exclusive'): Step<void>;
  anyUser(): Step<boolean>;
  /** Adds `user` unless one of its email exists (case-insensitive): whether it did. */
  insertUser(user: User, ifAbsent: boolean): Step<boolean>;
  userByEmail(email: string): Step<User | undefined>;
  /** The users of `ids` that exist, locked until the transaction ends, in one order (ids it cannot hold: none). */
  lockUsersById(ids: readonly string[]): Step<User[]>;
  setAdmin(userId: string, isAdmin: boolean): Step<void>;
  insertPersonalToken(
    userId: string,
    scopes: readonly string[],
    label: string,
    now: number,
  ): Step<{
    token: string;
    grant: Grant;
  }>;
  audit(event: NewAuditEvent, now: number): Step<void>;
}

/** A user with a personal token (with `by`, both in the audit log). */
export async function addUser(
  users: Transactions<UserRepository>,
  email: string,
  isAdmin: boolean,
  now: number,
  tokenLabel: string,
  by: AuditActor | undefined,
): Promise<{ user: User; token: string }> {
  return users.run(function* (repo) {
    // Shared: any number of additions at once, but never while a first start is deciding whether there are users.
    yield* step(repo.lockUsers('shared'));
    return yield* insertUser(repo, email, isAdmin, now, tokenLabel, by);
  });
}

/** The first administrator, only while there is no user at all. */
export async function addFirstAdmin(
  users: Transactions<UserRepository>,
  email: string,
  now: number,
  tokenLabel: string,
  by: AuditActor | undefined,
): Promise<{ user: User; token: string } | undefined> {
  return users.run(function* (repo) {
    yield* step(repo.lockUsers('exclusive'));
    if (yield* step(repo.anyUser())) return undefined;
    return yield* insertUser(repo, email, true, now, tokenLabel, by);
  });
}

function* insertUser(
  repo: UserRepository,
  email: string,
  isAdmin: boolean,
  now: number,
  tokenLabel: string,
  by: AuditActor | undefined,
): Flow<{ user: User; token: string }> {
  const user: User = { id: randomUUID(), email, is_admin: isAdmin, created_at: now };
  yield* step(repo.insertUser(user, false));
  if (by !== undefined) yield* step(repo.audit(userAdded(by, user), now));
  const scopes = isAdmin ? API_SCOPES : MEMBER_SCOPES;
  const { token, grant } = yield* step(repo.insertPersonalToken(user.id, scopes, tokenLabel, now));
  if (by !== undefined) yield* step(repo.audit(tokenCreated(by, grant), now));
  return { user, token };
}

/** The user of `email`, made (a member, without a token) when there is none: two first sign-ins at once make one. */
export async function provisionUser(
  users: Transactions<UserRepository>,
  email: string,
  now: number,
  by: AuditActor | undefined,
): Promise<User> {
  return users.run(function* (repo) {
    yield* step(repo.lockUsers('shared'));
    const user: User = { id: randomUUID(), email, is_admin: false, created_at: now };
    if (!(yield* step(repo.insertUser(user, true)))) return (yield* step(repo.userByEmail(email)))!;
    if (by !== undefined) yield* step(repo.audit(userAdded(by, user), now));
    return user;
  });
}

/**
 * A change of role, as planRoleChange decides on both people's rows, locked: two administrators who change each
 * other's role at once, on any replicas, run one after the other, and the second is no longer an administrator.
 */
export async function setAdmin(
  users: Transactions<UserRepository>,
  userId: string,
  isAdmin: boolean,
  change: RoleChange | undefined,
): Promise<boolean> {
  const by = change?.by.kind === 'user' ? change.by.id : undefined;
  return users.run(function* (repo) {
    const rows = yield* step(repo.lockUsersById(by === undefined ? [userId] : [userId, by]));
    const target = rows.find((u) => u.id === userId);
    const plan = planRoleChange(
      change,
      rows.find((u) => u.id === by),
      target,
      isAdmin,
    );
    if (plan !== 'change') return plan === 'unchanged';
    yield* step(repo.setAdmin(userId, isAdmin));
    if (change !== undefined) yield* step(repo.audit(roleChanged(change, target!, isAdmin), change.now));
    return true;
  });
}
