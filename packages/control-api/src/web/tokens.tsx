/** A person's tokens as a table, each active one with its revoke button: the account page's and administration's. */
import { isActive } from '../identity/users.js';
import type { Grant } from '../store/index.js';
import { when } from './layout.js';

export function TokenTable({
  grants,
  csrf,
  now,
  revokeAction,
  owner,
}: {
  grants: Grant[];
  csrf: string;
  now: number;
  revokeAction: (grant: Grant) => string;
  owner?: string;
}) {
  if (grants.length === 0) return <p class="muted">No tokens.</p>;
  return (
    <table class="responsive">
      <thead>
        <tr>
          <th scope="col">Token</th>
          <th scope="col">Scopes</th>
          <th scope="col">Last used</th>
          <th scope="col">State</th>
          <th scope="col">
            <span class="sr-only">Action</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {grants.map((g) => (
          <tr key={g.id}>
            <td>
              {g.label}
              <div class="muted">
                {g.kind === 'device' ? 'device sign-in' : 'personal token'}, {when(g.created_at)}
              </div>
            </td>
            <td>{g.scopes.join(' ')}</td>
            <td>{when(g.last_used_at)}</td>
            <td>{g.revoked_at !== null ? 'revoked' : isActive(g, now) ? 'active' : 'lapsed'}</td>
            <td>
              {isActive(g, now) ? (
                <form method="post" action={revokeAction(g)} class="inline">
                  <input type="hidden" name="csrf" value={csrf} />
                  <button
                    type="submit"
                    class="danger"
                    aria-label={
                      `Revoke ${g.label}${owner === undefined ? '' : ` of ${owner}`}, created ` +
                      `${when(g.created_at)}`
                    }
                  >
                    Revoke
                  </button>
                </form>
              ) : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
