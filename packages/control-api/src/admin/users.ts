/** Users: add one (with its first token), list them. */
import { BlueError, usageError } from '@blue-agent/contract/errors.js';
import type { AuditActor, ControlStore, StoreOptions, User } from '../store/index.js';
import { withStore } from './with-store.js';

const EMAIL = /^[^\s@]{1,200}@[^\s@]{1,200}$/;

/**
 * Administration commands record what they do in the audit log, by `by` (the local operator: `cli` and their OS
 * user), in the transaction of the change itself.
 */
export async function addUser(
  where: StoreOptions,
  email: string,
  isAdmin: boolean,
  now: number,
  by?: AuditActor,
): Promise<{ user: User; token: string }> {
  if (!EMAIL.test(email) || email.length > 320)
    throw usageError(`"${email}" is not an e-mail address`, "Give the user's e-mail, e.g. ada@example.com.");
  return withStore({ ...where, create: true }, async (store) => {
    if ((await store.userByEmail(email)) !== undefined) {
      throw new BlueError('USAGE', `a user ${email} already exists`, {
        hint: 'Each e-mail address has one user and one token.',
      });
    }
    return store.addUser(email, isAdmin, now, { by });
  });
}

export async function listUsers(where: StoreOptions): Promise<User[]> {
  return withStore({ ...where, create: false }, (store) => store.listUsers());
}

/** The user of `email`, or a USAGE error naming it. */
export async function userNamed(store: ControlStore, email: string): Promise<User> {
  const user = await store.userByEmail(email);
  if (user === undefined)
    throw new BlueError('USAGE', `there is no user ${email}`, { hint: 'See `blue-agent control-plane users list`.' });
  return user;
}
