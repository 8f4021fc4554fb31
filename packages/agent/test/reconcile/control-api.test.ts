/**
 * Reconcile with the policy from a Control API on loopback: fetched with ETag, kept as last-known-good, used (and
 * reported) when the server is away, and refused when a required policy has gone stale.
 */
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Context } from '../../src/context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { reconcile } from '../../src/reconcile/index.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { startPolicyServer, type PolicyServer } from '../../../../test/support/policy-server.js';

const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const TOKEN = 'tok_0123456789abcdef';

let t: TestHome;
let server: PolicyServer;
let bin: string;

beforeEach(async () => {
  t = await makeTestHome();
  bin = path.join(t.root, 'bin');
  await mkdir(bin);
  await writeFile(path.join(bin, 'claude'), `#!/bin/sh\necho '2.1.332 (Claude Code)'\n`, { mode: 0o755 });
});
afterEach(async () => {
  await server?.close();
  await t.cleanup();
});

function context(now = () => Date.now()): Context {
  return t.context({
    env: { PATH: `${bin}:/usr/bin:/bin`, BLUE_AGENT_CONTROL_URL: server.origin, BLUE_AGENT_TOKEN: TOKEN },
    self: SELF,
    clock: { now },
  });
}

const settings = () => path.join(t.home, '.claude', 'settings.json');

function policy(revision: number, extra: Record<string, unknown> = {}) {
  return {
    revision,
    ttl_seconds: 60,
    session_upload: { presign_url: `${server.origin}/session-uploads/presign` },
    ...extra,
  };
}

describe('reconcile with a Control API', () => {
  it('fetches the policy, then revalidates it with If-None-Match', async () => {
    server = await startPolicyServer({});
    server.setPolicy(policy(3));
    const first = await reconcile(context(), { dryRun: false });
    expect(first.policy).toMatchObject({
      revision: 3,
      source: 'fetched',
      location: `${server.origin}/governance-config`,
    });
    expect(first.harnesses.find((h) => h.harness === 'claude')).toMatchObject({ state: 'active', action: 'create' });
    expect(server.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);

    const second = await reconcile(context(), { dryRun: false });
    expect(server.requests[1]!.headers['if-none-match']).toBeDefined();
    expect(second.policy.revision).toBe(3);
    expect(second.harnesses.find((h) => h.harness === 'claude')!.action).toBe('unchanged');
    expect(JSON.stringify(second)).not.toContain(TOKEN);
  });

  it('a new revision without session_upload removes the managed hook', async () => {
    server = await startPolicyServer({});
    server.setPolicy(policy(3));
    await reconcile(context(), { dryRun: false });
    expect(await readFile(settings(), 'utf8')).toContain('capture --harness claude');
    server.setPolicy({ revision: 4 });
    const report = await reconcile(context(), { dryRun: false });
    expect(report.harnesses.find((h) => h.harness === 'claude')).toMatchObject({
      state: 'capture_disabled',
      action: 'remove',
    });
    await expect(stat(settings())).rejects.toThrow();
  });

  it('uses the last-known-good policy when the server is away, and says so', async () => {
    server = await startPolicyServer({});
    server.setPolicy(policy(3));
    await reconcile(context(), { dryRun: false });
    await server.close();
    const report = await reconcile(context(), { dryRun: false });
    expect(report.policy).toMatchObject({ revision: 3, source: 'cached' });
    expect(report.policy.warnings.join(' ')).toMatch(/unreachable|last-known-good/i);
    expect(report.ok).toBe(true);
  });

  it('a required policy whose cache is older than ttl_seconds changes nothing while the server is away', async () => {
    server = await startPolicyServer({});
    server.setPolicy(policy(3, { required: true }));
    await reconcile(context(), { dryRun: false });
    server.setPolicy({ revision: 4, required: true, ttl_seconds: 60 });
    await server.close();
    const later = Date.now() + 61 * 60 * 1000;
    const before = await readFile(settings(), 'utf8');
    const error = await reconcile(
      context(() => later),
      { dryRun: false },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BlueError);
    expect((error as BlueError).code).toBe('POLICY_STALE');
    expect((error as BlueError).message).toMatch(/refus/i);
    expect(await readFile(settings(), 'utf8')).toBe(before);
  });

  it('refuses a policy whose presign_url points at another origin, and writes nothing', async () => {
    server = await startPolicyServer({});
    server.setPolicy({ revision: 9, session_upload: { presign_url: 'https://collector.evil.example/presign' } });
    const error = (await reconcile(context(), { dryRun: false }).catch((e: unknown) => e)) as BlueError;
    expect(error.code).toBe('POLICY_FOREIGN_ORIGIN');
    await expect(stat(settings())).rejects.toThrow();
  });

  it('a dry run against the Control API writes no last-known-good copy', async () => {
    server = await startPolicyServer({});
    server.setPolicy(policy(3));
    const report = await reconcile(context(), { dryRun: true });
    expect(report.policy.source).toBe('fetched');
    await expect(stat(t.env.BLUE_AGENT_HOME!)).rejects.toThrow();
  });
});
