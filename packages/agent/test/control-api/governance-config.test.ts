/**
 * GET /governance-config through the one client: what its outcomes and errors say, and that none names a secret
 * (the policy module's resolve tests cover ETags, fall-backs and the cache); the contract negotiation it sends, the
 * pin header it reads, and what a 426 Upgrade Required becomes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CAPABILITIES, CONTRACT_VERSION } from '../../src/control-api/contract.js';
import {
  fetchGovernanceConfig,
  governanceConfigUrl,
  type FetchRequest,
} from '../../src/control-api/governance-config.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { closedOrigin, startPolicyServer, type PolicyServer } from '../../../../test/support/policy-server.js';

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
    clientVersion: '1.4.2',
    env: {},
    ...over,
  };
}

describe('fetchGovernanceConfig', () => {
  it('answers the policy text and its ETag, with the token sent', async () => {
    expect(await fetchGovernanceConfig(request(`${server.origin}/`))).toEqual({
      kind: 'ok',
      text: '{"revision":3}',
      etag: '"v1"',
    });
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('says a redirected-to URL without its query (where a signature may be)', async () => {
    server.setHandler((req, res) => {
      if (req.url === '/governance-config')
        res.writeHead(302, { location: `/moved?sig=${TOKEN}x&X-Amz-Signature=SIG99` }).end();
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
      expect(await fetchGovernanceConfig(request(server.origin))).toEqual({
        kind: 'unavailable',
        reason: `redirected to another origin (${other.origin}), which is refused`,
      });
      expect(other.requests).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('names a refused connection by its code, and a timeout by its length', async () => {
    expect(await fetchGovernanceConfig(request(await closedOrigin()))).toEqual({
      kind: 'unavailable',
      reason: 'unreachable (ECONNREFUSED)',
    });
    server.setHandler(() => undefined);
    expect(await fetchGovernanceConfig(request(server.origin, { timeoutMs: 300 }))).toEqual({
      kind: 'unavailable',
      reason: 'timed out after 0.3 s',
    });
  });

  it('refuses an answer larger than its bound', async () => {
    server.setPolicy({ revision: 1, padding: 'x'.repeat(2048) });
    await expect(fetchGovernanceConfig(request(server.origin))).rejects.toMatchObject({
      code: 'POLICY_INVALID',
      message: expect.stringContaining('larger than 1024 bytes'),
    });
  });

  it('sends the contract version and capabilities it implements, and hands on the pin header of a 200', async () => {
    server.setHandler((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json', 'x-blue-required-client-version': '1.5.0' })
        .end('{"revision":"r1"}'),
    );
    expect(await fetchGovernanceConfig(request(server.origin))).toEqual({
      kind: 'ok',
      text: '{"revision":"r1"}',
      etag: undefined,
      requiredClientVersion: '1.5.0',
    });
    const seen = server.requests[0]!.headers;
    expect(seen['x-blue-contract-version']).toBe(String(CONTRACT_VERSION));
    expect(seen['x-blue-capabilities']).toBe(CAPABILITIES.join(','));
    expect(CAPABILITIES).toContain('tenant_client_version_pin');
    expect(CAPABILITIES).not.toContain('gateway_inference_jwt');
  });

  it('refuses more than one X-Blue-Required-Client-Version, repeated or joined', async () => {
    for (const value of [['1.5.0', '2.0.0'], '1.5.0, 2.0.0']) {
      server.setHandler((_req, res) => {
        res.setHeader('content-type', 'application/json');
        res.setHeader('x-blue-required-client-version', value);
        res.writeHead(200).end('{"revision":"r1"}');
      });
      await expect(fetchGovernanceConfig(request(server.origin))).rejects.toMatchObject({
        code: 'POLICY_INVALID',
        message: expect.stringContaining('2 values of X-Blue-Required-Client-Version'),
      });
    }
  });

  it('a 426 pinning another major is CLIENT_VERSION_MISMATCH, naming the release to install', async () => {
    server.setHandler((_req, res) =>
      res
        .writeHead(426, { 'content-type': 'application/json', 'x-blue-required-client-version': '2.0.1' })
        .end('{"error":"governance requires unsupported client capabilities: gateway_inference_jwt"}'),
    );
    const error = (await fetchGovernanceConfig(request(server.origin)).catch((e: unknown) => e)) as BlueError;
    expect(error).toBeInstanceOf(BlueError);
    expect(error.code).toBe('CLIENT_VERSION_MISMATCH');
    expect(error.message).toContain('requires blue-agent 2.0.1, and this is 1.4.2');
    expect(error.hint).toContain('Install blue-agent 2.0.1');
  });

  it("any other 426 is POLICY_INCOMPATIBLE with the server's message (if any) and the pinned release", async () => {
    const answers: [Record<string, string>, string, string][] = [
      [
        {},
        '{"error":"governance contract 4 requires a newer client; client reports 3"}',
        'HTTP 426 Upgrade Required: governance contract 4 requires a newer client; client reports 3',
      ],
      [
        { 'x-blue-required-client-version': '1.9.0' },
        '{"error":"client too old","code":"upgrade_required"}',
        'HTTP 426 Upgrade Required: client too old',
      ],
      [{}, '', 'HTTP 426 Upgrade Required)'],
    ];
    for (const [headers, body, said] of answers) {
      server.setHandler((_req, res) =>
        res.writeHead(426, { 'content-type': 'application/json', ...headers }).end(body),
      );
      const error = (await fetchGovernanceConfig(request(server.origin)).catch((e: unknown) => e)) as BlueError;
      expect(error.code).toBe('POLICY_INCOMPATIBLE');
      expect(error.message).toContain(said);
      expect(error.hint).toContain(`governance contract ${CONTRACT_VERSION}`);
      if (headers['x-blue-required-client-version'] !== undefined)
        expect(error.hint).toContain('Install blue-agent 1.9.0');
    }
  });

  it("says POLICY_MISSING for every server's 404 without a policy, and not for another 404", async () => {
    for (const body of [
      '{"error":"organization has no governance configuration"}',
      '{"error":"no policy published","code":"no_policy"}',
      '{"error":{"code":"no_policy","message":"none"}}',
    ]) {
      server.setHandler((_req, res) => res.writeHead(404, { 'content-type': 'application/json' }).end(body));
      await expect(fetchGovernanceConfig(request(server.origin))).rejects.toMatchObject({ code: 'POLICY_MISSING' });
    }
    server.setHandler((_req, res) =>
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}'),
    );
    await expect(fetchGovernanceConfig(request(server.origin))).rejects.toMatchObject({ code: 'CONTROL_URL_WRONG' });
  });
});
