/**
 * `blue-agent doctor` and the organisation's rules for clients: a 426 (the revision needs more than this blue-agent
 * has, or pins another major) fails the policy check with what to install, while the Control API and the token check
 * out; a recommendation of another release of the same major is a warning. A Control API on loopback stands in.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Check } from '../../src/doctor/checks.js';
import { startPolicyServer, type PolicyServer } from '../../../../test/support/policy-server.js';
import { setup, type Setup } from '../../../../test/support/status-home.js';

let s: Setup;
let server: PolicyServer;

beforeEach(async () => {
  s = await setup();
  server = await startPolicyServer({});
  await s.config(`control_url: ${server.origin}\n`);
  await s.token('tok_0123456789abcdef');
});
afterEach(async () => {
  await server.close();
  await s.cleanup();
});

const OWN = { version: '1.4.2' };

async function checks(): Promise<Record<string, Check>> {
  const out = await s.cli(['doctor', '--json'], { platform: 'linux', self: OWN });
  return Object.fromEntries((JSON.parse(out.stdout) as { checks: Check[] }).checks.map((c) => [c.id, c]));
}

describe('doctor', () => {
  it(
    'a 426 pinning another major: the policy check fails with the release to install; the Control API and token ' +
      'are fine',
    async () => {
      server.setHandler((_req, res) =>
        res
          .writeHead(426, { 'content-type': 'application/json', 'x-blue-required-client-version': '2.0.0' })
          .end('{"error":"governance contract 4 requires a newer client; client reports 3"}'),
      );
      const c = await checks();
      expect(c['control-api']!.status).toBe('ok');
      expect(c.token!.status).toBe('ok');
      expect(c.policy).toMatchObject({
        status: 'fail',
        message: expect.stringContaining('requires blue-agent 2.0.0, and this is 1.4.2'),
        fix: expect.stringContaining('Install blue-agent 2.0.0'),
      });
      expect(server.requests[0]!.headers['x-blue-capabilities']).toContain('tenant_client_version_pin');
    },
  );

  it("a 426 for a newer contract is POLICY_INCOMPATIBLE with the server's words", async () => {
    server.setHandler((_req, res) =>
      res
        .writeHead(426, { 'content-type': 'application/json' })
        .end('{"error":"governance contract 4 requires a newer client; client reports 3"}'),
    );
    const c = await checks();
    expect(c.policy).toMatchObject({
      status: 'fail',
      message: expect.stringContaining('governance contract 4 requires a newer client'),
    });
  });

  it('another release of the same major is a warning on the policy check', async () => {
    server.setPolicy({
      revision: 'r1',
      required_client_version: '1.9.0',
      session_upload: { presign_url: `${server.origin}/session-uploads/presign` },
    });
    const c = await checks();
    expect(c.policy).toMatchObject({
      status: 'warn',
      message: expect.stringContaining('the organisation recommends blue-agent 1.9.0; this is 1.4.2'),
    });
  });
});
