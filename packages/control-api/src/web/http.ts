/**
 * The browser side of the Control API: HTML answers with a strict Content-Security-Policy, the session cookie
 * (HttpOnly, SameSite=Lax, Secure and `__Host-` over TLS), and forms checked for their origin and CSRF token. Pages
 * are rendered on the server with Preact (every interpolated string escaped, every control character shown escaped); no
 * page runs a script it did not ship.
 */
import type { FastifyReply } from 'fastify';
import type { VNode } from 'preact';
import { renderToStaticMarkup } from 'preact-render-to-string';
import { escapeControls } from '@blue-agent/contract/util/terminal-text.js';
import { HttpError, readFormBody } from '../http.js';
import type { Request, RouteContext } from '../route-context.js';
import type { BrowserSession } from '../store/index.js';

/**
 * Only this server's own styles and scripts; no inline script or style, no frames, forms post only here. Nothing a
 * transcript holds can run, even if a page had a bug that let markup through.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: browsers send `Origin: null` with forms under no-referrer, and forms are checked by
  // their origin.
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-store',
};

export function sendPage(reply: FastifyReply, status: number, page: VNode): void {
  void reply.code(status).headers(PAGE_HEADERS).type('text/html; charset=utf-8').send(pageHtml(page));
}

/**
 * A page as browsers get it. Every text on it, whatever it came from (titles, tags, folders, names, host names, audit
 * details, a policy, a message), is held to the rule the CLI shows text by (util/terminal-text.ts): control and
 * bidirectional formatting characters are shown escaped (`\u202e`), so none can reorder, hide or restyle what a
 * person reads. Applied to the rendered page, which every page is, so none can forget it; the markup itself holds no
 * such character. CR and CRLF are LF first, as HTML reads them anyway (a text area keeps its lines).
 */
export function pageHtml(page: VNode): string {
  return `<!doctype html>${escapeControls(renderToStaticMarkup(page).replace(/\r\n?/g, '\n'))}`;
}

/**
 * Whether a request that matched no route is a browser's, to be answered with a page: its Accept header names HTML
 * and prefers it at least as much as JSON. API clients (blue-agent sends `application/json`, fetch and curl `*\/*`)
 * get JSON.
 */
export function wantsPage(accept: string | undefined): boolean {
  if (accept === undefined || accept.length > 1024) return false;
  const quality = (type: string): number => {
    let best = 0;
    for (const part of accept.split(',')) {
      const [name, ...params] = part.trim().toLowerCase().split(';');
      if (name?.trim() !== type) continue;
      const q = params.map((p) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      best = Math.max(best, q === undefined ? 1 : Math.min(1, Number(q) || 0));
    }
    return best;
  };
  const html = Math.max(quality('text/html'), quality('application/xhtml+xml'));
  return html > 0 && html >= quality('application/json');
}

/** A redirect to a path of this server (303: the browser follows with GET, after a form too). */
export function redirect(reply: FastifyReply, to: string, headers: Record<string, string | string[]> = {}): void {
  void reply
    .code(303)
    .headers({ ...PAGE_HEADERS, location: to, ...headers })
    .send();
}

/** Whether the server is reached over TLS: cookies are then Secure and `__Host-`. */
function overTls(rc: RouteContext): boolean {
  return rc.publicUrl().startsWith('https://');
}

export function sessionCookieName(rc: RouteContext): string {
  return overTls(rc) ? '__Host-blue_session' : 'blue_session';
}

function cookieAttributes(rc: RouteContext, maxAgeSeconds: number): string {
  return `Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${overTls(rc) ? '; Secure' : ''}`;
}

export function sessionCookie(rc: RouteContext, token: string): string {
  return (
    `${sessionCookieName(rc)}=${token}; ` +
    `${cookieAttributes(rc, Math.floor(rc.identitySettings.browserSessionTtlMs / 1000))}`
  );
}

export function clearedSessionCookie(rc: RouteContext): string {
  return `${sessionCookieName(rc)}=; ${cookieAttributes(rc, 0)}`;
}

/** One cookie of the request, or undefined. */
export function cookie(req: Request, name: string): string | undefined {
  const header = req.raw.headers.cookie;
  if (header === undefined || header.length > 8192) return undefined;
  for (const part of header.split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** The signed-in person of this browser, or undefined. */
export async function browserSession(rc: RouteContext, req: Request): Promise<BrowserSession | undefined> {
  const token = cookie(req, sessionCookieName(rc));
  if (token === undefined || !/^[A-Za-z0-9_-]{20,100}$/.test(token)) return undefined;
  return rc.store.identity.browserSession(token, rc.now());
}

/** The path to come back to after signing in: a path of this server only (never `//host`), else the start page. */
export function safeNext(next: string | undefined): string {
  if (
    next === undefined ||
    !next.startsWith('/') ||
    next.startsWith('//') ||
    next.startsWith('/\\') ||
    next.length > 1000
  )
    return '/';
  // Printable ASCII only (a Location header holds nothing else); anything else is the start page.
  return /^[\x21-\x7e]+$/.test(next) ? next : '/';
}

/** Sends a person who is not signed in to the sign-in page, to come back here. */
export function toSignIn(req: Request): void {
  redirect(req.reply, `/sign-in?next=${encodeURIComponent(`${req.url.pathname}${req.url.search}`)}`);
}

/**
 * A form posted from this server's own pages: the request's Origin must be this server's (a cross-site form, even a
 * top-level one, is refused), and with a session its CSRF token must be the form's `csrf` field.
 */
export async function readPagePost(
  rc: RouteContext,
  req: Request,
  session: BrowserSession | undefined,
  limits?: { maxBytes: number; maxValue: number },
): Promise<Map<string, string>> {
  const origin = req.raw.headers.origin;
  const ours = new URL(rc.publicUrl()).origin;
  const site = req.raw.headers['sec-fetch-site'];
  if (origin !== undefined ? origin !== ours : site !== 'same-origin') {
    req.raw.resume();
    throw new HttpError(403, 'cross_site', `forms are accepted only from ${ours}`);
  }
  const form = await readFormBody(req.raw, rc.bodyTimeoutMs, limits?.maxValue, limits?.maxBytes);
  if (session !== undefined && form.get('csrf') !== session.csrf)
    throw new HttpError(403, 'csrf', 'the form is stale or not from this site: reload the page and try again');
  return form;
}
