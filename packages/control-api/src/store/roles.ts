/**
 * A change of role, once for both backends: asked by a person, it is made only while they still are an administrator
 * (read in the change's transaction, so two administrators who demote each other at once leave one); a role that is
 * already so, or a user who is gone, is left as it is.
 */
import type { RoleChange, User } from './types.js';

/**
 * `changer`: the person asking (undefined when no user asks, or they are gone), `target` the user whose role it is,
 * both read with the change's locks. `refused` answers false; `unchanged` and `change` answer true.
 */
export function planRoleChange(
  change: RoleChange | undefined,
  changer: Pick<User, 'is_admin'> | undefined,
  target: Pick<User, 'is_admin'> | undefined,
  isAdmin: boolean,
): 'refused' | 'unchanged' | 'change' {
  if (change?.by.kind === 'user' && changer?.is_admin !== true) return 'refused';
  return target === undefined || target.is_admin === isAdmin ? 'unchanged' : 'change';
}
