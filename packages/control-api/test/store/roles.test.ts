/** A change of role, as both databases decide it. */
import { describe, expect, it } from 'vitest';
import { planRoleChange } from '../../src/store/roles.js';
import type { RoleChange } from '../../src/store/types.js';

const byAda: RoleChange = { by: { kind: 'user', id: 'u-ada', email: 'ada@example.com' }, now: 1 };
const byOperator: RoleChange = { by: { kind: 'cli', name: 'root' }, now: 1 };
const admin = { is_admin: true };
const member = { is_admin: false };

describe('planRoleChange', () => {
  it('makes a change asked by an administrator, by the operator, or by nobody named', () => {
    expect(planRoleChange(byAda, admin, member, true)).toBe('change');
    expect(planRoleChange(byOperator, undefined, admin, false)).toBe('change');
    expect(planRoleChange(undefined, undefined, member, true)).toBe('change');
  });

  it('refuses a person who is no administrator (any more), or is gone', () => {
    expect(planRoleChange(byAda, member, member, true)).toBe('refused');
    expect(planRoleChange(byAda, undefined, member, true)).toBe('refused');
  });

  it('leaves a role that is already so, and a user who is gone, as it is', () => {
    expect(planRoleChange(byAda, admin, admin, true)).toBe('unchanged');
    expect(planRoleChange(byOperator, undefined, undefined, true)).toBe('unchanged');
  });
});
