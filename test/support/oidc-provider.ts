/**
 * A real OpenID provider on loopback (oidc-provider, a certified implementation) for the Control API's browser
 * sign-in: one confidential client (the Control API), PKCE required, and a plain sign-in page where a person picks
 * one of the provider's accounts by e-mail. Accounts carry `email`, `email_verified` and `groups`. `signIn` drives the
 * whole authorization-code round trip with fetch and a cookie jar, as a browser does; test/e2e drives it in Chromium.
 */
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface OidcAccount {
  email: string;
  /** The provider's subject, what the sign-in page's field takes (default: the e-mail). */
  sub?: string;
  /** `email_verified` (default true); null: the claim is left out, as some providers do. */
  verified?: boolean | null;
  groups?: string[];
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Makes or changes an account. */
  account(account: OidcAccount): void;
  close(): Promise<void>;
}

/** A provider whose one client redirects to `redirectUri` (the Control API's /auth/oidc/callback). */
export async function startOidcProvider(redirectUri: string, accounts: OidcAccount[] = []): Promise<TestOidcProvider> {
  const known = new Map(accounts.map((a) => [a.sub ?? a.email, a]));
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'blue-control';
  const clientSecret = 'blue-control-test-secret-0123456789';
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test', use: 'sig', alg: 'RS256' } as never] },
    cookies: { keys: ['blue-oidc-test-cookie-key-0123456789'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['groups'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(_ctx, sub) {
      const account = known.get(sub);
      if (account === undefined) return undefined;
      const verified = account.verified === null ? {} : { email_verified: account.verified ?? true };
      return {
        accountId: sub,
        claims: async () => ({ sub, email: account.email, ...verified, groups: account.groups ?? [] }),
      };
    },
  });
  const callback = provider.callback();
  server.on('request', (req, res) => {
    const match = /^\/interaction\/([\w-]+)(\/login)?$/.exec((req.url ?? '').split('?')[0]!);
    if (match === null) return void callback(req, res);
    void interaction(req, res, match[2] !== undefined).catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });

  async function interaction(req: http.IncomingMessage, res: http.ServerResponse, submitted: boolean): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (!submitted) {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(
        `<!doctype html><html lang="en"><head><title>Test identity provider</title></head><body><h1>Test identity ` +
          `provider</h1>` +
          `<form method="post" action="/interaction/${details.uid}/login"><label for="email">E-mail</label>` +
          (`<input id="email" name="email" type="email" required><button type="submit">Sign ` +
            `in</button></form></body></html>`),
      );
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const email = new URLSearchParams(Buffer.concat(chunks).toString()).get('email') ?? '';
    if (!known.has(email)) {
      await provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'no such account' },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    // Signed in and consented at once: the test provider asks nothing more.
    const grant = new provider.Grant({ accountId: email, clientId: String(details.params.client_id) });
    grant.addOIDCScope(String(details.params.scope));
    const grantId = await grant.save();
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: email }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
  }

  return {
    issuer,
    clientId,
    clientSecret,
    account: (account) => void known.set(account.sub ?? account.email, account),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A browser's cookies, per origin: enough for the sign-in round trip. */
export class CookieJar {
  private readonly jars = new Map<string, Map<string, string>>();

  header(url: URL): string | undefined {
    const jar = this.jars.get(url.origin);
    if (jar === undefined || jar.size === 0) return undefined;
    return [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  store(url: URL, response: Response): void {
    const jar = this.jars.get(url.origin) ?? new Map<string, string>();
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at).trim();
      const value = pair!.slice(at + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || value === '';
      if (expired) jar.delete(name);
      else jar.set(name, value);
    }
    this.jars.set(url.origin, jar);
  }
}

/**
 * A browser's round trip: GET `start` on the Control API, through the provider's sign-in page as the account `email`
 * (its subject), back to the Control API's callback. Answers where it ended (the last redirect's target) and the jar
 * holding the session cookie.
 */
export async function signInThroughProvider(
  start: string,
  email: string,
  jar = new CookieJar(),
): Promise<{ landed: string; jar: CookieJar; visited: string[] }> {
  const visited: string[] = [];
  let url = new URL(start);
  let init: RequestInit = { method: 'GET' };
  for (let hops = 0; hops < 20; hops++) {
    visited.push(url.href);
    const cookie = jar.header(url);
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), ...(cookie === undefined ? {} : { cookie }) },
    });
    jar.store(url, response);
    const location = response.headers.get('location');
    if (location !== null && response.status >= 300 && response.status < 400) {
      url = new URL(location, url);
      init = { method: 'GET' };
      continue;
    }
    const text = await response.text();
    const form = /<form method="post" action="(\/interaction\/[\w-]+\/login)">/.exec(text);
    if (form === null) return { landed: url.href, jar, visited };
    url = new URL(form[1]!, url);
    init = {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email }).toString(),
    };
  }
  throw new Error(`too many redirects: ${visited.join(' → ')}`);
}
