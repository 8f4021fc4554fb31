import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import type { BlueError } from '@blue-agent/contract/errors.js';
import { lastKnownGoodPath, resolvePolicy, type ResolvedPolicy } from '../../src/policy/index.js';
import type { AgentConfig } from '@blue-agent/contract/schema/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { rejected } from '../../../../test/support/errors.js';
import { closedOrigin, startPolicyServer, type PolicyServer } from '../../../../test/support/policy-server.js';

const TOKEN = 'tok-SECRET-4d2b8e9f01';
const HOUR = 3600 * 1000;

let t: TestHome;
let server: PolicyServer;
let now: number;

function policyFor(origin: string, extra: Record<string, unknown> = {}) {
  return {
    revision: 7,
    ttl_seconds: 3600,
    session_upload: { presign_url: `${origin}/session-uploads/presign` },
    ...extra,
  };
}

/** A context pointed at `origin` with the token in the environment and a controllable clock. */
function ctxFor(origin: string, env: Record<string, string> = {}): Context {
  return t.context({
    env: { BLUE_AGENT_CONTROL_URL: origin, BLUE_AGENT_TOKEN: TOKEN, ...env },
    clock: { now: () => now },
  });
}

async function resolve(
  ctx: Context,
  config: AgentConfig = {},
  extra: { dryRun?: boolean; policyFile?: string; timeoutMs?: number } = {},
) {
  return resolvePolicy(ctx, {
    config,
    dryRun: extra.dryRun ?? false,
    policyFile: extra.policyFile,
    timeoutMs: extra.timeoutMs ?? 5_000,
  });
}

async function failure(promise: Promise<unknown>): Promise<BlueError> {
  const blue = await rejected(promise);
  // Whatever went wrong, the token never shows.
  expect(JSON.stringify(blue.toJSON())).not.toContain(TOKEN);
  expect(String(blue.stack)).not.toContain(TOKEN);
  return blue;
}

function noTokenIn(resolved: ResolvedPolicy): ResolvedPolicy {
  expect(JSON.stringify(resolved)).not.toContain(TOKEN);
  return resolved;
}

async function readLkg(ctx: Context): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(lastKnownGoodPath(ctx), 'utf8')) as Record<string, unknown>;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

beforeEach(async () => {
  t = await makeTestHome();
  now = Date.UTC(2025, 0, 15, 12, 0, 0);
  server = await startPolicyServer({ revision: 0 });
  server.setPolicy(policyFor(server.origin));
});
afterEach(async () => {
  await server.close();
  await t.cleanup();
});

describe('resolvePolicy from the Control API', () => {
  it('fetches with the bearer token and Accept, and saves the last-known-good', async () => {
    const ctx = ctxFor(server.origin);
    const resolved = noTokenIn(await resolve(ctx));
    expect(resolved).toMatchObject({
      source: 'fetched',
      location: `${server.origin}/governance-config`,
      revision: 7,
      fetchedAt: now,
      ageSeconds: 0,
      stale: false,
      etag: '"v2"',
      warnings: [],
    });
    const seen = server.requests[0]!;
    expect(seen.url).toBe('/governance-config');
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(seen.headers.accept).toBe('application/json');
    expect(seen.headers['if-none-match']).toBeUndefined();

    const lkg = await readLkg(ctx);
    expect(lkg).toEqual({
      policy: policyFor(server.origin),
      etag: '"v2"',
      fetched_at: now,
      url: `${server.origin}/governance-config`,
    });
    expect((await stat(lastKnownGoodPath(ctx))).mode & 0o777).toBe(0o600);
    expect(JSON.stringify(lkg)).not.toContain(TOKEN);
  });

  it('sends If-None-Match from the last-known-good and handles 304 by refreshing fetched_at', async () => {
    const ctx = ctxFor(server.origin);
    await resolve(ctx);
    now += 2 * HOUR;
    const again = await resolve(ctx);
    expect(server.requests[1]!.headers['if-none-match']).toBe('"v2"');
    expect(again).toMatchObject({
      source: 'fetched',
      notModified: true,
      revision: 7,
      fetchedAt: now,
      stale: false,
      etag: '"v2"',
    });
    expect((await readLkg(ctx)).fetched_at).toBe(now);

    // A new revision on the server replaces the cache.
    server.setPolicy(policyFor(server.origin, { revision: 8 }));
    const newer = await resolve(ctx);
    expect(newer).toMatchObject({ source: 'fetched', revision: 8, etag: '"v3"' });
    expect(newer.notModified).toBeUndefined();
    expect(await readLkg(ctx)).toMatchObject({ etag: '"v3"', policy: { revision: 8 } });
  });

  it('joins the route onto a control URL with a path prefix', async () => {
    await server.close();
    server = await startPolicyServer({ revision: 0 }, { prefix: '/api/blue' });
    server.setPolicy(policyFor(server.origin));
    for (const base of [
      `${server.origin}/api/blue`,
      `${server.origin}/api/blue/`,
      `${server.origin}/api/blue/?x=1#f`,
    ]) {
      const resolved = await resolve(ctxFor(base), {}, { dryRun: true });
      expect(resolved.location).toBe(`${server.origin}/api/blue/governance-config`);
    }
    expect(server.requests.map((r) => r.url)).toEqual(Array(3).fill('/api/blue/governance-config'));
  });

  it('uses control_url from the config and the token file', async () => {
    await mkdir(t.ctx.paths.stateDir, { recursive: true });
    await writeFile(path.join(t.ctx.paths.stateDir, 'token'), `${TOKEN}\n`, { mode: 0o600 });
    const ctx = t.context({ clock: { now: () => now } });
    const resolved = await resolve(ctx, { control_url: server.origin });
    expect(resolved.source).toBe('fetched');
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('refuses a token file readable by others before any request is made', async () => {
    await mkdir(t.ctx.paths.stateDir, { recursive: true });
    await writeFile(path.join(t.ctx.paths.stateDir, 'token'), TOKEN, { mode: 0o644 });
    const error = await failure(resolve(t.context({ clock: { now: () => now } }), { control_url: server.origin }));
    expect(error.hint).toContain('chmod 600');
    expect(server.requests).toHaveLength(0);
  });

  describe('when the Control API cannot be used', () => {
    it('fails with POLICY_UNREACHABLE and a hint when there is no last-known-good', async () => {
      const error = await failure(resolve(ctxFor(await closedOrigin())));
      expect(error.code).toBe('POLICY_UNREACHABLE');
      expect(error.message).toContain('ECONNREFUSED');
      expect(error.hint).toContain('--policy');
    });

    it('falls back to the last-known-good when the server is unreachable, saying why', async () => {
      // The cache was filled from a server that has since gone away, at the same address.
      const gone = await closedOrigin();
      const ctx = ctxFor(gone);
      await mkdir(path.dirname(lastKnownGoodPath(ctx)), { recursive: true });
      await writeFile(
        lastKnownGoodPath(ctx),
        JSON.stringify({
          policy: policyFor(gone, { ttl_seconds: 86_400 }),
          etag: '"v9"',
          fetched_at: now - 3 * HOUR,
          url: `${gone}/governance-config`,
        }),
      );
      const before = await readFile(lastKnownGoodPath(ctx), 'utf8');
      const resolved = noTokenIn(await resolve(ctx));
      expect(resolved).toMatchObject({
        source: 'cached',
        revision: 7,
        stale: false,
        ageSeconds: 3 * 3600,
        fetchedAt: now - 3 * HOUR,
        etag: '"v9"',
      });
      expect(resolved.warnings[0]).toBe(
        'Control API unreachable (ECONNREFUSED): using last-known-good revision 7 fetched 3 h ago',
      );
      expect(await readFile(lastKnownGoodPath(ctx), 'utf8')).toBe(before);
    });

    it('falls back on HTTP 500', async () => {
      const ctx = ctxFor(server.origin);
      await resolve(ctx);
      server.setHandler((_req, res) => res.writeHead(500).end('boom'));
      now += 60_000;
      const resolved = await resolve(ctx);
      expect(resolved).toMatchObject({ source: 'cached', revision: 7, ageSeconds: 60, stale: false });
      expect(resolved.warnings[0]).toContain('HTTP 500');
      expect(resolved.warnings[0]).toContain('revision 7');
    });

    it('with required: true, refuses a cache older than ttl_seconds and accepts a fresh one', async () => {
      const ctx = ctxFor(server.origin);
      server.setPolicy(policyFor(server.origin, { required: true, ttl_seconds: 3600 }));
      await resolve(ctx);
      server.setHandler((_req, res) => res.writeHead(503).end());

      now += 30 * 60 * 1000;
      const fresh = await resolve(ctx);
      expect(fresh).toMatchObject({ source: 'cached', stale: false, ageSeconds: 1800 });

      now += 2 * HOUR;
      const error = await failure(resolve(ctx));
      expect(error.code).toBe('POLICY_STALE');
      expect(error.message).toContain('refusing to change anything');
      expect(error.message).toContain('HTTP 503');
      expect(error.message).toContain('3 h old');
      expect(error.message).toContain('ttl of 60 min');
    });

    it("a policy without ttl_seconds is fresh for 300 s, the contract's default", async () => {
      const ctx = ctxFor(server.origin);
      server.setPolicy(policyFor(server.origin, { ttl_seconds: undefined, required: true }));
      await resolve(ctx);
      server.setHandler((_req, res) => res.writeHead(503).end());
      now += 300_000;
      expect(await resolve(ctx)).toMatchObject({ source: 'cached', stale: false, ageSeconds: 300 });
      now += 1_000;
      const error = await failure(resolve(ctx));
      expect(error.code).toBe('POLICY_STALE');
      expect(error.message).toContain('past its ttl of 5 min');
    });

    it('without required, uses a stale cache and warns that it is stale', async () => {
      const ctx = ctxFor(server.origin);
      await resolve(ctx);
      server.setHandler((_req, res) => res.writeHead(502).end());
      now += 5 * HOUR;
      const resolved = await resolve(ctx);
      expect(resolved).toMatchObject({ source: 'cached', stale: true });
      expect(resolved.warnings.some((w) => w.includes('past its ttl'))).toBe(true);
    });

    // The server never answers: a fetch without its bound would never return, and this test's timeout would fail it.
    it('times out within the bound and falls back', { timeout: 15_000 }, async () => {
      const ctx = ctxFor(server.origin);
      await resolve(ctx);
      server.setHandler(() => undefined); // never answers
      const resolved = await resolve(ctx, {}, { timeoutMs: 300 });
      expect(resolved.source).toBe('cached');
      // The bound that ended it is the one given (0.3 s), not some default.
      expect(resolved.warnings[0]).toMatch(/timed out after 0\.3 s/);
    });

    it('refuses a redirect to another origin and never sends the token there', async () => {
      const other = await startPolicyServer(policyFor(server.origin));
      try {
        server.setHandler((_req, res) => res.writeHead(302, { location: `${other.origin}/governance-config` }).end());
        const error = await failure(resolve(ctxFor(server.origin)));
        expect(error.code).toBe('POLICY_UNREACHABLE');
        expect(error.message).toContain('another origin');
        expect(other.requests).toHaveLength(0);
      } finally {
        await other.close();
      }
    });

    it('follows a same-origin redirect', async () => {
      const body = JSON.stringify(policyFor(server.origin));
      server.setHandler((req, res) => {
        if (req.url === '/governance-config') res.writeHead(307, { location: '/v2/governance-config' }).end();
        else res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      });
      const resolved = await resolve(ctxFor(server.origin), {}, { dryRun: true });
      expect(resolved.revision).toBe(7);
      expect(server.requests[1]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    });

    it('treats an HTML page (a captive portal) as unavailable rather than as a policy', async () => {
      server.setHandler((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>'));
      const error = await failure(resolve(ctxFor(server.origin)));
      expect(error.code).toBe('POLICY_UNREACHABLE');
      expect(error.message).toContain('text/html');
    });
  });

  it('reports 401 as a token problem without printing the token, even with a cache', async () => {
    const ctx = ctxFor(server.origin);
    await resolve(ctx);
    server.setHandler((_req, res) => res.writeHead(401, { 'www-authenticate': 'Bearer' }).end());
    const error = await failure(resolve(ctx));
    expect(error.code).toBe('AUTH_FAILED');
    expect(error.message).toContain('BLUE_AGENT_TOKEN');
    expect(error.hint).toContain('blue-agent login');

    server.setHandler((_req, res) => res.writeHead(403).end());
    expect((await failure(resolve(ctx))).code).toBe('AUTH_FAILED');
  });

  it('says when no token is configured and the server wants one', async () => {
    server.setHandler((_req, res) => res.writeHead(401).end());
    const error = await failure(resolve(t.context({ env: { BLUE_AGENT_CONTROL_URL: server.origin } })));
    expect(error.code).toBe('AUTH_FAILED');
    expect(error.message).toContain('none is configured');
  });

  it('reports a 404 as a wrong Control API URL', async () => {
    const error = await failure(resolve(ctxFor(`${server.origin}/wrong-prefix`)));
    expect(error.code).toBe('CONTROL_URL_WRONG');
    expect(error.message).toContain('404');
    expect(error.hint).toContain('path prefix');
  });

  it.each([
    ['wrong type', { revision: 8, ttl_seconds: 'soon' }, '/ttl_seconds'],
    ['revision that is neither a string nor an integer', { revision: 8.5 }, '/revision'],
    [
      'session_upload under a harness',
      { revision: 8, harnesses: { claude: { session_upload: { presign_url: 'https://x.example/p' } } } },
      '/harnesses/claude/session_upload',
    ],
    [
      'invalid semver range',
      { revision: 8, harnesses: { kimi: { version_requirement: 'banana' } } },
      '/harnesses/kimi/version_requirement',
    ],
    [
      'bad presign_url',
      { revision: 8, session_upload: { presign_url: 'mailto:someone@example.com' } },
      '/session_upload/presign_url',
    ],
  ])('rejects a fetched policy with a %s and keeps the last-known-good', async (_name, bad, field) => {
    const ctx = ctxFor(server.origin);
    await resolve(ctx);
    const before = await readFile(lastKnownGoodPath(ctx), 'utf8');
    server.setPolicy(bad);
    const error = await failure(resolve(ctx));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toContain(field);
    expect(error.message).toContain(`${server.origin}/governance-config`);
    expect(await readFile(lastKnownGoodPath(ctx), 'utf8')).toBe(before);
  });

  it('rejects a response that is not JSON', async () => {
    server.setHandler((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"revision": 1,'));
    const error = await failure(resolve(ctxFor(server.origin)));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toContain('not valid JSON');
  });

  it('refuses a policy nested deeper than the bound before anything walks it; keeps the last-known-good', async () => {
    const ctx = ctxFor(server.origin);
    await resolve(ctx);
    const before = await readFile(lastKnownGoodPath(ctx), 'utf8');
    // Unknown fields are allowed (forward compatibility); this one would overflow the stack of JSON.stringify when
    // the policy is kept, far from the fetch.
    const deep = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;
    const text = JSON.stringify({ ...policyFor(server.origin), revision: 8, future: 'DEEP' }).replace('"DEEP"', deep);
    server.setHandler((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(text));
    const error = await failure(resolve(ctx));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toContain('nests deeper than 64 levels');
    expect(await readFile(lastKnownGoodPath(ctx), 'utf8')).toBe(before);
  });

  it('refuses a foreign presign_url and accepts one allowed by allowed_upload_origins', async () => {
    const ctx = ctxFor(server.origin);
    server.setPolicy({ revision: 9, session_upload: { presign_url: 'https://uploads.example.com/presign' } });
    const error = await failure(resolve(ctx));
    expect(error.code).toBe('POLICY_FOREIGN_ORIGIN');
    expect(error.message).toContain('must not be able to send transcripts elsewhere');
    expect(await exists(lastKnownGoodPath(ctx))).toBe(false);

    const resolved = await resolve(ctx, { allowed_upload_origins: ['https://uploads.example.com'] });
    expect(resolved).toMatchObject({ source: 'fetched', revision: 9 });
  });

  describe('refuses a response bigger than 1 MiB', () => {
    const big = JSON.stringify({ revision: 1, padding: 'x'.repeat(1024 * 1024 + 10) });

    it('with a Content-Length', async () => {
      server.setHandler((_req, res) =>
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(big) }).end(big),
      );
      const error = await failure(resolve(ctxFor(server.origin)));
      expect(error.code).toBe('POLICY_INVALID');
      expect(error.message).toContain('larger than 1048576 bytes');
    });

    it('streamed without a length', async () => {
      server.setHandler((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        for (let i = 0; i < big.length; i += 64 * 1024) res.write(big.slice(i, i + 64 * 1024));
        res.end();
      });
      const error = await failure(resolve(ctxFor(server.origin)));
      expect(error.message).toContain('larger than 1048576 bytes');
    });
  });

  describe('dry run', () => {
    it('writes nothing: the state dir stays absent', async () => {
      const ctx = ctxFor(server.origin);
      const resolved = await resolve(ctx, {}, { dryRun: true });
      expect(resolved.source).toBe('fetched');
      expect(await exists(ctx.paths.stateDir)).toBe(false);
    });

    it('does not refresh fetched_at on 304', async () => {
      const ctx = ctxFor(server.origin);
      await resolve(ctx);
      const before = await readFile(lastKnownGoodPath(ctx), 'utf8');
      const mtime = (await stat(lastKnownGoodPath(ctx))).mtimeMs;
      now += HOUR;
      const resolved = await resolve(ctx, {}, { dryRun: true });
      expect(resolved.notModified).toBe(true);
      expect(await readFile(lastKnownGoodPath(ctx), 'utf8')).toBe(before);
      expect((await stat(lastKnownGoodPath(ctx))).mtimeMs).toBe(mtime);

      server.setPolicy(policyFor(server.origin, { revision: 11 }));
      expect((await resolve(ctx, {}, { dryRun: true })).revision).toBe(11);
      expect(await readFile(lastKnownGoodPath(ctx), 'utf8')).toBe(before);
    });
  });

  it('ignores a damaged last-known-good with a warning', async () => {
    const ctx = ctxFor(server.origin);
    await mkdir(path.dirname(lastKnownGoodPath(ctx)), { recursive: true });
    await writeFile(
      lastKnownGoodPath(ctx),
      '{"policy": {"revision": 1, "ttl_seconds": "evil"}, "fetched_at": 1, "url": "x"}',
    );
    const resolved = await resolve(ctx);
    expect(resolved.source).toBe('fetched');
    expect(server.requests[0]!.headers['if-none-match']).toBeUndefined();
    expect(resolved.warnings.some((w) => w.includes('damaged last-known-good'))).toBe(true);
  });

  it('does not use a last-known-good from another Control API', async () => {
    const ctx = ctxFor(server.origin);
    await resolve(ctx);
    const error = await failure(resolve(ctxFor(await closedOrigin())));
    expect(error.code).toBe('POLICY_UNREACHABLE');
  });
});

describe("Blue's rules for clients: contract, capabilities, client-version pins", () => {
  const OWN = '1.4.2';
  /** A context as ctxFor's, for blue-agent 1.4.2. */
  const agent = () =>
    t.context({
      env: { BLUE_AGENT_CONTROL_URL: server.origin, BLUE_AGENT_TOKEN: TOKEN },
      clock: { now: () => now },
      self: { version: OWN },
    });
  const pinned = (
    version: string,
    status = 200,
    body = '{"error":"governance requires unsupported client capabilities: tenant_client_version_pin"}',
  ) =>
    server.setHandler((_req, res) =>
      res
        .writeHead(status, { 'content-type': 'application/json', 'x-blue-required-client-version': version })
        .end(
          status === 200
            ? JSON.stringify(policyFor(server.origin, { revision: 'r2', required_client_version: version }))
            : body,
        ),
    );

  it('sends X-Blue-Contract-Version and X-Blue-Capabilities on every fetch', async () => {
    await resolve(agent());
    expect(server.requests[0]!.headers['x-blue-contract-version']).toBe('3');
    expect(server.requests[0]!.headers['x-blue-capabilities']).toBe(
      'tenant_client_version_pin,adapter_intervals,compiled_harness_registry,' +
        'transactional_reconcile,versioned_state,unverified_harness_versions',
    );
  });

  it('accepts a string revision, the rest of the GovernanceConfig, and warns of unknown harnesses', async () => {
    server.setPolicy(
      policyFor(server.origin, {
        revision: '251e6087-98cf-4861-9668-f09f537d5e4d',
        allowed_harnesses: ['claude', 'cursor'],
        packages: [],
        telemetry: { sink_url: 'https://t.example' },
      }),
    );
    const resolved = await resolve(agent());
    expect(resolved).toMatchObject({ source: 'fetched', revision: '251e6087-98cf-4861-9668-f09f537d5e4d' });
    expect(resolved.warnings).toEqual([
      expect.stringContaining('names harness this blue-agent does not know: cursor (ignored'),
    ]);
  });

  it(
    'applies a revision with fields a newer server adds, warning once per fetch and keeping them in the ' +
      'last-known-good',
    async () => {
      server.setPolicy(
        policyFor(server.origin, { revision: 'r9', sesion_upload: {}, harnesses: { claude: { new_rule: 1 } } }),
      );
      const ctx = agent();
      const resolved = await resolve(ctx);
      expect(resolved).toMatchObject({ source: 'fetched', revision: 'r9', policy: { sesion_upload: {} } });
      expect(resolved.warnings).toEqual([
        'revision r9 has fields this blue-agent does not know: harnesses.claude.new_rule, sesion_upload (ignored; a ' +
          'newer Control API may add fields)',
      ]);
      expect((await readLkg(ctx)).policy).toMatchObject({ revision: 'r9', harnesses: { claude: { new_rule: 1 } } });
    },
  );

  it(
    'refuses a revision needing a newer contract or a capability it lacks, keeps the last-known-good and does not ' +
      'fall back on it',
    async () => {
      const ctx = agent();
      await resolve(ctx);
      const before = await readFile(lastKnownGoodPath(ctx), 'utf8');
      for (const extra of [
        { contract_version: 4 },
        { required_capabilities: ['adapter_intervals', 'gateway_inference_jwt'] },
      ]) {
        server.setPolicy(policyFor(server.origin, { revision: 'r3', ...extra }));
        const error = await failure(resolve(ctx));
        expect(error.code).toBe('POLICY_INCOMPATIBLE');
        expect(error.message).toContain('revision r3');
        expect(error.hint).toContain('Update blue-agent');
      }
      expect(await readFile(lastKnownGoodPath(ctx), 'utf8')).toBe(before);
    },
  );

  it("a 426 is POLICY_INCOMPATIBLE with the server's message; an answer, not an outage, so no fall-back", async () => {
    const ctx = agent();
    await resolve(ctx);
    server.setHandler((_req, res) =>
      res
        .writeHead(426, { 'content-type': 'application/json' })
        .end('{"error":"governance contract 4 requires a newer client; client reports 3"}'),
    );
    const error = await failure(resolve(ctx));
    expect(error.code).toBe('POLICY_INCOMPATIBLE');
    expect(error.message).toContain('governance contract 4 requires a newer client; client reports 3');
    expect(await exists(lastKnownGoodPath(ctx))).toBe(true);
  });

  it('a pin of another major in the document or its header blocks, and the last-known-good is deleted', async () => {
    for (const [status, body] of [
      [200, undefined],
      [426, undefined],
    ] as const) {
      const ctx = agent();
      await resolve(ctx);
      expect(await exists(lastKnownGoodPath(ctx))).toBe(true);
      pinned('2.0.0', status, body);
      const error = await failure(resolve(ctx));
      expect(error.code).toBe('CLIENT_VERSION_MISMATCH');
      expect(error.message).toContain('requires blue-agent 2.0.0, and this is 1.4.2');
      expect(error.hint).toContain('Install blue-agent 2.0.0');
      expect(await exists(lastKnownGoodPath(ctx))).toBe(false);
      server.setHandler(undefined);
    }
    // Without the header, the document's pin alone blocks too.
    const ctx = agent();
    await resolve(ctx);
    server.setPolicy(policyFor(server.origin, { revision: 'r4', required_client_version: '0.9.0' }));
    expect((await failure(resolve(ctx))).code).toBe('CLIENT_VERSION_MISMATCH');
    expect(await exists(lastKnownGoodPath(ctx))).toBe(false);
  });

  it('--dry-run refuses the same way but deletes nothing', async () => {
    const ctx = agent();
    await resolve(ctx);
    pinned('2.0.0', 426);
    expect((await failure(resolve(ctx, {}, { dryRun: true }))).code).toBe('CLIENT_VERSION_MISMATCH');
    expect(await exists(lastKnownGoodPath(ctx))).toBe(true);
  });

  it(
    'a cached copy pinning another major blocks when the Control API is away, and goes; a 304 with such a header ' +
      'too',
    async () => {
      const ctx = agent();
      server.setPolicy(policyFor(server.origin, { required_client_version: '1.4.2' }));
      await resolve(ctx);
      // Another blue-agent (a downgrade across majors) reads the same cache while the server is down.
      server.setHandler((_req, res) => res.writeHead(503).end());
      const other = t.context({
        env: { BLUE_AGENT_CONTROL_URL: server.origin, BLUE_AGENT_TOKEN: TOKEN },
        clock: { now: () => now },
        self: { version: '0.9.0' },
      });
      expect((await failure(resolve(other))).code).toBe('CLIENT_VERSION_MISMATCH');
      expect(await exists(lastKnownGoodPath(ctx))).toBe(false);

      server.setHandler(undefined);
      await resolve(ctx);
      server.setHandler((_req, res) => res.writeHead(304, { 'x-blue-required-client-version': '3.0.0' }).end());
      expect((await failure(resolve(ctx))).code).toBe('CLIENT_VERSION_MISMATCH');
      expect(await exists(lastKnownGoodPath(ctx))).toBe(false);
    },
  );

  it('another release of the same major applies, with the recommendation as a warning', async () => {
    pinned('1.9.0');
    const resolved = await resolve(agent());
    expect(resolved).toMatchObject({ source: 'fetched', revision: 'r2' });
    expect(resolved.warnings).toEqual([
      'the organisation recommends blue-agent 1.9.0; this is 1.4.2 (same major 1: the policy applies)',
    ]);
  });

  it('a pin header that disagrees with the document is refused and nothing is cached', async () => {
    server.setHandler((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json', 'x-blue-required-client-version': '1.4.2' })
        .end(JSON.stringify(policyFor(server.origin, { required_client_version: '1.4.3' }))),
    );
    const ctx = agent();
    const error = await failure(resolve(ctx));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toContain('disagree');
    expect(await exists(lastKnownGoodPath(ctx))).toBe(false);
  });

  it('minimum_client_version above this one is a warning only (an informational rollout floor)', async () => {
    server.setPolicy(policyFor(server.origin, { minimum_client_version: '1.5.0' }));
    const resolved = await resolve(agent());
    expect(resolved.source).toBe('fetched');
    expect(resolved.warnings).toEqual([
      expect.stringContaining("the organisation's rollout floor is blue-agent 1.5.0, and this is 1.4.2"),
    ]);
  });

  it('a policy file follows the same rules', async () => {
    await writeFile(path.join(t.home, 'p.json'), JSON.stringify({ revision: 'f1', contract_version: 9 }));
    expect((await failure(resolve(agent(), {}, { policyFile: path.join(t.home, 'p.json') }))).code).toBe(
      'POLICY_INCOMPATIBLE',
    );
    await writeFile(path.join(t.home, 'p.json'), JSON.stringify({ revision: 'f1', required_client_version: '1.4.3' }));
    expect((await resolve(agent(), {}, { policyFile: path.join(t.home, 'p.json') })).warnings).toContain(
      'the organisation recommends blue-agent 1.4.3; this is 1.4.2 (same major 1: the policy applies)',
    );
  });
});

describe('resolvePolicy from a file', () => {
  it('reads --policy relative to the working directory, in YAML', async () => {
    await writeFile(
      path.join(t.home, 'policy.yaml'),
      'revision: 4\nsession_upload:\n  presign_url: https://uploads.example.com/presign\n',
    );
    const resolved = await resolve(t.ctx, {}, { policyFile: 'policy.yaml' });
    expect(resolved).toMatchObject({
      source: 'file',
      location: path.join(t.home, 'policy.yaml'),
      revision: 4,
      stale: false,
    });
    expect(resolved.fetchedAt).toBeUndefined();
    // No Control API to compare the origin with: accepted, but said.
    expect(resolved.warnings).toHaveLength(1);
    expect(resolved.warnings[0]).toContain('not checked');
    expect(await exists(t.ctx.paths.stateDir)).toBe(false);
  });

  it('uses policy_file from the config (JSON), and prefers --policy over it', async () => {
    const configDir = path.dirname(t.ctx.paths.configFile);
    await mkdir(configDir, { recursive: true });
    await writeFile(path.join(configDir, 'org.json'), JSON.stringify({ revision: 'a1' }));
    await writeFile(path.join(t.home, 'other.json'), JSON.stringify({ revision: 'b2' }));
    expect((await resolve(t.ctx, { policy_file: 'org.json' })).revision).toBe('a1');
    expect(
      (await resolve(t.ctx, { policy_file: 'org.json' }, { policyFile: path.join(t.home, 'other.json') })).revision,
    ).toBe('b2');
  });

  it('checks presign_url against the Control API origin when one is known', async () => {
    await writeFile(
      path.join(t.home, 'p.yaml'),
      'revision: 1\nsession_upload:\n  presign_url: https://uploads.example.com/presign\n',
    );
    const error = await failure(resolve(ctxFor(server.origin), {}, { policyFile: 'p.yaml' }));
    expect(error.code).toBe('POLICY_FOREIGN_ORIGIN');
    expect(server.requests).toHaveLength(0);
  });

  it('reports a YAML syntax error with line and column', async () => {
    await writeFile(path.join(t.home, 'p.yaml'), 'revision: 1\nallowed_harnesses: [claude\n');
    const error = await failure(resolve(t.ctx, {}, { policyFile: 'p.yaml' }));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.line).toBeGreaterThanOrEqual(2);
    expect(error.column).toBeGreaterThanOrEqual(1);
  });
});

it('says how to configure a source when there is none', async () => {
  const error = await failure(resolve(t.ctx));
  expect(error.code).toBe('POLICY_MISSING');
  expect(error.hint).toContain('--policy FILE');
  expect(error.hint).toContain('blue-agent login');
  expect(error.hint).toContain('BLUE_AGENT_CONTROL_URL');
});
