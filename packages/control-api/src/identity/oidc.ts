/**
 * Browser sign-in through the organisation's identity provider: OpenID Connect, authorization code with PKCE
 * (openid-client). The provider is discovered from its issuer once and reused; the state of a sign-in under way (its
 * PKCE verifier and nonce) is kept in the database, so the callback may reach any replica, and bound to the browser
 * by a cookie holding its state, so nobody can finish a sign-in they did not start. A person is provisioned on first
 * sign-in by their verified e-mail; membership of the configured group makes them an administrator.
 */
import * as oidc from 'openid-client';
import { printable } from '@blue-agent/contract/util/terminal-text.js';
import { HttpError } from '../http.js';
import type { ProviderSignIn, Request, RouteContext } from '../route-context.js';
import { cookie, redirect, safeNext } from '../web/http.js';
import { signInBrowser } from '../web/sign-in.js';

export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Members of this group (the ID token's or userinfo's `groups`) are administrators. */
  adminGroup?: string | undefined;
  /** Asked of the provider; `openid email` at least. */
  scope?: string | undefined;
  /** On the sign-in button: "Sign in with …". */
  name?: string | undefined;
  /**
   * Take an e-mail the provider does not say is verified (`email_verified` absent, as some providers leave it) for a
   * first sign-in. Off by default: a person who could set any address at the provider could take over that account.
   */
  allowUnverifiedEmail?: boolean | undefined;
}

/** How long a person has at the provider before the sign-in must start again. */
const LOGIN_TTL_MS = 10 * 60_000;
/** The sign-in under way's cookie (`__Host-` over TLS: no sibling host can plant one). */
const cookieName = (rc: RouteContext): string =>
  rc.publicUrl().startsWith('https://') ? '__Host-blue_oidc' : 'blue_oidc';
const TIMEOUT_S = 15;

/** Whether the issuer may be plain http: only on this machine (a provider for tests or a laptop). */
export function loopbackIssuer(issuer: URL): boolean {
  return ['127.0.0.1', '[::1]', 'localhost'].includes(issuer.hostname);
}

export class OidcSignIn implements ProviderSignIn {
  readonly name: string;
  private configuration: Promise<oidc.Configuration> | undefined;

  constructor(private readonly settings: OidcSettings) {
    this.name = settings.name ?? new URL(settings.issuer).host;
  }

  /** The provider's configuration, discovered once; a failed discovery is tried again at the next sign-in. */
  private config(): Promise<oidc.Configuration> {
    const issuer = new URL(this.settings.issuer);
    this.configuration ??= oidc
      .discovery(
        issuer,
        this.settings.clientId,
        this.settings.clientSecret,
        oidc.ClientSecretPost(this.settings.clientSecret),
        {
          timeout: TIMEOUT_S,
          ...(issuer.protocol === 'http:' && loopbackIssuer(issuer) ? { execute: [oidc.allowInsecureRequests] } : {}),
        },
      )
      .catch((error: unknown) => {
        this.configuration = undefined;
        throw new HttpError(
          502,
          'identity_provider_unavailable',
          `the identity provider at ${issuer.origin} could not be reached or described itself wrongly (` +
            `${describe(error)}); try again shortly`,
        );
      });
    return this.configuration;
  }

  private redirectUri(rc: RouteContext): string {
    return `${rc.publicUrl()}/auth/oidc/callback`;
  }

  private cookieAttributes(rc: RouteContext, maxAge: number): string {
    return (
      `Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}` + `${rc.publicUrl().startsWith('https://') ? '; Secure' : ''}`
    );
  }

  /** GET /auth/oidc/start: off to the provider, with PKCE, a state and a nonce. */
  async start(rc: RouteContext, req: Request): Promise<void> {
    const config = await this.config();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    const next = safeNext(req.url.searchParams.get('next') ?? undefined);
    await rc.store.identity.createOidcLogin(state, { code_verifier: verifier, nonce, next }, rc.now(), LOGIN_TTL_MS);
    const target = oidc.buildAuthorizationUrl(config, {
      redirect_uri: this.redirectUri(rc),
      scope: this.settings.scope ?? 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    redirect(req.reply, target.href, {
      'set-cookie': `${cookieName(rc)}=${state}; ${this.cookieAttributes(rc, LOGIN_TTL_MS / 1000)}`,
    });
  }

  /** GET /auth/oidc/callback: the provider's answer, checked (state, PKCE, ID token, nonce); the person signed in. */
  async callback(rc: RouteContext, req: Request): Promise<void> {
    const clear = `${cookieName(rc)}=; ${this.cookieAttributes(rc, 0)}`;
    const state = cookie(req, cookieName(rc));
    const login =
      state === undefined || !/^[A-Za-z0-9_-]{16,128}$/.test(state)
        ? undefined
        : await rc.store.identity.takeOidcLogin(state, rc.now());
    if (state === undefined || login === undefined)
      return redirect(req.reply, '/sign-in?failed=oidc', { 'set-cookie': clear });
    const config = await this.config();
    // The URL the provider sent the browser to: the redirect URI (public, behind any proxy) with its answer.
    const here = new URL(`${this.redirectUri(rc)}${req.url.search}`);
    let claims: Record<string, unknown>;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, here, {
        pkceCodeVerifier: login.code_verifier,
        expectedState: state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      });
      claims = { ...tokens.claims() };
      if (config.serverMetadata().userinfo_endpoint !== undefined) {
        claims = { ...(await oidc.fetchUserInfo(config, tokens.access_token, String(claims.sub))), ...claims };
      }
    } catch (error) {
      rc.log('info', `browser sign-in refused: ${describe(error)}`, { event: 'oidc_refused' });
      return redirect(req.reply, '/sign-in?failed=oidc', { 'set-cookie': clear });
    }
    // Whoever the provider's subject signed in as before; a first sign-in is matched by a verified e-mail, and binds
    // it.
    const issuer = config.serverMetadata().issuer;
    const subject = typeof claims.sub === 'string' ? claims.sub : '';
    let user = subject === '' ? undefined : await rc.store.identity.oidcUser(issuer, subject);
    if (user === undefined) {
      const email = typeof claims.email === 'string' ? claims.email.trim() : '';
      const verified =
        claims.email_verified === true ||
        (claims.email_verified === undefined && this.settings.allowUnverifiedEmail === true);
      // `@localhost` accounts are this server's own (the first administrator): no provider speaks for them.
      if (subject === '' || !/^[^\s@]{1,200}@[^\s@]{1,200}$/.test(email) || !verified || /@localhost$/i.test(email)) {
        return redirect(req.reply, '/sign-in?failed=email', { 'set-cookie': clear });
      }
      user = await rc.store.provisionUser(email, rc.now(), { kind: 'identity_provider', issuer });
      if (!(await rc.store.identity.bindOidcSubject(issuer, subject, user.id))) {
        rc.log('info', `browser sign-in refused: ${email} is bound to another subject of ${issuer}`, {
          event: 'oidc_refused',
        });
        return redirect(req.reply, '/sign-in?failed=account', { 'set-cookie': clear });
      }
    }
    const groups = Array.isArray(claims.groups) ? claims.groups.filter((g): g is string => typeof g === 'string') : [];
    if (this.settings.adminGroup !== undefined && groups.includes(this.settings.adminGroup) && !user.is_admin) {
      await rc.store.setAdmin(user.id, true, {
        by: { kind: 'identity_provider', issuer },
        now: rc.now(),
        group: this.settings.adminGroup,
      });
    }
    await signInBrowser(rc, req, user.id, login.next, [clear]);
  }
}

function describe(error: unknown): string {
  const e = error as { code?: unknown; error?: unknown; message?: unknown };
  const code = typeof e.error === 'string' ? e.error : typeof e.code === 'string' ? e.code : undefined;
  return printable(
    `${code === undefined ? '' : `${code}: `}${typeof e.message === 'string' ? e.message : String(error)}`,
  ).slice(0, 300);
}
