/** The person signed in to a session page. */
import type { Request, RouteContext } from '../../route-context.js';
import type { BrowserSession } from '../../store/index.js';
import { browserSession, toSignIn } from '../http.js';

/** The signed-in person, or a redirect to the sign-in page (undefined: answered). */
export async function signedIn(rc: RouteContext, req: Request): Promise<BrowserSession | undefined> {
  const session = await browserSession(rc, req);
  if (session === undefined) toSignIn(req);
  return session;
}
