/**
 * The policy `status` shows (read offline, src/status/policy.ts) judged by the rules reconcile applies: the
 * organisation's recommendation and rollout floor as warnings, a cached copy this blue-agent may not apply as the
 * error, and — once the pin has made the agent drop its cached copy — the agent's own refusal instead of "not fetched".
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeRunState } from '../../src/daemon/state.js';
import { startPolicyServer, type PolicyServer } from '../../../../test/support/policy-server.js';
import { setup, type Setup } from '../../../../test/support/status-home.js';

let s: Setup;
let server: PolicyServer;

beforeEach(async () => {
  s = await setup();
  server = await startPolicyServer({});
  await s.config(`control_url: ${server.origin}\n`);
  await s.token('tok_0123456789abcdef');
  await s.harnesses({ claude: '2.1.332 (Claude Code)' });
});
afterEach(async () => {
  await server.close();
  await s.cleanup();
});

const OWN = { version: '1.4.2' };
const policy = (extra: Record<string, unknown> = {}) => ({
  revision: 'r7',
  ttl_seconds: 3600,
  session_upload: { presign_url: `${server.origin}/session-uploads/presign` },
  ...extra,
});

async function status(self = OWN): Promise<{
  policy: { revision: string | null; warnings: string[]; error?: { code: string; message: string; hint?: string } };
}> {
  return JSON.parse((await s.cli(['status', '--json'], { self })).stdout);
}

describe("status and the organisation's rules for clients", () => {
  it('shows the recommendation of another release of the same major and the rollout floor as warnings', async () => {
    server.setPolicy(
      policy({
        required_client_version: '1.9.0',
        minimum_client_version: '1.5.0',
        allowed_harnesses: ['claude', 'cursor'],
      }),
    );
    expect((await s.cli(['reconcile'], { self: OWN })).code).toBe(0);
    const report = await status();
    expect(report.policy.revision).toBe('r7');
    expect(report.policy.warnings).toEqual([
      'the organisation recommends blue-agent 1.9.0; this is 1.4.2 (same major 1: the policy applies)',
      expect.stringContaining("the organisation's rollout floor is blue-agent 1.5.0, and this is 1.4.2"),
      expect.stringContaining('names harness this blue-agent does not know: cursor'),
    ]);
    const human = (await s.cli(['status'], { self: OWN })).stdout;
    expect(human).toContain('warning: the organisation recommends blue-agent 1.9.0');
  });

  it(
    'a cached copy pinning another major (this blue-agent was replaced meanwhile) is shown as the error, not ' +
      'applied',
    async () => {
      server.setPolicy(policy({ required_client_version: '1.4.2' }));
      expect((await s.cli(['reconcile'], { self: OWN })).code).toBe(0);
      const report = await status({ version: '2.0.0' });
      expect(report.policy.revision).toBeNull();
      expect(report.policy.error).toMatchObject({
        code: 'CLIENT_VERSION_MISMATCH',
        message: expect.stringContaining('requires blue-agent 1.4.2, and this is 2.0.0'),
      });
    },
  );

  it('once the pin has dropped the cached copy, shows the agent\'s refusal, not "nothing fetched yet"', async () => {
    const now = Date.now();
    await writeRunState(s.ctx, {
      pid: process.pid,
      started_at_unix_ms: now - 60_000,
      updated_at_unix_ms: now,
      policy: {
        revision: 'r7',
        source: 'cached',
        failures: 1,
        next_check_at_unix_ms: now + 60_000,
        last_error: {
          code: 'CLIENT_VERSION_MISMATCH',
          message: 'the organisation requires blue-agent 2.0.0, and this is 1.4.2',
        },
      },
    });
    const report = await status();
    expect(report.policy.error).toMatchObject({
      code: 'CLIENT_VERSION_MISMATCH',
      message: 'the organisation requires blue-agent 2.0.0, and this is 1.4.2',
    });
    expect((await s.cli(['status'], { self: OWN })).stdout).toContain('requires blue-agent 2.0.0');
  });
});
