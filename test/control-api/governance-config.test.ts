/**
 * GET /governance-config through the one client: what its outcomes and errors say, and that none names a secret
 * (the policy module's resolve tests cover ETags, fall-backs and the cache).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fetchGovernanceConfig, governanceConfigUrl, type FetchRequest } from '../../src/control-api/governance-config.js';
import { BlueError } from '../../src/errors.js';
import { closedOrigin, startPolicyServer, type PolicyServer } from '../support/policy-server.js';

const TOKEN = 'tok-SECRET-4d2b8e9f01';
let server: PolicyServer;

beforeEach(async () => {
  server = await startPolicyServer({ revision: 3 });
});
afterEach(async () => server.close());

function request(controlUrl: string, over: Partial<FetchRequest> = {}): FetchRequest {
  return {
    url: governanceConfigUrl(controlUrl),
    token: TOKEN,
    tokenSource: 'BLUE_AGENT_TOKEN',
    etag: undefined,
    timeoutMs: 5_000,
    maxBytes: 1024,
    userAgent: 'blue-agent/test',
    env: {},
    ...over,
  };
}

describe('fetchGovernanceConfig', () => {
  it('answers the policy text and its ETag, with the token sent', async () => {
    expect(await fetchGovernanceConfig(request(`${server.origin}/`))).toEqual({ kind: 'ok', text: '{"revision":3}', etag: '"v1"' });
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('says a redirected-to URL without its query (where a signature may be)', async () => {
    server.setHandler((req, res) => {
      if (req.url === '/governance-config') res.writeHead(302, { location: `/moved?sig=${TOKEN}x&X-Amz-Signature=SIG99` }).end();
      else res.writeHead(418).end();
    });
    const error = await fetchGovernanceConfig(request(server.origin)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlueError);
    expect((error as BlueError).code).toBe('POLICY_UNREACHABLE');
    expect((error as BlueError).message).toBe(`GET ${server.origin}/moved?[redacted] answered HTTP 418`);
    expect(JSON.stringify((error as BlueError).toJSON())).not.toMatch(/SIG99|SECRET/);
  });

  it('follows no redirect to another origin, so the token stays home', async () => {
    const other = await startPolicyServer({ revision: 9 });
    try {
      server.setHandler((_req, res) => res.writeHead(307, { location: `${other.origin}/governance-config` }).end());
      expect(await fetchGovernanceConfig(request(server.origin))).toEqual({ kind: 'unavailable', reason: `redirected to another origin (${other.origin}), which is refused` });
      expect(other.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('names a refused connection by its code, and a timeout by its length', async () => {
    expect(await fetchGovernanceConfig(request(await closedOrigin()))).toEqual({ kind: 'unavailable', reason: 'unreachable (ECONNREFUSED)' });
    server.setHandler(() => undefined);
    expect(await fetchGovernanceConfig(request(server.origin, { timeoutMs: 300 }))).toEqual({ kind: 'unavailable', reason: 'timed out after 0.3 s' });
  });

  it('refuses an answer larger than its bound', async () => {
    server.setPolicy({ revision: 1, padding: 'x'.repeat(2048) });
    await expect(fetchGovernanceConfig(request(server.origin))).rejects.toMatchObject({ code: 'POLICY_INVALID', message: expect.stringContaining('larger than 1024 bytes') });
  });
});
