/** Bearer authentication: the caller of a request's token, for a route that names the scope it needs. */
import type { IncomingMessage } from 'node:http';
import { HttpError } from '../http.js';
import type { RouteContext } from '../route-context.js';
import type { ApiScope, User } from '../store/index.js';

const MAX_TOKEN_LENGTH = 512;

/**
 * The caller of a bearer token that holds `scope` (RFC 6750: 401 with `invalid_token` for a token that is unknown,
 * revoked or expired, 403 `insufficient_scope` for one that may not do this). An administrator whose token lacks the
 * `admin` scope is a member for this request.
 */
export async function authenticate(rc: RouteContext, request: IncomingMessage, scope: ApiScope | 'any'): Promise<User> {
  const header = request.headers.authorization;
  const challenge = (error?: string, description?: string) => ({
    'www-authenticate':
      `Bearer realm="blue-control"${error === undefined ? '' : `, error="${error}"`}` +
      `${description === undefined ? '' : `, error_description="${description}"`}`,
  });
  if (header === undefined)
    throw new HttpError(401, 'unauthenticated', 'send a bearer token: Authorization: Bearer <token>', challenge());
  const match = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i.exec(header);
  if (match === null || match[1]!.length > MAX_TOKEN_LENGTH) {
    throw new HttpError(
      401,
      'unauthenticated',
      'the Authorization header must be "Bearer <token>"',
      challenge('invalid_request'),
    );
  }
  const found = await rc.store.identity.authenticate(match[1]!, rc.now());
  if (found === 'expired') {
    throw new HttpError(
      401,
      'token_expired',
      'the access token expired; refresh it (blue-agent does so by itself) or sign in again',
      challenge('invalid_token', 'The access token expired'),
    );
  }
  if (found === undefined) {
    throw new HttpError(
      401,
      'invalid_token',
      'the bearer token is not valid (unknown or revoked); sign in again: blue-agent login --control-url URL',
      challenge('invalid_token'),
    );
  }
  // A member at an administrator's route hears that it is for administrators (from the route), not about scopes.
  const personCould = scope !== 'admin' || found.user.is_admin;
  if (scope !== 'any' && personCould && !found.scopes.includes(scope)) {
    throw new HttpError(
      403,
      'insufficient_scope',
      `this token may not do this: it needs the scope ${scope}; sign in again asking for it`,
      {
        'www-authenticate': `Bearer realm="blue-control", error="insufficient_scope", scope="${scope}"`,
      },
    );
  }
  return found.user.is_admin && !found.scopes.includes('admin') ? { ...found.user, is_admin: false } : found.user;
}
