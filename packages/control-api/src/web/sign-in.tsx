/**
 * Signing a browser in and out, and approving a device sign-in (RFC 8628's verification page). Without an identity
 * provider, a person signs in with a one-time link an administrator makes (`control-plane users link`, or the one a
 * first start prints); its secret travels in the URL's fragment, so no server, proxy or Referer ever sees it.
 */
import { FIRST_ADMIN_EMAIL, SIGN_IN_LINK_TTL_MS } from '../admin.js';
import { HttpError } from '../http.js';
import type { Request, RouteContext } from '../route-context.js';
import type { AttemptLimit, BrowserSession } from '../store/index.js';
import { formatUserCode, normaliseUserCode } from '../store/tokens.js';
import {
  browserSession,
  clearedSessionCookie,
  cookie,
  readPagePost,
  redirect,
  safeNext,
  sendPage,
  sessionCookie,
  sessionCookieName,
  toSignIn,
} from './http.js';
import { Page } from './layout.js';

/** What each scope lets a device do, as the approval page says it. */
const SCOPE_WORDS: Record<string, string> = {
  'governance:read': 'read the organisation’s capture policy',
  'session:read': 'list, download and resume the sessions you may see',
  'session:write': 'upload, share and delete your sessions',
  'client-status:write': 'report this machine’s status',
  admin: 'administer: users, their tokens, the audit log, every machine’s status',
};

/** How long ago a device sign-in started, in whole minutes, as a sentence says it ("just now", "1 minute ago"). */
function startedAgo(ms: number): string {
  const minutes = Math.max(0, Math.round(ms / 60_000));
  if (minutes === 0) return 'just now';
  return minutes === 1 ? '1 minute ago' : `${minutes} minutes ago`;
}

/**
 * User codes a person may get wrong before the page stops looking them up for a while (RFC 8628 §5.1: 20^8 codes
 * are too few to be left open to guessing). Counted in the database: one limit for every replica, however many
 * look-ups arrive at once.
 */
export const CODE_MISSES_ALLOWED = 10;
export const CODE_MISS_WINDOW_MS = 10 * 60_000;
const CODE_MISSES: AttemptLimit = { allowed: CODE_MISSES_ALLOWED, windowMs: CODE_MISS_WINDOW_MS };

/**
 * `find` run as one of `userId`'s code look-ups: each takes an attempt before it looks, so no more look-ups run than
 * the attempts left, and one that finds what it looked for gives its attempt back (only misses count).
 */
async function lookUpCode<T>(
  rc: RouteContext,
  userId: string,
  find: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const key = `device-code-miss:${userId}`;
  const window = await rc.store.identity.takeAttempt(key, CODE_MISSES, rc.now());
  if (window === undefined) throw tooManyCodes();
  const found = await find();
  if (found !== undefined) await rc.store.identity.returnAttempt(key, window);
  return found;
}

function tooManyCodes(): HttpError {
  return new HttpError(
    429,
    'too_many_codes',
    `too many codes that match no sign-in: wait ${CODE_MISS_WINDOW_MS / 60_000} minutes, then type the code the ` +
      `terminal shows`,
    {
      'retry-after': String(CODE_MISS_WINDOW_MS / 1000),
    },
  );
}

/** Starts a browser session for `userId` and sends the browser on to `next` (with any other cookies to set). */
export async function signInBrowser(
  rc: RouteContext,
  req: Request,
  userId: string,
  next: string,
  cookies: string[] = [],
): Promise<void> {
  const { token } = await rc.store.identity.createBrowserSession(
    userId,
    rc.now(),
    rc.identitySettings.browserSessionTtlMs,
  );
  redirect(req.reply, safeNext(next), { 'set-cookie': [sessionCookie(rc, token), ...cookies] });
}

/** GET /sign-in: how to sign in here. */
export async function signInPage(rc: RouteContext, req: Request): Promise<void> {
  const next = safeNext(req.url.searchParams.get('next') ?? undefined);
  if ((await browserSession(rc, req)) !== undefined) return redirect(req.reply, next);
  const failed = req.url.searchParams.get('failed');
  // The administrator a first start made signs in by link alone (no identity provider knows it): say how to get one.
  const firstAdmin = await rc.store.userByEmail(FIRST_ADMIN_EMAIL);
  sendPage(
    req.reply,
    200,
    <Page title="Sign in">
      <div class="narrow">
        <h1>Sign in</h1>
        {failed === null ? null : (
          <p class="warning" role="alert">
            {failed === 'link'
              ? 'That sign-in link is not valid: it was used already, it expired, or it was copied incompletely. ' +
                'Ask for a new one.'
              : failed === 'email'
                ? 'Your identity provider did not give a verified e-mail address, which this server needs to know ' +
                  'who you are.'
                : failed === 'account'
                  ? 'That e-mail address belongs to another account at your identity provider. Ask an administrator.'
                  : 'Signing in did not work, or took too long. Try again.'}
          </p>
        )}
        {rc.oidc === undefined ? null : (
          <p>
            <a class="button primary" href={`/auth/oidc/start?next=${encodeURIComponent(next)}`}>
              Sign in with {rc.oidc.name}
            </a>
          </p>
        )}
        <p>
          {rc.oidc === undefined
            ? 'Sign in with a one-time link from an administrator.'
            : 'Or use a one-time sign-in link from an administrator.'}{' '}
          An administrator makes one, on the machine this server runs on, with:
        </p>
        <pre>{`blue-agent control-plane users link you@example.com${rc.adminFlags}`}</pre>
        {firstAdmin === undefined ? null : (
          <>
            <p>
              The administrator <code>control-plane serve</code> created, {firstAdmin.email}, gets a new link the same
              way (each link works once, within {Math.round(SIGN_IN_LINK_TTL_MS / 60_000)} minutes):
            </p>
            <pre>{`blue-agent control-plane users link ${firstAdmin.email}${rc.adminFlags}`}</pre>
          </>
        )}
      </div>
    </Page>,
  );
}

/** GET /auth/link: the page a sign-in link opens; its script moves the secret from the fragment into the form. */
export async function signInLinkPage(_rc: RouteContext, req: Request): Promise<void> {
  const next = safeNext(req.url.searchParams.get('next') ?? undefined);
  sendPage(
    req.reply,
    200,
    <Page title="Sign in">
      <div class="narrow">
        <h1>Sign in with a link</h1>
        <p>
          Sign in only with a link an administrator sent you yourself: it signs this browser in to the account it was
          made for.
        </p>
        <form method="post" action="/auth/link">
          <input type="hidden" name="next" value={next} />
          <label for="token">Sign-in code</label>
          <p class="muted" id="token-help">
            Filled in from the link you opened; without scripts, paste the part of the link after #.
          </p>
          <input type="text" id="token" name="token" autocomplete="off" aria-describedby="token-help" required />
          <div class="actions">
            <button type="submit" class="primary">
              Sign in
            </button>
          </div>
        </form>
      </div>
      <script src="/assets/link.js" defer></script>
    </Page>,
  );
}

/** POST /auth/link: spends the link and signs the browser in. */
export async function signInWithLink(rc: RouteContext, req: Request): Promise<void> {
  const form = await readPagePost(rc, req, undefined);
  const token = (form.get('token') ?? '').trim();
  const user = /^[A-Za-z0-9_-]{20,100}$/.test(token)
    ? await rc.store.identity.useSignInLink(token, rc.now())
    : undefined;
  if (user === undefined) return redirect(req.reply, '/sign-in?failed=link');
  await signInBrowser(rc, req, user.id, form.get('next') ?? '/');
}

/** POST /sign-out. */
export async function signOut(rc: RouteContext, req: Request): Promise<void> {
  const session = await browserSession(rc, req);
  if (session === undefined) return redirect(req.reply, '/sign-in', { 'set-cookie': clearedSessionCookie(rc) });
  await readPagePost(rc, req, session);
  const token = cookie(req, sessionCookieName(rc));
  if (token !== undefined) await rc.store.identity.endBrowserSession(token);
  redirect(req.reply, '/sign-in', { 'set-cookie': clearedSessionCookie(rc) });
}

/** GET /device: type the code a terminal shows, then see what asks and approve or deny it. */
export async function devicePage(rc: RouteContext, req: Request): Promise<void> {
  const session = await browserSession(rc, req);
  if (session === undefined) return toSignIn(req);
  const typed = req.url.searchParams.get('user_code');
  if (typed === null || typed.trim() === '') return sendPage(req.reply, 200, <EnterCode session={session} />);
  const userCode = normaliseUserCode(typed);
  const code = await lookUpCode(rc, session.user.id, async () =>
    userCode === undefined ? undefined : rc.store.identity.pendingDeviceCode(userCode, rc.now()),
  );
  if (userCode === undefined || code === undefined) {
    return sendPage(
      req.reply,
      404,
      <EnterCode
        session={session}
        problem={
          'No sign-in is waiting for that code: check it, or start again in the terminal (a code lasts 10 minutes).'
        }
      />,
    );
  }
  const scopes = code.scopes.filter((s) => s !== 'admin' || session.user.is_admin);
  sendPage(
    req.reply,
    200,
    <Page title="Approve a sign-in" session={session}>
      <div class="narrow">
        <h1>Sign in a device?</h1>
        <p>
          A device that calls itself <strong>{code.client_label}</strong> asks to act as{' '}
          <strong>{session.user.email}</strong>, started {startedAgo(rc.now() - code.created_at)}, with the code
        </p>
        <p class="code">{formatUserCode(userCode)}</p>
        <p>It may:</p>
        <ul>
          {scopes.map((s) => (
            <li key={s}>{SCOPE_WORDS[s] ?? s}</li>
          ))}
        </ul>
        {scopes.includes('admin') ? (
          <p class="warning">
            It asks to administer the organisation: approve only if that is what you meant to sign in for.
          </p>
        ) : null}
        <p class="warning">
          Approve only if you started this sign-in yourself, just now, and the terminal shows this same code.
        </p>
        <form method="post" action="/device">
          <input type="hidden" name="csrf" value={session.csrf} />
          <input type="hidden" name="user_code" value={userCode} />
          <div class="actions">
            <button type="submit" name="decision" value="approve" class="primary">
              Approve
            </button>
            <button type="submit" name="decision" value="deny" class="danger">
              Deny
            </button>
          </div>
        </form>
      </div>
    </Page>,
  );
}

/** POST /device: the decision. */
export async function deviceDecision(rc: RouteContext, req: Request): Promise<void> {
  const session = await browserSession(rc, req);
  if (session === undefined) throw new HttpError(401, 'unauthenticated', 'sign in first, then approve the code again');
  const form = await readPagePost(rc, req, session);
  const userCode = normaliseUserCode(form.get('user_code') ?? '');
  const decision = form.get('decision');
  if (userCode === undefined || (decision !== 'approve' && decision !== 'deny'))
    throw new HttpError(400, 'invalid_request', 'the form needs a user code and a decision');
  const decided = await lookUpCode(rc, session.user.id, async () =>
    (await rc.store.identity.decideDeviceCode(userCode, decision === 'approve' ? session.user.id : undefined, rc.now()))
      ? true
      : undefined,
  );
  if (decided === undefined) {
    return sendPage(
      req.reply,
      409,
      <EnterCode
        session={session}
        problem={
          'That code is not waiting any more: it was answered already, or it expired. Start again in the terminal.'
        }
      />,
    );
  }
  sendPage(
    req.reply,
    200,
    <Page title={decision === 'approve' ? 'Signed in' : 'Denied'} session={session}>
      <div class="narrow">
        <h1>{decision === 'approve' ? 'Device signed in' : 'Sign-in denied'}</h1>
        <p role="status">
          {decision === 'approve'
            ? 'Go back to the terminal: it finishes signing in by itself. You can close this window.'
            : 'Nothing was signed in. You can close this window.'}
        </p>
      </div>
    </Page>,
  );
}

function EnterCode({ session, problem }: { session: BrowserSession; problem?: string }) {
  return (
    <Page title="Sign in a device" session={session}>
      <div class="narrow">
        <h1>Sign in a device</h1>
        {problem === undefined ? null : (
          <p class="warning" role="alert">
            {problem}
          </p>
        )}
        <form method="get" action="/device">
          <label for="user_code">Code shown in the terminal</label>
          <input
            type="text"
            id="user_code"
            name="user_code"
            autocomplete="off"
            autocapitalize="characters"
            spellcheck={false}
            placeholder="WDJB-MJHT"
            required
          />
          <div class="actions">
            <button type="submit" class="primary">
              Continue
            </button>
          </div>
        </form>
      </div>
    </Page>
  );
}
