/**
 * The frame every page shares: a header with the signed-in person and a sign-out button, the page's own content, and
 * the one stylesheet. Server-rendered: text is escaped by Preact, attributes too.
 */
import type { ComponentChildren } from 'preact';
import type { BrowserSession } from '../store/index.js';

/** A time as pages show it: UTC to the minute (`2026-12-02 10:21 UTC`); `—` for none. */
export const when = (at: number | null): string =>
  at === null ? '—' : `${new Date(at).toISOString().replace('T', ' ').slice(0, 16)} UTC`;

export interface PageProps {
  title: string;
  session?: BrowserSession | undefined;
  /** The section of the site the page is in, marked in the navigation. */
  nav?: 'sessions' | 'account' | 'admin';
  children: ComponentChildren;
}

export function Page({ title, session, nav, children }: PageProps) {
  const link = (href: string, name: NonNullable<PageProps['nav']>, text: string) => (
    <a href={href} aria-current={nav === name ? 'page' : undefined}>
      {text}
    </a>
  );
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${title} · Blue Control`}</title>
        <link rel="stylesheet" href="/assets/app.css" />
        <link rel="icon" href="data:," />
      </head>
      <body>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href="/">
            Blue Control
          </a>
          {session === undefined ? null : (
            <nav aria-label="Main">
              {link('/sessions', 'sessions', 'Sessions')}
              {session.user.is_admin ? link('/admin', 'admin', 'Administration') : null}
              {link('/account', 'account', 'Account')}
              <span class="who">{session.user.email}</span>
              <form method="post" action="/sign-out" class="inline">
                <input type="hidden" name="csrf" value={session.csrf} />
                <button type="submit" class="link">
                  Sign out
                </button>
              </form>
            </nav>
          )}
        </header>
        <main id="main">{children}</main>
        <script src="/assets/dashboard.js" defer></script>
      </body>
    </html>
  );
}

/**
 * A message written for a terminal as well (an error, a warning), its `backquoted` commands shown as code. Every piece
 * stays text to Preact: nothing in the message becomes markup but the <code> around what was quoted.
 */
export function Prose({ text }: { text: string }) {
  const pieces = text.split('`');
  // An odd number of backquotes leaves the last one unpaired: shown as it is.
  if (pieces.length % 2 === 0) return <>{text}</>;
  return <>{pieces.map((piece, i) => (i % 2 === 1 ? <code key={i}>{piece}</code> : piece))}</>;
}

export function ErrorPage({ status, message }: { status: number; message: string }) {
  return (
    <Page title={`Error ${status}`}>
      <h1>{status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : 'Something went wrong'}</h1>
      <p role="alert">
        <Prose text={message} />
      </p>
      <p>
        <a href="/">Back to the start</a>
      </p>
    </Page>
  );
}
